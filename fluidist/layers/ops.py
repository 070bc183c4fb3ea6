"""``fluid.layers.ops``: Paddle's generated one-op layers (activations and elementwise math), each
``layer(x, name=None)`` building one op of the same type; the older ones (sigmoid, exp, tanh, ...)
live in ``nn.py``."""
from .layer_helper import LayerHelper
from .nn import _unary

__all__ = ["logsigmoid", "atan", "tanh_shrink", "ceil", "floor", "cos", "acos", "asin", "sin", "round",
           "softshrink", "hard_shrink", "cumsum", "thresholded_relu", "erf"]


def _plain(op_type):
    def layer(x, name=None):
        return _unary(op_type, x, name)
    layer.__name__ = op_type
    layer.__doc__ = "One ``%s`` op: ``Out = %s(X)`` elementwise, with its gradient." % (op_type, op_type)
    return layer


logsigmoid = _plain("logsigmoid")
atan = _plain("atan")
tanh_shrink = _plain("tanh_shrink")
ceil = _plain("ceil")
floor = _plain("floor")
cos = _plain("cos")
acos = _plain("acos")
asin = _plain("asin")
sin = _plain("sin")
round = _plain("round")
erf = _plain("erf")


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
