"""``fluid.save`` / ``fluid.load`` and the program state (``load_program_state`` / ``set_program_state``)."""
from __future__ import annotations

import os
import urllib.parse
import warnings
from typing import Any, Sequence

import numpy as np

from ..device.places import CPUPlace, place_of
from ..core.placement import to_place
from ..core.scope import global_scope
from ..core.tensor import SelectedRows
from ..framework.program import Variable
from ..paddle_format import program_desc as paddle_program
from ..paddle_format import safe_pickle
from ..paddle_format.tensor_stream import PaddleFormatError

from .common import (INDEX_FILE, _as_program, _logger, _read_scope, _save_format, _unique_vars,
                     get_program_parameter, get_program_persistable_vars, is_belong_to_optimizer, is_persistable)
from . import durable
from .vars import _ArchiveSource, _DirSource, _commit, _is_archive, _own_archive, _read_own, _read_vars, load_vars




# ---------------------------------------------------------------- fluid.save / fluid.load
def _prefix(model_path):
    for suffix in (".pdparams", ".pdopt", ".pdmodel"):
        if model_path.endswith(suffix):
            return model_path[:-len(suffix)]
    return model_path


def save(program: Any, model_path: str, scope: Any = None, format: str | None = None) -> None:
    """``model_path + .pdparams`` (the Parameters), ``.pdopt`` (the optimizer's variables) and
    ``.pdmodel`` (the program), as Paddle 1.8's ``fluid.save``.

    The three files are replaced as one (``io.durable``): a save killed at any point, or failing on a
    full disk, leaves the previous three or the new three.

    Paddle 1.8 difference: fluidist's own format, the default, is ``.npz`` archives (``.pdopt``
    only when there are optimizer variables) and the program's JSON form. ``format="paddle"``
    writes Paddle's: pickled dicts of arrays (written opcode by opcode, see
    ``paddle_format.safe_pickle``) and a ProgramDesc, for Paddle 1.8's ``fluid.load``.

    Args:
        program: the Program (or a CompiledProgram) whose variables to save.
        model_path: ``dirname/file_prefix``; the folder is created.
        scope: where the values are; the global scope when None.
        format: None (fluidist's) or ``"paddle"``.

    Raises:
        ValueError: a ``model_path`` that names a folder, or an unknown format.

    Examples:
        >>> import os, tempfile
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> _ = fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     fluid.save(fluid.default_main_program(), os.path.join(folder, "model"))
        ...     print(sorted(os.listdir(folder)))
        ...     fluid.load(fluid.default_main_program(), os.path.join(folder, "model"), exe)
        ['model.pdmodel', 'model.pdopt', 'model.pdparams']
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
    path = lambda suffix: os.path.join(dirname, base + suffix)  # noqa: E731
    if fmt == "paddle":
        files = [(path(suffix), safe_pickle.dumps_state({name: _dense(value) for name, value, _
                                                          in _read_scope(scope, selected)}))
                 for suffix, selected in ((".pdparams", params), (".pdopt", opt))]
        files.append((path(".pdmodel"), paddle_program.write_program(program, base)))
    else:
        files = [(path(".pdparams"), _own_archive(_read_scope(scope, params)))]
        if opt:
            files.append((path(".pdopt"), _own_archive(_read_scope(scope, opt))))
        files.append((path(".pdmodel"), program.to_json().encode("utf-8")))
    durable.write_files(files)     # each flushed under a name of its own first, then all renamed in


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


def load(program: Any, model_path: str, executor: Any = None, var_list: Sequence[Any] | None = None,
         scope: Any = None) -> None:
    """Load what ``save`` wrote (either format, detected) into the scope, as Paddle 1.8's
    ``fluid.load``: the Parameters from ``.pdparams``, the optimizer's variables from ``.pdopt``
    (which must exist when the program has any).

    Without ``.pdparams``, ``model_path`` is read as a directory of ``save_persistables`` /
    ``save_vars`` files, or, with ``var_list``, as one combined file. Shapes and dtypes are
    checked; a failed load leaves the scope as it was.

    Args:
        program: the Program whose variables to fill.
        model_path: the ``dirname/file_prefix`` given to ``save`` (a suffix is ignored).
        executor: needed for the older files; its place is where the values go.
        var_list: the variables of one combined older file.
        scope: where to put the values; the global scope when None.

    Raises:
        FileNotFoundError: no such files, or a missing ``.pdopt``.
        ValueError: a missing variable, or a shape or dtype that does not match.

    Examples:
        >>> import os, tempfile
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w"))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> w = lambda: np.array(fluid.global_scope().find_var("w").get_tensor())
        >>> saved = w().copy()
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     fluid.save(fluid.default_main_program(), os.path.join(folder, "model"))
        ...     _ = exe.run(fluid.default_startup_program())       # new random values
        ...     fluid.load(fluid.default_main_program(), os.path.join(folder, "model"), exe)
        >>> bool((w() == saved).all())
        True
    """
    program = _as_program(program)
    scope = scope if scope is not None else global_scope()
    place = getattr(executor, "place", None) or CPUPlace()
    prefix = _prefix(model_path)
    params_path = prefix + ".pdparams"
    durable.recover(params_path)      # a save of the files killed while renaming them in is finished first
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


def load_program_state(model_path: str, var_list: Sequence[Any] | None = None) -> dict:
    """``{name: ndarray}`` of what ``save`` wrote (``.pdparams`` merged with ``.pdopt``), or, as
    Paddle does without ``.pdparams``, of a directory of variable files (every file, by its name)
    or of one combined file (the variables of ``var_list``).

    Args:
        model_path: the ``dirname/file_prefix`` given to ``save``, or an older folder or file.
        var_list: the variables of one combined older file.

    Returns:
        ``{variable name: numpy array}``.

    Raises:
        FileNotFoundError: nothing at ``model_path``.
        ValueError: a combined file without ``var_list``.

    Examples:
        >>> import os, tempfile
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     fluid.save(fluid.default_main_program(), os.path.join(folder, "model"))
        ...     state = fluid.load_program_state(os.path.join(folder, "model"))
        >>> {k: v.shape for k, v in state.items()}
        {'w': (2, 1)}
    """
    prefix = _prefix(model_path)
    params_path = prefix + ".pdparams"
    durable.recover(params_path)
    if os.path.exists(params_path):
        state = _read_state_file(params_path)
        if os.path.exists(prefix + ".pdopt"):
            state.update(_read_state_file(prefix + ".pdopt"))
        return state
    _logger.warning("%s not found, trying to load files saved with save_params / save_persistables / "
                    "save_vars", params_path)
    if var_list is not None:
        for v in var_list:
            if not isinstance(v, Variable):     # Paddle's TypeError
                raise TypeError("load_program_state: var_list holds Variables, got %r" % type(v).__name__)
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
                if durable.is_temporary(f):
                    continue      # what a killed save of one file left (removed by its next save)
                rel = os.path.relpath(os.path.join(root, f), model_path).replace(os.sep, "/")
                selected.append((rel[:-4] if rel.endswith(".npy") else rel, None))
        selected = [(urllib.parse.unquote(n), d) if n.endswith(".npy") else (n, d) for n, d in selected]
    return {n: _dense(v) for n, v, _ in _read_vars(model_path, selected, None)}


def _dense(value):
    return value.to_dense(np) if isinstance(value, SelectedRows) else value


def set_program_state(program: Any, state_dict: dict) -> None:
    """Set the persistable variables of ``program`` found in ``state_dict``, in the global scope.

    The startup program must have made them: each must match the shape and dtype it has there.
    Keys the program does not use are warned about. Everything is checked before anything is set.

    Args:
        program: the Program.
        state_dict: ``{variable name: numpy array}`` (from ``load_program_state``).

    Raises:
        ValueError: a variable without a value yet, or a shape or dtype that does not match.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        >>> _ = fluid.Executor(fluid.CPUPlace()).run(fluid.default_startup_program())
        >>> fluid.set_program_state(fluid.default_main_program(), {"w": np.ones((2, 1), "float32")})
        >>> np.array(fluid.global_scope().find_var("w").get_tensor()).ravel().tolist()
        [1.0, 1.0]
    """
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
        cur = current.value if isinstance(current, SelectedRows) else current
        cur = cur if hasattr(cur, "shape") and hasattr(cur, "dtype") else np.asarray(cur)
        if tuple(new.shape) != tuple(cur.shape):
            raise ValueError("shape mismatch for variable %r: the program holds %s, the state %s"
                             % (v.name, list(cur.shape), list(new.shape)))
        if new.dtype != cur.dtype:
            raise ValueError("dtype mismatch for variable %r: the program holds %s, the state %s"
                             % (v.name, cur.dtype.name, new.dtype.name))
        todo.append((v.name, cur, new))
    for name, cur, new in todo:        # where the value it replaces lives, through that place
        scope.var(name).set_value(to_place(new.copy(), place_of(cur)))
    used = {n for n, _, _ in todo}
    unused = [k for k in state_dict if k not in used]
    if unused:
        warnings.warn("these entries of the state are not variables of the program and were not set: %s"
                      % " ".join(sorted(unused)))
