"""What the save and load paths share: the format constants, Paddle's variable predicates,
selection of variables, reading a scope, file names, checksums and the index."""
from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import urllib.parse
import zipfile

import numpy as np

from .. import bounded_json
from . import durable
from ..device.places import to_host
from ..core.tensor import SelectedRows
from ..framework.dtypes import VarType
from ..framework.program import Parameter, Program, Variable, default_main_program

_logger = logging.getLogger("fluidist.io")

INDEX_FILE = "__index__.json"
UNCHECKED_ENV = "FLUIDIST_LOAD_UNCHECKED"
MAX_INDEX_BYTES = 1 << 28
INDEX_KEY = "@index"
MODEL_FILE = "__model__"
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
FORMATS = ("fluidist", "paddle")
SAVE_FORMAT_ENV = "FLUIDIST_SAVE_FORMAT"
_NOT_SAVED_TYPES = (VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.RAW, VarType.STEP_SCOPES, VarType.READER)
_ZIP_MAGIC = b"PK\x03\x04"


# ---------------------------------------------------------------- predicates (Paddle's names)
class VarMismatchError(ValueError, RuntimeError):
    """A loaded value whose shape or dtype is not the one the program declares. A ValueError, and a
    RuntimeError as well: the type Paddle 1.8's ``load_vars`` raises for a parameter's shape."""


def is_parameter(var: Variable) -> bool:
    """Whether ``var`` is a Parameter (what ``save_params`` saves).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.layers.fc(x, size=1)
        >>> [v.name for v in fluid.default_main_program().list_vars() if fluid.io.is_parameter(v)]
        ['fc_0.w_0', 'fc_0.b_0']
    """
    return isinstance(var, Parameter)


def is_persistable(var: Variable) -> bool:
    """Whether ``var`` outlives a run and is saved by ``save_persistables`` (persistable, and not a
    feed / fetch / reader / step-scope variable)."""
    return bool(var.persistable) and var.type not in _NOT_SAVED_TYPES


def is_belong_to_optimizer(var: Variable) -> bool:
    """Persistable and neither a Parameter nor a fed variable: what ``.pdopt`` holds."""
    return not (isinstance(var, Parameter) or var.need_check_feed) and is_persistable(var)


def get_program_parameter(program: Program) -> list:
    """The Parameters of ``program`` (each once)."""
    return [v for v in _unique_vars(program.list_vars()) if is_parameter(v)]


def get_program_persistable_vars(program: Program) -> list:
    """The persistable variables of ``program`` (each once; see ``is_persistable``)."""
    return [v for v in _unique_vars(program.list_vars()) if is_persistable(v)]


# ---------------------------------------------------------------- helpers
def file_stem(name: str) -> str:
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
    from ..executor.compiler import CompiledProgram
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


def _write_bytes(path, blob):
    """Replace ``path`` whole (``durable.write_file``: a temporary name of this process, flushed, renamed)."""
    durable.write_file(path, blob)


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
            d = bounded_json.loads(f.read(), path, MAX_INDEX_BYTES, 8)
        except bounded_json.JSONBoundsError as e:
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
