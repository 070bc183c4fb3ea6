"""Saving and loading variables and inference models, with Paddle 1.x ``fluid.io`` names.

Values are read from and written to a Scope (``global_scope()`` unless ``scope=`` is given); the
executor only says on which place loaded values should live.

The files are NumPy files and JSON, never pickle (``np.save``/``np.load`` with
``allow_pickle=False``), so loading a model cannot run code:

* directory mode: one ``<stem>.npy`` per variable, where ``<stem>`` is the variable name with every
  character outside ``[A-Za-z0-9_.-~]`` percent-encoded (names hold ``/``, ``@`` and ``.``), plus
  ``__index__.json`` mapping names to files and recording LoD and SelectedRows heights. A
  SelectedRows value is ``<stem>@rows.npy`` and ``<stem>@value.npy`` (``@`` never occurs in a stem).
* single-file mode (``filename=``): one ``.npz`` archive holding the same arrays under the stems as
  keys and the index, as JSON bytes, under the key ``@index``.

An inference model is the pruned program's JSON form (``Program.to_json``) in ``__model__``, with
two extra keys, ``feed_target_names`` and ``fetch_target_names``, plus its persistables.
"""
import hashlib
import json
import os
import urllib.parse
import zipfile

import numpy as np

from .core.place import CPUPlace, to_host
from .core.scope import global_scope
from .core.tensor import SelectedRows
from .framework.dtypes import VarType
from .framework.graph import ops_needed_for
from .framework.program import Parameter, Program, Variable, default_main_program


__all__ = ["save_vars", "save_params", "save_persistables", "load_vars", "load_params",
           "load_persistables", "save_inference_model", "load_inference_model", "save", "load",
           "is_parameter", "is_persistable", "get_program_parameter", "get_program_persistable_vars"]

INDEX_FILE = "__index__.json"
INDEX_KEY = "@index"
MODEL_FILE = "__model__"
FORMAT_VERSION = 1
_NOT_SAVED_TYPES = (VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.RAW, VarType.STEP_SCOPES, VarType.READER)


# ---------------------------------------------------------------- predicates (Paddle's names)
def is_parameter(var):
    return isinstance(var, Parameter)


def is_persistable(var):
    return bool(var.persistable) and var.type not in _NOT_SAVED_TYPES


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


def _collect(scope, selected):
    """The arrays to write and the index entries, read from ``scope``."""
    arrays, index = {}, {}
    for name, _ in selected:
        owner = scope._owner(name)
        value = owner.vals.get(name) if owner is not None else None
        if value is None:
            raise ValueError("cannot save variable %r: it has no value in the scope "
                             "(run the startup program first, or leave it out)" % name)
        stem = file_stem(name)
        if isinstance(value, SelectedRows):
            if value.value is None:
                raise ValueError("cannot save variable %r: its SelectedRows holds no value" % name)
            rows = np.zeros((0,), np.int64) if value.rows is None else _host_array(name, value.rows)
            arrays[stem + "@rows"] = rows.astype(np.int64, copy=False)
            arrays[stem + "@value"] = _host_array(name, value.value)
            index[name] = {"kind": "selected_rows", "stem": stem, "height": int(value.height)}
        else:
            arr = _host_array(name, value)
            arrays[stem] = arr
            index[name] = {"kind": "tensor", "stem": stem, "dtype": arr.dtype.name,
                           "shape": list(arr.shape),
                           "lod": [[int(o) for o in level] for level in scope._find_lod(name)]}
    return arrays, index


