"""Nested structures of Variables (lists, tuples and namedtuples, dicts) as ``cond``, ``while_loop``
and the RNN / decoder API take them."""


def flatten(struct):
    """The leaves of ``struct`` in order (dicts by sorted key)."""
    return _flatten(struct)


def pack_sequence_as(struct, flat):
    """``flat`` (a list of leaves) laid out as ``struct``."""
    return _pack_like(struct, iter(flat))


def _flatten(struct):
    if isinstance(struct, (list, tuple)):
        return [v for item in struct for v in _flatten(item)]
    if isinstance(struct, dict):
        return [v for k in sorted(struct) for v in _flatten(struct[k])]
    return [struct]


def _pack_like(struct, flat):
    """``flat`` (an iterator) laid out as ``struct``."""
    if isinstance(struct, (list, tuple)):
        items = [_pack_like(item, flat) for item in struct]
        if hasattr(struct, "_fields"):       # a namedtuple keeps its type
            return type(struct)(*items)
        return tuple(items) if isinstance(struct, tuple) else items
    if isinstance(struct, dict):
        return {k: _pack_like(struct[k], flat) for k in sorted(struct)}
    return next(flat)


def map_structure(fn, *structs):
    flats = [_flatten(s) for s in structs]
    return _pack_like(structs[0], iter([fn(*vals) for vals in zip(*flats)]))


def same_structure(a, b):
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            raise ValueError("true_fn returns %d outputs but false_fn returns %d" % (len(a), len(b)))
        for x, y in zip(a, b):
            same_structure(x, y)
    elif isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            raise ValueError("true_fn returns the keys %s but false_fn returns %s" % (sorted(a), sorted(b)))
        for k in a:
            same_structure(a[k], b[k])
    elif isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        raise ValueError("true_fn returns %d outputs but false_fn returns %d"
                         % (len(a) if isinstance(a, (list, tuple)) else 1, len(b) if isinstance(b, (list, tuple)) else 1))
    elif isinstance(a, dict) or isinstance(b, dict):
        raise ValueError("true_fn returns %s but false_fn returns %s" % (type(a).__name__, type(b).__name__))
