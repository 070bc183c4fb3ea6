"""``save_vars`` / ``load_vars`` and their Paddle names (params, persistables), in fluidist's format
(directory or single ``.npz`` file) or Paddle's."""
from __future__ import annotations

import io
import os
import zipfile
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import numpy as np

from .. import bounded_json
from ..device.places import CPUPlace
from ..core.placement import to_place
from ..core.scope import global_scope
from ..core.tensor import SelectedRows
from ..framework import registry
from ..framework.dtypes import VarType
from ..framework.program import Program, Variable
from ..paddle_format import files as paddle_files
from . import distributed, durable, durable_dir

from .common import (INDEX_FILE, INDEX_KEY, MAX_INDEX_BYTES, UNCHECKED_ENV, _ZIP_MAGIC, VarMismatchError, _index_text, _npy_bytes,
                     _npz_bytes, _own_arrays, _parse_index, _plain_file_name, _read_index_file, _read_scope, _save_format, _select, _sha256,
                     _write_bytes, file_stem, is_parameter, is_persistable)

if TYPE_CHECKING:  # for the annotations only
    from ..core.scope import Scope
    from ..executor.executor import Executor


# ---------------------------------------------------------------- save
def _own_archive(values, extra_files=None):
    """The bytes of fluidist's ``.npz`` archive of ``values`` (the index records ``extra_files``' sums too)."""
    arrays, index = _own_arrays(values)
    sums = dict(extra_files or {})
    members = {stem + ".npy": _npy_bytes(arr) for stem, arr in arrays.items()}
    sums.update({member: _sha256(blob) for member, blob in members.items()})
    members[INDEX_KEY + ".npy"] = _npy_bytes(np.frombuffer(
        _index_text(index, sums).encode("utf-8"), dtype=np.uint8))
    return _npz_bytes(members)


def _save_own_dir(stage, values, extra_files=None):
    """One ``.npy`` per variable into the staged directory, and its index: the entries of earlier saves
    into the directory are kept, the new ones added or replaced."""
    arrays, index = _own_arrays(values)
    sums = dict(extra_files or {})
    for stem, arr in arrays.items():  # one file's bytes in memory at a time
        blob = _npy_bytes(arr)
        sums[stem + ".npy"] = _sha256(blob)
        stage.write(stem + ".npy", blob)
    index_path = os.path.join(stage.path, INDEX_FILE)
    entries, files = {}, {}
    if os.path.exists(index_path):
        entries, old_files = _read_index_file(index_path)
        files = dict(old_files or {})
    entries.update(index)
    files.update(sums)
    stage.write(INDEX_FILE, _index_text(entries, files).encode("utf-8"))


def _save_into(stage, values, filename, fmt, extra_files=None):
    """The files of one save into the staged directory ``stage`` (``durable_dir.StagedDirectory``)."""
    if filename is not None:
        stage.write(filename, paddle_files.combined_bytes(values) if fmt == "paddle"
                    else _own_archive(values, extra_files))
    elif fmt == "paddle":
        paddle_files.save_files(stage.path, values, None, lambda path, blob: stage.write(
            os.path.relpath(path, stage.path).replace(os.sep, "/"), blob))
    else:
        _save_own_dir(stage, values, extra_files)


def _save(executor, dirname, main_program, vars, predicate, filename, scope, format, extra_files=None, stage=None):
    """Read the selected values and save them: one file replaced whole (``filename``), or the directory
    replaced whole (``durable_dir.StagedDirectory``; ``stage``: one a caller already opened)."""
    fmt = _save_format(format)
    scope = scope if scope is not None else global_scope()
    selected = _select(main_program, vars, predicate)
    selected = [(n, d) for n, d in selected if d is None or d.type != VarType.RAW]    # Paddle skips RAW ones
    values = _read_scope(scope, selected)
    if stage is None and dirname is None and filename is None:   # Paddle's "save to memory": the bytes
        return paddle_files.combined_bytes(values) if fmt == "paddle" else _own_archive(values, extra_files)
    if stage is not None:
        _save_into(stage, values, filename, fmt, extra_files)
    elif filename is not None:
        os.makedirs(dirname, exist_ok=True)
        _write_bytes(os.path.join(dirname, filename), paddle_files.combined_bytes(values) if fmt == "paddle"
                     else _own_archive(values, extra_files))
    else:
        with durable_dir.StagedDirectory(dirname) as staged:
            _save_into(staged, values, None, fmt, extra_files)


