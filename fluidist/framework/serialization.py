"""Pieces of the lossless JSON form of a Program (``Program.to_json`` / ``Program.from_json``):
attr values (Blocks as ``{"__block__": idx}``) and the objects hung on Parameters (regularizers,
clip attrs), written through the small class registry below. Imports nothing of the IR."""
from typing import Dict, TypeVar

from .. import bounded_json
from .program_bounds import check_json_text

FORMAT_VERSION = 1

PROGRAM_FIELDS = ("_is_distributed", "_is_chief", "_endpoints", "_ps_endpoint", "_trainers_endpoints",
                   "_nccl_comm_num", "_use_hierarchical_allreduce",
                   "_hierarchical_allreduce_inter_nranks", "_distributed_lookup_table")

_CLASSES: Dict[str, type] = {}
_C = TypeVar("_C", bound=type)


def serializable(cls: _C) -> _C:
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


def attr_to_json(value):
    """An op attr in JSON form: Blocks as ``{"__block__": idx}``, non-finite floats by repr."""
    if hasattr(value, "ops") and hasattr(value, "idx") and hasattr(value, "program"):   # a Block
        return {"__block__": value.idx}
    if isinstance(value, list):
        return [attr_to_json(v) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return {"__float__": repr(value)}
    return value


def attr_from_json(value, blocks):
    if isinstance(value, dict):
        if "__block__" in value:
            return blocks[value["__block__"]]
        if "__float__" in value:
            return float(value["__float__"])
    if isinstance(value, list):
        return [attr_from_json(v, blocks) for v in value]
    return value


PROGRAM_JSON_DEPTH = 64    # blocks, ops, attributes and nested list attributes nest far less


def program_json_depth():
    """How deeply a program's JSON form may nest (deeper text is refused before it is parsed)."""
    return PROGRAM_JSON_DEPTH


def loads(text):
    check_json_text(text, "the program's JSON form")
    try:
        return bounded_json.loads(text, "the program's JSON form", len(text), PROGRAM_JSON_DEPTH)
    except bounded_json.JSONBoundsError as e:
        raise ValueError("not a program's JSON form: %s" % e)


__all__ = ["serializable", "object_to_json", "object_from_json", "attr_to_json", "attr_from_json",
           "FORMAT_VERSION", "PROGRAM_FIELDS"]
