"""``inplace_abn``: batch normalisation fused with its activation (identity, leaky_relu or elu), as
Paddle 1.8's op; fluidist computes it out of place (the same numbers, without the memory saving)."""
from ..framework.registry import register_grad, register_op
from .math import exp_nonpositive
from .conv import _BN_ATTRS, _bn_infer, batch_norm, batch_norm_grad

_ACTS = ("", "identity", "leaky_relu", "elu")


def _act(xp, z, attrs):
    kind, a = attrs["activation"], attrs["alpha"]
    if kind == "leaky_relu":
        return xp.where(z > 0, z, z * z.dtype.type(a))
    if kind == "elu":
        return xp.where(z > 0, z, z.dtype.type(a) * (exp_nonpositive(xp, z) - 1)).astype(z.dtype, copy=False)
    return z


def _act_grad(xp, z, d, attrs):
    kind, a = attrs["activation"], attrs["alpha"]
    if kind == "leaky_relu":
        return xp.where(z > 0, d, d * d.dtype.type(a))
    if kind == "elu":
        return xp.where(z > 0, d, d * d.dtype.type(a) * exp_nonpositive(xp, z)).astype(d.dtype, copy=False)
    return d


def _check(ctx, attrs):
    if attrs["activation"] not in _ACTS:
        raise ValueError("op 'inplace_abn': activation %r is not one of identity, leaky_relu, elu"
                         % attrs["activation"])


@register_op("inplace_abn", inputs=["X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor?"],
             outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace?"],
             attrs=dict(_BN_ATTRS, activation="", alpha=1.0, trainable_statistics=False, use_sync_bn=False),
             infer=_bn_infer, no_grad=("Mean", "Variance", "MomentumTensor"))
def inplace_abn(ctx, ins, attrs):
    """``batch_norm`` then the activation."""
    _check(ctx, attrs)
    res = batch_norm(ctx, ins, attrs)
    res["Y"] = _act(ctx.xp, res["Y"], attrs)
    return res


@register_grad("inplace_abn", inputs=["X", "Scale", "Bias", "Mean", "Variance", "SavedMean", "SavedVariance",
                                      "Y@GRAD"])
def inplace_abn_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, scale, bias = ins["X"], ins["Scale"], ins["Bias"]
    view = [1] * x.ndim
    ch = x.ndim - 1 if attrs["data_layout"] == "NHWC" else 1
    view[ch] = x.shape[ch]
    mean, inv_std = ins["SavedMean"].reshape(view), ins["SavedVariance"].reshape(view)
    z = ((x - mean) * inv_std * scale.reshape(view) + bias.reshape(view)).astype(x.dtype, copy=False)
    inner = dict(ins, Y=z, **{"Y@GRAD": _act_grad(xp, z, ins["Y@GRAD"], attrs)})
    return batch_norm_grad(ctx, inner, attrs)

