"""Activation layers of Paddle 1.8's ``layers/nn.py`` beyond the basic ones in ``nn.py``: selu, prelu
(with its learnable alpha), brelu, soft_relu, stanh, hard_swish, mish."""
from ..initializer import ConstantInitializer
from .layer_helper import LayerHelper
from .nn import _check_var, _unary

__all__ = ["selu", "prelu", "brelu", "soft_relu", "stanh", "hard_swish", "mish", "inplace_abn"]


def selu(x, scale=None, alpha=None, name=None):
    """``scale * (x if x > 0 else alpha * (exp(x) - 1))``; ``scale`` and ``alpha`` default to the
    self-normalising constants (1.0507..., 1.6732...)."""
    attrs = {}
    if scale is not None:
        attrs["scale"] = float(scale)
    if alpha is not None:
        attrs["alpha"] = float(alpha)
    return _unary("selu", x, name, attrs)


def brelu(x, t_min=0.0, t_max=24.0, name=None):
    """``x`` clipped to ``[t_min, t_max]``."""
    return _unary("brelu", x, name, {"t_min": float(t_min), "t_max": float(t_max)})


def soft_relu(x, threshold=40.0, name=None):
    """``log(1 + exp(clip(x, -threshold, threshold)))``."""
    return _unary("soft_relu", x, name, {"threshold": float(threshold)})


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    """``scale_b * tanh(scale_a * x)``."""
    return _unary("stanh", x, name, {"scale_a": float(scale_a), "scale_b": float(scale_b)})


def hard_swish(x, threshold=6.0, scale=6.0, offset=3.0, name=None):
    """``x * min(max(x + offset, 0), threshold) / scale``."""
    return _unary("hard_swish", x, name, {"threshold": float(threshold), "scale": float(scale),
                                          "offset": float(offset)})


def mish(x, threshold=20, name=None):
    """``x * tanh(softplus(x))``, softplus taken as ``x`` above ``threshold``."""
    return _unary("mish", x, name, {"threshold": float(threshold)})


def prelu(x, mode, param_attr=None, name=None):
    """``x`` where positive, ``alpha * x`` elsewhere, with a learnable ``alpha`` (initialised to 0.25):
    one value (``mode='all'``), one per channel (``'channel'``, axis 1) or one per element of a
    sample (``'element'``)."""
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


def inplace_abn(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None, bias_attr=None,
                data_layout="NCHW", name=None, moving_mean_name=None, moving_variance_name=None,
                do_model_average_for_mean_and_var=True, use_global_stats=False, act_alpha=1.0):
    """``batch_norm`` fused with ``act`` (None / 'identity', 'leaky_relu' or 'elu', with ``act_alpha``)
    in one ``inplace_abn`` op, parameters as ``batch_norm`` creates them. fluidist computes it out of
    place: the numbers of Paddle's, not its memory saving."""
    from .conv import norm_layer
    if act not in (None, "identity", "leaky_relu", "elu"):
        raise ValueError("inplace_abn: act must be None, 'identity', 'leaky_relu' or 'elu', got %r" % (act,))
    return norm_layer("inplace_abn", {"activation": act or "", "alpha": float(act_alpha)}, input, None, is_test,
                      momentum, epsilon, param_attr, bias_attr, data_layout, False, name, moving_mean_name,
                      moving_variance_name, do_model_average_for_mean_and_var, use_global_stats)
