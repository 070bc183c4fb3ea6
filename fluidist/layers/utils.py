"""``fluid.layers.utils``: the helpers over nested structures of Variables that Paddle's control flow
and RNN layers use, and scripts reuse (``flatten``, ``pack_sequence_as``, ``map_structure``)."""
import copy

from .nest import flatten, map_structure, pack_sequence_as, same_structure

__all__ = []


def is_sequence(seq):
    """True for a list, tuple or dict (a structure ``flatten`` walks into); False for a string."""
    return isinstance(seq, (list, tuple, dict))


def convert_to_list(value, n, name, dtype=int):
    """``value`` (one ``dtype`` or an iterable of ``n``) as a list of ``n`` ``dtype``s: Paddle's check of
    ``filter_size=3`` vs ``filter_size=[3, 5]``."""
    if isinstance(value, dtype):
        return [value] * n
    try:
        values = list(value)
    except TypeError:
        raise ValueError("the %s argument must be a %s or an iterable of %d, got %r"
                         % (name, dtype.__name__, n, value)) from None
    if len(values) != n:
        raise ValueError("the %s argument must have %d items, got %r" % (name, n, value))
    for v in values:
        if not isinstance(v, dtype):
            raise ValueError("the %s argument must hold %s values, got %r (%s)"
                             % (name, dtype.__name__, v, type(v).__name__))
    return values


def assert_same_structure(nest1, nest2, check_types=True):
    """Raise ValueError unless the two structures have the same nesting and lengths."""
    if check_types and is_sequence(nest1) and type(nest1) is not type(nest2):
        raise ValueError("the two structures differ in type: %s vs %s" % (type(nest1).__name__,
                                                                        type(nest2).__name__))
    same_structure(nest1, nest2)


def hold_mutable_vars(structure):
    """Wrap each mutable leaf (list, dict) of ``structure`` so ``map_structure`` treats it as one leaf."""
    return map_structure(lambda x: _Held(x) if isinstance(x, (list, dict)) else x, structure)


def copy_mutable_vars(structure):
    """``structure`` with its held mutable leaves unwrapped and copied."""
    return map_structure(lambda x: copy.copy(x.value) if isinstance(x, _Held) else x, structure)


class _Held:
    def __init__(self, value):
        self.value = value
