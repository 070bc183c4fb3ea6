"""Neural-network layers with Paddle 1.x argument names."""
from __future__ import annotations

from functools import reduce
from typing import Sequence

from ..framework.variable import Variable
from .hints import ParamAttrLike
from ..reader.data_feeder import check_dtype, check_variable_and_dtype
from ._build import _unary, one_op  # noqa: F401 (activation.py, ops.py and others import _unary from here)
from .layer_helper import LayerHelper, check_variable
from .nn_elementwise import (elementwise_add, elementwise_div, elementwise_floordiv, elementwise_max,  # noqa: F401
                             elementwise_min, elementwise_mod, elementwise_mul, elementwise_pow, elementwise_sub)
from .nn_reduce import reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_sum  # noqa: F401

__all__ = ["fc", "mean", "mul", "matmul", "scale", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
           "reduce_prod", "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
           "elementwise_max", "elementwise_min", "elementwise_pow", "relu", "sigmoid", "tanh", "softmax",
           "exp", "log", "sqrt", "square", "abs", "leaky_relu", "elu", "relu6", "softplus", "softsign",
           "gelu", "swish", "hard_sigmoid", "clip", "pow", "reciprocal", "rsqrt", "elementwise_mod",
           "elementwise_floordiv"]


def _check_var(x, layer, arg="input"):
    return check_variable(x, layer, arg)


