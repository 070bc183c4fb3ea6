"""Distance losses: ``smooth_l1_loss``, ``huber_loss``, ``kldiv_loss`` and ``center_loss`` (which also
moves the class centres), with gradients. Labels and targets never get a gradient."""
import numpy as np

from ..core.tensor import scatter_add
from ..framework.registry import register_grad, register_op
from . import device_ids


def _same_shape(ctx, a, b, sa, sb):
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError("op %r: %s %r has shape %s but %s %r has shape %s; they must match"
                         % (ctx.op.type, sb, ctx.op.inputs[sb][0], list(b.shape), sa, ctx.op.inputs[sa][0],
                            list(a.shape)))


def _per_row_infer(like_x, per_row):
    """``like_x`` gets X's meta, ``per_row`` is [N, 1]."""
    def infer(ctx):
        xs = ctx.input_shape("X")
        if xs is None:
            return
        ctx.share(like_x, "X")
        ctx.set_output(per_row, (xs[0], 1), ctx.input_dtype("X"))
    return infer


# ------------------------------------------------------------------ smooth_l1_loss
_sl1_infer = _per_row_infer("Diff", "Out")


@register_op("smooth_l1_loss", inputs=["X", "Y", "InsideWeight?", "OutsideWeight?"], outputs=["Diff", "Out"],
             attrs={"sigma": 1.0}, infer=_sl1_infer, no_grad=("InsideWeight", "OutsideWeight"))
def smooth_l1_loss(ctx, ins, attrs):
    """``Diff = (X - Y) * InsideWeight``; per element ``0.5 * (sigma * d)^2`` when ``|d| < 1 / sigma^2``
    else ``|d| - 0.5 / sigma^2``, times OutsideWeight, summed over all but the first dim: [N, 1]."""
    xp = ctx.xp
    x, y = ins["X"], ins["Y"]
    _same_shape(ctx, x, y, "X", "Y")
    s2 = attrs["sigma"] ** 2
    diff = x - y
    if ins.get("InsideWeight") is not None:
        diff = diff * ins["InsideWeight"]
    a = xp.abs(diff)
    err = xp.where(a < 1.0 / s2, 0.5 * s2 * diff * diff, a - 0.5 / s2)
    if ins.get("OutsideWeight") is not None:
        err = err * ins["OutsideWeight"]
    return {"Diff": diff.astype(x.dtype, copy=False),
            "Out": err.reshape(x.shape[0], -1).sum(axis=1, keepdims=True).astype(x.dtype, copy=False)}


@register_grad("smooth_l1_loss", inputs=["InsideWeight?", "OutsideWeight?", "Diff", "Out@GRAD"],
               outputs=["X@GRAD?", "Y@GRAD?"])
def smooth_l1_loss_grad(ctx, ins, attrs):
    xp = ctx.xp
    diff, d = ins["Diff"], ins["Out@GRAD"]
    s2 = attrs["sigma"] ** 2
    g = xp.where(xp.abs(diff) < 1.0 / s2, s2 * diff, xp.sign(diff))
    if ins.get("InsideWeight") is not None:
        g = g * ins["InsideWeight"]
    if ins.get("OutsideWeight") is not None:
        g = g * ins["OutsideWeight"]
    g = g * d.reshape((d.shape[0],) + (1,) * (diff.ndim - 1))
    return {"X@GRAD": g.astype(diff.dtype, copy=False), "Y@GRAD": (-g).astype(diff.dtype, copy=False)}


# ------------------------------------------------------------------ huber_loss
def _huber_infer(ctx):
    ctx.share("Residual", "X")
    ctx.share("Out", "X")


@register_op("huber_loss", inputs=["X", "Y"], outputs=["Residual", "Out"], attrs={"delta": 1.0}, infer=_huber_infer)
def huber_loss(ctx, ins, attrs):
    """``r = Y - X``; ``0.5 * r^2`` when ``|r| <= delta``, else ``delta * (|r| - 0.5 * delta)``."""
    xp = ctx.xp
    x, y = ins["X"], ins["Y"]
    _same_shape(ctx, x, y, "X", "Y")
    delta = attrs["delta"]
    r = y - x
    a = xp.abs(r)
    out = xp.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))
    return {"Residual": r, "Out": out.astype(x.dtype, copy=False)}


@register_grad("huber_loss", inputs=["Residual", "Out@GRAD"])
def huber_loss_grad(ctx, ins, attrs):
    xp = ctx.xp
    r, d = ins["Residual"], ins["Out@GRAD"]
    delta = attrs["delta"]
    g = xp.where(xp.abs(r) <= delta, r, delta * xp.sign(r)) * d
    return {"X@GRAD": (-g).astype(r.dtype, copy=False), "Y@GRAD": g.astype(r.dtype, copy=False)}


