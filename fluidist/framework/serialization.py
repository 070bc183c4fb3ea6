"""The lossless JSON form of a Program: ``to_json()`` -> ``from_json()`` -> ``to_json()`` is exact.

Attr values that are Blocks are written as ``{"__block__": idx}``; objects hung on Parameters
(regularizers, clip attrs) are written through the small class registry below.
"""
import json

from .dtypes import VarType

FORMAT_VERSION = 1

_PROGRAM_FIELDS = ("_is_distributed", "_is_chief", "_endpoints", "_ps_endpoint", "_trainers_endpoints",
                   "_nccl_comm_num", "_use_hierarchical_allreduce",
                   "_hierarchical_allreduce_inter_nranks", "_distributed_lookup_table")

_CLASSES = {}


def serializable(cls):
    """Class decorator: instances round-trip through JSON by their ``__dict__`` of plain values."""
    _CLASSES[cls.__name__] = cls
    return cls


def object_to_json(obj):
    if obj is None:
        return None
    name = type(obj).__name__
    if name not in _CLASSES:
        raise TypeError("cannot write %s into a program's JSON form (not @serializable)" % name)
    return {"__class__": name, "state": {k: v for k, v in vars(obj).items()}}


def object_from_json(d):
    if d is None:
        return None
    cls = _CLASSES.get(d["__class__"])
    if cls is None:
        raise ValueError("unknown class %r in a program's JSON form" % d["__class__"])
    obj = cls.__new__(cls)
    obj.__dict__.update(d["state"])
    return obj


def _attr_to_json(value):
    from .program import Block
    if isinstance(value, Block):
        return {"__block__": value.idx}
    if isinstance(value, list):
        return [_attr_to_json(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return {"__float__": repr(value)}
    return value


def _attr_from_json(value, program):
    if isinstance(value, dict):
        if "__block__" in value:
            return program.blocks[value["__block__"]]
        if "__float__" in value:
            return float(value["__float__"])
    if isinstance(value, list):
        return [_attr_from_json(v, program) for v in value]
    return value


def program_to_dict(program):
    blocks = []
    for b in program.blocks:
        blocks.append({
            "idx": b.idx, "parent_idx": b.parent_idx, "forward_block_idx": b.forward_block_idx,
            "vars": [v._meta() for v in b.vars.values()],
            "ops": [{"type": op.type,
                     "inputs": {k: list(v) for k, v in op.inputs.items()},
                     "outputs": {k: list(v) for k, v in op.outputs.items()},
                     "attrs": {k: _attr_to_json(v) for k, v in op.attrs.items()}} for op in b.ops],
        })
    return {"fluidist_program": FORMAT_VERSION, "random_seed": program.random_seed,
            "fields": {k: getattr(program, k) for k in _PROGRAM_FIELDS}, "blocks": blocks}


def program_from_dict(d):
    from .program import Block, Operator, Parameter, Program, Variable
    if d.get("fluidist_program") != FORMAT_VERSION:
        raise ValueError("not a fluidist program of format %d: %r" % (FORMAT_VERSION, d.get("fluidist_program")))
    p = Program()
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
        for od in bd["ops"]:
            op = Operator(b, od["type"], None, None, None)
            op.inputs = {k: list(v) for k, v in od["inputs"].items()}
            op.outputs = {k: list(v) for k, v in od["outputs"].items()}
            op.attrs = {k: _attr_from_json(v, p) for k, v in od["attrs"].items()}
            b.ops.append(op)
    p._seed = d.get("random_seed", 0)
    for k, v in d.get("fields", {}).items():
        if k in _PROGRAM_FIELDS:
            setattr(p, k, v)
    p.current_block_idx = 0
    p._version = 0
    return p


def program_to_json(program, indent=None):
    return json.dumps(program_to_dict(program), indent=indent, sort_keys=False)


def program_from_json(text):
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError("not a program's JSON form: %s" % e)
    return program_from_dict(d)


__all__ = ["serializable", "object_to_json", "object_from_json", "program_to_dict", "program_from_dict",
           "program_to_json", "program_from_json", "VarType"]
