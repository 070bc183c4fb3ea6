"""Searching a tensor: ``argmax``, ``argmin``, ``argsort``, ``reverse`` and the ``has_inf`` /
``has_nan`` / ``isfinite`` checks; ``fluid.layers.tensor`` re-exports them."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from .layer_helper import LayerHelper, check_variable

__all__ = ["argmax", "argmin", "argsort", "reverse", "has_inf", "has_nan", "isfinite"]

_check_var = check_variable


def _arg_layer(op_type, x, axis, layer):
    _check_var(x, layer, "x")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"axis": int(axis)})
    return out


def _check_op(op_type, x, dtype):
    _check_var(x, op_type, "x")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(op_type, inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def argmax(x: Variable, axis: int = 0) -> Variable:
    """The int64 indices of the largest values along ``axis`` (that axis removed).

    Args:
        x: the tensor.
        axis: the axis to search.

    Returns:
        An int64 Variable.

    Examples:
        >>> scores = fluid.data(name="scores", shape=[None, 10], dtype="float32")
        >>> best = fluid.layers.argmax(scores, axis=1)
    """
    return _arg_layer("arg_max", x, axis, "argmax")


def argmin(x: Variable, axis: int = 0) -> Variable:
    """The int64 indices of the smallest values along ``axis`` (that axis removed).

    Args:
        x: the tensor.
        axis: the axis to search.

    Returns:
        An int64 Variable.

    Examples:
        >>> costs = fluid.data(name="costs", shape=[None, 10], dtype="float32")
        >>> cheapest = fluid.layers.argmin(costs, axis=1)
    """
    return _arg_layer("arg_min", x, axis, "argmin")


def argsort(input: Variable, axis: int = -1, descending: bool = False,
            name: str | None = None) -> tuple[Variable, Variable]:
    """``input`` sorted along ``axis``, and where each value came from.

    Args:
        input: the tensor.
        axis: the axis to sort along.
        descending: largest first.
        name: the outputs' name prefix (generated when None).

    Returns:
        ``(sorted, indices)``; indices are int64.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> ordered, order = fluid.layers.argsort(x, axis=1, descending=True)
    """
    _check_var(input, "argsort", "input")
    helper = LayerHelper("argsort", name=name)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    ids = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("argsort", inputs={"X": [input]}, outputs={"Out": [out], "Indices": [ids]},
                     attrs={"axis": int(axis), "descending": bool(descending)})
    return out, ids


def reverse(x: Variable, axis: int | Sequence[int]) -> Variable:
    """``x`` reversed along ``axis``.

    Args:
        x: the tensor.
        axis: an axis or a list of axes.

    Returns:
        A Variable with ``x``'s shape.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> backwards = fluid.layers.reverse(x, axis=1)
    """
    _check_var(x, "reverse", "x")
    axis = [axis] if isinstance(axis, int) else [int(a) for a in axis]
    helper = LayerHelper("reverse")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("reverse", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def has_inf(x: Variable) -> Variable:
    """Whether ``x`` holds an infinity: a one-element bool tensor.

    Args:
        x: the tensor.

    Returns:
        A bool Variable of shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> overflowed = fluid.layers.has_inf(x)
    """
    return _check_op("isinf", x, "bool")


def has_nan(x: Variable) -> Variable:
    """Whether ``x`` holds a NaN: a one-element bool tensor.

    Args:
        x: the tensor.

    Returns:
        A bool Variable of shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> broken = fluid.layers.has_nan(x)
    """
    return _check_op("isnan", x, "bool")


def isfinite(x: Variable) -> Variable:
    """Whether every element of ``x`` is finite: a one-element bool tensor.

    Args:
        x: the tensor.

    Returns:
        A bool Variable of shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> ok = fluid.layers.isfinite(x)
    """
    return _check_op("isfinite", x, "bool")
