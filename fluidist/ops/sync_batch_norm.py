"""``sync_batch_norm`` (Paddle's op of that type): ``batch_norm`` whose batch statistics are those of
every device's batch together, so N devices normalise as one process would the concatenated batch.

Same slots and attrs as ``batch_norm``. Training, forward: the per-channel sums of x and the
sample count are summed over the devices (``distributed.collective.device_sum``), giving the mean;
then the sums of (x - mean)^2, giving the (biased) variance; the running statistics are updated
with them as ``batch_norm`` does (``MeanOut = momentum * Mean + (1 - momentum) * mean``).
Backward: the per-channel sums of dy and of dy * (x - mean) over every device give X's gradient
of the whole batch; Scale's and Bias's gradients are this device's sums, which the data-parallel
all-reduce of the parameter gradients then adds up (as Paddle's kernel leaves them). Paddle reads
one pass of sums of x and x^2; fluidist takes the variance in a second pass, as ``batch_norm``
does, for the same numbers. ``is_test``: the running statistics, as ``batch_norm``;
``use_global_stats`` is refused, as in Paddle (use ``batch_norm``).
"""
from ..distributed.collective.device_sum import device_sum
from ..framework.registry import register_grad, register_op
from .conv import _BN_ATTRS, _bn_axes, _bn_infer, batch_norm, batch_norm_grad, bn_grad_parts


def _check(attrs):
    if attrs.get("use_global_stats"):
        raise ValueError("sync_batch_norm does not take use_global_stats = True (there are no batch statistics to "
                         "synchronise): use batch_norm")
    return bool(attrs.get("is_test"))


def _view(x, ch):
    view = [1] * x.ndim
    view[ch] = x.shape[ch]
    return view


@register_op("sync_batch_norm", inputs=["X", "Scale", "Bias", "Mean", "Variance"],
             outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"], attrs=_BN_ATTRS,
             infer=_bn_infer, no_grad=("Mean", "Variance"))
def sync_batch_norm(ctx, ins, attrs):
    """``batch_norm`` with the statistics of every device's batch (module doc)."""
    if _check(attrs):
        return batch_norm(ctx, ins, attrs)
    xp = ctx.xp
    x = ins["X"]
    axes, ch = _bn_axes(x.ndim, attrs)
    view = _view(x, ch)
    c = x.shape[ch]
    local = xp.concatenate([x.sum(axis=axes, dtype=x.dtype), xp.asarray([x.size // c], dtype=x.dtype)])
    total = device_sum(local, ctx.place)
    count = total[c]
    mean = total[:c] / count
    var = device_sum(((x - mean.reshape(view)) ** 2).sum(axis=axes, dtype=x.dtype), ctx.place) / count
    eps, mom = attrs["epsilon"], attrs["momentum"]
    run_mean, run_var = ins["Mean"], ins["Variance"]
    inv_std = 1.0 / xp.sqrt(var + eps)
    scale = (ins["Scale"] * inv_std).reshape(view)
    shift = (ins["Bias"] - mean * ins["Scale"] * inv_std).reshape(view)
    return {"Y": (x * scale + shift).astype(x.dtype, copy=False),
            "MeanOut": (mom * run_mean + (1.0 - mom) * mean).astype(run_mean.dtype, copy=False),
            "VarianceOut": (mom * run_var + (1.0 - mom) * var).astype(run_var.dtype, copy=False),
            "SavedMean": mean.astype(run_mean.dtype, copy=False),
            "SavedVariance": inv_std.astype(run_var.dtype, copy=False)}


@register_grad("sync_batch_norm", inputs=["X", "Scale", "Bias", "Y", "SavedMean", "SavedVariance", "Y@GRAD"])
def sync_batch_norm_grad(ctx, ins, attrs):
    """X's gradient over the whole batch of every device; Scale's and Bias's of this device's part."""
    if _check(attrs):
        return batch_norm_grad(ctx, ins, attrs)
    xp = ctx.xp
    x, scale, dy = ins["X"], ins["Scale"], ins["Y@GRAD"]
    axes, ch, view, inv_std, x_hat, dbias, dscale, res = bn_grad_parts(ctx, ins, attrs)
    c = x.shape[ch]
    local = xp.concatenate([dbias.astype(x.dtype, copy=False), dscale.astype(x.dtype, copy=False),
                            xp.asarray([x.size // c], dtype=x.dtype)])
    total = device_sum(local, ctx.place)    # every device takes part, whether X needs a gradient or not
    if ctx.op.outputs.get("X@GRAD"):
        m = total[2 * c]
        k = scale.reshape(view) * inv_std
        dx = k * (dy - total[:c].reshape(view) / m - x_hat * (total[c:2 * c].reshape(view) / m))
        res["X@GRAD"] = dx.astype(x.dtype, copy=False)
    return res
