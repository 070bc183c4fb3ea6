"""Sequence layers over LoD input: ``sequence_pool`` and its first/last-step shorthands."""
from ..framework.program import Variable
from .layer_helper import LayerHelper

__all__ = ["sequence_pool", "sequence_first_step", "sequence_last_step"]

_POOL_TYPES = ("average", "sum", "sqrt", "max", "last", "first")


def sequence_pool(input, pool_type, is_test=False, pad_value=0.0):
    """Pool each sequence of the last LoD level of ``input`` to one row (``pool_type``: average, sum,
    sqrt, max, last or first); an empty sequence gives ``pad_value``."""
    if not isinstance(input, Variable):
        raise TypeError("sequence_pool: 'input' must be a Variable, got %r" % type(input).__name__)
    if not isinstance(pool_type, str) or pool_type.lower() not in _POOL_TYPES:
        raise ValueError("sequence_pool: pool_type %r is not one of %s" % (pool_type, list(_POOL_TYPES)))
    pool_type = pool_type.lower()
    helper = LayerHelper("sequence_pool", input=input)
    out = helper.create_variable_for_type_inference(input.dtype)
    max_index = helper.create_variable_for_type_inference("int32")
    helper.append_op("sequence_pool", inputs={"X": [input]}, outputs={"Out": [out], "MaxIndex": [max_index]},
                     attrs={"pooltype": pool_type.upper(), "is_test": bool(is_test), "pad_value": float(pad_value)})
    max_index.stop_gradient = True
    return out


def sequence_first_step(input):
    """The first step of each sequence (``sequence_pool`` with pool_type "first")."""
    return sequence_pool(input, "first")


def sequence_last_step(input):
    """The last step of each sequence (``sequence_pool`` with pool_type "last")."""
    return sequence_pool(input, "last")
