"""Feature layers of fluid 1.8's ``layers.nn``: cos_sim, label_smooth, maxout, pixel_shuffle,
add_position_encoding, bilinear_tensor_product, row_conv."""
from .layer_helper import LayerHelper, check_variable

__all__ = ["cos_sim", "label_smooth", "maxout", "pixel_shuffle", "add_position_encoding", "bilinear_tensor_product",
           "row_conv"]


def _check(x, layer, arg, dtypes=("float32", "float64")):
    check_variable(x, layer, arg, dtypes)


def cos_sim(X, Y):
    """Cosine similarity of the rows of ``X`` [N, D] with those of ``Y`` ([N, D], or [1, D] against
    every row): [N, 1]."""
    _check(X, "cos_sim", "X", ("float32",))
    _check(Y, "cos_sim", "Y", ("float32",))
    helper = LayerHelper("cos_sim")
    out = helper.create_variable_for_type_inference(X.dtype)
    xnorm = helper.create_variable_for_type_inference(X.dtype)
    ynorm = helper.create_variable_for_type_inference(X.dtype)
    helper.append_op("cos_sim", inputs={"X": [X], "Y": [Y]}, outputs={"Out": [out], "XNorm": [xnorm], "YNorm": [ynorm]})
    return out


def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    """``(1 - epsilon) * label + epsilon * prior_dist`` (uniform when not given); ``label`` is one-hot."""
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


def maxout(x, groups, name=None, axis=1):
    """Max over each run of ``groups`` consecutive channels (axis 1, or -1 / 3 for NHWC)."""
    _check(x, "maxout", "x")
    if axis not in (1, -1, 3):
        raise ValueError("maxout: axis must be 1 (NCHW) or -1 / 3 (NHWC), got %r" % (axis,))
    helper = LayerHelper("maxout", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("maxout", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"groups": int(groups), "axis": 3 if axis == -1 else int(axis)})
    return out


def pixel_shuffle(x, upscale_factor):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r] (sub-pixel convolution's rearrangement)."""
    _check(x, "pixel_shuffle", "x")
    if not isinstance(upscale_factor, int):
        raise TypeError("pixel_shuffle: upscale_factor must be an int, got %r" % type(upscale_factor).__name__)
    helper = LayerHelper("pixel_shuffle")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("pixel_shuffle", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"upscale_factor": upscale_factor})
    return out


def add_position_encoding(input, alpha, beta, name=None):
    """``alpha * input + beta * sinusoid position encoding`` ([N, T, D] or a LoD tensor [rows, D])."""
    _check(input, "add_position_encoding", "input")
    helper = LayerHelper("add_position_encoding", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("add_position_encoding", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"alpha": float(alpha), "beta": float(beta)})
    return out


def bilinear_tensor_product(x, y, size, act=None, name=None, param_attr=None, bias_attr=None):
    """``out[n, i] = x[n] W[i] y[n]^T + b[i]`` with W [size, Dx, Dy] and b [1, size]."""
    _check(x, "bilinear_tensor_product", "x", None)
    _check(y, "bilinear_tensor_product", "y", None)
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


def row_conv(input, future_context_size, param_attr=None, act=None):
    """Lookahead convolution over each sequence of a LoD ``input``: a filter of
    ``future_context_size + 1`` rows, one weight per (step ahead, feature)."""
    _check(input, "row_conv", "input", ("float32",))
    helper = LayerHelper("row_conv", input=input, param_attr=param_attr, act=act)
    dtype = helper.input_dtype()
    w = helper.create_parameter(attr=helper.param_attr, shape=[future_context_size + 1, input.shape[-1]], dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("row_conv", inputs={"X": [input], "Filter": [w]}, outputs={"Out": [out]})
    return helper.append_activation(out)
