"""Neural-network layers with Paddle 1.x argument names."""
from functools import reduce

from .layer_helper import LayerHelper, check_variable

__all__ = ["fc", "mean", "mul", "matmul", "scale", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
           "reduce_prod", "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
           "elementwise_max", "elementwise_min", "elementwise_pow", "relu", "sigmoid", "tanh", "softmax",
           "exp", "log", "sqrt", "square", "abs", "leaky_relu", "elu", "relu6", "softplus", "softsign",
           "gelu", "swish", "hard_sigmoid", "clip", "pow", "reciprocal", "rsqrt", "elementwise_mod",
           "elementwise_floordiv"]


def _check_var(x, layer, arg="input"):
    return check_variable(x, layer, arg)


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None, is_test=False):
    """Fully connected: ``mul`` per input (summed with ``sum`` when several), ``elementwise_add`` bias,
    then the activation."""
    helper = LayerHelper("fc", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act, name=name)
    inputs = helper.multiple_input()
    attrs = helper.param_attr
    attrs = attrs if isinstance(attrs, list) else [attrs]
    if len(attrs) == 1 and len(inputs) > 1:
        # one attr for all inputs (create_parameter names a copy: one weight per input, as Paddle)
        attrs = attrs * len(inputs)
    if len(attrs) != len(inputs):
        raise ValueError("fc: %d param_attrs for %d inputs" % (len(attrs), len(inputs)))
    dtype = helper.input_dtype()
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


def _unary(op_type, x, name=None, attrs=None, out_dtype=None):
    _check_var(x, op_type, "x")
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(out_dtype or x.dtype)
    helper.append_op(op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs or {})
    return out


def mean(x, name=None):
    return _unary("mean", x, name)


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    helper = LayerHelper("mul", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("mul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"x_num_col_dims": x_num_col_dims, "y_num_col_dims": y_num_col_dims})
    return out


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    helper = LayerHelper("matmul", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("matmul", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                     attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y, "alpha": float(alpha)})
    return out


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    helper = LayerHelper("scale", name=name, act=act)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("scale", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"scale": float(scale), "bias": float(bias), "bias_after_scale": bias_after_scale})
    return helper.append_activation(out)


def _reduce_layer(op_type):
    def layer(input, dim=None, keep_dim=False, name=None):
        if dim is not None and not isinstance(dim, (list, tuple)):
            dim = [dim]
        attrs = {"dim": list(dim) if dim else [0], "keep_dim": keep_dim,
                 "reduce_all": dim is None or len(dim) == 0}
        return _unary(op_type, input, name, attrs)
    layer.__name__ = op_type
    return layer


reduce_sum = _reduce_layer("reduce_sum")
reduce_mean = _reduce_layer("reduce_mean")
reduce_max = _reduce_layer("reduce_max")
reduce_min = _reduce_layer("reduce_min")
reduce_prod = _reduce_layer("reduce_prod")


def _elementwise_layer(op_type):
    def layer(x, y, axis=-1, act=None, name=None):
        _check_var(x, op_type, "x")
        _check_var(y, op_type, "y")
        helper = LayerHelper(op_type, name=name, act=act)
        out = helper.create_variable_for_type_inference(x.dtype)
        helper.append_op(op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]}, attrs={"axis": axis})
        return helper.append_activation(out)
    layer.__name__ = op_type
    return layer


elementwise_add = _elementwise_layer("elementwise_add")
elementwise_sub = _elementwise_layer("elementwise_sub")
elementwise_mul = _elementwise_layer("elementwise_mul")
elementwise_div = _elementwise_layer("elementwise_div")
elementwise_max = _elementwise_layer("elementwise_max")
elementwise_min = _elementwise_layer("elementwise_min")
elementwise_pow = _elementwise_layer("elementwise_pow")
elementwise_floordiv = _elementwise_layer("elementwise_floordiv")
elementwise_mod = _elementwise_layer("elementwise_mod")


def _act_layer(op_type, **defaults):
    def layer(x, name=None, **kwargs):
        attrs = dict(defaults)
        attrs.update({k: v for k, v in kwargs.items() if v is not None})
        return _unary(op_type, x, name, attrs)
    layer.__name__ = op_type
    return layer


relu = _act_layer("relu")
sigmoid = _act_layer("sigmoid")
tanh = _act_layer("tanh")
exp = _act_layer("exp")
log = _act_layer("log")
sqrt = _act_layer("sqrt")
rsqrt = _act_layer("rsqrt")
square = _act_layer("square")
abs = _act_layer("abs")
reciprocal = _act_layer("reciprocal")
softplus = _act_layer("softplus")
softsign = _act_layer("softsign")


def gelu(x, approximate=False, name=None):
    """``x * Phi(x)`` (Phi the standard normal CDF), or its tanh approximation with ``approximate``."""
    return _unary("gelu", x, name, {"approximate": bool(approximate)})


def leaky_relu(x, alpha=0.02, name=None):
    return _unary("leaky_relu", x, name, {"alpha": float(alpha)})


def elu(x, alpha=1.0, name=None):
    return _unary("elu", x, name, {"alpha": float(alpha)})


def relu6(x, threshold=6.0, name=None):
    return _unary("relu6", x, name, {"threshold": float(threshold)})


def swish(x, beta=1.0, name=None):
    return _unary("swish", x, name, {"beta": float(beta)})


def hard_sigmoid(x, slope=0.2, offset=0.5, name=None):
    return _unary("hard_sigmoid", x, name, {"slope": float(slope), "offset": float(offset)})


def clip(x, min, max, name=None):
    return _unary("clip", x, name, {"min": float(min), "max": float(max)})


def pow(x, factor=1.0, name=None):
    return _unary("pow", x, name, {"factor": float(factor)})


def softmax(input, use_cudnn=False, name=None, axis=-1):
    return _unary("softmax", input, name, {"axis": axis})
