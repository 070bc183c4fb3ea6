"""``fluid.layers.ops``: Paddle's generated one-op layers (activations and elementwise math), each
``layer(x, name=None)`` building one op of the same type; the older ones (sigmoid, exp, tanh, ...)
live in ``nn.py``."""
from __future__ import annotations

from ..framework.variable import Variable
from .layer_function_generator import generate_layer_fn
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
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

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.erf(x)
    """
    return _unary("erf", x, name)


def _attrs(**kw):
    """The attrs given (None means the op's default)."""
    return {k: v for k, v in kw.items() if v is not None}


def softshrink(x: Variable, alpha: float | None = None) -> Variable:
    """Elementwise soft shrinkage: ``x - alpha`` above ``alpha``, ``x + alpha`` below ``-alpha``, 0 between.

    Args:
        x: a float tensor.
        alpha: the threshold (the op's ``lambda`` attr); None means 0.5.

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.softshrink(x, alpha=0.3)
    """
    return _unary("softshrink", x, None, _attrs(**{"lambda": None if alpha is None else float(alpha)}))


def hard_shrink(x: Variable, threshold: float | None = None) -> Variable:
    """Elementwise hard shrinkage: ``x`` where ``|x| > threshold``, else 0.

    Args:
        x: a float tensor.
        threshold: the threshold; None means 0.5.

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.hard_shrink(x)
    """
    return _unary("hard_shrink", x, None, _attrs(threshold=None if threshold is None else float(threshold)))


def thresholded_relu(x: Variable, threshold: float | None = None) -> Variable:
    """Elementwise ``x`` where ``x > threshold``, else 0.

    Args:
        x: a float tensor.
        threshold: the threshold; None means 1.0.

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.thresholded_relu(x, threshold=0.5)
    """
    return _unary("thresholded_relu", x, None, _attrs(threshold=None if threshold is None else float(threshold)))


def cumsum(x: Variable, axis: int | None = None, exclusive: bool | None = None,
           reverse: bool | None = None) -> Variable:
    """Cumulative sum along ``axis``.

    Args:
        x: a tensor.
        axis: the axis to sum along; None means -1 (the last).
        exclusive: leave each element out of its own sum (the first output is 0).
        reverse: sum from the end toward the start.

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> running = fluid.layers.cumsum(x, axis=1)
    """
    helper = LayerHelper("cumsum")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("cumsum", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs=_attrs(axis=None if axis is None else int(axis),
                                  exclusive=None if exclusive is None else bool(exclusive),
                                  reverse=None if reverse is None else bool(reverse)))
    return out


# Paddle's generated layers of two ops under private names (its tests build with them:
# ``layers.ops._scale(x=x, scale=10.0, out=out_var)``)
_scale = generate_layer_fn("scale")
_elementwise_div = generate_layer_fn("elementwise_div")
