"""The Program's copies and forms: ``clone(for_test)`` (objects copied directly, no JSON round trip)
and the lossless JSON form (``to_dict`` / ``from_dict``). Functions filling a new Program, so that
this module sits below :mod:`fluidist.framework.program`."""
from __future__ import annotations

import copy

from . import program_bounds, registry
from .block import Block, Operator
from .op_attrs import _PLAIN_TYPES
from .op_role import OP_ROLE_ATTR, OpRole
from .serialization import (FORMAT_VERSION, PROGRAM_FIELDS, attr_from_json, attr_to_json, object_from_json,
                            object_to_json)
from .variable import GRAD_SUFFIX, Parameter, Variable, _copy_var

def clone_into(src, p, for_test=False):
    """Fill the new Program ``p`` with a deep copy of ``src`` (blocks, variables, ops; attrs that are
    Blocks point into the copy). With ``for_test``: without backward, optimize and LR-schedule ops,
    dropout/batch_norm in test mode."""
    p.blocks = []
    for b in src.blocks:
        nb = Block(p, b.idx, b.parent_idx)
        nb.forward_block_idx = b.forward_block_idx
        p.blocks.append(nb)
    for b, nb in zip(src.blocks, p.blocks):
        for name, v in b.vars.items():
            nb.vars[name] = _copy_var(v, nb)
        nb._ops = [_copy_op(op, nb, p.blocks) for op in b.ops]
    p._seed = src._seed
    for k in PROGRAM_FIELDS:
        setattr(p, k, copy.copy(getattr(src, k)))
    p._parameters_on_pservers = getattr(src, "_parameters_on_pservers", None)
    p._appending_grad_times = src._appending_grad_times
    if for_test:
        _strip_training(p)
    p._version = 0
    return p


def _copy_op(op, block, blocks):
    """``op`` as an op of ``block`` (names and attrs copied; Block attrs point into ``blocks``)."""
    new = object.__new__(Operator)
    new.block = block
    new.type = op.type
    new.inputs = _copy_slots(op.inputs)
    new.outputs = _copy_slots(op.outputs)
    new.attrs = _remap_blocks(op.attrs, blocks)
    return new


def _copy_slots(slots):
    out = {}
    for slot, names in slots.items():
        out[slot] = list(names)
    return out


def to_dict(program):
    """The lossless JSON-ready form (``to_json`` -> ``from_json`` -> ``to_json`` is exact)."""
    blocks = []
    for b in program.blocks:
        blocks.append({
            "idx": b.idx, "parent_idx": b.parent_idx, "forward_block_idx": b.forward_block_idx,
            "vars": [_var_to_json(v) for v in b.vars.values()],
            "ops": [{"type": op.type,
                     "inputs": {k: list(v) for k, v in op.inputs.items()},
                     "outputs": {k: list(v) for k, v in op.outputs.items()},
                     "attrs": {k: attr_to_json(v) for k, v in op.attrs.items()}} for op in b.ops],
        })
    return {"fluidist_program": FORMAT_VERSION, "random_seed": program.random_seed,
            "fields": {k: getattr(program, k) for k in PROGRAM_FIELDS}, "blocks": blocks}

def from_dict_into(d, p, where="the program's JSON form"):
    """Fill the new Program ``p`` from ``d`` (:func:`to_dict`'s form); a dict of another format, blocks that
    do not nest as a program's do, or more blocks, variables or ops than ``program_bounds`` allows is a
    ValueError naming ``where``."""
    if not isinstance(d, dict) or d.get("fluidist_program") != FORMAT_VERSION:
        raise ValueError("not a fluidist program of format %d: %r"
                         % (FORMAT_VERSION, d.get("fluidist_program") if isinstance(d, dict) else d))
    _check_blocks(d.get("blocks"), where)
    p.blocks = []
    for bd in d["blocks"]:
        b = Block(p, bd["idx"], bd["parent_idx"])
        b.forward_block_idx = bd.get("forward_block_idx", -1)
        p.blocks.append(b)
    for bd, b in zip(d["blocks"], p.blocks):
        for vd in bd["vars"]:
            vd = dict(vd)
            if vd.pop("parameter", False):
                vd["regularizer"] = object_from_json(vd.get("regularizer"))
                vd["gradient_clip_attr"] = object_from_json(vd.get("gradient_clip_attr"))
                v = Parameter(b, **vd)
            else:
                v = Variable(b, **vd)
            b.vars[v.name] = v
        b._ops = [Operator(b, od["type"], od["inputs"], od["outputs"],
                           {k: attr_from_json(v, p.blocks) for k, v in od["attrs"].items()})
                  for od in bd["ops"]]
    p._seed = d.get("random_seed", 0)
    for k, v in d.get("fields", {}).items():
        if k in PROGRAM_FIELDS:
            setattr(p, k, v)
    p.current_block_idx = 0
    p._version = 0
    return p


