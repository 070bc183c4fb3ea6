"""Paddle 1.x's file formats: ProgramDesc (``__model__``, ``.pdmodel``), LoDTensor / SelectedRows
files and combined parameter files, and ``.pdparams`` / ``.pdopt`` state files.

``fluidist.io`` detects these formats when loading and writes them on request
(``format="paddle"``); this package holds the readers and writers themselves. See
``docs/paddle_formats.md``.
"""
from .tensor_stream import PaddleFormatError  # noqa: F401
from .program_desc import (MissingOpsError, is_program_desc, read_program,  # noqa: F401
                           write_program)
from .safe_pickle import dumps_state, load_state_file, loads_state  # noqa: F401


def parse_from_string(binary_str):
    """A Program from the bytes of a Paddle ProgramDesc (``__model__``, ``.pdmodel``), as Paddle's
    ``Program.parse_from_string`` (which calls this: ``framework/desc_views.py``); its feed/fetch ops
    are left out (``fluid.io.load_inference_model`` returns their targets)."""
    return read_program(binary_str, "the ProgramDesc given to parse_from_string")[0]
