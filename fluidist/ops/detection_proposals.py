"""Faster R-CNN / FPN proposal ops: ``generate_proposals`` (RPN outputs to proposals: decode, clip,
filter, NMS), ``collect_fpn_proposals`` (the best proposals of all FPN levels) and
``distribute_fpn_proposals`` (proposals to the FPN level their size calls for). Sequential selections
over a few thousand boxes, on the host, without gradients (as in Paddle)."""
import math

import numpy as np

from ..core.tensor import lengths_to_offsets
from ..framework.registry import register_op
from .detection_nms import overlaps

_HOST = "sorting and suppressing proposals, on the host"
_MAX_LOG_SIZE = math.log(1000.0 / 16.0)


def _offsets(ctx, slot, rows, i=0):
    lod = ctx.lod(slot, i)
    return [int(o) for o in lod[-1]] if lod else [0, rows]


# ------------------------------------------------------------------ generate_proposals
def _decode(anchors, deltas, variances):
    """Pixel boxes from anchors and RPN deltas (log sizes capped at ``log(1000 / 16)``)."""
    w, h = anchors[:, 2] - anchors[:, 0] + 1, anchors[:, 3] - anchors[:, 1] + 1
    cx, cy = anchors[:, 0] + 0.5 * w, anchors[:, 1] + 0.5 * h
    d = deltas * variances if variances is not None else deltas
    px, py = d[:, 0] * w + cx, d[:, 1] * h + cy
    pw, ph = np.exp(np.minimum(d[:, 2], _MAX_LOG_SIZE)) * w, np.exp(np.minimum(d[:, 3], _MAX_LOG_SIZE)) * h
    return np.stack([px - pw / 2, py - ph / 2, px + pw / 2 - 1, py + ph / 2 - 1], axis=1)


def _nms_pixel(boxes, thresh, eta):
    """Greedy NMS of boxes already in score order (pixel IoU); the kept indices."""
    iou = overlaps(boxes, boxes, 1.0)
    kept = []
    for k in range(len(boxes)):
        if not kept or iou[k, kept].max() <= thresh:
            kept.append(k)
            if eta < 1 and thresh > 0.5:
                thresh *= eta
    return np.asarray(kept, dtype=np.int64)


def _proposals_of_image(scores, deltas, info, anchors, variances, attrs):
    order = np.argsort(-scores, kind="mergesort")
    if 0 < attrs["pre_nms_topN"] < len(scores):
        order = order[:attrs["pre_nms_topN"]]
    boxes = _decode(anchors[order], deltas[order], None if variances is None else variances[order])
    h, w, scale = info
    boxes = np.stack([np.clip(boxes[:, 0], 0, w - 1), np.clip(boxes[:, 1], 0, h - 1),
                      np.clip(boxes[:, 2], 0, w - 1), np.clip(boxes[:, 3], 0, h - 1)], axis=1)
    min_size = max(attrs["min_size"], 1.0)
    bw, bh = boxes[:, 2] - boxes[:, 0] + 1, boxes[:, 3] - boxes[:, 1] + 1
    keep = ((boxes[:, 2] - boxes[:, 0]) / scale + 1 >= min_size) & ((boxes[:, 3] - boxes[:, 1]) / scale + 1 >= min_size) \
        & (boxes[:, 0] + bw / 2 < w) & (boxes[:, 1] + bh / 2 < h)
    boxes, probs = boxes[keep], scores[order][keep]
    if not len(boxes):                  # Paddle gives one zero box then
        return np.zeros((1, 4)), np.zeros(1)
    if attrs["nms_thresh"] > 0:
        kept = _nms_pixel(boxes, attrs["nms_thresh"], attrs["eta"])
        if 0 < attrs["post_nms_topN"] < len(kept):
            kept = kept[:attrs["post_nms_topN"]]
        boxes, probs = boxes[kept], probs[kept]
    return boxes, probs


def _gp_infer(ctx):
    ctx.set_output("RpnRois", (-1, 4), ctx.input_dtype("Scores"), 1)
    ctx.set_output("RpnRoiProbs", (-1, 1), ctx.input_dtype("Scores"), 1)
    ctx.set_output("RpnRoisLod", (-1,), "int32")


@register_op("generate_proposals", inputs=["Scores", "BboxDeltas", "ImInfo", "Anchors", "Variances"],
             outputs=["RpnRois", "RpnRoiProbs", "RpnRoisLod?"],
             attrs={"pre_nms_topN": 6000, "post_nms_topN": 1000, "nms_thresh": 0.5, "min_size": 0.1, "eta": 1.0},
             infer=_gp_infer, host=_HOST)
