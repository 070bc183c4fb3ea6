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
  of every file (format 2; format 1 indexes, without checksums, are still read). A SelectedRows
  value is ``<stem>@rows.npy`` and ``<stem>@value.npy`` (``@`` never occurs in a stem).
* single-file mode (``filename=``): one ``.npz`` archive holding the same arrays under the stems as
  keys and the index, as JSON bytes, under the key ``@index``.

Loading checks each file's checksum, takes index entries only as plain file names (never paths)
and never reads outside the model directory (symbolic links included).

Paddle's format (``fluidist.paddle_format``): a binary ProgramDesc for programs, LoDTensor files
named after their variables or one combined file in sorted name order, and for ``save`` /
``load`` pickled dicts of arrays, read through an unpickler that runs nothing. See
``docs/paddle_formats.md``.

An inference model is the pruned program in ``__model__`` (fluidist: its JSON form with two extra
keys, ``feed_target_names`` and ``fetch_target_names``; Paddle: a ProgramDesc with ``feed`` and
``fetch`` ops), plus its persistables.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import urllib.parse
import warnings
import zipfile
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .core.place import CPUPlace, cupy_module, to_host
from .core.scope import global_scope
from .core.tensor import SelectedRows
from .framework.dtypes import VarType
from .framework.graph import ops_needed_for
from .framework.program import Parameter, Program, Variable, default_main_program
from .paddle_format import files as paddle_files
from .paddle_format import program_desc as paddle_program
from .paddle_format import safe_pickle
from .paddle_format.tensor_stream import PaddleFormatError

if TYPE_CHECKING:  # for the annotations only
    from .core.scope import Scope
    from .executor.executor import Executor

__all__ = ["save_vars", "save_params", "save_persistables", "load_vars", "load_params",
           "load_persistables", "save_inference_model", "load_inference_model", "save", "load",
           "load_program_state", "set_program_state", "is_parameter", "is_persistable",
           "is_belong_to_optimizer", "get_program_parameter", "get_program_persistable_vars",
           "PaddleFormatError"]

_logger = logging.getLogger(__name__)

INDEX_FILE = "__index__.json"
INDEX_KEY = "@index"
MODEL_FILE = "__model__"
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
FORMATS = ("fluidist", "paddle")
SAVE_FORMAT_ENV = "FLUIDIST_SAVE_FORMAT"
_NOT_SAVED_TYPES = (VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.RAW, VarType.STEP_SCOPES, VarType.READER)
_ZIP_MAGIC = b"PK\x03\x04"


# ---------------------------------------------------------------- predicates (Paddle's names)
def is_parameter(var):
    return isinstance(var, Parameter)


def is_persistable(var):
    return bool(var.persistable) and var.type not in _NOT_SAVED_TYPES


def is_belong_to_optimizer(var):
    """Persistable and neither a Parameter nor a fed variable: what ``.pdopt`` holds."""
    return not (isinstance(var, Parameter) or var.need_check_feed) and is_persistable(var)


def get_program_parameter(program):
    return [v for v in _unique_vars(program.list_vars()) if is_parameter(v)]


def get_program_persistable_vars(program):
    return [v for v in _unique_vars(program.list_vars()) if is_persistable(v)]


# ---------------------------------------------------------------- helpers
def file_stem(name):
    """A file-name-safe, collision-free stem for a variable name (percent-encoding; long names
    are cut and given a hash, marked by ``@`` which encoding never produces)."""
    stem = urllib.parse.quote(name, safe="")
    if len(stem) > 200:
        stem = stem[:150] + "@" + hashlib.sha1(name.encode("utf-8")).hexdigest()
    return stem


def _save_format(format):
    fmt = format if format is not None else (os.environ.get(SAVE_FORMAT_ENV) or "fluidist")
    if fmt not in FORMATS:
        raise ValueError("format must be one of %s, got %r%s" % (FORMATS, fmt, "" if format is not None else
                                                                   " (from %s)" % SAVE_FORMAT_ENV))
    return fmt


