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


# ------------------------------------------------------------------ yolov3_loss
def _sce(xp, x, label):
    """Sigmoid cross entropy with logits, elementwise."""
    return xp.maximum(x, 0) - x * label + xp.log1p(xp.exp(-xp.abs(x)))


def _xywh_iou(a, b):
    """[..., A, B] IoU of centre-size boxes ``a`` [..., A, 4] and ``b`` [..., B, 4] (Paddle clips the
    overlap's sides to [0, 1]: normalised boxes)."""
    lo = np.maximum(a[..., :, None, :2] - a[..., :, None, 2:] / 2, b[..., None, :, :2] - b[..., None, :, 2:] / 2)
    hi = np.minimum(a[..., :, None, :2] + a[..., :, None, 2:] / 2, b[..., None, :, :2] + b[..., None, :, 2:] / 2)
    inter = np.clip(hi - lo, 0.0, 1.0).prod(axis=-1)
    union = a[..., :, None, 2:].prod(axis=-1) + b[..., None, :, 2:].prod(axis=-1) - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


class _YoloTargets:
    """What the YOLOv3 loss compares the head's output with, per image (host NumPy): the matched
    cells and their targets, and the objectness mask (1 / the gt score where a ground truth is, -1
    where a prediction overlaps one by more than ``ignore_thresh``, 0 elsewhere)."""

    def __init__(self, x, gtbox, gtlabel, gtscore, attrs):
        n, _, h, w = x.shape
        anchors = np.asarray(attrs["anchors"], dtype=np.float64).reshape(-1, 2)
        mask = list(attrs["anchor_mask"])
        classes = int(attrs["class_num"])
        size = attrs["downsample_ratio"] * h
        p = x.reshape(n, len(mask), 5 + classes, h, w)
        sxy, bias = attrs["scale_x_y"], -0.5 * (attrs["scale_x_y"] - 1)
        sig = 1 / (1 + np.exp(-p[:, :, :2]))
        grid = np.stack(np.meshgrid(np.arange(w), np.arange(h)))                 # [2, H, W]: (x, y)
        cxy = (grid[None, None] + sig * sxy + bias) / h                          # Paddle: the grid taken square
        wh = np.exp(p[:, :, 2:4]) * (anchors[mask] / size)[None, :, :, None, None]
        pred = np.concatenate([cxy, wh], axis=2).transpose(0, 1, 3, 4, 2).reshape(n, -1, 4)
        self.obj = np.where(_xywh_iou(pred, gtbox).max(axis=-1, initial=0.0) > attrs["ignore_thresh"], -1.0, 0.0)
        shift = np.concatenate([np.zeros_like(gtbox[..., :2]), gtbox[..., 2:]], axis=-1)
        all_anchors = np.concatenate([np.zeros_like(anchors), anchors / size], axis=1)
        best = _xywh_iou(shift, np.broadcast_to(all_anchors, (n,) + all_anchors.shape)).argmax(axis=-1)
        self.match = np.full(gtbox.shape[:2], -1, dtype=np.int32)
        self.cells = []                      # (image, anchor slot, gj, gi, targets, scale, label, score)
        for i in range(n):
            for j in range(gtbox.shape[1]):
                gx, gy, gw, gh = gtbox[i, j]
                if gw * gh == 0 or int(best[i, j]) not in mask:
                    continue
                a = mask.index(int(best[i, j]))
                self.match[i, j] = a
                gi, gj = int(gx * w), int(gy * h)
                t = (gx * h - gi, gy * h - gj, np.log(gw * size / anchors[mask[a], 0]),
                     np.log(gh * size / anchors[mask[a], 1]))
                self.cells.append((i, a, gj, gi, t, (2.0 - gw * gh) * gtscore[i, j], int(gtlabel[i, j]),
                                   gtscore[i, j]))
                self.obj[i, (a * h + gj) * w + gi] = gtscore[i, j]
        self.obj = self.obj.reshape(n, len(mask), h, w)
        smooth = min(1.0 / classes, 1.0 / 40) if attrs["use_label_smooth"] else 0.0
        self.pos, self.neg, self.classes = 1.0 - smooth, smooth, classes


def _yolo_inputs(ins):
    x = np.asarray(ins["X"], dtype=np.float64)
    gtbox = np.asarray(ins["GTBox"], dtype=np.float64)
    score = np.ones(gtbox.shape[:2]) if ins.get("GTScore") is None else np.asarray(ins["GTScore"], dtype=np.float64)
    return x, gtbox, np.asarray(ins["GTLabel"]), score


