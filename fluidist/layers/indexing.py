"""Indexing layers of Paddle 1.8's ``layers/nn.py``: gather, gather_nd, scatter, scatter_nd(_add),
index_select, index_sample, one_hot, where / nonzero, multiplex, unique(_with_counts), shard_index."""
from __future__ import annotations

from typing import Sequence

from ..reader.data_feeder import check_type
from ..framework.program import Variable
from .hints import DType
from .layer_helper import LayerHelper
from ._build import check_var, one_op

__all__ = ["gather", "gather_nd", "scatter", "scatter_nd_add", "scatter_nd", "index_select", "index_sample",
           "one_hot", "where", "nonzero", "multiplex", "unique", "unique_with_counts", "shard_index"]


def gather(input: Variable, index: Variable, overwrite: bool = True) -> Variable:
    """The rows ``index`` of ``input``.

    Args:
        input: the tensor to pick rows from.
        index: a 1-D int tensor of row numbers.
        overwrite: for the gradient with repeated indices: keep only the last one's (Paddle's default)
            or, with False, sum them.

    Returns:
        A Variable of shape ``[len(index)] + input.shape[1:]``.

    Examples:
        >>> table = fluid.data(name="table", shape=[10, 4], dtype="float32")
        >>> rows = fluid.data(name="rows", shape=[3], dtype="int64")
        >>> fluid.layers.gather(table, rows).shape
        (3, 4)
    """
    check_var(input, "gather", "input")
    check_var(index, "gather", "index")
    return one_op("gather", {"X": input, "Index": index}, {"overwrite": bool(overwrite)})


def gather_nd(input: Variable, index: Variable, name: str | None = None) -> Variable:
    """``out[i...] = input[index[i..., :]]``: the last axis of ``index`` holds coordinates into
    ``input``.

    Args:
        input: the tensor.
        index: an int tensor whose last axis has up to ``rank(input)`` coordinates.
        name: the output's name (generated when None).

    Returns:
        A Variable of shape ``index.shape[:-1] + input.shape[index.shape[-1]:]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[4, 5, 6], dtype="float32")
        >>> idx = fluid.data(name="idx", shape=[2, 2], dtype="int64")
        >>> fluid.layers.gather_nd(x, idx).shape
        (2, 6)
    """
    check_var(input, "gather_nd", "input")
    check_var(index, "gather_nd", "index")
    return one_op("gather_nd", {"X": input, "Index": index}, name=name)


def scatter(input: Variable, index: Variable, updates: Variable, name: str | None = None,
            overwrite: bool = True) -> Variable:
    """``input`` with its rows ``index`` replaced by ``updates``.

    Args:
        input: the tensor to update.
        index: a 1-D int tensor of row numbers.
        updates: the new rows, ``[len(index)] + input.shape[1:]``.
        name: the output's name (generated when None).
        overwrite: with repeated indices the last update wins; False sums them.

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> x = fluid.data(name="x", shape=[5, 3], dtype="float32")
        >>> idx = fluid.data(name="idx", shape=[2], dtype="int64")
        >>> upd = fluid.data(name="upd", shape=[2, 3], dtype="float32")
        >>> y = fluid.layers.scatter(x, idx, upd)
    """
    for v, a in ((input, "input"), (index, "index"), (updates, "updates")):
        check_var(v, "scatter", a)
    return one_op("scatter", {"X": input, "Ids": index, "Updates": updates}, {"overwrite": bool(overwrite)}, name=name)


def scatter_nd_add(ref: Variable, index: Variable, updates: Variable, name: str | None = None) -> Variable:
    """``ref`` with ``updates`` added at the coordinates in ``index``; repeated coordinates add up.

    Args:
        ref: the tensor to add into.
        index: an int tensor whose last axis holds coordinates into ``ref``.
        updates: the values, of shape ``index.shape[:-1] + ref.shape[index.shape[-1]:]``.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``ref``'s shape.

    Examples:
        >>> ref = fluid.data(name="ref", shape=[4, 3], dtype="float32")
        >>> idx = fluid.data(name="idx", shape=[2, 1], dtype="int64")
        >>> upd = fluid.data(name="upd", shape=[2, 3], dtype="float32")
        >>> y = fluid.layers.scatter_nd_add(ref, idx, upd)
    """
    for v, a in ((ref, "ref"), (index, "index"), (updates, "updates")):
        check_var(v, "scatter_nd_add", a)
    return one_op("scatter_nd_add", {"X": ref, "Index": index, "Updates": updates}, name=name)


def scatter_nd(index: Variable, updates: Variable, shape: Sequence[int], name: str | None = None) -> Variable:
    """Zeros of ``shape`` with ``updates`` added at ``index`` (``scatter_nd_add`` into zeros).

    Args:
        index: an int tensor whose last axis holds coordinates.
        updates: the values.
        shape: the output's shape.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``shape``.

    Examples:
        >>> idx = fluid.data(name="idx", shape=[2, 1], dtype="int64")
        >>> upd = fluid.data(name="upd", shape=[2, 3], dtype="float32")
        >>> fluid.layers.scatter_nd(idx, upd, shape=[5, 3]).shape
        (5, 3)
    """
    from .tensor import fill_constant
    check_var(updates, "scatter_nd", "updates")
    return scatter_nd_add(fill_constant(shape, updates.dtype, 0.0), index, updates, name)


