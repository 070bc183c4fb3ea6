"""Detection losses: ``sigmoid_focal_loss`` (RetinaNet), with its gradient."""
import numpy as np

from ..framework.registry import register_grad, register_op, same_shape

_FLT_MIN = np.float32(1.175494351e-38)


def _focal_parts(xp, x, label, fg_num, attrs):
    """(p, positive mask * alpha / fg, negative mask * (1 - alpha) / fg) of X [N, C] with labels in
    1..C (0: background, -1: ignored)."""
    classes = x.shape[1]
    lab = label.reshape(-1, 1).astype(np.int64)
    cls = xp.arange(1, classes + 1)[None, :]
    fg = max(float(np.asarray(fg_num).reshape(-1)[0]), 1.0)
    pos = (lab == cls).astype(x.dtype) * (attrs["alpha"] / fg)
    neg = ((lab != -1) & (lab != cls)).astype(x.dtype) * ((1 - attrs["alpha"]) / fg)
    p = 1 / (1 + xp.exp(-x))
    return p, pos, neg


def _log_one_minus_p(xp, x):
    """``log(1 - sigmoid(x))`` without overflow."""
    return -x * (x >= 0) - xp.log(1 + xp.exp(x - 2 * x * (x >= 0)))


@register_op("sigmoid_focal_loss", inputs=["X", "Label", "FgNum"], outputs=["Out"], attrs={"gamma": 2.0, "alpha": 0.25},
             infer=same_shape(), no_grad=("Label", "FgNum"), host_inputs=("FgNum",))
def sigmoid_focal_loss(ctx, ins, attrs):
    """Per anchor and class: ``-alpha / fg (1 - p)^gamma log p`` for the anchor's class and
    ``-(1 - alpha) / fg p^gamma log(1 - p)`` for the others (none for ignored anchors, label -1);
    ``fg`` is FgNum (at least 1)."""
    xp = ctx.xp
    x = ins["X"]
    p, pos, neg = _focal_parts(xp, x, ins["Label"], ins["FgNum"], attrs)
    g = attrs["gamma"]
    out = -pos * (1 - p) ** g * xp.log(xp.maximum(p, _FLT_MIN)) - neg * p ** g * _log_one_minus_p(xp, x)
    return {"Out": out.astype(x.dtype, copy=False)}


@register_grad("sigmoid_focal_loss", inputs=["X", "Label", "FgNum", "Out@GRAD"], outputs=["X@GRAD"])
def sigmoid_focal_loss_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    p, pos, neg = _focal_parts(xp, x, ins["Label"], ins["FgNum"], attrs)
    g = attrs["gamma"]
    d_pos = (1 - p) ** g * (1 - p - g * p * xp.log(xp.maximum(p, _FLT_MIN)))
    d_neg = p ** g * (g * (1 - p) * _log_one_minus_p(xp, x) - p)
    return {"X@GRAD": (d * (-pos * d_pos - neg * d_neg)).astype(x.dtype, copy=False)}