def _check_blocks(blocks, where):
    """The blocks of a JSON form: a non-empty list, each at its own index, parents earlier, counts bounded."""
    if not isinstance(blocks, list) or not blocks or not all(isinstance(bd, dict) for bd in blocks):
        raise ValueError("%s has no list of blocks" % where)
    program_bounds.check_count(where, "blocks", len(blocks))
    for what in ("vars", "ops"):
        lists = [bd.get(what) for bd in blocks]
        if not all(isinstance(x, list) for x in lists):
            raise ValueError("%s: a block has no list of %s" % (where, what))
        program_bounds.check_count(where, what, sum(len(x) for x in lists))
    for i, bd in enumerate(blocks):
        if bd.get("idx") != i:
            raise ValueError("%s: block %d says its index is %r" % (where, i, bd.get("idx")))
    program_bounds.check_parents([bd.get("parent_idx") for bd in blocks], where)


def _var_to_json(v):
    m = v._meta()
    if m.get("parameter"):
        m["regularizer"] = object_to_json(m["regularizer"])
        m["gradient_clip_attr"] = object_to_json(m["gradient_clip_attr"])
    return m


def _remap_blocks(attrs, blocks):
    """A copy of ``attrs`` whose Block values point at the same-index blocks of ``blocks``."""
    out = attrs.copy()      # then the values that are no plain scalars, redone in place
    for k, v in attrs.items():
        t = type(v)
        if t in _PLAIN_TYPES:
            continue
        if t is list:
            if _PLAIN_TYPES.issuperset(map(type, v)):
                out[k] = v[:]
            else:
                out[k] = [blocks[x.idx] if isinstance(x, Block) else (_copy_list(x) if type(x) is list else x)
                          for x in v]
        elif isinstance(v, Block):
            out[k] = blocks[v.idx]
    return out


def _copy_list(v):
    return [_copy_list(x) if type(x) is list else x for x in v]


def _set_test_mode(program):
    """Ops with an ``is_test`` attr (dropout, batch_norm, ... as the registry says) run in test mode."""
    for b in program.blocks:
        for op in b.ops:
            opdef = registry.lookup(op.type)
            if "is_test" in op.attrs or (opdef is not None and "is_test" in opdef.attrs):
                op.attrs["is_test"] = True
    program._bump_version()


def _strip_training(program):
    """Drop backward, optimize and LR-schedule ops, and switch dropout/batch_norm to test mode.

    Variables: in a program with a loss's gradient op (the role Backward | Loss: a backward pass
    appended), as in Paddle 1.8, each block keeps only the variables its remaining ops (or those of
    the blocks inside it) read or write, so that the program equals a for_test clone taken before
    ``minimize``; otherwise only gradients nobody uses go."""
    drop = OpRole.Backward | OpRole.Optimize | OpRole.LRSched
    loss_grad = int(OpRole.Backward) | int(OpRole.Loss)
    had_backward = any(int(op.attrs.get(OP_ROLE_ATTR, 0)) == loss_grad for b in program.blocks for op in b.ops)
    for b in program.blocks:
        b.ops = [op for op in b.ops if not (int(op.attrs.get(OP_ROLE_ATTR, 0)) & drop)]
    used = {}
    for b in reversed(program.blocks):      # (a block's inner blocks come after it)
        names = {n for op in b.ops for n in op.input_arg_names + op.output_arg_names}
        names.update(*(used[inner.idx] for inner in program.blocks if inner.parent_idx == b.idx and inner.idx != b.idx))
        used[b.idx] = names
    for b in program.blocks:
        for name in list(b.vars):
            if name not in used[b.idx] and (had_backward or GRAD_SUFFIX in name):
                del b.vars[name]
    _set_test_mode(program)