def generate_proposals(ctx, ins, attrs):
    """Per image: the ``pre_nms_topN`` best anchors (Scores [N, A, H, W]) decoded by BboxDeltas
    [N, 4A, H, W] (Anchors and Variances [H, W, A, 4]), clipped to the image (ImInfo rows
    ``(h, w, scale)``), those smaller than ``min_size`` (at the original scale) or centred outside
    dropped, then NMS at ``nms_thresh`` and the ``post_nms_topN`` best: RpnRois / RpnRoiProbs with one
    LoD sequence per image (RpnRoisLod: their counts)."""
    scores, deltas = np.asarray(ins["Scores"]), np.asarray(ins["BboxDeltas"])
    info = np.asarray(ins["ImInfo"], dtype=np.float64).reshape(-1, 3)
    anchors = np.asarray(ins["Anchors"], dtype=np.float64).reshape(-1, 4)
    variances = np.asarray(ins["Variances"], dtype=np.float64).reshape(-1, 4)
    n = scores.shape[0]
    rois, probs, counts = [], [], []
    for i in range(n):
        s = scores[i].transpose(1, 2, 0).reshape(-1).astype(np.float64)
        d = deltas[i].transpose(1, 2, 0).reshape(-1, 4).astype(np.float64)
        b, p = _proposals_of_image(s, d, info[i], anchors, variances, attrs)
        rois.append(b)
        probs.append(p)
        counts.append(len(b))
    lod = [lengths_to_offsets(counts)]
    ctx.set_lod("RpnRois", lod)
    ctx.set_lod("RpnRoiProbs", lod)
    dtype = scores.dtype
    return {"RpnRois": np.concatenate(rois).astype(dtype).reshape(-1, 4),
            "RpnRoiProbs": np.concatenate(probs).astype(dtype).reshape(-1, 1),
            "RpnRoisLod": np.asarray(counts, dtype=np.int32)}


# ------------------------------------------------------------------ collect / distribute FPN proposals
@register_op("collect_fpn_proposals", inputs=["MultiLevelRois*", "MultiLevelScores*"], outputs=["FpnRois"],
             attrs={"post_nms_topN": 100}, infer=lambda ctx: ctx.set_output("FpnRois", (-1, 4),
                                                                             ctx.input_dtype("MultiLevelRois"), 1),
             host=_HOST)
def collect_fpn_proposals(ctx, ins, attrs):
    """The ``post_nms_topN`` best-scoring proposals over all levels and images, then grouped by image
    (each image's in score order), with one LoD sequence per image."""
    rois, scores, images = [], [], []
    for i, (r, s) in enumerate(zip(ins["MultiLevelRois"], ins["MultiLevelScores"])):
        r = np.asarray(r)
        offsets = _offsets(ctx, "MultiLevelRois", r.shape[0], i)
        rois.append(r)
        scores.append(np.asarray(s).reshape(-1))
        images.append(np.repeat(np.arange(len(offsets) - 1), np.diff(offsets)))
    rois, scores, images = np.concatenate(rois), np.concatenate(scores), np.concatenate(images)
    n_images = max(len(_offsets(ctx, "MultiLevelRois", 0, i)) - 1 for i in range(len(ins["MultiLevelRois"])))
    top = np.argsort(-scores, kind="mergesort")[:attrs["post_nms_topN"]]
    top = top[np.argsort(images[top], kind="mergesort")]
    ctx.set_lod("FpnRois", [lengths_to_offsets(np.bincount(images[top], minlength=n_images))])
    return {"FpnRois": rois[top]}


def _distribute_infer(ctx):
    for i in range(len(ctx.op.outputs.get("MultiFpnRois", []))):
        ctx.set_output("MultiFpnRois", (-1, 4), ctx.input_dtype("FpnRois"), 1, i=i)
    ctx.set_output("RestoreIndex", (-1, 1), "int32")


@register_op("distribute_fpn_proposals", inputs=["FpnRois"], outputs=["MultiFpnRois*", "RestoreIndex"],
             attrs={"min_level": 2, "max_level": 5, "refer_level": 4, "refer_scale": 224}, infer=_distribute_infer,
             host=_HOST)
def distribute_fpn_proposals(ctx, ins, attrs):
    """Each proposal to level ``floor(refer_level + log2(sqrt(area) / refer_scale))`` clipped to
    ``[min_level, max_level]`` (one output per level, each with one LoD sequence per image);
    RestoreIndex gives, for each input row, its position in the levels' concatenation."""
    rois = np.asarray(ins["FpnRois"])
    offsets = _offsets(ctx, "FpnRois", rois.shape[0])
    images = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    lo, hi = attrs["min_level"], attrs["max_level"]
    area = (rois[:, 2] - rois[:, 0] + 1) * (rois[:, 3] - rois[:, 1] + 1)
    level = np.clip(np.floor(attrs["refer_level"] + np.log2(np.sqrt(area) / attrs["refer_scale"] + 1e-6)), lo, hi)
    outs, order = [], []
    for k, lvl in enumerate(range(lo, hi + 1)):
        idx = np.nonzero(level == lvl)[0]
        outs.append(rois[idx])
        order.append(idx)
        ctx.set_lod(ctx.op.outputs["MultiFpnRois"][k], [lengths_to_offsets(np.bincount(images[idx],
                                                                                         minlength=len(offsets) - 1))])
    restore = np.argsort(np.concatenate(order), kind="mergesort").astype(np.int32).reshape(-1, 1)
    return {"MultiFpnRois": outs, "RestoreIndex": restore}
