"""The elementwise binary layers (``elementwise_add`` ... ``elementwise_mod``), with Paddle's
broadcasting of ``y`` onto ``x`` from ``axis``; ``fluid.layers.nn`` re-exports them."""
from __future__ import annotations

from ..framework.variable import Variable
from .layer_helper import LayerHelper
from .layer_helper import check_variable as _check_var

__all__ = ["elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div", "elementwise_max", "elementwise_min", "elementwise_pow", "elementwise_floordiv", "elementwise_mod"]


def _elementwise(op_type: str, x: Variable, y: Variable, axis: int, act: str | None, name: str | None) -> Variable:
    _check_var(x, op_type, "x")
    _check_var(y, op_type, "y")
    helper = LayerHelper(op_type, name=name, act=act)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]}, attrs={"axis": axis})
    return helper.append_activation(out)


def elementwise_add(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``x + y``, with ``y`` broadcast onto ``x``.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> sum = fluid.layers.elementwise_add(x, y)
    """
    return _elementwise("elementwise_add", x, y, axis, act, name)


def elementwise_sub(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``x - y``, with ``y`` broadcast onto ``x``.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> diff = fluid.layers.elementwise_sub(x, y)
    """
    return _elementwise("elementwise_sub", x, y, axis, act, name)


def elementwise_mul(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``x * y``, with ``y`` broadcast onto ``x``.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> prod = fluid.layers.elementwise_mul(x, y)
    """
    return _elementwise("elementwise_mul", x, y, axis, act, name)


def elementwise_div(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``x / y``, with ``y`` broadcast onto ``x``.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> ratio = fluid.layers.elementwise_div(x, y)
    """
    return _elementwise("elementwise_div", x, y, axis, act, name)


def elementwise_max(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``max(x, y)``, with ``y`` broadcast onto ``x``.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> upper = fluid.layers.elementwise_max(x, y)
    """
    return _elementwise("elementwise_max", x, y, axis, act, name)


def elementwise_min(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``min(x, y)``, with ``y`` broadcast onto ``x``.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> lower = fluid.layers.elementwise_min(x, y)
    """
    return _elementwise("elementwise_min", x, y, axis, act, name)


def elementwise_pow(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``x ** y``, with ``y`` broadcast onto ``x``.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> p = fluid.layers.elementwise_pow(x, y)
    """
    return _elementwise("elementwise_pow", x, y, axis, act, name)


def elementwise_floordiv(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                         name: str | None = None) -> Variable:
    """Elementwise ``x // y``, with ``y`` broadcast onto ``x``.

    The quotient is truncated toward zero (C's division), for integers and floats alike, as in
    Paddle 1.8's CPU kernel, where Python would floor. No gradient.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="int64")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="int64")
        >>> q = fluid.layers.elementwise_floordiv(x, y)
    """
    return _elementwise("elementwise_floordiv", x, y, axis, act, name)


def elementwise_mod(x: Variable, y: Variable, axis: int = -1, act: str | None = None,
                    name: str | None = None) -> Variable:
    """Elementwise ``x % y``, with ``y`` broadcast onto ``x``.

    Integer inputs take the sign of ``x`` (C's ``%``), as Paddle 1.8's CPU kernel; floats take
    Python's (the sign of ``y``). No gradient.

    Args:
        x: the first operand; the output has its shape and dtype.
        y: the second operand: the same shape as ``x``, or a shape that matches a run of ``x``'s
            axes starting at ``axis`` (trailing size-1 axes of ``y`` are ignored).
        axis: where ``y``'s axes start in ``x``; -1 aligns ``y`` with ``x``'s last axes.
        act: an activation applied to the result (``"relu"``, ``"sigmoid"``, ...), or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="int64")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="int64")
        >>> r = fluid.layers.elementwise_mod(x, y)
    """
    return _elementwise("elementwise_mod", x, y, axis, act, name)
