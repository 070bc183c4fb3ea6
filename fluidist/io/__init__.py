"""Saving and loading variables and inference models, with Paddle 1.x ``fluid.io`` names.

Values are read from and written to a Scope (``global_scope()`` unless ``scope=`` is given); the
executor only says on which place loaded values should live.

Two formats. Loading detects which one a file is in; saving writes fluidist's own unless asked
for Paddle's (``format="paddle"``, or the environment variable ``FLUIDIST_SAVE_FORMAT=paddle`` for
scripts that cannot be changed).

fluidist's own format is NumPy files and JSON, never pickle (``allow_pickle=False``):

* directory mode: one ``<stem>.npy`` per variable, where ``<stem>`` is the variable name with every
  character outside ``[A-Za-z0-9_.-~]`` percent-encoded (names hold ``/``, ``@`` and ``.``), plus
  ``__index__.json`` mapping names to stems, recording LoD and SelectedRows heights, and the SHA-256
  of every file (format 2; files of a format-1 index, or of a directory without index, have no
  checksum and are refused unless ``FLUIDIST_LOAD_UNCHECKED=1``). A SelectedRows
  value is ``<stem>@rows.npy`` and ``<stem>@value.npy`` (``@`` never occurs in a stem).
* single-file mode (``filename=``): one ``.npz`` archive holding the same arrays under the stems as
  keys and the index, as JSON bytes, under the key ``@index``.

Loading checks each file's checksum, takes index entries only as plain file names (never paths)
and never reads outside the model directory (symbolic links included).

Paddle's format (``fluidist.paddle_format``): a binary ProgramDesc for programs, LoDTensor files
named after their variables or one combined file in sorted name order, and for ``save`` /
``load`` pickled dicts of arrays, read through an unpickler that runs nothing. See
``docs/paddle_formats.md``.

Saves are all-or-nothing (``durable``): a directory is written beside the old one and swapped in
whole, a file under a temporary name and renamed onto it, so a save killed at any point, failing on a
full disk or racing another save of the same path leaves the previous checkpoint or the new one, whole.

An inference model is the pruned program in ``__model__`` (fluidist: its JSON form with two extra
keys, ``feed_target_names`` and ``fetch_target_names``; Paddle: a ProgramDesc with ``feed`` and
``fetch`` ops), plus its persistables.
"""
from ..paddle_format.tensor_stream import PaddleFormatError  # noqa: F401
from .common import (FORMAT_VERSION, FORMATS, INDEX_FILE, INDEX_KEY, MODEL_FILE, SAVE_FORMAT_ENV,  # noqa: F401
                     file_stem, get_program_parameter, get_program_persistable_vars, is_belong_to_optimizer,
                     is_parameter, is_persistable)
from .inference import load_inference_model, save_inference_model  # noqa: F401
from .state import load, load_program_state, save, set_program_state  # noqa: F401
from .paddle_helpers import (append_fetch_ops, get_parameter_value, get_parameter_value_by_name,  # noqa: F401
                             prepend_feed_ops)
from .vars import load_params, load_persistables, load_vars, save_params, save_persistables, save_vars  # noqa: F401

__all__ = ["save_vars", "save_params", "save_persistables", "load_vars", "load_params",
           "load_persistables", "save_inference_model", "load_inference_model", "save", "load",
           "load_program_state", "set_program_state", "is_parameter", "is_persistable",
           "is_belong_to_optimizer", "get_program_parameter", "get_program_persistable_vars",
           "PaddleFormatError"]


# ---------------------------------------------------------------- readers (Paddle's fluid.io exports them too)
from ..reader import (ComposeNotAligned, DataLoader, PyReader, batch, buffered, cache, chain, compose,  # noqa: E402,F401
                     default_collate_fn, firstn, map_readers, multiprocess_reader, shuffle, xmap_readers)

__all__ += ["batch", "DataLoader", "PyReader", "default_collate_fn", "cache", "map_readers", "buffered", "compose",
            "chain", "shuffle", "ComposeNotAligned", "firstn", "xmap_readers", "multiprocess_reader"]
from ..dataloader import BatchSampler, Dataset  # noqa: E402  (Paddle 1.8's fluid.io has its dataloader's names)
__all__ += ["Dataset", "BatchSampler"]