def index_select(input: Variable, index: Variable, dim: int = 0) -> Variable:
    """The entries ``index`` of ``input`` along ``dim``.

    Args:
        input: the tensor.
        index: a 1-D int tensor of positions along ``dim``.
        dim: the dimension to pick along.

    Returns:
        A Variable with ``len(index)`` entries along ``dim``.

    Examples:
        >>> x = fluid.data(name="x", shape=[4, 6], dtype="float32")
        >>> cols = fluid.data(name="cols", shape=[2], dtype="int64")
        >>> fluid.layers.index_select(x, cols, dim=1).shape
        (4, 2)
    """
    check_var(input, "index_select", "x")
    check_var(index, "index_select", "index")
    return one_op("index_select", {"X": input, "Index": index}, {"dim": int(dim)})


def index_sample(x: Variable, index: Variable) -> Variable:
    """``out[i, j] = x[i, index[i, j]]`` for 2-D ``x`` and ``index``: per row, the chosen columns.

    Args:
        x: a 2-D tensor.
        index: a 2-D int tensor with ``x``'s number of rows.

    Returns:
        A Variable of ``index``'s shape and ``x``'s dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 10], dtype="float32")
        >>> idx = fluid.data(name="idx", shape=[None, 3], dtype="int64")
        >>> picked = fluid.layers.index_sample(x, idx)
    """
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


def one_hot(input: Variable, depth: int, allow_out_of_range: bool = False) -> Variable:
    """float32 one-hot rows of length ``depth`` for int ids.

    Args:
        input: int ids of shape ``[..., 1]``.
        depth: the number of classes.
        allow_out_of_range: an id outside ``[0, depth)`` gives a zero row instead of an error.

    Returns:
        A float32 Variable: ``input``'s shape with the last 1 replaced by ``depth``.

    Examples:
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> fluid.layers.one_hot(label, depth=10).shape
        (-1, 10)
    """
    return _one_hot("one_hot", input, depth, allow_out_of_range)


def where(condition: Variable) -> Variable:
    """The int64 coordinates of the true entries of ``condition``, one row each.

    Args:
        condition: a bool tensor.

    Returns:
        An int64 Variable of shape ``[N, rank]``, N known at run time.

    Examples:
        >>> mask = fluid.data(name="mask", shape=[None, 4], dtype="bool")
        >>> coords = fluid.layers.where(mask)
    """
    check_var(condition, "where", "condition")
    return one_op("where_index", {"Condition": condition}, dtype="int64", layer="where_index", stop_gradient=True)


def nonzero(input: Variable, as_tuple: bool = False) -> Variable | tuple[Variable, ...]:
    """The coordinates of the non-zero entries of ``input``.

    Args:
        input: the tensor.
        as_tuple: return one ``[N, 1]`` column per dimension instead of one ``[N, rank]`` tensor.

    Returns:
        An int64 Variable ``[N, rank]``, or a tuple of columns.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> coords = fluid.layers.nonzero(x)
    """
    from .manipulation import slice as slice_layer
    out = one_op("where_index", {"Condition": check_var(input, "nonzero", "input")}, dtype="int64",
                 layer="where_index", stop_gradient=True)
    if not as_tuple:
        return out
    return tuple(slice_layer(out, axes=[1], starts=[i], ends=[i + 1]) for i in range(len(input.shape)))


def multiplex(inputs: Sequence[Variable], index: Variable) -> Variable:
    """Row ``i`` taken from ``inputs[index[i]]``.

    Args:
        inputs: same-shaped tensors to choose from.
        index: an int32 ``[N, 1]`` tensor naming, per row, the input to take it from.

    Returns:
        A Variable of the inputs' shape.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 3], dtype="float32")
        >>> which = fluid.data(name="which", shape=[None, 1], dtype="int32")
        >>> mixed = fluid.layers.multiplex([a, b], which)
    """
    check_type(inputs, "inputs", list, "multiplex")
    if len(inputs) < 2:
        raise ValueError("multiplex: inputs must be a list of at least 2 Variables")
    for x in inputs:
        check_var(x, "multiplex", "inputs")
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


def unique(x: Variable, dtype: DType = "int32") -> tuple[Variable, Variable]:
    """The distinct values of a 1-D ``x`` in order of first appearance, and where each element's value
    sits among them.

    Args:
        x: a 1-D tensor.
        dtype: the dtype of the index output.

    Returns:
        ``(values, index)``: ``values[index] == x``.

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None], dtype="int64")
        >>> values, where_in_values = fluid.layers.unique(ids)
    """
    return _unique("unique", x, dtype, False)


def unique_with_counts(x: Variable, dtype: DType = "int32") -> tuple[Variable, Variable, Variable]:
    """``unique``, plus how often each distinct value occurs.

    Args:
        x: a 1-D tensor.
        dtype: the dtype of the index and count outputs.

    Returns:
        ``(values, index, counts)``.

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None], dtype="int64")
        >>> values, index, counts = fluid.layers.unique_with_counts(ids)
    """
    return _unique("unique_with_counts", x, dtype, True)


def shard_index(input: Variable, index_num: int, nshards: int, shard_id: int, ignore_value: int = -1) -> Variable:
    """Ids of shard ``shard_id`` made local to it; the other ids become ``ignore_value``.

    Args:
        input: int ids ``[N, 1]``.
        index_num: the size of the id space, split into ``nshards`` equal ranges.
        nshards: the number of shards.
        shard_id: this shard.
        ignore_value: what ids of other shards become.

    Returns:
        An int Variable of ``input``'s shape.

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        >>> local = fluid.layers.shard_index(ids, index_num=100, nshards=2, shard_id=0)
    """
    check_var(input, "shard_index", "input")
    if not 0 <= shard_id < nshards:
        raise ValueError("shard_index: shard_id %d must be in [0, %d)" % (shard_id, nshards))
    return one_op("shard_index", {"X": input}, {"index_num": int(index_num), "nshards": int(nshards),
                                                "shard_id": int(shard_id), "ignore_value": int(ignore_value)},
                  stop_gradient=True)
