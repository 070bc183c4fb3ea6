"""Tensor-array and rank-table layers (Paddle keeps them in ``layers.control_flow``, which re-exports
them): ``create_array``, ``array_write`` / ``array_read`` / ``array_length``, ``lod_rank_table``,
``max_sequence_len``, ``lod_tensor_to_array`` / ``array_to_lod_tensor``, ``shrink_memory`` and
``reorder_lod_tensor_by_rank``.

A LoDTensorArray is a list of tensors that lives in a scope: loops write step ``i``'s value to item
``i`` and read it back, and its gradient flows through the writes and reads."""
from __future__ import annotations

from ..framework import unique_name
from ..framework.dtypes import VarType
from ..framework.program import Variable
from .hints import DType
from .layer_helper import LayerHelper, check_variable

__all__ = ["create_array", "array_write", "array_read", "array_length", "lod_rank_table", "max_sequence_len",
           "lod_tensor_to_array", "array_to_lod_tensor", "shrink_memory", "reorder_lod_tensor_by_rank",
           "tensor_array_to_tensor"]


def _check_var(x, layer, arg, array=None):
    check_variable(x, layer, arg)
    if array is True and x.type != VarType.LOD_TENSOR_ARRAY:
        raise TypeError("%s: %r (%s) must be a LoDTensorArray (from create_array or array_write), not a %s"
                        % (layer, arg, x.name, x.type))
    if array is False and x.type == VarType.LOD_TENSOR_ARRAY:
        raise TypeError("%s: %r (%s) must be a tensor, not a LoDTensorArray" % (layer, arg, x.name))


def _array_var(helper, dtype, name=None):
    return helper.create_variable(name=name or "{0}.out".format(helper.name), type=VarType.LOD_TENSOR_ARRAY,
                                  dtype=dtype)


def create_array(dtype: DType) -> Variable:
    """An empty tensor array (a LoDTensorArray variable) of ``dtype``.

    No op is built: the array starts empty in every run, and ``array_write`` fills it.

    Args:
        dtype: the dtype of the items.

    Returns:
        A Variable of type LoDTensorArray.

    Examples:
        >>> arr = fluid.layers.create_array("float32")
        >>> x = fluid.layers.fill_constant(shape=[2], dtype="float32", value=1.0)
        >>> i = fluid.layers.zeros(shape=[1], dtype="int64")
        >>> arr = fluid.layers.array_write(x, i, array=arr)
    """
    helper = LayerHelper("array")
    return _array_var(helper, dtype)


def array_write(x: Variable, i: Variable, array: Variable | None = None) -> Variable:
    """``array[i] = x``; the array grows to ``i + 1`` items when it is shorter.

    Args:
        x: the tensor to store.
        i: an int64 ``[1]`` Variable, the index.
        array: the tensor array to write to; a new one (of ``x``'s dtype) when None.

    Returns:
        The array written to.

    Raises:
        TypeError: ``x`` is a tensor array, or ``array`` is not one.

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[2], dtype="float32", value=3.0)
        >>> i = fluid.layers.zeros(shape=[1], dtype="int64")
        >>> arr = fluid.layers.array_write(x, i)
        >>> y = fluid.layers.array_read(arr, i)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> exe.run(fetch_list=[y])[0].tolist()
        [3.0, 3.0]
    """
    _check_var(x, "array_write", "x", array=False)
    _check_var(i, "array_write", "i")
    helper = LayerHelper("array_write")
    if array is None:
        array = _array_var(helper, x.dtype)
    else:
        _check_var(array, "array_write", "array", array=True)
    helper.append_op("write_to_array", inputs={"X": [x], "I": [i]}, outputs={"Out": [array]})
    return array


def array_read(array: Variable, i: Variable) -> Variable:
    """Item ``i`` of a tensor array.

    Args:
        array: the tensor array.
        i: an int64 ``[1]`` Variable, the index.

    Returns:
        A Variable holding the item (of the array's dtype).

    Raises:
        TypeError: ``array`` is not a tensor array.

    Examples:
        >>> arr = fluid.layers.create_array("float32")
        >>> i = fluid.layers.zeros(shape=[1], dtype="int64")
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        >>> arr = fluid.layers.array_write(x, i, array=arr)
        >>> item = fluid.layers.array_read(arr, i)
    """
    _check_var(array, "array_read", "array", array=True)
    _check_var(i, "array_read", "i")
    helper = LayerHelper("array_read")
    out = helper.create_variable_for_type_inference(dtype=array.dtype)
    helper.append_op("read_from_array", inputs={"X": [array], "I": [i]}, outputs={"Out": [out]})
    return out


def array_length(array: Variable) -> Variable:
    """The number of items of a tensor array.

    Args:
        array: the tensor array.

    Returns:
        An int64 ``[1]`` Variable (no gradient).

    Raises:
        TypeError: ``array`` is not a tensor array.

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        >>> i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=2)
        >>> arr = fluid.layers.array_write(x, i)
        >>> n = fluid.layers.array_length(arr)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> exe.run(fetch_list=[n])[0].tolist()
        [3]
    """
    _check_var(array, "array_length", "array", array=True)
    helper = LayerHelper("array_length")
    out = helper.create_variable_for_type_inference(dtype="int64", stop_gradient=True)
    helper.append_op("lod_array_length", inputs={"X": [array]}, outputs={"Out": [out]})
    return out