def _yolo_infer(ctx):
    xs, gs = ctx.input_shape("X"), ctx.input_shape("GTBox")
    if xs is None or gs is None:
        return
    if xs[2] >= 0 and xs[3] >= 0 and xs[2] != xs[3]:
        raise ValueError("X's feature map must be square (Paddle 1.8 requires it), got %d x %d" % (xs[2], xs[3]))
    ctx.set_output("Loss", (xs[0],), ctx.input_dtype("X"))
    ctx.set_output("ObjectnessMask", (xs[0], len(ctx.attr("anchor_mask")), xs[2], xs[3]), ctx.input_dtype("X"))
    ctx.set_output("GTMatchMask", (gs[0], gs[1]), "int32")


_YOLO_ATTRS = {"class_num": 0, "anchors": [], "anchor_mask": [], "downsample_ratio": 32, "ignore_thresh": 0.7,
               "use_label_smooth": True, "scale_x_y": 1.0}


@register_op("yolov3_loss", inputs=["X", "GTBox", "GTLabel", "GTScore?"],
             outputs=["Loss", "ObjectnessMask", "GTMatchMask"], attrs=_YOLO_ATTRS, infer=_yolo_infer,
             no_grad=("GTBox", "GTLabel", "GTScore"), host="per-box target matching of the YOLOv3 loss, on the host")
def yolov3_loss(ctx, ins, attrs):
    """YOLOv3's loss per image: each ground truth box (centre-size, normalised) is matched to the anchor
    of ``anchor_mask`` it overlaps best; its cell gets sigmoid cross entropy on the centre offsets,
    L1 on the log sizes (both times ``2 - w * h`` and its score) and on the classes (smoothed labels);
    objectness is learnt towards the ObjectnessMask (1 / the score at ground truth, 0 elsewhere, none
    where a prediction already overlaps a ground truth by more than ``ignore_thresh``)."""
    x, gtbox, gtlabel, score = _yolo_inputs(ins)
    t = _YoloTargets(x, gtbox, gtlabel, score, attrs)
    n, _, h, w = x.shape
    p = x.reshape(n, len(attrs["anchor_mask"]), 5 + t.classes, h, w)
    loss = np.zeros(n)
    for i, a, gj, gi, tgt, scale, label, sc in t.cells:
        v = p[i, a, :, gj, gi]
        loss[i] += (_sce(np, v[0], tgt[0]) + _sce(np, v[1], tgt[1]) + abs(v[2] - tgt[2]) + abs(v[3] - tgt[3])) * scale
        labels = np.where(np.arange(t.classes) == label, t.pos, t.neg)
        loss[i] += _sce(np, v[5:], labels).sum() * sc
    obj, logit = t.obj, p[:, :, 4]
    loss += np.where(obj > 0, _sce(np, logit, 1.0) * obj, np.where(obj == 0, _sce(np, logit, 0.0), 0)).reshape(n, -1).sum(1)
    dtype = ins["X"].dtype
    return {"Loss": loss.astype(dtype), "ObjectnessMask": obj.astype(dtype), "GTMatchMask": t.match}


@register_grad("yolov3_loss", inputs=["X", "GTBox", "GTLabel", "GTScore?", "Loss@GRAD"], outputs=["X@GRAD"])
def yolov3_loss_grad(ctx, ins, attrs):
    x, gtbox, gtlabel, score = _yolo_inputs(ins)
    t = _YoloTargets(x, gtbox, gtlabel, score, attrs)
    d = np.asarray(ins["Loss@GRAD"], dtype=np.float64).reshape(-1)
    n, _, h, w = x.shape
    p = x.reshape(n, len(attrs["anchor_mask"]), 5 + t.classes, h, w)
    sig = 1 / (1 + np.exp(-p))
    g = np.zeros_like(p)
    for i, a, gj, gi, tgt, scale, label, sc in t.cells:
        v = p[i, a, :, gj, gi]
        g[i, a, 0, gj, gi] += (sig[i, a, 0, gj, gi] - tgt[0]) * scale * d[i]
        g[i, a, 1, gj, gi] += (sig[i, a, 1, gj, gi] - tgt[1]) * scale * d[i]
        g[i, a, 2, gj, gi] += np.sign(v[2] - tgt[2]) * scale * d[i]
        g[i, a, 3, gj, gi] += np.sign(v[3] - tgt[3]) * scale * d[i]
        labels = np.where(np.arange(t.classes) == label, t.pos, t.neg)
        g[i, a, 5:, gj, gi] += (sig[i, a, 5:, gj, gi] - labels) * sc * d[i]
    obj = t.obj
    g[:, :, 4] = np.where(obj > 0, (sig[:, :, 4] - 1) * obj, np.where(obj == 0, sig[:, :, 4], 0)) * d[:, None, None, None]
    return {"X@GRAD": ctx.xp.asarray(g.reshape(x.shape).astype(ins["X"].dtype))}
