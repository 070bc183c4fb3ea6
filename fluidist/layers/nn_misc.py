"""Feature layers of fluid 1.8's ``layers.nn``: cos_sim, label_smooth, maxout, pixel_shuffle,
add_position_encoding, bilinear_tensor_product, row_conv."""
from __future__ import annotations

from ..framework.program import Variable
from .hints import DType, ParamAttrLike
from .layer_helper import LayerHelper, check_variable

__all__ = ["cos_sim", "label_smooth", "maxout", "pixel_shuffle", "add_position_encoding", "bilinear_tensor_product",
           "row_conv"]


def _check(x, layer, arg):
    """A Variable of the dtypes Paddle 1.8's ``layer`` takes for ``arg`` (``input_dtypes``)."""
    check_variable(x, layer, arg)


def cos_sim(X: Variable, Y: Variable) -> Variable:
    """Cosine similarity of the rows of ``X`` with those of ``Y``.

    Args:
        X: a tensor ``[N, D]``.
        Y: ``[N, D]`` (row by row), or ``[1, D]`` (against every row of ``X``).

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 8], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 8], dtype="float32")
        >>> sim = fluid.layers.cos_sim(a, b)
    """
    _check(X, "cos_sim", "X")
    _check(Y, "cos_sim", "Y")
    helper = LayerHelper("cos_sim")
    out = helper.create_variable_for_type_inference(X.dtype)
    xnorm = helper.create_variable_for_type_inference(X.dtype)
    ynorm = helper.create_variable_for_type_inference(X.dtype)
    helper.append_op("cos_sim", inputs={"X": [X], "Y": [Y]}, outputs={"Out": [out], "XNorm": [xnorm], "YNorm": [ynorm]})
    return out


def label_smooth(label: Variable, prior_dist: Variable | None = None, epsilon: float = 0.1, dtype: DType = "float32",
                 name: str | None = None) -> Variable:
    """``(1 - epsilon) * label + epsilon * prior_dist``: softened one-hot labels.

    Args:
        label: one-hot labels ``[N, C]``.
        prior_dist: the distribution mixed in, ``[1, C]`` (uniform when None).
        epsilon: the weight of the prior.
        dtype: the output's dtype.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``label``'s shape.

    Examples:
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> smooth = fluid.layers.label_smooth(fluid.layers.one_hot(label, depth=10), epsilon=0.1)
    """
    if not 0.0 <= float(epsilon) <= 1.0:
        raise ValueError("label_smooth: epsilon must be in [0, 1], got %r" % (epsilon,))
    _check(label, "label_smooth", "label")
    helper = LayerHelper("label_smooth", name=name)
    label.stop_gradient = True
    out = helper.create_variable_for_type_inference(dtype)
    inputs = {"X": [label]}
    if prior_dist is not None:
        inputs["PriorDist"] = [prior_dist]
    helper.append_op("label_smooth", inputs=inputs, outputs={"Out": [out]}, attrs={"epsilon": float(epsilon)})
    return out


def maxout(x: Variable, groups: int, name: str | None = None, axis: int = 1) -> Variable:
    """The maximum over each run of ``groups`` consecutive channels.

    Args:
        x: a 4-D tensor.
        groups: channels per run (divides the channels).
        name: the output's name (generated when None).
        axis: the channel axis: 1 (NCHW), or -1 / 3 (NHWC).

    Returns:
        A Variable with ``channels / groups`` channels.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 8, 4, 4], dtype="float32")
        >>> fluid.layers.maxout(img, groups=2).shape
        (-1, 4, 4, 4)
    """
    _check(x, "maxout", "x")
    if axis not in (1, -1, 3):
        raise ValueError("maxout: axis must be 1 (NCHW) or -1 / 3 (NHWC), got %r" % (axis,))
    helper = LayerHelper("maxout", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("maxout", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"groups": int(groups), "axis": 3 if axis == -1 else int(axis)})
    return out