# ------------------------------------------------------------------ kldiv_loss
_REDUCTIONS = ("none", "batchmean", "mean", "sum")


def _kl_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    red = ctx.attr("reduction")
    if red not in _REDUCTIONS:
        raise ValueError("reduction must be one of %s, got %r" % (list(_REDUCTIONS), red))
    ctx.set_output("Loss", xs if red == "none" else (1,), ctx.input_dtype("X"))


def _kl_scale(attrs, x):
    red = attrs["reduction"]
    if red == "mean":
        return 1.0 / max(x.size, 1)
    if red == "batchmean":
        return 1.0 / max(x.shape[0], 1)
    return 1.0


@register_op("kldiv_loss", inputs=["X", "Target"], outputs=["Loss"], attrs={"reduction": "mean"}, infer=_kl_infer,
             no_grad=("Target",))
def kldiv_loss(ctx, ins, attrs):
    """``Target * (log(Target) - X)`` elementwise (0 where Target <= 0; X holds log-probabilities),
    then reduced: none, sum, mean over all elements, or batchmean (sum / batch size)."""
    xp = ctx.xp
    x, t = ins["X"], ins["Target"]
    _same_shape(ctx, x, t, "X", "Target")
    safe = xp.where(t > 0, t, 1)
    loss = xp.where(t > 0, t * (xp.log(safe) - x), 0).astype(x.dtype, copy=False)
    if attrs["reduction"] == "none":
        return {"Loss": loss}
    return {"Loss": (loss.sum() * _kl_scale(attrs, x)).reshape(1).astype(x.dtype, copy=False)}


@register_grad("kldiv_loss", inputs=["X", "Target", "Loss@GRAD"])
def kldiv_loss_grad(ctx, ins, attrs):
    x, t, d = ins["X"], ins["Target"], ins["Loss@GRAD"]
    g = -t * (d if attrs["reduction"] == "none" else d.reshape(()) * _kl_scale(attrs, x))
    return {"X@GRAD": ctx.xp.where(t > 0, g, 0).astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ center_loss
def _center_infer(ctx):
    _per_row_infer("SampleCenterDiff", "Loss")(ctx)
    cs = ctx.input_var("Centers")
    if cs is not None:
        ctx.set_output("CentersOut", cs.shape, cs.dtype)


@register_op("center_loss", inputs=["X", "Label", "Centers", "CenterUpdateRate"],
             outputs=["CentersOut", "SampleCenterDiff", "Loss"], attrs={"cluster_num": 0, "need_update": False},
             infer=_center_infer, no_grad=("Label", "Centers", "CenterUpdateRate"))
def center_loss(ctx, ins, attrs):
    """``diff = X - Centers[label]``, ``Loss = 0.5 * sum(diff^2)`` per row; with ``need_update`` each
    centre moves by ``rate * sum(diff of its rows) / (1 + count of its rows)`` (in CentersOut)."""
    xp = ctx.xp
    x, label, centers = ins["X"], ins["Label"], ins["Centers"]
    k = centers.shape[0]

    def host_labels():
        lab = label.reshape(-1).astype(np.int64)
        if lab.size:
            lo, hi = int(lab.min()), int(lab.max())
            if lo < 0 or hi >= k:
                raise ValueError("op 'center_loss': label %d in Label %r is out of range for %d centres"
                                 % (lo if lo < 0 else hi, ctx.op.inputs["Label"][0], k))
        return lab
    # (on a device a label out of range is clipped and its row's difference made NaN: its loss too)
    lab, bad = device_ids.ids_or_mask(xp, label, k, host_labels, x.dtype)
    diff = device_ids.nan_where(xp, bad, x - centers[lab])
    loss = 0.5 * (diff * diff).sum(axis=1, keepdims=True)
    res = {"SampleCenterDiff": diff, "Loss": loss.astype(x.dtype, copy=False)}
    if attrs["need_update"]:
        total = scatter_add(xp, xp.zeros(centers.shape, dtype=centers.dtype), lab, diff)
        count = scatter_add(xp, xp.zeros((k,), dtype=centers.dtype), lab, xp.ones(lab.shape, dtype=centers.dtype))
        rate = ins["CenterUpdateRate"].reshape(())
        res["CentersOut"] = (centers + rate * total / (1.0 + count)[:, None]).astype(centers.dtype, copy=False)
    else:
        res["CentersOut"] = centers
    return res


@register_grad("center_loss", inputs=["SampleCenterDiff", "Loss@GRAD"], outputs=["X@GRAD?"])
def center_loss_grad(ctx, ins, attrs):
    diff, d = ins["SampleCenterDiff"], ins["Loss@GRAD"]
    return {"X@GRAD": (diff * d.reshape(-1, 1)).astype(diff.dtype, copy=False)}