def fc(input: Variable | Sequence[Variable], size: int, num_flatten_dims: int = 1, param_attr: ParamAttrLike = None,
       bias_attr: ParamAttrLike = None, act: str | None = None, name: str | None = None,
       is_test: bool = False) -> Variable:
    """Fully connected layer: ``act(input @ W + b)``.

    Each input is flattened to a matrix (its first ``num_flatten_dims`` axes become rows, the rest
    columns) and multiplied by its own weight; with several inputs the products are summed. Builds
    ``mul`` (and ``sum``), ``elementwise_add`` for the bias, then the activation op.

    Args:
        input: one Variable or a list of them.
        size: the number of output features.
        num_flatten_dims: how many leading axes of ``input`` are kept as rows; the output has shape
            ``input.shape[:num_flatten_dims] + [size]``.
        param_attr: the weight's attribute (one for all inputs, or a list with one per input).
        bias_attr: the bias's attribute; ``False`` for no bias.
        act: an activation name (``"relu"``, ``"softmax"``, ``"tanh"``, ...) or None.
        name: the prefix of the parameters' names (generated when None).
        is_test: accepted for Paddle's signature; fc behaves the same in training and inference.

    Returns:
        The output Variable, of ``input``'s dtype.

    Raises:
        ValueError: an input whose size after ``num_flatten_dims`` is unknown, or a ``param_attr``
            list whose length differs from the number of inputs.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        >>> hidden = fluid.layers.fc(input=x, size=64, act="relu")
        >>> hidden.shape
        (-1, 64)
    """
    helper = LayerHelper("fc", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    inputs = helper.multiple_input()
    attrs = helper.param_attr
    attrs = attrs if isinstance(attrs, list) else [attrs]
    if len(attrs) == 1 and len(inputs) > 1:
        # one attr for all inputs (create_parameter names a copy: one weight per input, as Paddle)
        attrs = attrs * len(inputs)
    if len(attrs) != len(inputs):
        raise ValueError("fc: %d param_attrs for %d inputs" % (len(attrs), len(inputs)))
    for x in inputs:
        check_variable(x, "fc", "input")
    dtype = helper.input_dtype()
    check_dtype(dtype, "input", ["float16", "float32", "float64"], "fc")
    mul_results = []
    for x, pattr in zip(inputs, attrs):
        if x.shape is None:
            raise ValueError("fc: input %r has no known shape" % x.name)
        in_features = reduce(lambda a, b: a * b, x.shape[num_flatten_dims:], 1)
        if in_features <= 0:
            raise ValueError("fc: input %r of shape %s has unknown size after dim %d"
                             % (x.name, list(x.shape), num_flatten_dims))
        w = helper.create_parameter(attr=pattr, shape=[in_features, size], dtype=dtype)
        tmp = helper.create_variable_for_type_inference(dtype)
        helper.append_op("mul", inputs={"X": [x], "Y": [w]}, outputs={"Out": [tmp]},
                         attrs={"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1})
        mul_results.append(tmp)
    if len(mul_results) == 1:
        pre_bias = mul_results[0]
    else:
        pre_bias = helper.create_variable_for_type_inference(dtype)
        helper.append_op("sum", inputs={"X": mul_results}, outputs={"Out": [pre_bias]})
    pre_act = helper.append_bias_op(pre_bias, dim_start=num_flatten_dims)
    return helper.append_activation(pre_act)


def mean(x: Variable, name: str | None = None) -> Variable:
    """The mean of all elements of ``x``, a tensor of shape ``[1]``: the usual last step of a loss.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable of shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> avg = fluid.layers.mean(x)
    """
    return _unary("mean", x, name)


def mul(x: Variable, y: Variable, x_num_col_dims: int = 1, y_num_col_dims: int = 1,
        name: str | None = None) -> Variable:
    """Matrix product of ``x`` and ``y``, each flattened to a matrix first.

    Args:
        x: the left operand; its first ``x_num_col_dims`` axes become the rows.
        y: the right operand; its first ``y_num_col_dims`` axes become the rows.
        x_num_col_dims: how many leading axes of ``x`` form the rows.
        y_num_col_dims: how many leading axes of ``y`` form the rows.
        name: the output's name (generated when None).

    Returns:
        A Variable of shape ``x.shape[:x_num_col_dims] + y.shape[y_num_col_dims:]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> w = fluid.layers.create_parameter(shape=[4, 2], dtype="float32")
        >>> out = fluid.layers.mul(x, w)
    """
    check_variable(x, "mul", "x")
    check_variable(y, "mul", "y")
    helper = LayerHelper("mul", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("mul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"x_num_col_dims": x_num_col_dims, "y_num_col_dims": y_num_col_dims})
    return out


def matmul(x: Variable, y: Variable, transpose_x: bool = False, transpose_y: bool = False, alpha: float = 1.0,
           name: str | None = None) -> Variable:
    """``alpha * x @ y``, batched over leading axes, with optional transposes of the last two axes.

    Args:
        x: a tensor of rank >= 1.
        y: a tensor of rank >= 1; leading (batch) axes broadcast against ``x``'s.
        transpose_x: transpose ``x``'s last two axes first.
        transpose_y: transpose ``y``'s last two axes first.
        alpha: a scale applied to the product.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``x``'s dtype.

    Examples:
        >>> q = fluid.data(name="q", shape=[None, 5, 8], dtype="float32")
        >>> k = fluid.data(name="k", shape=[None, 5, 8], dtype="float32")
        >>> scores = fluid.layers.matmul(q, k, transpose_y=True, alpha=8 ** -0.5)
    """
    check_variable(x, "matmul", "x")
    check_variable(y, "matmul", "y")
    helper = LayerHelper("matmul", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("matmul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y, "alpha": float(alpha)})
    return out


def scale(x: Variable, scale: float | Variable = 1.0, bias: float = 0.0, bias_after_scale: bool = True,
          act: str | None = None, name: str | None = None) -> Variable:
    """``scale * x + bias`` (or ``scale * (x + bias)``), then an optional activation.

    Args:
        x: a tensor of any shape.
        scale: the factor, a number or a ``[1]`` float Variable (read when the program runs).
        bias: the offset.
        bias_after_scale: add ``bias`` after scaling (True) or before (False).
        act: an activation name, or None.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Raises:
        TypeError: ``x`` is not a Variable of a number dtype (as Paddle 1.8).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.layers.scale(x, scale=2.0, bias=1.0)
    """
    check_variable_and_dtype(x, "x", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"],
                             "scale")
    helper = LayerHelper("scale", name=name, act=act)
    inputs = {"X": [x]}
    attrs = {"bias": float(bias), "bias_after_scale": bias_after_scale}
    if isinstance(scale, Variable):
        inputs["ScaleTensor"] = [scale]
    else:
        attrs["scale"] = float(scale)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("scale", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return helper.append_activation(out)


def relu(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``max(x, 0)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.relu(x)
    """
    return _unary("relu", x, name)


def sigmoid(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``1 / (1 + exp(-x))``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.sigmoid(x)
    """
    return _unary("sigmoid", x, name)


def tanh(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``tanh(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.tanh(x)
    """
    return _unary("tanh", x, name)


def exp(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``exp(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.exp(x)
    """
    return _unary("exp", x, name)


def log(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``ln(x)`` (NaN below 0, -inf at 0).

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.log(x)
    """
    return _unary("log", x, name)


def sqrt(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``sqrt(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.sqrt(x)
    """
    return _unary("sqrt", x, name)


def rsqrt(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``1 / sqrt(x)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.rsqrt(x)
    """
    return _unary("rsqrt", x, name)


def square(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``x * x``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.square(x)
    """
    return _unary("square", x, name)


def abs(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``|x|`` (the gradient at 0 is 0).

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.abs(x)
    """
    return _unary("abs", x, name)


def reciprocal(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``1 / x``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.reciprocal(x)
    """
    return _unary("reciprocal", x, name)


def softplus(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``ln(1 + exp(x))``.

    Computed in Paddle 1.8's shifted form, so large inputs give ``x`` rather than overflowing.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.softplus(x)
    """
    return _unary("softplus", x, name)


def softsign(x: Variable, name: str | None = None) -> Variable:
    """Elementwise ``x / (1 + |x|)``.

    Args:
        x: a float tensor of any shape.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.softsign(x)
    """
    return _unary("softsign", x, name)


def gelu(x: Variable, approximate: bool = False, name: str | None = None) -> Variable:
    """Elementwise ``x * Phi(x)``, Phi the standard normal CDF.

    Args:
        x: a float tensor.
        approximate: use the tanh approximation instead of ``erf``.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.gelu(x)
    """
    return _unary("gelu", x, name, {"approximate": bool(approximate)})


def leaky_relu(x: Variable, alpha: float = 0.02, name: str | None = None) -> Variable:
    """Elementwise ``x`` where positive, ``alpha * x`` elsewhere.

    Args:
        x: a float tensor.
        alpha: the slope below zero.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.leaky_relu(x, alpha=0.1)
    """
    return _unary("leaky_relu", x, name, {"alpha": float(alpha)})


def elu(x: Variable, alpha: float = 1.0, name: str | None = None) -> Variable:
    """Elementwise ``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.

    Args:
        x: a float tensor.
        alpha: the scale of the negative part.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.elu(x)
    """
    return _unary("elu", x, name, {"alpha": float(alpha)})


def relu6(x: Variable, threshold: float = 6.0, name: str | None = None) -> Variable:
    """Elementwise ``min(max(x, 0), threshold)``.

    Args:
        x: a float tensor.
        threshold: the upper bound.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.relu6(x)
    """
    return _unary("relu6", x, name, {"threshold": float(threshold)})


def swish(x: Variable, beta: float = 1.0, name: str | None = None) -> Variable:
    """Elementwise ``x * sigmoid(beta * x)``.

    Args:
        x: a float tensor.
        beta: the slope inside the sigmoid.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.swish(x)
    """
    return _unary("swish", x, name, {"beta": float(beta)})


def hard_sigmoid(x: Variable, slope: float = 0.2, offset: float = 0.5, name: str | None = None) -> Variable:
    """Elementwise ``clip(slope * x + offset, 0, 1)``, a piecewise-linear sigmoid.

    Args:
        x: a float tensor.
        slope: the slope of the linear part.
        offset: the value at 0.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.hard_sigmoid(x)
    """
    return _unary("hard_sigmoid", x, name, {"slope": float(slope), "offset": float(offset)})


def clip(x: Variable, min: float, max: float, name: str | None = None) -> Variable:
    """Elementwise ``x`` limited to ``[min, max]``; the gradient passes only inside the range.

    Args:
        x: a float tensor.
        min: the lower bound.
        max: the upper bound.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.clip(x, min=-1.0, max=1.0)
    """
    return _unary("clip", x, name, {"min": float(min), "max": float(max)})


def pow(x: Variable, factor: float | Variable = 1.0, name: str | None = None) -> Variable:
    """Elementwise ``x ** factor``.

    Args:
        x: an int32 / int64 / float32 / float64 tensor.
        factor: the exponent, a number or a ``[1]`` float32 Variable (read when the program runs).
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Raises:
        TypeError: ``x`` or a Variable ``factor`` of another type or dtype (as Paddle 1.8).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.pow(x, factor=2.0)
    """
    check_variable_and_dtype(x, "x", ["int32", "int64", "float32", "float64"], "pow")
    if not isinstance(factor, Variable):
        return _unary("pow", x, name, {"factor": float(factor)})
    check_variable_and_dtype(factor, "factor", ["float32"], "pow")
    factor.stop_gradient = True
    return one_op("pow", {"X": x, "FactorTensor": factor}, name=name, layer="pow")


def softmax(input: Variable, use_cudnn: bool = False, name: str | None = None, axis: int = -1) -> Variable:
    """``exp(x) / sum(exp(x))`` along ``axis``.

    As in Paddle 1.8's CPU kernel, the logits are shifted by their maximum and clipped at -64 before
    the exponential, so no output is exactly 0.

    Args:
        input: a float tensor.
        use_cudnn: accepted for Paddle's signature; ignored.
        name: the output's name (generated when None).
        axis: the axis to normalise over.

    Returns:
        A Variable with ``input``'s shape and dtype; it sums to 1 along ``axis``.

    Examples:
        >>> logits = fluid.data(name="logits", shape=[None, 10], dtype="float32")
        >>> probs = fluid.layers.softmax(logits)
    """
    check_variable(input, "softmax", "input")
    return one_op("softmax", {"X": input}, {"axis": axis}, name=name)