def _sha256(blob):
    return hashlib.sha256(blob).hexdigest()


def _unique_vars(vs):
    seen, out = set(), []
    for v in vs:
        if v.name not in seen:
            seen.add(v.name)
            out.append(v)
    return out


def _as_program(main_program):
    if main_program is None:
        return default_main_program()
    from .executor.compiler import CompiledProgram
    if isinstance(main_program, CompiledProgram):
        main_program = main_program._program
    if not isinstance(main_program, Program):
        raise TypeError("main_program must be a Program or CompiledProgram, got %r"
                        % type(main_program).__name__)
    return main_program


def _select(main_program, vars, predicate):
    """``(name, declared Variable or None)`` pairs to save or load, in program order, no repeats."""
    if vars is None:
        program = _as_program(main_program)
        chosen = [v for v in program.list_vars() if predicate is None or predicate(v)]
        return [(v.name, v) for v in _unique_vars(chosen)]
    if isinstance(vars, (Variable, str)):
        vars = [vars]
    program = _as_program(main_program) if main_program is not None else None
    out, seen = [], set()
    for v in vars:
        if isinstance(v, Variable):
            name, decl = v.name, v
        elif isinstance(v, str):
            name = v
            decl = program.global_block()._find_var_recursive(v) if program is not None else None
        else:
            raise TypeError("vars must hold Variables or variable names, got %r" % type(v).__name__)
        if name not in seen:
            seen.add(name)
            out.append((name, decl))
    return out


def _host_array(name, value):
    arr = np.asarray(to_host(value))
    if arr.dtype.hasobject:
        raise TypeError("variable %r holds a value of dtype object, which cannot be saved" % name)
    return arr


def _read_scope(scope, selected):
    """``(name, host value, lod)`` for each selected variable, read from ``scope``."""
    out = []
    for name, _ in selected:
        value = scope._find_value(name)
        if value is None:
            raise ValueError("cannot save variable %r: it has no value in the scope "
                             "(run the startup program first, or leave it out)" % name)
        if isinstance(value, SelectedRows):
            if value.value is None:
                raise ValueError("cannot save variable %r: its SelectedRows holds no value" % name)
            rows = np.zeros((0,), np.int64) if value.rows is None else _host_array(name, value.rows)
            out.append((name, SelectedRows(rows.astype(np.int64, copy=False), _host_array(name, value.value),
                                           value.height), None))
        else:
            out.append((name, _host_array(name, value),
                        [[int(o) for o in level] for level in scope._find_lod(name)]))
    return out


def _own_arrays(values):
    """The arrays (by stem) and the index entries of fluidist's format for ``values``."""
    arrays, index = {}, {}
    for name, value, lod in values:
        stem = file_stem(name)
        if isinstance(value, SelectedRows):
            arrays[stem + "@rows"] = value.rows
            arrays[stem + "@value"] = value.value
            index[name] = {"kind": "selected_rows", "stem": stem, "height": int(value.height)}
        else:
            arrays[stem] = value
            index[name] = {"kind": "tensor", "stem": stem, "dtype": value.dtype.name,
                           "shape": list(value.shape), "lod": lod}
    return arrays, index


def _atomic_write(path, write):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def _write_bytes(path, blob):
    _atomic_write(path, lambda f: f.write(blob))


def _npy_bytes(arr):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