def pixel_shuffle(x: Variable, upscale_factor: int) -> Variable:
    """``[N, C * r * r, H, W]`` rearranged to ``[N, C, H * r, W * r]`` (sub-pixel convolution).

    Args:
        x: a 4-D NCHW tensor.
        upscale_factor: ``r``.

    Returns:
        The rearranged Variable.

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 12, 4, 4], dtype="float32")
        >>> fluid.layers.pixel_shuffle(feat, upscale_factor=2).shape
        (-1, 3, 8, 8)
    """
    _check(x, "pixel_shuffle", "x")
    if not isinstance(upscale_factor, int):
        raise TypeError("pixel_shuffle: upscale_factor must be an int, got %r" % type(upscale_factor).__name__)
    helper = LayerHelper("pixel_shuffle")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("pixel_shuffle", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"upscale_factor": upscale_factor})
    return out


def add_position_encoding(input: Variable, alpha: float, beta: float, name: str | None = None) -> Variable:
    """``alpha * input + beta * (sinusoid position encoding)``, as in the Transformer.

    Args:
        input: ``[N, T, D]``, or a LoD tensor ``[rows, D]``.
        alpha: the weight of the input.
        beta: the weight of the encoding.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> emb = fluid.data(name="emb", shape=[None, 10, 16], dtype="float32")
        >>> y = fluid.layers.add_position_encoding(emb, alpha=1.0, beta=1.0)
    """
    _check(input, "add_position_encoding", "input")
    helper = LayerHelper("add_position_encoding", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("add_position_encoding", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"alpha": float(alpha), "beta": float(beta)})
    return out


def bilinear_tensor_product(x: Variable, y: Variable, size: int, act: str | None = None, name: str | None = None,
                            param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None) -> Variable:
    """``out[n, i] = x[n] W[i] y[n]^T + b[i]``, W ``[size, Dx, Dy]`` and b ``[1, size]`` learned.

    Args:
        x: a tensor ``[N, Dx]``.
        y: a tensor ``[N, Dy]``.
        size: the number of outputs.
        act: an activation name, or None.
        name: the prefix of the parameters' names (generated when None).
        param_attr: W's attribute.
        bias_attr: b's attribute; False for none.

    Returns:
        A Variable ``[N, size]``.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 4], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 5], dtype="float32")
        >>> fluid.layers.bilinear_tensor_product(a, b, size=3).shape
        (-1, 3)
    """
    _check(x, "bilinear_tensor_product", "x")
    _check(y, "bilinear_tensor_product", "y")
    helper = LayerHelper("bilinear_tensor_product", x=x, param_attr=param_attr, bias_attr=bias_attr, act=act,
                         name=name)
    dtype = helper.input_dtype("x")
    w = helper.create_parameter(attr=helper.param_attr, shape=[size, x.shape[1], y.shape[1]], dtype=dtype)
    inputs = {"X": [x], "Y": [y], "Weight": [w]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[1, size], dtype=dtype, is_bias=True)]
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("bilinear_tensor_product", inputs=inputs, outputs={"Out": [out]})
    return helper.append_activation(out)


def row_conv(input: Variable, future_context_size: int, param_attr: ParamAttrLike = None,
             act: str | None = None) -> Variable:
    """Lookahead convolution over each sequence of a LoD tensor (DeepSpeech 2).

    Args:
        input: a LoD tensor ``[rows, D]``.
        future_context_size: how many steps ahead the filter sees (it has that many + 1 rows).
        param_attr: the filter's attribute.
        act: an activation name, or None.

    Returns:
        A LoD Variable of ``input``'s shape.

    Examples:
        >>> seq = fluid.data(name="seq", shape=[None, 16], dtype="float32", lod_level=1)
        >>> y = fluid.layers.row_conv(seq, future_context_size=2)
    """
    _check(input, "row_conv", "input")
    helper = LayerHelper("row_conv", input=input, param_attr=param_attr, act=act)
    dtype = helper.input_dtype()
    w = helper.create_parameter(attr=helper.param_attr, shape=[future_context_size + 1, input.shape[-1]], dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("row_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": [out]})
    return helper.append_activation(out)
