"""The helper functions of Paddle 1.8's ``fluid.executor`` module that scripts import: converting
fetched tensors (``as_numpy``), checking feeds against variables, asking whether a program already
has feed / fetch ops, and reading a variable from a scope (``_fetch_var``)."""
import numpy as np

from ..device.places import to_host
from ..core.scope import global_scope
from ..core.tensor import LoDTensor, LoDTensorArray
from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from ..reader.feeding import check_feed_value


def as_numpy(tensor, copy=False):
    """A LoDTensor (or a list / LoDTensorArray of them) as NumPy array(s); a tensor with LoD cannot
    be one array and is an error, as in Paddle."""
    if isinstance(tensor, (list, LoDTensorArray)):
        return [as_numpy(t, copy) for t in tensor]
    if isinstance(tensor, LoDTensor):
        if tensor.lod():
            raise RuntimeError("Some of your fetched tensors hold LoD information. They can not be completely "
                               "cast to Python ndarray. Please set the parameter 'return_numpy' as 'False' "
                               "to return LoDTensor itself directly.")
        return np.array(tensor)
    return np.array(to_host(tensor), copy=copy) if tensor is not None else None


def dtype_is_compatible_with(first, second):
    """Whether two dtypes are the same (after Paddle's spellings: 'float' is float32, ...)."""
    return convert_dtype(first) == convert_dtype(second)


def dimension_is_compatible_with(first, second):
    """Whether two shapes match, -1 / None in either standing for any size."""
    if len(first) != len(second):
        return False
    return all(a is None or b is None or a < 0 or b < 0 or a == b for a, b in zip(first, second))


def check_feed_shape_type(var, feed, num_places=1):
    """Raise ValueError unless ``feed`` (an array or LoDTensor) fits ``var``'s shape and dtype (the
    executor's own feed check)."""
    check_feed_value(var, var.name, np.array(feed) if isinstance(feed, LoDTensor) else feed)
    return True


def _has_ops(program, op_type, names, holder):
    block = program.global_block()
    found = 0
    for op in block.ops:
        if op.type != op_type:
            continue
        found += 1
        slot = op.output("Out")[0] if op_type == "feed" else op.input("X")[0]
        if slot not in names or (holder is not None and
                                 (op.input("X")[0] if op_type == "feed" else op.output("Out")[0]) != holder):
            return False
    return found == len(names) if found else False


def has_feed_operators(block, feed_targets, feed_holder_name):
    """Whether ``block`` already has one ``feed`` op for each of ``feed_targets`` (names or a dict)."""
    program = block.program
    return _has_ops(program, "feed", list(feed_targets), feed_holder_name)


def has_fetch_operators(block, fetch_targets, fetch_holder_name):
    """Whether ``block`` already has one ``fetch`` op for each of ``fetch_targets`` (Variables or names)."""
    names = [t.name if isinstance(t, Variable) else t for t in fetch_targets]
    return _has_ops(block.program, "fetch", names, fetch_holder_name)


def _fetch_var(name, scope=None, return_numpy=True):
    """The value of variable ``name`` (or Variable) in ``scope`` (the global scope by default)."""
    name = name.name if isinstance(name, Variable) else name
    scope = scope if scope is not None else global_scope()
    var = scope.find_var(name)
    if var is None or not var.is_initialized():
        raise ValueError("Cannot find %r in the scope (it holds no value: run the program that makes it, "
                         "or check the name)" % name)
    tensor = var.get_tensor()
    return as_numpy(tensor) if return_numpy else tensor


def _as_lodtensor(data, place, dtype=None):
    """``data`` (an array, or a Python number with ``dtype``) as a LoDTensor on ``place``; a list
    (sequences of different lengths) is a RuntimeError: make it with ``fluid.create_lod_tensor``."""
    if isinstance(data, list):
        raise RuntimeError("_as_lodtensor: a list of arrays holds LoD information; make it a LoDTensor with "
                           "fluid.create_lod_tensor(data, recursive_seq_lens, place) before feeding it")
    if not isinstance(data, np.ndarray) and np.isscalar(data):
        if dtype is None:
            raise ValueError("_as_lodtensor: give the dtype of the Python number %r" % (data,))
        data = np.array([data]).astype(convert_dtype(dtype))
    tensor = LoDTensor()
    tensor.set(data, place)
    return tensor