def _npz_bytes(members):
    """An ``.npz`` archive of ready ``.npy`` bytes, written by hand: ``np.savez(f, **arrays)``
    would clash with its own keyword arguments for variables named ``file`` or ``allow_pickle``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for member, blob in members.items():
            with zf.open(member, "w", force_zip64=True) as f:
                f.write(blob)
    return buf.getvalue()


def _parse_index(d, where):
    if not isinstance(d, dict) or d.get("fluidist_vars") not in _READABLE_VERSIONS:
        raise ValueError("%s is not a fluidist variable index of format %s" % (where, _READABLE_VERSIONS))
    entries, files = d.get("vars"), d.get("files")
    if not isinstance(entries, dict) or (d["fluidist_vars"] >= 2 and not isinstance(files, dict)):
        raise ValueError("%s is not a valid fluidist variable index: no vars/files tables" % where)
    return entries, (files if d["fluidist_vars"] >= 2 else None)


def _read_index_file(path):
    with open(path, "r") as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError("%s is not a valid fluidist variable index: %s" % (path, e))
    return _parse_index(d, path)


def _index_text(entries, files):
    return json.dumps({"fluidist_vars": FORMAT_VERSION, "vars": entries, "files": files},
                      indent=1, sort_keys=True)


def _plain_file_name(name, where):
    """Index entries name files, never paths: no separators, no ``.``/``..``, nothing absolute."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\x00" in name or os.path.isabs(name)):
        raise ValueError("%s: index entry %r is not a plain file name; refusing to read it" % (where, name))
    return name


# ---------------------------------------------------------------- save
def _save_own(dirname, values, filename, extra_files=None):
    arrays, index = _own_arrays(values)
    sums = dict(extra_files or {})
    if filename is not None:
        members = {stem + ".npy": _npy_bytes(arr) for stem, arr in arrays.items()}
        sums.update({member: _sha256(blob) for member, blob in members.items()})
        members[INDEX_KEY + ".npy"] = _npy_bytes(np.frombuffer(
            _index_text(index, sums).encode("utf-8"), dtype=np.uint8))
        _write_bytes(os.path.join(dirname, filename), _npz_bytes(members))
        return
    for stem, arr in arrays.items():  # one file's bytes in memory at a time
        blob = _npy_bytes(arr)
        sums[stem + ".npy"] = _sha256(blob)
        _write_bytes(os.path.join(dirname, stem + ".npy"), blob)
    index_path = os.path.join(dirname, INDEX_FILE)
    entries, files = {}, {}
    if os.path.exists(index_path):
        entries, old_files = _read_index_file(index_path)
        files = dict(old_files or {})
    entries.update(index)
    files.update(sums)
    _write_bytes(index_path, _index_text(entries, files).encode("utf-8"))


def _save(executor, dirname, main_program, vars, predicate, filename, scope, format, extra_files=None):
    fmt = _save_format(format)
    scope = scope if scope is not None else global_scope()
    selected = _select(main_program, vars, predicate)
    if fmt == "paddle":
        selected = [(n, d) for n, d in selected if d is None or d.type != VarType.RAW]
    values = _read_scope(scope, selected)
    os.makedirs(dirname, exist_ok=True)
    if fmt == "paddle":
        paddle_files.save_files(dirname, values, filename, _write_bytes)
    else:
        _save_own(dirname, values, filename, extra_files)


def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None,
              format=None):
    """Save ``vars`` (or the variables of ``main_program`` that ``predicate`` accepts) from the scope.

    fluidist's format: without ``filename`` each variable becomes ``dirname/<stem>.npy`` and
    ``__index__.json`` is updated (entries of earlier saves into the same directory are kept); with
    ``filename`` all go into the ``.npz`` archive ``dirname/filename``. ``format="paddle"``: Paddle's
    LoDTensor files, ``dirname/<variable name>`` each, or all in ``dirname/filename``.
    """
    _save(executor, dirname, main_program, vars, predicate, filename, scope, format)


def save_params(executor, dirname, main_program=None, filename=None, scope=None, format=None):
    """Save the Parameters of ``main_program`` (not optimizer accumulators or the learning rate)."""
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename, scope=scope,
              format=format)