def save_vars(executor: Executor, dirname: Optional[str], main_program: Optional[Program] = None,
              vars: Optional[Sequence[Variable]] = None, predicate: Optional[Callable[[Variable], bool]] = None,
              filename: Optional[str] = None, scope: Optional[Scope] = None,
              format: Optional[str] = None) -> Optional[bytes]:
    """Save ``vars`` (or the variables of ``main_program`` that ``predicate`` accepts) from the scope.

    The directory (or the one file) is replaced whole (``io.durable``): a save killed at any point,
    failing on a full disk or racing another save of it leaves the previous checkpoint or the new one.

    fluidist's format: without ``filename`` each variable becomes ``dirname/<stem>.npy`` and
    ``__index__.json`` is updated (entries of earlier saves into the same directory are kept); with
    ``filename`` all go into the ``.npz`` archive ``dirname/filename``. ``format="paddle"``: Paddle's
    LoDTensor files, ``dirname/<variable name>`` each, or all in ``dirname/filename``. With
    ``dirname=None`` and ``filename=None`` nothing is written: the one-file form's bytes are returned
    (Paddle's "save to memory"), which ``load_vars(exe, None, ..., filename=those_bytes)`` and
    ``load_inference_model(None, ...)`` read.

    Args:
        executor: the Executor (its place says where the values are).
        dirname: the folder to write (made if missing); None with ``filename=None``: return the bytes.
        main_program: the program whose variables ``predicate`` selects (default: the default main program).
        vars: the variables to save; when given, ``predicate`` is not used.
        predicate: ``predicate(var) -> bool`` selects variables of ``main_program``.
        filename: one file for all variables instead of one file each.
        scope: where the values are (default: the global scope).
        format: ``None`` / ``"fluidist"`` or ``"paddle"`` (default from ``FLUIDIST_SAVE_FORMAT``).

    Examples:
        >>> import tempfile
        >>> main, startup = fluid.Program(), fluid.Program()
        >>> with fluid.program_guard(main, startup):
        ...     w = fluid.layers.create_parameter(shape=[2, 2], dtype="float32", name="w")
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(startup)
        >>> fluid.io.save_vars(exe, tempfile.mkdtemp(), main, vars=[w])
    """
    return _save(executor, dirname, main_program, vars, predicate, filename, scope, format)


def save_params(executor: Executor, dirname: Optional[str], main_program: Optional[Program] = None,
                filename: Optional[str] = None, scope: Optional[Scope] = None,
                format: Optional[str] = None) -> Optional[bytes]:
    """Save the Parameters of ``main_program`` (not optimizer accumulators or the learning rate); the
    arguments are ``save_vars``'s."""
    return save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename, scope=scope,
              format=format)


def save_persistables(executor: Executor, dirname: str | None, main_program: Program | None = None,
                      filename: str | None = None, scope: Scope | None = None,
                      format: str | None = None) -> bytes | None:
    """Save every persistable variable of ``main_program``: parameters, optimizer accumulators, the
    learning rate and counters; what a checkpoint needs to resume training. On a transpiled trainer
    program (Paddle's distributed save) the optimizer state the pservers hold is received from them
    and saved whole with the trainer's own variables (``io.distributed``).

    Args:
        executor: the Executor (its place says where the values are).
        dirname: the folder to write (made if missing).
        main_program: the program whose persistables are saved (default: the default main program).
        filename: one file for all variables instead of one file each.
        scope: where the values are (default: the global scope).
        format: ``None`` / ``"fluidist"`` or ``"paddle"`` (Paddle 1.8 can then load it).

    Examples:
        >>> import tempfile
        >>> main, startup = fluid.Program(), fluid.Program()
        >>> with fluid.program_guard(main, startup):
        ...     x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        ...     _ = fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(fluid.layers.fc(x, 1)))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(startup)
        >>> ckpt = tempfile.mkdtemp()
        >>> fluid.io.save_persistables(exe, ckpt, main)
        >>> fluid.io.load_persistables(exe, ckpt, main)
    """
    if distributed.placement(main_program) is not None and not distributed.is_pserver_program(main_program):
        return distributed.save_trainer_persistables(executor, dirname, main_program, filename, scope, save_vars,
                                                     format)
    return save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename, scope=scope,
                     format=format)


