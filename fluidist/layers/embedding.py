"""``embedding``: a ``lookup_table`` op over a ``[vocab, width]`` parameter."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from .hints import DType, ParamAttrLike
from ..reader.data_feeder import check_dtype
from .layer_helper import LayerHelper, check_variable

__all__ = ["embedding"]


def embedding(input: Variable, size: Sequence[int], is_sparse: bool = False, is_distributed: bool = False,
              padding_idx: int | None = None, param_attr: ParamAttrLike = None, dtype: DType = "float32") -> Variable:
    """Look up rows of a ``[vocab, width]`` table for the int64 ids in ``input``.

    Paddle 1.8 difference: ``remote_prefetch`` does not exist; fluidist's transpiler sends a sparse
    table's gradient with ``split_selected_rows`` (Paddle 1.x's plain sparse path).

    Args:
        input: int64 ids of shape ``[N, 1]`` (a LoD is passed on to the output).
        size: ``[vocab, width]``, the table's shape.
        is_sparse: the table's gradient is a SelectedRows holding only the looked-up rows (sent as
            rows in parameter-server mode).
        is_distributed: in parameter-server mode, the table is split over the pservers and rows are
            prefetched (a distributed lookup table).
        padding_idx: this id gives a zero row and no gradient (negative counts from the end; None for none).
        param_attr: the table's attribute (name, initializer, ...).
        dtype: the table's dtype.

    Returns:
        A Variable of shape ``[N, width]``.

    Examples:
        >>> ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        >>> vec = fluid.layers.embedding(ids, size=[1000, 32], is_sparse=True)
        >>> vec.shape
        (-1, 32)
    """
    return lookup(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype, "lookup_table")


def lookup(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype, op_type):
    """The embedding layer building ``op_type`` (``lookup_table``, or ``lookup_table_v2`` for
    ``fluid.embedding``, whose ids need no trailing 1)."""
    # Paddle 1.8 takes int64 ids only, in both forms (``fluid.embedding`` is lookup_table_v2)
    check_variable(input, "embedding" if op_type == "lookup_table" else "fluid.embedding", "input")
    check_dtype(dtype, "dtype", ["float16", "float32", "float64"],
                "embedding" if op_type == "lookup_table" else "fluid.embedding")
    if len(size) != 2 or any(int(s) <= 0 for s in size):
        raise ValueError("embedding: size must be [vocab_size, embedding_width] with both > 0, got %s"
                         % (list(size),))
    size = [int(s) for s in size]
    if padding_idx is None:
        padding_idx = -1
    else:
        padding_idx = int(padding_idx)
        if not -size[0] <= padding_idx < size[0]:
            raise ValueError("embedding: padding_idx %d is out of range for a table of %d rows"
                             % (padding_idx, size[0]))
        if padding_idx < 0:
            padding_idx += size[0]
    helper = LayerHelper("embedding", param_attr=param_attr)
    w = helper.create_parameter(attr=helper.param_attr, shape=size, dtype=dtype, is_bias=False)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(op_type, inputs={"Ids": [input], "W": [w]}, outputs={"Out": [out]},
                     attrs={"is_sparse": bool(is_sparse), "is_distributed": bool(is_distributed),
                            "remote_prefetch": False, "padding_idx": padding_idx})
    return out
