"""Activation layers of Paddle 1.8's ``layers/nn.py`` beyond the basic ones in ``nn.py``: selu, prelu
(with its learnable alpha), brelu, soft_relu, stanh, hard_swish, mish."""
from __future__ import annotations

from ..framework.variable import Variable
from .hints import ParamAttrLike
from ..initializer import ConstantInitializer
from .layer_helper import LayerHelper
from .nn import _check_var, _unary

__all__ = ["selu", "prelu", "brelu", "soft_relu", "stanh", "hard_swish", "mish", "inplace_abn"]


def selu(x: Variable, scale: float | None = None, alpha: float | None = None, name: str | None = None) -> Variable:
    """Elementwise ``scale * (x if x > 0 else alpha * (exp(x) - 1))``.

    Args:
        x: a float tensor.
        scale: the outer scale; None means the self-normalising 1.0507...
        alpha: the negative part's scale; None means 1.6732...
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.selu(x)
    """
    attrs = {}
    if scale is not None:
        attrs["scale"] = float(scale)
    if alpha is not None:
        attrs["alpha"] = float(alpha)
    return _unary("selu", x, name, attrs)


def brelu(x: Variable, t_min: float = 0.0, t_max: float = 24.0, name: str | None = None) -> Variable:
    """Elementwise ``x`` clipped to ``[t_min, t_max]`` (bounded ReLU).

    Args:
        x: a float tensor.
        t_min: the lower bound.
        t_max: the upper bound.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.brelu(x, t_min=1.0, t_max=4.0)
    """
    return _unary("brelu", x, name, {"t_min": float(t_min), "t_max": float(t_max)})


def soft_relu(x: Variable, threshold: float = 40.0, name: str | None = None) -> Variable:
    """Elementwise ``log(1 + exp(clip(x, -threshold, threshold)))``.

    Args:
        x: a float tensor.
        threshold: the clip applied before the exponential.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.soft_relu(x)
    """
    return _unary("soft_relu", x, name, {"threshold": float(threshold)})


def stanh(x: Variable, scale_a: float = 0.67, scale_b: float = 1.7159, name: str | None = None) -> Variable:
    """Elementwise ``scale_b * tanh(scale_a * x)`` (scaled tanh).

    Args:
        x: a float tensor.
        scale_a: the inner scale.
        scale_b: the outer scale.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.stanh(x)
    """
    return _unary("stanh", x, name, {"scale_a": float(scale_a), "scale_b": float(scale_b)})


def hard_swish(x: Variable, threshold: float = 6.0, scale: float = 6.0, offset: float = 3.0,
               name: str | None = None) -> Variable:
    """Elementwise ``x * min(max(x + offset, 0), threshold) / scale``.

    Args:
        x: a float tensor.
        threshold: the cap of the gate.
        scale: the divisor.
        offset: added to ``x`` inside the gate.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.hard_swish(x)
    """
    return _unary("hard_swish", x, name, {"threshold": float(threshold), "scale": float(scale),
                                          "offset": float(offset)})


def mish(x: Variable, threshold: float = 20, name: str | None = None) -> Variable:
    """Elementwise ``x * tanh(softplus(x))``.

    Args:
        x: a float tensor.
        threshold: above it softplus is taken as ``x`` itself.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.mish(x)
    """
    return _unary("mish", x, name, {"threshold": float(threshold)})


def prelu(x: Variable, mode: str, param_attr: ParamAttrLike = None, name: str | None = None) -> Variable:
    """Elementwise ``x`` where positive, ``alpha * x`` elsewhere, with a learnable ``alpha``.

    Args:
        x: a float tensor.
        mode: ``"all"`` (one alpha), ``"channel"`` (one per channel, axis 1) or ``"element"`` (one per
            element of a sample).
        param_attr: alpha's attribute; alpha starts at 0.25.
        name: the prefix of alpha's name (generated when None).

    Returns:
        A Variable with ``x``'s shape and dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3, 4, 4], dtype="float32")
        >>> y = fluid.layers.prelu(x, mode="channel")
    """
    _check_var(x, "prelu", "x")
    if mode == "all":
        shape = [1]
    elif mode == "channel":
        if len(x.shape) < 2:
            raise ValueError("prelu: mode 'channel' needs x with a channel axis (rank >= 2), got shape %s"
                             % list(x.shape))
        shape = [1, x.shape[1], 1, 1]
    elif mode == "element":
        shape = [1] + list(x.shape[1:])
    else:
        raise ValueError("prelu: mode must be 'all', 'channel' or 'element', got %r" % (mode,))
    if any(d < 0 for d in shape):
        raise ValueError("prelu: mode %r needs the sizes of x's dimensions after the first, got shape %s"
                         % (mode, list(x.shape)))
    helper = LayerHelper("prelu", param_attr=param_attr, name=name)
    alpha = helper.create_parameter(attr=helper.param_attr, shape=shape, dtype="float32", is_bias=False,
                                    default_initializer=ConstantInitializer(0.25))
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("prelu", inputs={"X": [x], "Alpha": [alpha]}, outputs={"Out": [out]}, attrs={"mode": mode})
    return out


def inplace_abn(input: Variable, act: str | None = None, is_test: bool = False, momentum: float | Variable = 0.9,
                epsilon: float = 1e-05, param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None,
                data_layout: str = "NCHW", name: str | None = None, moving_mean_name: str | None = None,
                moving_variance_name: str | None = None, do_model_average_for_mean_and_var: bool = True,
                use_global_stats: bool = False, act_alpha: float = 1.0) -> Variable:
    """``batch_norm`` fused with an activation in one ``inplace_abn`` op.

    Paddle 1.8 difference: fluidist computes it out of place, so the numbers are Paddle's but not the
    memory saving.

    Args:
        input: as for ``batch_norm``.
        act: None / ``"identity"``, ``"leaky_relu"`` or ``"elu"``.
        is_test: use the moving averages (inference).
        momentum: the weight of the old moving average.
        epsilon: added to the variance before the square root.
        param_attr: the scale's attribute.
        bias_attr: the bias's attribute.
        data_layout: ``"NCHW"`` or ``"NHWC"``.
        name: the prefix of the parameters' names.
        moving_mean_name: the moving mean's name.
        moving_variance_name: the moving variance's name.
        do_model_average_for_mean_and_var: include the moving statistics in ModelAverage.
        use_global_stats: normalise with the moving averages in training too.
        act_alpha: the slope (leaky_relu) or scale (elu) of the activation.

    Returns:
        The normalised and activated Variable.

    Examples:
        >>> img = fluid.data(name="img", shape=[None, 3, 8, 8], dtype="float32")
        >>> y = fluid.layers.inplace_abn(img, act="leaky_relu", act_alpha=0.1)
    """
    from .conv import norm_layer
    if act not in (None, "identity", "leaky_relu", "elu"):
        raise ValueError("inplace_abn: act must be None, 'identity', 'leaky_relu' or 'elu', got %r" % (act,))
    return norm_layer("inplace_abn", {"activation": act or "", "alpha": float(act_alpha)}, input, None, is_test,
                      momentum, epsilon, param_attr, bias_attr, data_layout, False, name, moving_mean_name,
                      moving_variance_name, do_model_average_for_mean_and_var, use_global_stats)
