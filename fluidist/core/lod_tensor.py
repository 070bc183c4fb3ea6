"""``fluid.lod_tensor``: making LoDTensors from Python data (``create_lod_tensor``) and random integer
sequences for tests and inference demos (``create_random_int_lodtensor``)."""
import numpy as np

from .tensor import create_lod_tensor

__all__ = ["create_lod_tensor", "create_random_int_lodtensor"]


def create_random_int_lodtensor(recursive_seq_lens, base_shape, place, low, high):
    """A LoDTensor of int64 values drawn uniformly from ``[low, high]`` (both included, as Paddle),
    with the given sequence lengths: its shape is ``[sum of the last level's lengths] + base_shape``."""
    if not recursive_seq_lens or not all(isinstance(level, (list, tuple)) for level in recursive_seq_lens):
        raise ValueError("create_random_int_lodtensor: recursive_seq_lens must be a list of lists of lengths, "
                         "got %r" % (recursive_seq_lens,))
    if low > high:
        raise ValueError("create_random_int_lodtensor: low (%r) is above high (%r)" % (low, high))
    rows = int(sum(recursive_seq_lens[-1]))
    data = np.random.randint(low, high + 1, size=[rows] + list(base_shape)).astype("int64")
    return create_lod_tensor(data, recursive_seq_lens, place)