def save_persistables(executor: Executor, dirname: str, main_program: Program | None = None,
                      filename: str | None = None, scope: Scope | None = None, format: str | None = None) -> None:
    """Save every persistable variable of ``main_program``: parameters, accumulators, LR, counters."""
    save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename, scope=scope,
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
            d = json.loads(bytes(raw).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
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
    if files is None or not indexed:
        return
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
        raise ValueError("variable %r from %s has dtype %s but the program declares %s"
                         % (name, where, arr.dtype.name, decl.dtype))
    if decl.shape is not None and decl.type != VarType.SELECTED_ROWS:
        want = tuple(decl.shape)
        ok = len(want) == arr.ndim and all(w < 0 or w == s for w, s in zip(want, arr.shape))
        if not ok:
            raise ValueError("shape mismatch for variable %r: the program declares %s but %s holds %s"
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
    if dirname is None or not os.path.isdir(dirname):
        raise FileNotFoundError("cannot load variables: there is no directory %s" % dirname)
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


def _commit(loaded, decls, scope, place, where):
    """Check every value against its declaration, then write them all into the scope."""
    for name, value, _ in loaded:
        if not isinstance(value, SelectedRows):
            _check_against_decl(name, decls.get(name), value, where)
    xp = place.xp
    with place.device_context():
        for name, value, lod in loaded:
            if isinstance(value, SelectedRows):
                if xp is not np:
                    value = SelectedRows(xp.asarray(value.rows), xp.asarray(value.value), value.height)
                scope.var(name).set_value(value)
            else:
                scope.var(name).set_value(value if xp is np else xp.asarray(value))
                scope.var(name).get_tensor().set_lod(lod or [])


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None):
    """Load ``vars`` (or the variables of ``main_program`` that ``predicate`` accepts) into the scope,
    on the executor's place, from fluidist's or Paddle's files (detected). Shapes and dtypes are
    checked against the program's declarations; a failed load leaves the scope as it was."""
    scope = scope if scope is not None else global_scope()
    place = getattr(executor, "place", None) or CPUPlace()
    selected = _select(main_program, vars, predicate)
    loaded = _read_vars(dirname, selected, filename)
    where = os.path.join(dirname, filename) if dirname is not None and filename is not None else dirname
    _commit(loaded, dict(selected), scope, place, where or "<params bytes>")


def load_params(executor, dirname, main_program=None, filename=None, scope=None):
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename, scope=scope)


def load_persistables(executor: Executor, dirname: str, main_program: Program | None = None,
                      filename: str | None = None, scope: Scope | None = None) -> None:
    """Load every persistable variable of ``main_program`` (saved by ``save_persistables``, by fluidist
    or by Paddle: the format is detected) into ``scope``."""
    load_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename, scope=scope)


# ---------------------------------------------------------------- inference models
def _prune_for_inference(program, feeds, targets):
    """Keep, in the (already test-mode) ``program``, only the ops and global variables that compute
    ``targets`` from ``feeds`` and persistables; raise if a needed value has no source."""
    block = program.global_block()
    keep = ops_needed_for(block, targets, feeds)
    block.ops = [block.ops[i] for i in keep]
    available = set(feeds)
    for op in block.ops:
        for n in op.input_arg_names:
            if n in available:
                continue
            v = block._find_var_recursive(n)
            if v is None or not v.persistable:
                raise ValueError("save_inference_model: op %r needs variable %r, which is neither fed "
                                 "(feeded_var_names=%s) nor persistable nor computed from them"
                                 % (op.type, n, list(feeds)))
        available.update(op.output_arg_names)
    for t in targets:
        if t not in available and not block._find_var_recursive(t).persistable:
            raise ValueError("save_inference_model: target %r is not computed from the feeds %s"
                             % (t, list(feeds)))
    used = set(feeds) | set(targets)
    for b in program.blocks:
        for op in b.ops:
            used.update(op.input_arg_names)
            used.update(op.output_arg_names)
    for name in list(block.vars):
        if name not in used:
            del block.vars[name]
    program._version += 1
    return program


