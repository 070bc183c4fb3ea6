"""Ranking and click losses: ``rank_loss`` (RankNet), ``margin_rank_loss``, ``bpr_loss`` and
``teacher_student_sigmoid_loss``, with gradients. Labels never get a gradient."""
import numpy as np

from ..framework.registry import register_grad, register_op
from . import device_ids
from .math import stable_sigmoid

_TOLERABLE = 1e20  # Paddle's TolerableValue bound on a log term


def _softplus(xp, z):
    """``log(1 + exp(z))`` without overflow."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


def _sigmoid(xp, z):
    return stable_sigmoid(xp, z)


# ------------------------------------------------------------------ rank_loss
def _rank_pairs(ctx, ins):
    """Label, Left, Right as flat vectors (Paddle 1.8 pairs them element by element, whatever
    their shapes: [N] and [N, 1] mix), checked to have one size."""
    flat = {s: ins[s].reshape(-1) for s in ("Label", "Left", "Right")}
    sizes = {s: v.size for s, v in flat.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError("op 'rank_loss': Label, Left and Right must have one size, got %s" % sizes)
    return flat["Label"], flat["Left"] - flat["Right"]


@register_op("rank_loss", inputs=["Label", "Left", "Right"], outputs=["Out"], infer=lambda c: c.share("Out", "Label"),
             no_grad=("Label",))
def rank_loss(ctx, ins, attrs):
    """RankNet: ``log(1 + exp(Left - Right)) - Label * (Left - Right)``, shaped like Label."""
    label, o = _rank_pairs(ctx, ins)
    out = (_softplus(ctx.xp, o) - label * o).astype(o.dtype, copy=False)
    return {"Out": out.reshape(ins["Label"].shape)}


@register_grad("rank_loss", inputs=["Label", "Left", "Right", "Out@GRAD"], outputs=["Left@GRAD?", "Right@GRAD?"])
def rank_loss_grad(ctx, ins, attrs):
    label, o = _rank_pairs(ctx, ins)
    g = (ins["Out@GRAD"].reshape(-1) * (_sigmoid(ctx.xp, o) - label)).astype(o.dtype, copy=False)
    return {"Left@GRAD": g.reshape(ins["Left"].shape), "Right@GRAD": (-g).reshape(ins["Right"].shape)}


# ------------------------------------------------------------------ margin_rank_loss
def _mrl_infer(ctx):
    ctx.share("Out", "X1")
    ctx.share("Activated", "X1")


@register_op("margin_rank_loss", inputs=["X1", "X2", "Label"], outputs=["Activated", "Out"], attrs={"margin": 0.0},
             infer=_mrl_infer, no_grad=("Label",))
def margin_rank_loss(ctx, ins, attrs):
    """``max(0, -Label * (X1 - X2) + margin)``; Activated marks where it is positive."""
    xp = ctx.xp
    out = -ins["Label"] * (ins["X1"] - ins["X2"]) + attrs["margin"]
    act = (out > 0).astype(out.dtype)
    return {"Out": xp.maximum(out, 0).astype(out.dtype, copy=False), "Activated": act}


@register_grad("margin_rank_loss", inputs=["Label", "Activated", "Out@GRAD"], outputs=["X1@GRAD?", "X2@GRAD?"])
def margin_rank_loss_grad(ctx, ins, attrs):
    g = ins["Out@GRAD"] * ins["Activated"] * ins["Label"]
    return {"X1@GRAD": -g, "X2@GRAD": g}


# ------------------------------------------------------------------ bpr_loss
def _bpr_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None:
        ctx.set_output("Y", tuple(xs[:-1]) + (1,), ctx.input_dtype("X"), ctx.input_lod_level("X"))


def _bpr_labels(ctx, x, label, mask=False):
    """Flat int64 labels, checked on the host; on a device clipped into range, and with ``mask``
    (the forward op) the mask of those that were not, for their rows' loss to be NaN."""
    c = x.shape[-1]
    if label.size != x.size // c:
        raise ValueError("op 'bpr_loss': Label %r has %d entries for %d rows of X %r"
                         % (ctx.op.inputs["Label"][0], label.size, x.size // c, ctx.op.inputs["X"][0]))

    def host_labels():
        lab = label.reshape(-1).astype(np.int64)
        if lab.size and (int(lab.min()) < 0 or int(lab.max()) >= c):
            raise ValueError("op 'bpr_loss': a label in Label %r is out of range for %d classes"
                             % (ctx.op.inputs["Label"][0], c))
        return lab
    if mask:
        return device_ids.ids_or_mask(ctx.xp, label, c, host_labels, x.dtype)
    return device_ids.ids_or_clipped(ctx.xp, label, c, host_labels)


@register_op("bpr_loss", inputs=["X", "Label"], outputs=["Y"], infer=_bpr_infer, no_grad=("Label",),
             share_lod=("X", "Y"))
def bpr_loss(ctx, ins, attrs):
    """Bayesian personalised ranking: per row, the mean over the other classes j of
    ``log(1 + exp(X[j] - X[label]))`` (each term bounded by 1e20)."""
    xp = ctx.xp
    x = ins["X"]
    c = x.shape[-1]
    x2 = x.reshape(-1, c)
    lab, bad = _bpr_labels(ctx, x, ins["Label"], mask=True)
    pos = x2[xp.arange(x2.shape[0]), lab][:, None]
    terms = xp.minimum(_softplus(xp, x2 - pos), _TOLERABLE)
    terms[xp.arange(x2.shape[0]), lab] = 0
    y = device_ids.nan_where(xp, bad, terms.sum(axis=1) / max(c - 1, 1))
    return {"Y": y.reshape(tuple(x.shape[:-1]) + (1,)).astype(x.dtype, copy=False)}


@register_grad("bpr_loss", inputs=["X", "Label", "Y@GRAD"])
def bpr_loss_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Y@GRAD"]
    c = x.shape[-1]
    x2 = x.reshape(-1, c)
    lab = _bpr_labels(ctx, x, ins["Label"])
    rows = xp.arange(x2.shape[0])
    pos = x2[rows, lab][:, None]
    g = _sigmoid(xp, x2 - pos) * (d.reshape(-1, 1) / max(c - 1, 1))
    g[rows, lab] = 0
    g[rows, lab] = -g.sum(axis=1)
    return {"X@GRAD": g.reshape(x.shape).astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ teacher_student_sigmoid_loss
def _ts_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None:
        ctx.set_output("Y", (xs[0], 1), ctx.input_dtype("X"))


@register_op("teacher_student_sigmoid_loss", inputs=["X", "Label"], outputs=["Y"],
             attrs={"soft_max_up_bound": 15.0, "soft_max_lower_bound": -15.0}, infer=_ts_infer, no_grad=("Label",))
def teacher_student_sigmoid_loss(ctx, ins, attrs):
    """Click loss plus, where a teacher score q is given, a distillation loss. Label encodes both:
    < -1: no click, no teacher; [-1, 0): click, no teacher; [0, 1): no click, q = label;
    >= 1: click, q = label - 1. Each part is a sigmoid cross entropy with logits X."""
    xp = ctx.xp
    x, label = ins["X"].reshape(-1), ins["Label"].reshape(-1).astype(ins["X"].dtype)
    base = xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))   # sigmoid CE against 0
    click = xp.where((label >= -1) & (label < 0) | (label >= 1), 1.0, 0.0).astype(x.dtype)
    q = xp.where(label >= 1, label - 1, label)
    teacher = xp.where(label >= 0, base - x * q, 0)
    y = base - x * click + teacher
    return {"Y": y.reshape(-1, 1).astype(x.dtype, copy=False)}


@register_grad("teacher_student_sigmoid_loss", inputs=["X", "Label", "Y@GRAD"])
def teacher_student_sigmoid_loss_grad(ctx, ins, attrs):
    """As Paddle: no gradient for a logit outside [soft_max_lower_bound, soft_max_up_bound]."""
    xp = ctx.xp
    x0 = ins["X"]
    x, label = x0.reshape(-1), ins["Label"].reshape(-1).astype(x0.dtype)
    p = _sigmoid(xp, x)
    click = xp.where((label >= -1) & (label < 0) | (label >= 1), 1.0, 0.0).astype(x.dtype)
    q = xp.where(label >= 1, label - 1, label)
    g = p - click + xp.where(label >= 0, p - q, 0)
    g = xp.where((x < attrs["soft_max_lower_bound"]) | (x > attrs["soft_max_up_bound"]), 0, g)
    return {"X@GRAD": (g * ins["Y@GRAD"].reshape(-1)).reshape(x0.shape).astype(x0.dtype, copy=False)}
