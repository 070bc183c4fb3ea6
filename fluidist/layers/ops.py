"""``fluid.layers.ops``: Paddle's generated one-op layers (activations and elementwise math), each
``layer(x, name=None)`` building one op of the same type; the older ones (sigmoid, exp, tanh, ...)
live in ``nn.py``."""
from __future__ import annotations

from ..framework.variable import Variable
from .layer_helper import LayerHelper
from .nn import _unary

__all__ = ["logsigmoid", "atan", "tanh_shrink", "ceil", "floor", "cos", "acos", "asin", "sin", "round",
           "softshrink", "hard_shrink", "cumsum", "thresholded_relu", "erf"]


def logsigmoid(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``log(1 / (1 + exp(-x)))``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.logsigmoid(x)
    """
    return _unary("logsigmoid", x, name)


def atan(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``arctan(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.atan(x)
    """
    return _unary("atan", x, name)


def tanh_shrink(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``x - tanh(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.tanh_shrink(x)
    """
    return _unary("tanh_shrink", x, name)


def ceil(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``ceil(x)``.

    The gradient is zero everywhere, as in Paddle 1.8.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.ceil(x)
    """
    return _unary("ceil", x, name)


def floor(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``floor(x)``.

    The gradient is zero everywhere, as in Paddle 1.8.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.floor(x)
    """
    return _unary("floor", x, name)


def cos(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``cos(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.cos(x)
    """
    return _unary("cos", x, name)


def acos(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``arccos(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.acos(x)
    """
    return _unary("acos", x, name)


def asin(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``arcsin(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.asin(x)
    """
    return _unary("asin", x, name)


def sin(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``sin(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.sin(x)
    """
    return _unary("sin", x, name)


def round(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``round(x)``.

    Halves round to even (``round(2.5) == 2``), as Paddle 1.8's CPU kernel does; the gradient is zero.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.round(x)
    """
    return _unary("round", x, name)


def erf(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``erf(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Example:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.erf(x)
    """
    return _unary("erf", x, name)


def _attrs(**kw):
    """The attrs given (None means the op's default)."""
    return {k: v for k, v in kw.items() if v is not None}


def softshrink(x, alpha=None):
    """``x - alpha`` above ``alpha``, ``x + alpha`` below ``-alpha``, 0 between (op attr ``lambda``,
    default 0.5)."""
    return _unary("softshrink", x, None, _attrs(**{"lambda": None if alpha is None else float(alpha)}))


def hard_shrink(x, threshold=None):
    """``x`` where ``|x| > threshold`` (default 0.5), else 0."""
    return _unary("hard_shrink", x, None, _attrs(threshold=None if threshold is None else float(threshold)))


def thresholded_relu(x, threshold=None):
    """``x`` where ``x > threshold`` (default 1.0), else 0."""
    return _unary("thresholded_relu", x, None, _attrs(threshold=None if threshold is None else float(threshold)))


def cumsum(x, axis=None, exclusive=None, reverse=None):
    """Cumulative sum along ``axis`` (default -1); ``exclusive`` leaves each element out of its own
    sum, ``reverse`` sums from the end."""
    helper = LayerHelper("cumsum")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("cumsum", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs=_attrs(axis=None if axis is None else int(axis),
                                  exclusive=None if exclusive is None else bool(exclusive),
                                  reverse=None if reverse is None else bool(reverse)))
    return out