def save_inference_model(dirname: str, feeded_var_names: Sequence[str], target_vars: Sequence[Variable],
                         executor: Executor, main_program: Program | None = None, model_filename: str | None = None,
                         params_filename: str | None = None, export_for_deployment: bool = True,
                         program_only: bool = False, scope: Scope | None = None,
                         format: str | None = None) -> list[str]:
    """Save the part of ``main_program`` that computes ``target_vars`` from ``feeded_var_names``
    (test mode: no backward/optimize ops, dropout/batch_norm switched to inference) and the
    persistables it reads. Returns the target names.

    With ``export_for_deployment=False`` the whole program is written, unpruned, to
    ``<model_filename>.main_program`` with all its persistables, as Paddle does. With
    ``format="paddle"`` the files are Paddle's (a ProgramDesc with feed and fetch ops, LoDTensor
    files), for Paddle 1.8 and Paddle Inference to load.
    """
    fmt = _save_format(format)
    if isinstance(feeded_var_names, str):
        feeded_var_names = [feeded_var_names]
    elif not isinstance(feeded_var_names, (list, tuple)) or not all(isinstance(n, str) for n in feeded_var_names):
        raise TypeError("feeded_var_names must be a list of variable names (str)")
    if isinstance(target_vars, Variable):
        target_vars = [target_vars]
    elif not isinstance(target_vars, (list, tuple)) or not target_vars or \
            not all(isinstance(v, Variable) for v in target_vars):
        raise TypeError("target_vars must be a Variable or a non-empty list of Variables")
    program = _as_program(main_program)
    gb = program.global_block()
    for n in feeded_var_names:
        if gb._find_var_recursive(n) is None:
            raise ValueError("feed variable %r is not a variable of the program" % n)
    targets = [v.name for v in target_vars]
    for n in targets:
        if gb._find_var_recursive(n) is None:
            raise ValueError("target variable %r is not a variable of the program" % n)
    os.makedirs(dirname, exist_ok=True)
    model_basename = os.path.basename(model_filename) if model_filename else MODEL_FILE
    params_filename = os.path.basename(params_filename) if params_filename else None
    if export_for_deployment:
        infer = _prune_for_inference(program.clone(for_test=True), list(feeded_var_names), targets)
        if fmt == "paddle":
            blob = paddle_program.write_program(infer, model_basename, list(feeded_var_names), targets)
        else:
            d = infer.to_dict()
            d["feed_target_names"] = list(feeded_var_names)
            d["fetch_target_names"] = targets
            blob = json.dumps(d).encode("utf-8")
    else:
        infer = program
        model_basename += ".main_program"
        blob = (paddle_program.write_program(program, model_basename) if fmt == "paddle"
                else program.to_json().encode("utf-8"))
    _write_bytes(os.path.join(dirname, model_basename), blob)
    if not program_only:
        _save(executor, dirname, infer, None, is_persistable, params_filename, scope, fmt,
              extra_files={model_basename: _sha256(blob)})
    return targets


def _model_checksum(dirname, model_basename, params_filename):
    """The SHA-256 a fluidist index records for the model file, if any."""
    try:
        if params_filename is not None:
            path = os.path.join(dirname, params_filename)
            if os.path.isfile(path) and _is_archive(path):
                src = _ArchiveSource(path, path)
                src.close()
                return src.files
            return None
        path = os.path.join(dirname, INDEX_FILE)
        return _read_index_file(path)[1] if os.path.exists(path) else None
    except ValueError:
        return None  # a bad index is reported when the parameters are read