def lod_rank_table(x: Variable, level: int = 0) -> Variable:
    """The sequences of LoD level ``level`` of ``x`` sorted by length, longest first."""
    _check_var(x, "lod_rank_table", "x")
    helper = LayerHelper("lod_rank_table")
    table = helper.create_variable(type=VarType.LOD_RANK_TABLE, name=unique_name.generate("lod_rank_table"),
                                   stop_gradient=True)
    helper.append_op("lod_rank_table", inputs={"X": [x]}, outputs={"Out": [table]}, attrs={"level": int(level)})
    return table


def _check_table(table, layer):
    if not isinstance(table, Variable) or table.type != VarType.LOD_RANK_TABLE:
        raise TypeError("%s: the rank table must be a Variable made by lod_rank_table, got %r"
                        % (layer, getattr(table, "name", table)))


def max_sequence_len(rank_table: Variable) -> Variable:
    """The length of the longest sequence of the rank table (int64 ``[1]``)."""
    _check_table(rank_table, "max_sequence_len")
    helper = LayerHelper("max_seqence_len")
    out = helper.create_variable_for_type_inference(dtype="int64", stop_gradient=True)
    helper.append_op("max_sequence_len", inputs={"RankTable": [rank_table]}, outputs={"Out": [out]})
    return out


def lod_tensor_to_array(x: Variable, table: Variable) -> Variable:
    """One array item per time step: item ``t`` holds step ``t`` of each sequence still running, in
    the order of ``table``."""
    _check_var(x, "lod_tensor_to_array", "x", array=False)
    _check_table(table, "lod_tensor_to_array")
    helper = LayerHelper("lod_tensor_to_array")
    array = _array_var(helper, x.dtype, unique_name.generate("lod_tensor_to_array"))
    helper.append_op("lod_tensor_to_array", inputs={"X": [x], "RankTable": [table]}, outputs={"Out": [array]})
    return array


def array_to_lod_tensor(x: Variable, table: Variable) -> Variable:
    """The inverse of ``lod_tensor_to_array``: the sequences back in their order, with their LoD."""
    _check_var(x, "array_to_lod_tensor", "x", array=True)
    _check_table(table, "array_to_lod_tensor")
    helper = LayerHelper("array_to_lod_tensor")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("array_to_lod_tensor", inputs={"X": [x], "RankTable": [table]}, outputs={"Out": [out]})
    return out


def shrink_memory(x: Variable, i: Variable, table: Variable) -> Variable:
    """The first rows of ``x``, one per sequence of ``table`` longer than step ``i``."""
    _check_var(x, "shrink_memory", "x", array=False)
    _check_var(i, "shrink_memory", "i")
    _check_table(table, "shrink_memory")
    helper = LayerHelper("shrink_memory")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("shrink_rnn_memory", inputs={"X": [x], "I": [i], "RankTable": [table]},
                     outputs={"Out": [out]})
    return out


def reorder_lod_tensor_by_rank(x: Variable, rank_table: Variable) -> Variable:
    """The sequences (or rows, when ``x`` has no LoD) of ``x`` in the order of a rank table.

    Args:
        x: a tensor, with or without LoD.
        rank_table: a rank table from ``lod_rank_table`` (sequences by length, longest first).

    Returns:
        A Variable with ``x``'s sequences reordered (and its LoD to match).

    Raises:
        TypeError: ``x`` is a tensor array, or ``rank_table`` is not a rank table.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32", lod_level=1)
        >>> table = fluid.layers.control_flow.lod_rank_table(x)
        >>> longest_first = fluid.layers.reorder_lod_tensor_by_rank(x, table)
    """
    _check_var(x, "reorder_lod_tensor_by_rank", "x", array=False)
    _check_table(rank_table, "reorder_lod_tensor_by_rank")
    helper = LayerHelper("reorder_lod_tensor_by_rank")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("reorder_lod_tensor_by_rank", inputs={"X": [x], "RankTable": [rank_table]},
                     outputs={"Out": [out]})
    return out


def tensor_array_to_tensor(input: Variable, axis: int = 1, name: str | None = None,
                           use_stack: bool = False) -> tuple[Variable, Variable]:
    """The items of a tensor array joined into one tensor.

    Args:
        input: the tensor array.
        axis: the axis to concatenate (or, with ``use_stack``, to stack) along.
        name: the output's name (generated when None).
        use_stack: stack the items along a new axis ``axis`` instead of concatenating.

    Returns:
        ``(out, out_index)``: the joined tensor and an int32 ``[items]`` Variable holding each
        item's size along ``axis``.

    Raises:
        TypeError: ``input`` is not a tensor array.

    Examples:
        >>> arr = fluid.layers.create_array("float32")
        >>> for k in range(2):
        ...     x = fluid.layers.fill_constant(shape=[2, k + 1], dtype="float32", value=float(k))
        ...     i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=k)
        ...     arr = fluid.layers.array_write(x, i, array=arr)
        >>> joined, sizes = fluid.layers.tensor_array_to_tensor(arr, axis=1)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> out, n = exe.run(fetch_list=[joined, sizes])
        >>> out.shape, n.tolist()
        ((2, 3), [1, 2])
    """
    _check_var(input, "tensor_array_to_tensor", "input", array=True)
    helper = LayerHelper("tensor_array_to_tensor", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    out_index = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op("tensor_array_to_tensor", inputs={"X": [input]}, outputs={"Out": [out], "OutIndex": [out_index]},
                     attrs={"axis": int(axis), "use_stack": bool(use_stack)})
    return out, out_index
