"""Indexing layers of Paddle 1.8's ``layers/nn.py``: gather, gather_nd, scatter, scatter_nd(_add),
index_select, index_sample, one_hot, where / nonzero, multiplex, unique(_with_counts), shard_index."""
from ..framework.program import Variable
from .layer_helper import LayerHelper
from ._build import check_var, one_op

__all__ = ["gather", "gather_nd", "scatter", "scatter_nd_add", "scatter_nd", "index_select", "index_sample",
           "one_hot", "where", "nonzero", "multiplex", "unique", "unique_with_counts", "shard_index"]


def gather(input, index, overwrite=True):
    """Rows ``index`` (1-D ints) of ``input``. ``overwrite``: with repeated indices, the gradient keeps
    only the last one's (Paddle's default); False sums them."""
    check_var(input, "gather", "input")
    check_var(index, "gather", "index")
    return one_op("gather", {"X": input, "Index": index}, {"overwrite": bool(overwrite)})


def gather_nd(input, index, name=None):
    """``out[i...] = input[index[i..., :]]``: the last axis of ``index`` holds coordinates."""
    check_var(input, "gather_nd", "input")
    check_var(index, "gather_nd", "index")
    return one_op("gather_nd", {"X": input, "Index": index}, name=name)


def scatter(input, index, updates, name=None, overwrite=True):
    """``input`` with rows ``index`` set to ``updates`` (repeated indices: the last wins, or with
    ``overwrite=False`` their updates are summed)."""
    for v, a in ((input, "input"), (index, "index"), (updates, "updates")):
        check_var(v, "scatter", a)
    return one_op("scatter", {"X": input, "Ids": index, "Updates": updates}, {"overwrite": bool(overwrite)}, name=name)


def scatter_nd_add(ref, index, updates, name=None):
    """``ref`` with ``updates`` added at the coordinates in ``index`` (repeats add up)."""
    for v, a in ((ref, "ref"), (index, "index"), (updates, "updates")):
        check_var(v, "scatter_nd_add", a)
    return one_op("scatter_nd_add", {"X": ref, "Index": index, "Updates": updates}, name=name)


def scatter_nd(index, updates, shape, name=None):
    """Zeros of ``shape`` with ``updates`` added at ``index`` (``fill_constant`` + ``scatter_nd_add``)."""
    from .tensor import fill_constant
    check_var(updates, "scatter_nd", "updates")
    return scatter_nd_add(fill_constant(shape, updates.dtype, 0.0), index, updates, name)


def index_select(input, index, dim=0):
    """The entries ``index`` of ``input`` along ``dim``."""
    check_var(input, "index_select", "input")
    check_var(index, "index_select", "index")
    return one_op("index_select", {"X": input, "Index": index}, {"dim": int(dim)})


def index_sample(x, index):
    """``out[i, j] = x[i, index[i, j]]`` for 2-D ``x`` and ``index``."""
    check_var(x, "index_sample", "x")
    check_var(index, "index_sample", "index")
    return one_op("index_sample", {"X": x, "Index": index})


def _one_hot(op_type, input, depth, allow_out_of_range):
    check_var(input, op_type, "input")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference("float32")
    inputs = {"X": [input]}
    attrs = {"allow_out_of_range": bool(allow_out_of_range), "dtype": "float32"}
    if isinstance(depth, Variable):
        depth.stop_gradient = True
        inputs["depth_tensor"] = [depth]
    else:
        if int(depth) < 1:
            raise ValueError("%s: depth must be >= 1, got %r" % (op_type, depth))
        attrs["depth"] = int(depth)
    helper.append_op(op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
    return out


def one_hot(input, depth, allow_out_of_range=False):
    """float32 one-hot rows of ``depth`` for int ids of shape [..., 1] (that last 1 replaced by
    ``depth``). An id outside [0, depth) is an error unless ``allow_out_of_range`` (zero row)."""
    return _one_hot("one_hot", input, depth, allow_out_of_range)


def where(condition):
    """The int64 coordinates of the true entries of ``condition``, one row each ([N, rank])."""
    check_var(condition, "where", "condition")
    return one_op("where_index", {"Condition": condition}, dtype="int64", layer="where_index", stop_gradient=True)


def nonzero(input, as_tuple=False):
    """The coordinates of the non-zero entries of ``input`` ([N, rank] int64), or with ``as_tuple`` one
    [N, 1] column per dimension."""
    from .manipulation import slice as slice_layer
    out = one_op("where_index", {"Condition": check_var(input, "nonzero", "input")}, dtype="int64",
                 layer="where_index", stop_gradient=True)
    if not as_tuple:
        return out
    return tuple(slice_layer(out, axes=[1], starts=[i], ends=[i + 1]) for i in range(len(input.shape)))


def multiplex(inputs, index):
    """Row i of ``inputs[index[i]]`` (``index``: int32 [N, 1])."""
    if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
        raise ValueError("multiplex: inputs must be a list of at least 2 Variables")
    check_var(index, "multiplex", "index")
    return one_op("multiplex", {"X": list(inputs), "Ids": index})


def _unique(op_type, x, dtype, counts):
    check_var(x, op_type, "x")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    index = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    outputs = {"Out": [out], "Index": [index]}
    if counts:
        count = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
        outputs["Count"] = [count]
    helper.append_op(op_type, inputs={"X": [x]}, outputs=outputs, attrs={"dtype": dtype})
    return (out, index, count) if counts else (out, index)


def unique(x, dtype="int32"):
    """The distinct values of 1-D ``x`` in order of first appearance, and the index of each element's
    value among them."""
    return _unique("unique", x, dtype, False)


def unique_with_counts(x, dtype="int32"):
    """``unique`` plus how often each distinct value occurs."""
    return _unique("unique_with_counts", x, dtype, True)


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):
    """Ids of shard ``shard_id`` made local to it (``index_num`` ids in ``nshards`` equal ranges); the
    others become ``ignore_value``."""
    check_var(input, "shard_index", "input")
    if not 0 <= shard_id < nshards:
        raise ValueError("shard_index: shard_id %d must be in [0, %d)" % (shard_id, nshards))
    return one_op("shard_index", {"X": input}, {"index_num": int(index_num), "nshards": int(nshards),
                                                "shard_id": int(shard_id), "ignore_value": int(ignore_value)},
                  stop_gradient=True)