def load_inference_model(dirname: str | None, executor: Executor, model_filename: str | bytes | None = None,
                         params_filename: str | bytes | None = None, pserver_endpoints: list[str] | None = None,
                         scope: Scope | None = None) -> list:
    """Load a model written by ``save_inference_model`` (fluidist's or Paddle's, detected): its
    parameters go into the scope.

    Returns ``[program, feed_target_names, fetch_targets]`` (fetch_targets are Variables of
    ``program``), ready for ``executor.run(program, feed={...}, fetch_list=fetch_targets)``. As in
    Paddle, ``dirname=None`` reads the model from memory: ``model_filename`` and ``params_filename``
    then hold the bytes of the program and of the combined parameters.
    """
    if dirname is None:
        if params_filename is None or model_filename is None:
            raise ValueError("with dirname=None, model_filename and params_filename must hold the bytes of the "
                             "program and of the parameters")
        blob, where = bytes(model_filename), "<model bytes>"
    else:
        if not os.path.isdir(dirname):
            raise ValueError("there is no directory named %r" % dirname)
        model_basename = os.path.basename(model_filename) if model_filename else MODEL_FILE
        params_filename = os.path.basename(params_filename) if params_filename else None
        where = os.path.join(dirname, model_basename)
        if not os.path.exists(where):
            raise FileNotFoundError("no inference model at %s (written by save_inference_model)" % where)
        with open(where, "rb") as f:
            blob = f.read()
        sums = _model_checksum(dirname, model_basename, params_filename)
        if sums is not None and model_basename in sums and sums[model_basename] != _sha256(blob):
            raise ValueError("%s is corrupt: its SHA-256 does not match the index" % where)
    if blob[:1] == b"{":
        try:
            d = json.loads(blob.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError("%s is not an inference model's JSON form: %s" % (where, e))
        if "feed_target_names" not in d or "fetch_target_names" not in d:
            raise ValueError("%s holds a program but no feed/fetch target names: it was not written by "
                             "save_inference_model" % where)
        program = Program.from_dict(d)
        feeds, fetches = list(d["feed_target_names"]), list(d["fetch_target_names"])
    elif paddle_program.is_program_desc(blob):
        program, feeds, fetches = paddle_program.read_program(blob, where)
    else:
        raise ValueError("%s is neither a fluidist inference model (JSON) nor a Paddle ProgramDesc" % where)
    load_persistables(executor, dirname, program, params_filename, scope=scope)
    if pserver_endpoints:
        for op in program.global_block().ops:
            if op.has_attr("epmap"):
                op._set_attr("epmap", list(pserver_endpoints))
    gb = program.global_block()
    for n in fetches:
        if gb._find_var_recursive(n) is None:
            raise ValueError("%s: fetch target %r is not a variable of the program" % (where, n))
    return [program, feeds, [gb._var_recursive(n) for n in fetches]]


# ---------------------------------------------------------------- fluid.save / fluid.load
def _prefix(model_path):
    for suffix in (".pdparams", ".pdopt", ".pdmodel"):
        if model_path.endswith(suffix):
            return model_path[:-len(suffix)]
    return model_path


def save(program, model_path, scope=None, format=None):
    """``model_path + .pdparams`` (the Parameters), ``.pdopt`` (the optimizer's variables) and
    ``.pdmodel`` (the program), as Paddle 1.8's ``fluid.save``.

    fluidist's format: ``.npz`` archives (``.pdopt`` only when there are optimizer variables) and the
    program's JSON form. ``format="paddle"``: Paddle's pickled dicts of arrays (written opcode by
    opcode, see ``paddle_format.safe_pickle``) and a ProgramDesc, for Paddle 1.8's ``fluid.load``.
    """
    fmt = _save_format(format)
    program = _as_program(program)
    if not os.path.basename(model_path):
        raise ValueError("model_path %r must be dirname/file_prefix, not a directory" % model_path)
    dirname, base = os.path.split(os.path.abspath(model_path))
    os.makedirs(dirname, exist_ok=True)
    scope = scope if scope is not None else global_scope()
    params = [(v.name, v) for v in get_program_parameter(program)]
    opt = [(v.name, v) for v in _unique_vars(program.list_vars()) if is_belong_to_optimizer(v)]
    if fmt == "paddle":
        for suffix, selected in ((".pdparams", params), (".pdopt", opt)):
            state = {name: _dense(value) for name, value, _ in _read_scope(scope, selected)}
            _write_bytes(os.path.join(dirname, base + suffix), safe_pickle.dumps_state(state))
        _write_bytes(os.path.join(dirname, base + ".pdmodel"), paddle_program.write_program(program, base))
        return
    _save_own(dirname, _read_scope(scope, params), base + ".pdparams")
    if opt:
        _save_own(dirname, _read_scope(scope, opt), base + ".pdopt")
    _write_bytes(os.path.join(dirname, base + ".pdmodel"), program.to_json().encode("utf-8"))


def _read_state_file(path, names=None):
    """``{name: array}`` from a ``.pdparams`` / ``.pdopt`` file of either format (detected)."""
    if _is_archive(path):
        src = _ArchiveSource(path, path)
        wanted = names if names is not None else list(src.index)
        out = {}
        try:
            for n in wanted:
                if n in src.index:
                    value, _ = _read_own(src, n, None)
                    out[n] = _dense(value)
        finally:
            src.close()
        return out
    state = safe_pickle.load_state_file(path)
    for k, v in state.items():
        if not isinstance(k, str) or not isinstance(v, np.ndarray):
            raise PaddleFormatError("%s: entry %r is a %s, not a named array" % (path, k, type(v).__name__))
    return state


def _state_values(path, selected):
    state = _read_state_file(path, [n for n, _ in selected])
    out = []
    for name, decl in selected:
        if name not in state:
            raise ValueError("cannot find variable %r in %s" % (name, path))
        out.append((name, state[name], []))
    return out


def load(program, model_path, executor=None, var_list=None, scope=None):
    """Load what ``save`` wrote (either format, detected) into the scope, as Paddle 1.8's
    ``fluid.load``: the Parameters from ``.pdparams``, the optimizer's variables from ``.pdopt``
    (which must exist when the program has any). Without ``.pdparams``, ``model_path`` is read as
    a directory of ``save_persistables`` / ``save_vars`` files, or, with ``var_list``, as one
    combined file. Shapes and dtypes are checked; a failed load leaves the scope as it was."""
    program = _as_program(program)
    scope = scope if scope is not None else global_scope()
    place = getattr(executor, "place", None) or CPUPlace()
    prefix = _prefix(model_path)
    params_path = prefix + ".pdparams"
    if not os.path.exists(params_path):
        _logger.warning("%s not found, trying to load files saved with save_params / save_persistables / "
                        "save_vars", params_path)
        if executor is None:
            raise ValueError("executor is required when loading files saved with save_params, "
                             "save_persistables or save_vars")
        if os.path.isdir(model_path):
            src = _DirSource(model_path)
            chosen = [v for v in _unique_vars(program.list_vars()) if is_persistable(v) and (
                src.has(v.name) or os.path.isfile(os.path.join(model_path, v.name)))]
            load_vars(executor, model_path, program, vars=chosen, scope=scope)
            return
        if os.path.isfile(model_path):
            if var_list is None:
                raise ValueError("var_list is required when loading a single file saved with save_params, "
                                 "save_persistables or save_vars")
            names = {v.name for v in program.list_vars()}
            for v in var_list:
                if v.name not in names:
                    raise LookupError("variable %r of var_list is not in the program" % v.name)
            dirname, filename = os.path.split(model_path)
            load_vars(executor, dirname, program, vars=var_list, filename=filename, scope=scope)
            return
        raise FileNotFoundError("cannot load %s: neither %s nor a directory or file of that name exists"
                                % (model_path, params_path))
    params = [(v.name, v) for v in get_program_parameter(program)]
    loaded = _state_values(params_path, params)
    opt = [(v.name, v) for v in _unique_vars(program.list_vars()) if is_belong_to_optimizer(v)]
    if opt:
        opt_path = prefix + ".pdopt"
        if not os.path.exists(opt_path):
            raise FileNotFoundError("the program has optimizer variables (%s...) but %s does not exist"
                                    % (opt[0][0], opt_path))
        loaded += _state_values(opt_path, opt)
    _commit(loaded, dict(params + opt), scope, place, prefix)


def load_program_state(model_path, var_list=None):
    """``{name: ndarray}`` of what ``save`` wrote (``.pdparams`` merged with ``.pdopt``), or, as
    Paddle does without ``.pdparams``, of a directory of variable files (every file, by its name)
    or of one combined file (the variables of ``var_list``)."""
    prefix = _prefix(model_path)
    params_path = prefix + ".pdparams"
    if os.path.exists(params_path):
        state = _read_state_file(params_path)
        if os.path.exists(prefix + ".pdopt"):
            state.update(_read_state_file(prefix + ".pdopt"))
        return state
    _logger.warning("%s not found, trying to load files saved with save_params / save_persistables / "
                    "save_vars", params_path)
    if os.path.isfile(model_path):
        if var_list is None:
            raise ValueError("var_list can not be None when model_path is a file")
        dirname, filename = os.path.split(model_path)
        selected = [(v.name, v) for v in var_list]
        return {n: _dense(v) for n, v, _ in _read_vars(dirname, selected, filename)}
    if not os.path.isdir(model_path):
        raise FileNotFoundError("cannot load %s: neither %s nor a directory or file of that name exists"
                                % (model_path, params_path))
    if var_list is not None:
        selected = [(v.name, v) for v in var_list]
    elif os.path.exists(os.path.join(model_path, INDEX_FILE)):
        selected = [(n, None) for n in _DirSource(model_path).index]
    else:
        selected = []
        for root, _, files in os.walk(model_path):
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(root, f), model_path).replace(os.sep, "/")
                selected.append((rel[:-4] if rel.endswith(".npy") else rel, None))
        selected = [(urllib.parse.unquote(n), d) if n.endswith(".npy") else (n, d) for n, d in selected]
    return {n: _dense(v) for n, v, _ in _read_vars(model_path, selected, None)}


