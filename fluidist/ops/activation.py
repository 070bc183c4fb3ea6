"""More activations and elementwise unary math, with Paddle 1.8's CPU formulas (where Paddle guards an
edge, such as softplus's shift or mish's threshold, the same guard is used) and their gradients.

The older activations (relu, sigmoid, tanh, ...) live in ``math.py``; ``_act`` there registers an op
and its gradient from a forward and a backward formula."""
import math as _math

import numpy as np

from ..framework.registry import register_grad, register_op, same_shape
from . import math as math_ops
from .math import _act, erf, exp_nonpositive


def _f(x, v):
    """A Python number as a scalar of ``x``'s dtype (keeps float32 math in float32)."""
    return x.dtype.type(v)


def _softplus(xp, x):
    return math_ops._softplus(xp, x, None)


def _softplus_grad(xp, x):
    """d softplus(x) / dx, in Paddle's shifted form."""
    return math_ops._softplus_grad(xp, x, 1, None)


_act("selu", lambda xp, x, a: _f(x, a["scale"]) * xp.where(x > 0, x, _f(x, a["alpha"]) * (exp_nonpositive(xp, x) - 1)),
     lambda xp, x, d, a: d * xp.where(x > 0, _f(x, a["scale"]), _f(x, a["scale"] * a["alpha"]) * exp_nonpositive(xp, x)),
     uses="X", attrs={"scale": 1.0507009873554805, "alpha": 1.6732632423543772})
_act("brelu", lambda xp, x, a: xp.clip(x, a["t_min"], a["t_max"]).astype(x.dtype, copy=False),
     lambda xp, x, d, a: d * ((x > a["t_min"]) & (x < a["t_max"])), uses="X", attrs={"t_min": 0.0, "t_max": 24.0})


def _soft_relu(xp, x, a):
    t = _f(x, a["threshold"])
    return xp.log(1 + xp.exp(xp.clip(x, -t, t)))


_act("soft_relu", _soft_relu,   # Paddle's gradient tests Out (not X) against the threshold
     lambda xp, o, d, a: d * (1 - xp.exp(-o)) * ((o > -a["threshold"]) & (o < a["threshold"])),
     attrs={"threshold": 40.0})
_act("stanh", lambda xp, x, a: _f(x, a["scale_b"]) * xp.tanh(_f(x, a["scale_a"]) * x),
     lambda xp, x, d, a: d * _f(x, a["scale_a"] * a["scale_b"]) * (1 - xp.tanh(_f(x, a["scale_a"]) * x) ** 2),
     uses="X", attrs={"scale_a": 0.67, "scale_b": 1.7159})


def _hard_swish(xp, x, a):
    return x * xp.clip(x + _f(x, a["offset"]), 0, a["threshold"]) / _f(x, a["scale"])


def _hard_swish_grad(xp, x, d, a):
    s = x + _f(x, a["offset"])
    below = (s < a["threshold"]).astype(x.dtype)
    inner = (2 * x + _f(x, a["offset"])) / _f(x, a["scale"])
    return d * (s > 0) * (inner * below + (1 - below))


_act("hard_swish", _hard_swish, _hard_swish_grad, uses="X",
     attrs={"threshold": 6.0, "scale": 6.0, "offset": 3.0})
_act("logsigmoid", lambda xp, x, a: -_softplus(xp, -x),
     lambda xp, x, d, a: d * _softplus_grad(xp, -x), uses="X")
_act("sin", lambda xp, x, a: xp.sin(x), lambda xp, x, d, a: d * xp.cos(x), uses="X")
_act("asin", lambda xp, x, a: xp.arcsin(x), lambda xp, x, d, a: d / xp.sqrt(1 - x * x), uses="X")
_act("acos", lambda xp, x, a: xp.arccos(x), lambda xp, x, d, a: -d / xp.sqrt(1 - x * x), uses="X")
_act("atan", lambda xp, x, a: xp.arctan(x), lambda xp, x, d, a: d / (1 + x * x), uses="X")
_act("tanh_shrink", lambda xp, x, a: x - xp.tanh(x), lambda xp, x, d, a: d * xp.tanh(x) ** 2, uses="X")
_act("softshrink",
     lambda xp, x, a: xp.where(x > a["lambda"], x - _f(x, a["lambda"]),
                               xp.where(x < -a["lambda"], x + _f(x, a["lambda"]), _f(x, 0))),
     lambda xp, x, d, a: d * ((x > a["lambda"]) | (x < -a["lambda"])), uses="X", attrs={"lambda": 0.5})