def _atomic_write(path, write):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def _write_npz(f, arrays):
    """An ``.npz`` archive written by hand: ``np.savez(f, **arrays)`` would clash with its own
    keyword arguments for variables named ``file`` or ``allow_pickle``, and may pickle."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, arr in arrays.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(arr), allow_pickle=False)


def _read_index_file(path):
    with open(path, "r") as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError("%s is not a valid fluidist variable index: %s" % (path, e))
    if d.get("fluidist_vars") != FORMAT_VERSION:
        raise ValueError("%s is not a fluidist variable index of format %d" % (path, FORMAT_VERSION))
    return d["vars"]


# ---------------------------------------------------------------- save
def save_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None):
    """Save ``vars`` (or the variables of ``main_program`` that ``predicate`` accepts) from the scope.

    Without ``filename`` each variable becomes ``dirname/<stem>.npy`` and ``__index__.json`` is
    updated (entries of earlier saves into the same directory are kept); with ``filename`` all go
    into the ``.npz`` archive ``dirname/filename``.
    """
    scope = scope if scope is not None else global_scope()
    selected = _select(main_program, vars, predicate)
    arrays, index = _collect(scope, selected)
    os.makedirs(dirname, exist_ok=True)
    if filename is not None:
        blob = json.dumps({"fluidist_vars": FORMAT_VERSION, "vars": index}).encode("utf-8")
        arrays[INDEX_KEY] = np.frombuffer(blob, dtype=np.uint8)
        _atomic_write(os.path.join(dirname, filename), lambda f: _write_npz(f, arrays))
        return
    for stem, arr in arrays.items():
        _atomic_write(os.path.join(dirname, stem + ".npy"), lambda f, a=arr: np.save(f, a, allow_pickle=False))
    index_path = os.path.join(dirname, INDEX_FILE)
    merged = _read_index_file(index_path) if os.path.exists(index_path) else {}
    merged.update(index)
    text = json.dumps({"fluidist_vars": FORMAT_VERSION, "vars": merged}, indent=1, sort_keys=True)
    _atomic_write(index_path, lambda f: f.write(text.encode("utf-8")))


def save_params(executor, dirname, main_program=None, filename=None, scope=None):
    """Save the Parameters of ``main_program`` (not optimizer accumulators or the learning rate)."""
    save_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename, scope=scope)


def save_persistables(executor, dirname, main_program=None, filename=None, scope=None):
    """Save every persistable variable of ``main_program``: parameters, accumulators, LR, counters."""
    save_vars(executor, dirname, main_program, predicate=is_persistable, filename=filename, scope=scope)


# ---------------------------------------------------------------- load
class _DirSource:
    def __init__(self, dirname):
        self.where = dirname
        path = os.path.join(dirname, INDEX_FILE)
        self.index = _read_index_file(path) if os.path.exists(path) else {}

    def array(self, name, key):
        path = os.path.join(self.where, key + ".npy")
        if not os.path.exists(path):
            raise FileNotFoundError("cannot load variable %r: file %s does not exist" % (name, path))
        return np.load(path, allow_pickle=False)

    def close(self):
        pass


class _FileSource:
    def __init__(self, path):
        if not os.path.exists(path):
            raise FileNotFoundError("cannot load variables: file %s does not exist" % path)
        self.where = path
        self.npz = np.load(path, allow_pickle=False)
        if not hasattr(self.npz, "files") or INDEX_KEY not in self.npz.files:
            raise ValueError("%s is not a fluidist variables archive (no %r entry)" % (path, INDEX_KEY))
        d = json.loads(bytes(self.npz[INDEX_KEY]).decode("utf-8"))
        if d.get("fluidist_vars") != FORMAT_VERSION:
            raise ValueError("%s is not a fluidist variables archive of format %d" % (path, FORMAT_VERSION))
        self.index = d["vars"]

    def array(self, name, key):
        if key not in self.npz.files:
            raise KeyError("cannot load variable %r: it is not in %s" % (name, self.where))
        return self.npz[key]

    def close(self):
        self.npz.close()


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


def load_vars(executor, dirname, main_program=None, vars=None, predicate=None, filename=None, scope=None):
    """Load ``vars`` (or the variables of ``main_program`` that ``predicate`` accepts) into the scope,
    on the executor's place. Shapes and dtypes are checked against the program's declarations."""
    scope = scope if scope is not None else global_scope()
    place = getattr(executor, "place", None) or CPUPlace()
    selected = _select(main_program, vars, predicate)
    if filename is None and not os.path.isdir(dirname):
        raise FileNotFoundError("cannot load variables: there is no directory %s" % dirname)
    src = _FileSource(os.path.join(dirname, filename)) if filename is not None else _DirSource(dirname)
    try:
        loaded = []
        for name, decl in selected:
            entry = src.index.get(name) or {"kind": "tensor", "stem": file_stem(name)}
            if entry["kind"] == "selected_rows":
                rows = src.array(name, entry["stem"] + "@rows")
                value = src.array(name, entry["stem"] + "@value")
                loaded.append((name, SelectedRows(rows, value, entry["height"]), None))
            else:
                arr = src.array(name, entry["stem"])
                _check_against_decl(name, decl, arr, src.where)
                loaded.append((name, arr, entry.get("lod") or []))
    finally:
        src.close()
    # Write only once everything has been read and checked: a failed load leaves the scope as it was.
    xp = place.xp
    with place.device_context():
        for name, value, lod in loaded:
            if isinstance(value, SelectedRows):
                if xp is not np:
                    value = SelectedRows(xp.asarray(value.rows), xp.asarray(value.value), value.height)
                scope.var(name).set_value(value)
            else:
                scope.var(name).set_value(value if xp is np else xp.asarray(value))
                scope.var(name).get_tensor().set_lod(lod)


def load_params(executor, dirname, main_program=None, filename=None, scope=None):
    load_vars(executor, dirname, main_program, predicate=is_parameter, filename=filename, scope=scope)


def load_persistables(executor, dirname, main_program=None, filename=None, scope=None):
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


def save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program=None,
                         model_filename=None, params_filename=None, export_for_deployment=True,
                         program_only=False, scope=None):
    """Save the part of ``main_program`` that computes ``target_vars`` from ``feeded_var_names``
    (test mode: no backward/optimize ops, dropout/batch_norm switched to inference) and the
    persistables it reads. Returns the target names.

    With ``export_for_deployment=False`` the whole program is written, unpruned, to
    ``<model_filename>.main_program`` with all its persistables, as Paddle does.
    """
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
        d = infer.to_dict()
        d["feed_target_names"] = list(feeded_var_names)
        d["fetch_target_names"] = targets
        text = json.dumps(d)
        _atomic_write(os.path.join(dirname, model_basename), lambda f: f.write(text.encode("utf-8")))
    else:
        infer = program
        text = program.to_json()
        _atomic_write(os.path.join(dirname, model_basename + ".main_program"),
                      lambda f: f.write(text.encode("utf-8")))
    if not program_only:
        save_persistables(executor, dirname, infer, params_filename, scope=scope)
    return targets


def load_inference_model(dirname, executor, model_filename=None, params_filename=None, scope=None):
    """Load a model written by ``save_inference_model``: its parameters go into the scope.

    Returns ``[program, feed_target_names, fetch_targets]`` (fetch_targets are Variables of
    ``program``), ready for ``executor.run(program, feed={...}, fetch_list=fetch_targets)``.
    """
    if not os.path.isdir(dirname):
        raise ValueError("there is no directory named %r" % dirname)
    path = os.path.join(dirname, os.path.basename(model_filename) if model_filename else MODEL_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError("no inference model at %s (written by save_inference_model)" % path)
    with open(path, "r") as f:
        try:
            d = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError("%s is not an inference model's JSON form: %s" % (path, e))
    if "feed_target_names" not in d or "fetch_target_names" not in d:
        raise ValueError("%s holds a program but no feed/fetch target names: it was not written by "
                         "save_inference_model" % path)
    program = Program.from_dict(d)
    load_persistables(executor, dirname, program,
                      os.path.basename(params_filename) if params_filename else None, scope=scope)
    fetch_targets = [program.global_block().var(n) for n in d["fetch_target_names"]]
    return [program, list(d["feed_target_names"]), fetch_targets]


# ---------------------------------------------------------------- Paddle 1.7's save / load
def save(program, model_path, scope=None):
    """``model_path + .pdparams`` (parameters), ``.pdopt`` (other persistables, when there are any)
    and ``.pdmodel`` (the program's JSON form). Unlike Paddle's pickled dicts these are ``.npz``
    archives in the single-file format above."""
    program = _as_program(program)
    dirname, base = os.path.split(os.path.abspath(model_path))
    if not base:
        raise ValueError("model_path %r must name a file prefix, not a directory" % model_path)
    save_vars(None, dirname, program, predicate=is_parameter, filename=base + ".pdparams", scope=scope)
    opt = [v for v in get_program_persistable_vars(program) if not is_parameter(v)]
    if opt:
        save_vars(None, dirname, program, vars=opt, filename=base + ".pdopt", scope=scope)
    text = program.to_json()
    _atomic_write(os.path.join(dirname, base + ".pdmodel"), lambda f: f.write(text.encode("utf-8")))


def load(program, model_path, executor=None, var_list=None, scope=None):
    """Load what ``save`` wrote into the scope (optimizer state only when ``.pdopt`` exists)."""
    program = _as_program(program)
    dirname, base = os.path.split(os.path.abspath(model_path))
    params = [v for v in (var_list or get_program_parameter(program)) if is_parameter(v)]
    load_vars(executor, dirname, program, vars=params, filename=base + ".pdparams", scope=scope)
    opt = [v for v in (var_list or get_program_persistable_vars(program))
           if is_persistable(v) and not is_parameter(v)]
    if opt and os.path.exists(os.path.join(dirname, base + ".pdopt")):
        load_vars(executor, dirname, program, vars=opt, filename=base + ".pdopt", scope=scope)


# ---------------------------------------------------------------- readers (Paddle's fluid.io exports them too)
from .reader import (ComposeNotAligned, DataLoader, PyReader, batch, buffered, cache, chain, compose,  # noqa: E402,F401
                     default_collate_fn, firstn, map_readers, multiprocess_reader, shuffle, xmap_readers)

__all__ += ["batch", "DataLoader", "PyReader", "default_collate_fn", "cache", "map_readers", "buffered", "compose",
            "chain", "shuffle", "ComposeNotAligned", "firstn", "xmap_readers", "multiprocess_reader"]