def _dense(value):
    return value.to_dense(np) if isinstance(value, SelectedRows) else value


def set_program_state(program, state_dict):
    """Set the persistable variables of ``program`` found in ``state_dict`` (``{name: ndarray}``), in
    the global scope, where the startup program must have made them: each must match the shape and
    dtype it has there. Keys the program does not use are warned about. Everything is checked
    before anything is set."""
    program = _as_program(program)
    scope = global_scope()
    todo = []
    for v in get_program_persistable_vars(program):
        if v.name not in state_dict:
            continue
        current = scope._find_value(v.name)
        if current is None:
            raise ValueError("variable %r has no value in the scope: run the startup program before "
                             "set_program_state" % v.name)
        new = np.asarray(state_dict[v.name])
        cur = to_host(current.value if isinstance(current, SelectedRows) else current)
        if tuple(new.shape) != tuple(np.shape(cur)):
            raise ValueError("shape mismatch for variable %r: the program holds %s, the state %s"
                             % (v.name, list(np.shape(cur)), list(new.shape)))
        if new.dtype != np.asarray(cur).dtype:
            raise ValueError("dtype mismatch for variable %r: the program holds %s, the state %s"
                             % (v.name, np.asarray(cur).dtype.name, new.dtype.name))
        todo.append((v.name, current, new))
    for name, current, new in todo:
        on_host = isinstance(current.value if isinstance(current, SelectedRows) else current, np.ndarray)
        scope.var(name).set_value(new.copy() if on_host else cupy_module().asarray(new))
    used = {n for n, _, _ in todo}
    unused = [k for k in state_dict if k not in used]
    if unused:
        warnings.warn("these entries of the state are not variables of the program and were not set: %s"
                      % " ".join(sorted(unused)))


# ---------------------------------------------------------------- readers (Paddle's fluid.io exports them too)
from .reader import (ComposeNotAligned, DataLoader, PyReader, batch, buffered, cache, chain, compose,  # noqa: E402,F401
                     default_collate_fn, firstn, map_readers, multiprocess_reader, shuffle, xmap_readers)

__all__ += ["batch", "DataLoader", "PyReader", "default_collate_fn", "cache", "map_readers", "buffered", "compose",
            "chain", "shuffle", "ComposeNotAligned", "firstn", "xmap_readers", "multiprocess_reader"]
