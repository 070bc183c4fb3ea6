"""``save_persistables`` / ``load_persistables`` of a transpiled (pserver-mode) job, as Paddle 1.8 does
them: by the placement the transpiler recorded (``program._parameters_on_pservers``, a VarsDistributed).

- On a trainer program, the save writes every persistable variable whole, under its own name: the
  trainer's own values (the parameters it received) and the optimizer state the pservers hold
  (vtype ``"Optimizer"``), received from them, a parameter-shaped accumulator block by block and
  concatenated.
- On a pserver program, the load reads each variable that pserver holds a piece of (``"Param"`` and
  ``"Optimizer"`` entries of its endpoint) from the whole variable's file and keeps its piece: the
  block's elements from its offset on, in the block's shape.
"""
from __future__ import annotations

import os

import numpy as np

from ..core.scope import Scope, global_scope
from ..core.tensor import SelectedRows
from ..framework import registry
from ..framework.dtypes import VarType
from ..framework.program import Program
from .common import is_persistable

_REMOTE_VTYPES = ("Optimizer", "RemotePrefetch")
_NOT_SAVED_TYPES = (VarType.FEED_MINIBATCH, VarType.FETCH_LIST, VarType.READER)


def placement(program):
    """The VarsDistributed a transpiler hung on ``program``, or None."""
    if not isinstance(program, Program) or not program._is_distributed:
        return None
    return getattr(program, "_parameters_on_pservers", None)


def is_pserver_program(program):
    """Whether ``program`` serves (holds a ``listen_and_serv`` op on its ``_ps_endpoint``)."""
    from ..distributed.authorize import listen_and_serv_op
    op = listen_and_serv_op(program, program._ps_endpoint)
    return op is not None and op.attr("endpoint") == program._ps_endpoint


def _trainer_id(program):
    """The trainer id the transpiler wrote into the program's RPC ops (0 when there are none)."""
    for op in program.global_block().ops:
        if registry.fact(op, "communicates") and op.has_attr("trainer_id"):
            return int(op.attr("trainer_id"))
    return 0


def _remote_sources(overview):
    """{origin name: (its VarStruct, [(endpoint, name there)])}: block by block in row order for a
    sliced variable, the first pserver's copy for a whole one (every pserver holding a block keeps
    the same value)."""
    sources = {}
    for origin, pieces in overview.get_distributed_vars_by_vtypes(list(_REMOTE_VTYPES), groupby=True).items():
        sliced = sorted((v for v in pieces if v.is_slice), key=lambda v: v.block_id)
        chosen = sliced if sliced else pieces[:1]
        sources[origin] = (pieces[0].origin, [(v.endpoint, v.slice.name) for v in chosen])
    return sources


def _receive(executor, program, sources):
    """A Scope holding each variable of ``sources``, received from the pservers by ``recv`` ops."""
    from ..transpiler.pserver_trainer import ask_ahead
    prog = Program()
    block = prog.global_block()
    tid = _trainer_id(program)
    recvs = []
    for name, (whole, where) in sources.items():
        block.create_var(name=name, shape=whole.shape, dtype=whole.dtype, persistable=False)
        recvs.append(block.append_op("recv", inputs={"X": []}, outputs={"Out": [name]},
                                     attrs={"epmap": [ep for ep, _ in where],
                                            "recv_varnames": [n for _, n in where], "trainer_id": tid}))
    ask_ahead(recvs)
    received = Scope()
    executor.run(prog, scope=received)
    return received


def save_trainer_persistables(executor, dirname, main_program, filename, scope, save_vars, format=None):
    """Paddle's distributed save on a trainer (see the module docstring); ``save_vars`` writes."""
    scope = scope if scope is not None else global_scope()
    sources = _remote_sources(placement(main_program))
    excluded = set(sources)
    table = main_program._distributed_lookup_table
    excluded.update(table if isinstance(table, (list, tuple)) else [table] if table else [])
    local = [v for v in main_program.list_vars()
             if is_persistable(v) and v.type not in _NOT_SAVED_TYPES and v.name not in excluded]
    out = _receive(executor, main_program, sources) if sources else Scope()
    for v in local:
        value = scope._find_value(v.name)
        if value is not None:
            out.var(v.name).set_value(value)
            lod = scope._find_lod(v.name)
            if lod:
                out._set_lod(v.name, lod)
    names = [v.name for v in local] + [n for n in sources if n not in {v.name for v in local}]
    return save_vars(executor, dirname, main_program, vars=names, filename=filename, scope=out, format=format)


def _piece(whole, entry, where):
    """The elements of ``whole`` that ``entry`` (a VarDistributed) holds, in its shape."""
    shape = [int(d) for d in entry.slice.shape]
    if not entry.is_slice:
        return whole
    count = int(np.prod(shape))
    flat = np.asarray(whole).reshape(-1)
    if entry.offset < 0 or entry.offset + count > flat.size:
        raise ValueError("load_persistables: %r from %s holds %d elements, but the block %r of this pserver is "
                         "elements %d..%d of it (saved from another model, or another split?)"
                         % (entry.origin.name, where, flat.size, entry.slice.name, entry.offset,
                            entry.offset + count))
    return flat[entry.offset:entry.offset + count].reshape(shape)


def load_pserver_persistables(executor, dirname, main_program, filename, scope, read_vars, commit):
    """Paddle's distributed load on a pserver (see the module docstring): ``read_vars(dirname, selected,
    filename)`` reads whole variables, ``commit(loaded, decls, scope, place, where)`` checks and stores."""
    from ..device.places import CPUPlace
    endpoint = main_program._ps_endpoint
    entries = placement(main_program).get_distributed_vars_by_ep(endpoint)
    origins = list(dict.fromkeys(e.origin.name for e in entries))
    if not origins:
        return
    whole = {name: value for name, value, _ in read_vars(dirname, [(n, None) for n in origins], filename)}
    where = (os.path.join(dirname, os.fsdecode(filename)) if dirname is not None and filename is not None
             else dirname or "<params bytes>")
    block = main_program.global_block()
    loaded, decls = [], {}
    for e in entries:
        value = whole[e.origin.name]
        if isinstance(value, SelectedRows):
            raise ValueError("load_persistables: %r from %s is row-sparse; a pserver loads dense variables only"
                             % (e.origin.name, where))
        loaded.append((e.slice.name, np.ascontiguousarray(_piece(value, e, where)), []))
        decls[e.slice.name] = block._find_var_recursive(e.slice.name)
    place = getattr(executor, "place", None) or CPUPlace()
    commit(loaded, decls, scope if scope is not None else global_scope(), place, where)
