"""An op's attrs as it keeps them: plain values (``_op_attr``: lists not tuples, Python scalars not
NumPy ones, data types as dtype strings), and what ``Block.append_op`` adds to the attrs of an op of
a given type (``op_defaults``: its registry entry's defaults and role, worked out once per type, so
that appending an op copies only the defaults that are mutable)."""
import copy
from typing import Dict

import numpy as np

from . import registry
from .dtypes import DTYPE_ATTRS, dtype_attr

_PLAIN_TYPES = frozenset([int, float, str, bool, type(None)])
_KEPT_TYPES = _PLAIN_TYPES - {int}     # (an int may be a data type's code)


def _op_attr(name, value):
    """An attr as an op keeps it: plain (``_plain_attr``), and a data type as its dtype string
    (Paddle's programs and tests give ``cast``'s ``out_dtype`` as an int code or a VarType)."""
    return dtype_attr(_plain_attr(value)) if name in DTYPE_ATTRS else _plain_attr(value)


def op_attrs(attrs, out):
    """``attrs`` as an op keeps them (``_op_attr``), added to ``out`` in their order; returns ``out``.
    The common values are kept without a call: a float, str, bool or None, an int (but the int code
    of a data type), a list of plain scalars (copied)."""
    out.update(attrs)
    for name, value in attrs.items():
        t = type(value)
        if t in _KEPT_TYPES:
            continue
        if t is list:
            out[name] = list(value) if _PLAIN_TYPES.issuperset(map(type, value)) else _op_attr(name, value)
        elif t is not int or name in DTYPE_ATTRS:
            out[name] = _op_attr(name, value)
    return out


def _plain_attr(value):
    """Attr values are kept in JSON-friendly form: lists not tuples, python scalars not numpy."""
    t = type(value)
    if t in _PLAIN_TYPES:
        return value
    if t is list and _PLAIN_TYPES.issuperset(map(type, value)):
        return list(value)
    if isinstance(value, str):     # (a str subclass: VarType values); Blocks fall through, kept
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain_attr(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain_attr(v) for v in value.tolist()]
    return value


class _OpDefaults:
    """What ``Block.append_op`` adds to the attrs of every op of one type, worked out once per type
    from its registry entry: the ``role`` fact, and each default attr as ``(name, value, fresh)``
    where ``fresh(name, value)`` makes the op its own copy (None: an int, float, str, bool or None,
    shared). The copies are what a deep copy of the default, kept as ``_op_attr`` keeps it, gives."""

    __slots__ = ("opdef", "attrs", "role", "items")

    def __init__(self, opdef):
        self.opdef = opdef
        self.attrs = opdef.attrs
        self.role = registry.fact(opdef.type, "role")
        self.items = tuple(_default_item(name, value) for name, value in opdef.attrs.items())


def _default_item(name, value):
    """``(name, value, fresh)`` of one default (``_OpDefaults``)."""
    if type(value) in _PLAIN_TYPES:
        return name, _op_attr(name, value), None
    if type(value) is list and all(type(v) in _PLAIN_TYPES for v in value):
        return name, _op_attr(name, value), _list_copy
    return name, value, _deep_copy


def _list_copy(name, value):
    return list(value)


def _deep_copy(name, value):
    return _op_attr(name, copy.deepcopy(value))


_DEFAULTS_BY_TYPE: Dict[str, _OpDefaults] = {}


def op_defaults(type):
    """The ``_OpDefaults`` of op ``type`` (made again when its entry or its defaults dict changed);
    a type with no entry is the error ``append_op`` gives for it."""
    opdef = registry.lookup(type)
    known = _DEFAULTS_BY_TYPE.get(type)
    if known is not None and known.opdef is opdef and known.attrs is opdef.attrs:
        return known
    if type is None:
        raise ValueError("append_op: an op needs a type (append_op(type=..., ...))")
    if opdef is None:
        if registry.refusal(type) is not None:
            raise registry.unknown_op_error(type)
        raise ValueError("append_op: op type %r is not registered (no such op in fluidist)" % type)
    known = _DEFAULTS_BY_TYPE[type] = _OpDefaults(opdef)
    return known
