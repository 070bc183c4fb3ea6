"""``fluid.one_hot`` and ``fluid.embedding``: the forms of Paddle 1.6+ whose ids need no trailing
dimension of 1 (``one_hot_v2`` and ``lookup_table_v2`` append the new dimension to the ids' shape)."""
from .embedding import lookup
from .indexing import _one_hot

__all__ = ["one_hot", "embedding"]


def one_hot(input, depth, allow_out_of_range=False):
    """float32 one-hot vectors of ``depth`` for int ids of any shape: the result has shape
    ``input.shape + [depth]``. An id outside [0, depth) is an error unless ``allow_out_of_range``."""
    return _one_hot("one_hot_v2", input, depth, allow_out_of_range)


def embedding(input, size, is_sparse=False, is_distributed=False, padding_idx=None, param_attr=None,
              dtype="float32"):
    """Rows of a ``size = [vocab, width]`` table for int64 ids of any shape (the result has shape
    ``input.shape + [width]``); the arguments are those of ``fluid.layers.embedding``."""
    return lookup(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype, "lookup_table_v2")