_act("hard_shrink", lambda xp, x, a: x * ((x > a["threshold"]) | (x < -a["threshold"])),
     lambda xp, x, d, a: d * ((x > a["threshold"]) | (x < -a["threshold"])), uses="X", attrs={"threshold": 0.5})
_act("thresholded_relu", lambda xp, x, a: x * (x > a["threshold"]),
     lambda xp, x, d, a: d * (x > a["threshold"]), uses="X", attrs={"threshold": 1.0})
_act("erf", lambda xp, x, a: erf(xp, x),
     lambda xp, x, d, a: d * _f(x, 2 / _math.sqrt(_math.pi)) * xp.exp(-x * x), uses="X")
_act("log1p", lambda xp, x, a: xp.log1p(x), lambda xp, x, d, a: d / (1 + x), uses="X")


def _mish_sp(xp, x, t):
    """Paddle's softplus inside mish: x above ``t``, exp(x) below ``-t``, else log1p(exp(x))."""
    e = xp.exp(xp.minimum(x, t))   # the branches that use exp(x) have x <= t
    return xp.where(x > t, x, xp.where(x < -t, e, xp.log1p(e)))


def _mish_grad(xp, x, d, a):
    t = _f(x, a["threshold"])
    sp = _mish_sp(xp, x, t)
    tsp = xp.tanh(sp)
    dsp = xp.where(x > t, _f(x, 1), xp.where(x < -t, xp.exp(xp.minimum(x, t)), 1 / (1 + xp.exp(-xp.clip(x, -t, t)))))
    return d * (tsp + x * (1 - tsp * tsp) * dsp)


_act("mish", lambda xp, x, a: x * xp.tanh(_mish_sp(xp, x, _f(x, a["threshold"]))), _mish_grad, uses="X",
     attrs={"threshold": 20.0})


def _zero_grad(type):
    """floor, ceil, round, sign: piecewise constant, so Paddle gives them a zero gradient."""
    register_grad(type, inputs=["Out@GRAD"])(lambda ctx, ins, a: {"X@GRAD": ctx.xp.zeros_like(ins["Out@GRAD"])})


for _t in ("floor", "ceil", "round", "sign"):
    _zero_grad(_t)


# ------------------------------------------------------------------ prelu
def _prelu_alpha(x, alpha, mode):
    """Alpha viewed to broadcast against X: one value, one per channel (axis 1), or one per element
    of a sample."""
    if mode == "all":
        return alpha.reshape(())
    if mode == "channel":
        return alpha.reshape((1, -1) + (1,) * (x.ndim - 2))
    return alpha.reshape((1,) + tuple(x.shape[1:]))


def _prelu_check(ctx, x, alpha, mode):
    want = {"all": 1, "channel": x.shape[1] if x.ndim > 1 else -1,
            "element": int(np.prod(x.shape[1:]))}.get(mode)
    if want is None:
        raise ValueError("op 'prelu': mode %r is not one of 'all', 'channel', 'element'" % mode)
    if alpha.size != want:
        raise ValueError("op 'prelu': Alpha %r has %d values but mode %r on X %r of shape %s needs %d"
                         % (ctx.op.inputs["Alpha"][0], alpha.size, mode, ctx.op.inputs["X"][0], list(x.shape), want))


@register_op("prelu", inputs=["X", "Alpha"], outputs=["Out"], attrs={"mode": "all"}, infer=same_shape(),
             share_lod=("X", "Out"))
def prelu(ctx, ins, attrs):
    """``Out = X`` where positive, ``Alpha * X`` elsewhere."""
    x, alpha = ins["X"], ins["Alpha"]
    _prelu_check(ctx, x, alpha, attrs["mode"])
    a = _prelu_alpha(x, alpha, attrs["mode"])
    return {"Out": ctx.xp.where(x > 0, x, a * x).astype(x.dtype, copy=False)}


@register_grad("prelu", inputs=["X", "Alpha", "Out@GRAD"])
def prelu_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, alpha, d = ins["X"], ins["Alpha"], ins["Out@GRAD"]
    mode = attrs["mode"]
    a = _prelu_alpha(x, alpha, mode)
    neg = x <= 0
    dx = xp.where(neg, a * d, d).astype(x.dtype, copy=False)
    da_full = xp.where(neg, x * d, 0)
    if mode == "all":
        da = da_full.sum().reshape(alpha.shape)
    elif mode == "channel":
        axes = (0,) + tuple(range(2, x.ndim))
        da = da_full.sum(axis=axes).reshape(alpha.shape)
    else:
        da = da_full.sum(axis=0).reshape(alpha.shape)
    return {"X@GRAD": dx, "Alpha@GRAD": da.astype(alpha.dtype, copy=False)}