# ---------------------------------------------------------------- load: fluidist's format
class _DirSource:
    """A directory of ``.npy`` files, with or without ``__index__.json``."""

    def __init__(self, dirname):
        self.where = dirname
        path = os.path.join(dirname, INDEX_FILE)
        self.has_index = os.path.exists(path)
        self.index, self.files = _read_index_file(path) if self.has_index else ({}, None)

    def has(self, name):
        return name in self.index or os.path.isfile(os.path.join(self.where, file_stem(name) + ".npy"))

    def member(self, name, member):
        _plain_file_name(member, os.path.join(self.where, INDEX_FILE))
        path = os.path.join(self.where, member)
        paddle_files.inside(self.where, path)
        if not os.path.isfile(path):
            raise FileNotFoundError("cannot load variable %r: file %s does not exist" % (name, path))
        with open(path, "rb") as f:
            blob = f.read()
        _check_sum(self.files, member, blob, path, name, self.has_index)
        return _npy_from_bytes(blob, path, name)

    def close(self):
        pass


class _ArchiveSource:
    """A fluidist ``.npz`` archive (a path, or its bytes)."""

    def __init__(self, source, where):
        self.where = where
        try:
            self.zf = zipfile.ZipFile(io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source)
        except (zipfile.BadZipFile, OSError) as e:
            raise ValueError("%s is not a fluidist variables archive: %s" % (where, e))
        names = set(self.zf.namelist())
        if INDEX_KEY + ".npy" not in names:
            self.zf.close()
            raise ValueError("%s is not a fluidist variables archive (no %r entry)" % (where, INDEX_KEY))
        raw = _npy_from_bytes(self._raw(INDEX_KEY + ".npy"), where, INDEX_KEY)
        try:
            d = bounded_json.loads(bytes(raw), "its index", MAX_INDEX_BYTES, 8)
        except bounded_json.JSONBoundsError as e:
            raise ValueError("%s: its index cannot be read: %s" % (where, e))
        self.index, self.files = _parse_index(d, where)

    def _raw(self, member):
        try:
            return self.zf.read(member)
        except (zipfile.BadZipFile, OSError) as e:  # a bad CRC-32, a truncated archive
            raise ValueError("%s is corrupt: member %s cannot be read (%s)" % (self.where, member, e))

    def has(self, name):
        return name in self.index

    def member(self, name, member):
        if member not in self.zf.namelist():
            raise KeyError("cannot load variable %r: it is not in %s" % (name, self.where))
        blob = self._raw(member)
        _check_sum(self.files, member, blob, "%s[%s]" % (self.where, member), name, True)
        return _npy_from_bytes(blob, self.where, name)

    def close(self):
        self.zf.close()


