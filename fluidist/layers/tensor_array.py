"""Tensor-array and rank-table layers (Paddle keeps them in ``layers.control_flow``, which re-exports
them): ``create_array``, ``array_write`` / ``array_read`` / ``array_length``, ``lod_rank_table``,
``max_sequence_len``, ``lod_tensor_to_array`` / ``array_to_lod_tensor``, ``shrink_memory`` and
``reorder_lod_tensor_by_rank``."""
from ..framework import unique_name
from ..framework.dtypes import VarType
from ..framework.program import Variable
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


def create_array(dtype):
    """An empty LoDTensorArray variable of ``dtype`` (no op: it starts empty in every run)."""
    helper = LayerHelper("array")
    return _array_var(helper, dtype)


def array_write(x, i, array=None):
    """``array[i] = x`` (``i``: an int64 ``[1]`` Variable); a new array when ``array`` is None."""
    _check_var(x, "array_write", "x", array=False)
    _check_var(i, "array_write", "i")
    helper = LayerHelper("array_write")
    if array is None:
        array = _array_var(helper, x.dtype)
    else:
        _check_var(array, "array_write", "array", array=True)
    helper.append_op("write_to_array", inputs={"X": [x], "I": [i]}, outputs={"Out": [array]})
    return array


def array_read(array, i):
    """Item ``i`` of ``array`` (``i``: an int64 ``[1]`` Variable)."""
    _check_var(array, "array_read", "array", array=True)
    _check_var(i, "array_read", "i")
    helper = LayerHelper("array_read")
    out = helper.create_variable_for_type_inference(dtype=array.dtype)
    helper.append_op("read_from_array", inputs={"X": [array], "I": [i]}, outputs={"Out": [out]})
    return out


def array_length(array):
    """The number of items of ``array`` (int64 ``[1]``)."""
    _check_var(array, "array_length", "array", array=True)
    helper = LayerHelper("array_length")
    out = helper.create_variable_for_type_inference(dtype="int64", stop_gradient=True)
    helper.append_op("lod_array_length", inputs={"X": [array]}, outputs={"Out": [out]})
    return out


def lod_rank_table(x, level=0):
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


def max_sequence_len(rank_table):
    """The length of the longest sequence of the rank table (int64 ``[1]``)."""
    _check_table(rank_table, "max_sequence_len")
    helper = LayerHelper("max_seqence_len")
    out = helper.create_variable_for_type_inference(dtype="int64", stop_gradient=True)
    helper.append_op("max_sequence_len", inputs={"RankTable": [rank_table]}, outputs={"Out": [out]})
    return out


def lod_tensor_to_array(x, table):
    """One array item per time step: item ``t`` holds step ``t`` of each sequence still running, in
    the order of ``table``."""
    _check_var(x, "lod_tensor_to_array", "x", array=False)
    _check_table(table, "lod_tensor_to_array")
    helper = LayerHelper("lod_tensor_to_array")
    array = _array_var(helper, x.dtype, unique_name.generate("lod_tensor_to_array"))
    helper.append_op("lod_tensor_to_array", inputs={"X": [x], "RankTable": [table]}, outputs={"Out": [array]})
    return array


def array_to_lod_tensor(x, table):
    """The inverse of ``lod_tensor_to_array``: the sequences back in their order, with their LoD."""
    _check_var(x, "array_to_lod_tensor", "x", array=True)
    _check_table(table, "array_to_lod_tensor")
    helper = LayerHelper("array_to_lod_tensor")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("array_to_lod_tensor", inputs={"X": [x], "RankTable": [table]}, outputs={"Out": [out]})
    return out


def shrink_memory(x, i, table):
    """The first rows of ``x``, one per sequence of ``table`` longer than step ``i``."""
    _check_var(x, "shrink_memory", "x", array=False)
    _check_var(i, "shrink_memory", "i")
    _check_table(table, "shrink_memory")
    helper = LayerHelper("shrink_memory")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("shrink_rnn_memory", inputs={"X": [x], "I": [i], "RankTable": [table]},
                     outputs={"Out": [out]})
    return out


def reorder_lod_tensor_by_rank(x, rank_table):
    """The sequences (or rows, without LoD) of ``x`` in the order of ``rank_table``."""
    _check_var(x, "reorder_lod_tensor_by_rank", "x", array=False)
    _check_table(rank_table, "reorder_lod_tensor_by_rank")
    helper = LayerHelper("reorder_lod_tensor_by_rank")
    out = helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("reorder_lod_tensor_by_rank", inputs={"X": [x], "RankTable": [rank_table]},
                     outputs={"Out": [out]})
    return out


def tensor_array_to_tensor(input, axis=1, name=None, use_stack=False):
    """The items of the array ``input`` concatenated (or stacked, ``use_stack``) along ``axis``;
    returns ``(out, out_index)``, ``out_index`` holding each item's size along ``axis``."""
    _check_var(input, "tensor_array_to_tensor", "input", array=True)
    helper = LayerHelper("tensor_array_to_tensor", name=name)
    out = helper.create_variable_for_type_inference(dtype=input.dtype)
    out_index = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op("tensor_array_to_tensor", inputs={"X": [input]}, outputs={"Out": [out], "OutIndex": [out_index]},
                     attrs={"axis": int(axis), "use_stack": bool(use_stack)})
    return out, out_index