def _check_sum(files, member, blob, where, name, indexed):
    """A file of fluidist's format is read only when an index vouches for its SHA-256: a deleted or
    format-1 index must not switch the check off (``FLUIDIST_LOAD_UNCHECKED=1`` reads such files anyway)."""
    if files is None or not indexed:
        if os.environ.get(UNCHECKED_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
            return
        raise ValueError("%s (variable %r) has no checksum to be checked against: %s; refusing to read what might be "
                         "corrupt (save it again, or set %s=1 to read it unchecked)"
                         % (where, name, "the index is of format 1, which records none" if indexed else
                            "the directory has no %s" % INDEX_FILE, UNCHECKED_ENV))
    want = files.get(member)
    if want is None:
        raise ValueError("%s (variable %r) is not recorded in the index: refusing a file it does not vouch for"
                         % (where, name))
    if _sha256(blob) != want:
        raise ValueError("%s (variable %r) is corrupt: its SHA-256 does not match the index" % (where, name))


def _npy_from_bytes(blob, where, name):
    try:
        return np.load(io.BytesIO(blob), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise ValueError("%s (variable %r) is not a readable NumPy file: %s" % (where, name, e))


def _read_own(src, name, decl):
    entry = src.index.get(name)
    if entry is None:
        if isinstance(src, _ArchiveSource):
            raise KeyError("cannot load variable %r: it is not in %s" % (name, src.where))
        # a plain ``<stem>.npy``; with a format-2 index it must still be one the index vouches for
        entry = {"kind": "tensor", "stem": file_stem(name)}
    if not isinstance(entry, dict) or entry.get("kind") not in ("tensor", "selected_rows") \
            or not isinstance(entry.get("stem"), str):
        raise ValueError("%s: the index entry of variable %r is malformed" % (src.where, name))
    stem = entry["stem"]
    if entry["kind"] == "selected_rows":
        rows = src.member(name, _plain_file_name(stem + "@rows.npy", src.where))
        value = src.member(name, _plain_file_name(stem + "@value.npy", src.where))
        return SelectedRows(rows, value, int(entry["height"])), None
    return src.member(name, _plain_file_name(stem + ".npy", src.where)), entry.get("lod") or []


# ---------------------------------------------------------------- load
def _check_against_decl(name, decl, arr, where):
    if decl is None:
        return
    if decl.dtype is not None and arr.dtype.name != decl.dtype:
        raise VarMismatchError("variable %r from %s has dtype %s but the program declares %s"
                               % (name, where, arr.dtype.name, decl.dtype))
    if decl.shape is not None and decl.type != VarType.SELECTED_ROWS:
        want = tuple(decl.shape)
        ok = len(want) == arr.ndim and all(w < 0 or w == s for w, s in zip(want, arr.shape))
        if not ok:
            raise VarMismatchError("shape mismatch for variable %r: the program declares %s but %s holds %s"
                                   % (name, list(want), where, list(arr.shape)))


def _is_archive(path):
    with open(path, "rb") as f:
        return f.read(4) == _ZIP_MAGIC


def _read_vars(dirname, selected, filename):
    """``(name, value, lod)`` for each selected variable, from whichever format the files are in."""
    if filename is not None:
        if dirname is None:  # Paddle's "from memory": filename holds the bytes
            blob = bytes(filename)
            if blob[:4] == _ZIP_MAGIC:
                return _read_own_all(_ArchiveSource(blob, "<params bytes>"), selected)
            return paddle_files.read_combined(blob, "<params bytes>", selected)
        path = os.path.join(dirname, filename)
        if not os.path.isfile(path):
            raise FileNotFoundError("cannot load variables: file %s does not exist" % path)
        if _is_archive(path):
            return _read_own_all(_ArchiveSource(path, path), selected)
        return paddle_files.read_combined(path, path, selected)
    if dirname is None:
        raise ValueError("load_vars: dirname and filename cannot both be None (with dirname=None, filename holds "
                         "the bytes save_vars(exe, None, ...) returned)")
    durable.recover(dirname)
    if not os.path.isdir(dirname):
        raise FileNotFoundError("cannot load variables: there is no directory %s" % dirname)
    return durable_dir.read_consistently(dirname, lambda: _read_dir(dirname, selected))


def _read_dir(dirname, selected):
    src = _DirSource(dirname)
    out = []
    for name, decl in selected:
        if src.has(name):
            value, lod = _read_own(src, name, decl)
            out.append((name, value, lod))
            continue
        paddle_path = paddle_files.var_path(dirname, name)
        if not os.path.isfile(paddle_path):
            raise FileNotFoundError("cannot load variable %r: neither %s nor %s exists"
                                    % (name, os.path.join(dirname, file_stem(name) + ".npy"), paddle_path))
        out.extend(paddle_files.read_dir(dirname, [(name, decl)]))
    return out


def _read_own_all(src, selected):
    try:
        return [(name,) + tuple(_read_own(src, name, decl)) for name, decl in selected]
    finally:
        src.close()


def _kept_on_host(decls, place):
    """The declared variables a device place leaves on the host (Adam's beta powers: see
    ``registry.host_scalar_names``), read off the programs that declare them."""
    if not place.is_device:
        return frozenset()
    programs = {id(d.block.program): d.block.program for d in decls.values() if getattr(d, "block", None) is not None}
    return frozenset().union(*(registry.host_scalar_names(p) for p in programs.values()))


def _commit(loaded, decls, scope, place, where):
    """Check every value against its declaration, then write them all into the scope: onto the
    executor's place, but for the values its plans keep on the host."""
    for name, value, _ in loaded:
        if not isinstance(value, SelectedRows):
            _check_against_decl(name, decls.get(name), value, where)
    on_host = _kept_on_host(decls, place)
    with place.device_context():
        for name, value, lod in loaded:       # onto the executor's place, through it
            stays = name in on_host and isinstance(value, np.ndarray)
            scope.var(name).set_value(value if stays else to_place(value, place))
            if not isinstance(value, SelectedRows):
                scope.var(name).get_tensor().set_lod(lod or [])


def load_vars(executor: Executor, dirname: Optional[str], main_program: Optional[Program] = None,
              vars: Optional[Sequence[Variable]] = None, predicate: Optional[Callable[[Variable], bool]] = None,
              filename: Optional[str | bytes] = None, scope: Optional[Scope] = None) -> None:
    """Load ``vars`` (or the variables of ``main_program`` that ``predicate`` accepts) into the scope.

    The files may be fluidist's or Paddle's (detected). Shapes and dtypes are checked against the
    program's declarations; a failed load leaves the scope as it was.

    Args:
        executor: the Executor (values go to its place).
        dirname: the folder that ``save_vars`` wrote.
        main_program: the program whose variables ``predicate`` selects (default: the default main program).
        vars: the variables to load; when given, ``predicate`` is not used.
        predicate: ``predicate(var) -> bool`` selects variables of ``main_program``.
        filename: the one file all variables were saved into, if they were.
        scope: where the values go (default: the global scope).
    """
    scope = scope if scope is not None else global_scope()
    place = getattr(executor, "place", None) or CPUPlace()
    selected = [(n, d) for n, d in _select(main_program, vars, predicate)
                if d is None or d.type != VarType.RAW]          # as in Paddle: RAW values are not loaded
    loaded = _read_vars(dirname, selected, filename)
    where = os.path.join(dirname, os.fsdecode(filename)) if dirname is not None and filename is not None else dirname
    _commit(loaded, dict(selected), scope, place, where or "<params bytes>")


def load_params(executor: Executor, dirname: Optional[str], main_program: Optional[Program] = None,
                filename: Optional[str | bytes] = None, scope: Optional[Scope] = None) -> None:
    """Load the Parameters of ``main_program``; the arguments are ``load_vars``'s."""
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename, scope=scope)


def load_persistables(executor: Executor, dirname: str | None, main_program: Program | None = None,
                      filename: str | bytes | None = None, scope: Scope | None = None) -> None:
    """Load every persistable variable of ``main_program`` into ``scope``.

    The files may be fluidist's or Paddle's (``save_persistables``'s, detected). On a transpiled pserver
    program (Paddle's distributed load) each variable the pserver holds a block of is read whole and
    its block kept (``io.distributed``).

    Args:
        executor: the Executor (values go to its place).
        dirname: the folder that ``save_persistables`` wrote.
        main_program: the program whose persistables are loaded (default: the default main program).
        filename: the one file all variables were saved into, if they were.
        scope: where the values go (default: the global scope).
    """
    if distributed.placement(main_program) is not None and distributed.is_pserver_program(main_program):
        distributed.load_pserver_persistables(executor, dirname, main_program, filename, scope, _read_vars, _commit)
        return
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename, scope=scope)
