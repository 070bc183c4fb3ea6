"""Box arithmetic of Paddle's detection layers (``layers/detection.py``): ``iou_similarity``,
``box_coder``, ``box_clip``, ``box_decoder_and_assign``, ``yolo_box`` and the anchor generators
``prior_box``, ``density_prior_box`` and ``anchor_generator``. Boxes are ``[xmin, ymin, xmax, ymax]``;
"not normalised" boxes are pixel boxes whose width is ``xmax - xmin + 1``. None has a gradient
(as in Paddle), except ``box_coder``'s, which Paddle does not have either: none here.
"""
import math

import numpy as np

from ..framework.registry import register_op
from .lod_utils import seq_offsets
from .math import stable_sigmoid


def _pixel(normalized):
    """What a width adds for pixel boxes (1) or normalised ones (0)."""
    return 0.0 if normalized else 1.0


# ------------------------------------------------------------------ iou_similarity
def _iou_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is not None and ys is not None:
        ctx.set_output("Out", (xs[0], ys[0]), ctx.input_dtype("X"), ctx.input_lod_level("X"))


def iou_matrix(xp, a, b, normalized=True):
    """[N, M] intersection over union of boxes ``a`` [N, 4] and ``b`` [M, 4]."""
    one = _pixel(normalized)
    area_a = (a[:, 2] - a[:, 0] + one) * (a[:, 3] - a[:, 1] + one)
    area_b = (b[:, 2] - b[:, 0] + one) * (b[:, 3] - b[:, 1] + one)
    iw = xp.maximum(xp.minimum(a[:, None, 2], b[None, :, 2]) - xp.maximum(a[:, None, 0], b[None, :, 0]) + one, 0)
    ih = xp.maximum(xp.minimum(a[:, None, 3], b[None, :, 3]) - xp.maximum(a[:, None, 1], b[None, :, 1]) + one, 0)
    inter = iw * ih
    return inter / (area_a[:, None] + area_b[None, :] - inter)


@register_op("iou_similarity", inputs=["X", "Y"], outputs=["Out"], attrs={"box_normalized": True}, infer=_iou_infer,
             share_lod=("X", "Out"))
def iou_similarity(ctx, ins, attrs):
    """[N, M]: the IoU of each box of X [N, 4] with each box of Y [M, 4]."""
    x = ins["X"]
    return {"Out": iou_matrix(ctx.xp, x, ins["Y"], attrs["box_normalized"]).astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ box_coder
def _coder_infer(ctx):
    ps, ts = ctx.input_shape("PriorBox"), ctx.input_shape("TargetBox")
    if ps is None or ts is None:
        return
    encode = ctx.attr("code_type").lower() == "encode_center_size"
    shape = (ts[0], ps[0], 4) if encode else tuple(ts)
    ctx.set_output("OutputBox", shape, ctx.input_dtype("TargetBox"), ctx.input_lod_level("TargetBox"))


def _center_size(prior, one):
    w = prior[:, 2] - prior[:, 0] + one
    h = prior[:, 3] - prior[:, 1] + one
    return prior[:, 0] + 0.5 * w, prior[:, 1] + 0.5 * h, w, h


def _variances(xp, ins, attrs, dtype):
    """The [M, 4] PriorBoxVar, or the ``variance`` attr [4], or ones."""
    if ins.get("PriorBoxVar") is not None:
        return ins["PriorBoxVar"]
    if len(attrs["variance"]):
        return xp.asarray(np.asarray(attrs["variance"], dtype=dtype))
    return xp.ones((4,), dtype=dtype)


@register_op("box_coder", inputs=["PriorBox", "PriorBoxVar?", "TargetBox"], outputs=["OutputBox"],
             attrs={"code_type": "encode_center_size", "box_normalized": True, "axis": 0, "variance": []},
             infer=_coder_infer, share_lod=("TargetBox", "OutputBox"))
def box_coder(ctx, ins, attrs):
    """Encode: each target box [N, 4] against each prior [M, 4] as center / size offsets divided by
    the variances: [N, M, 4]. Decode: target offsets [N, M, 4] back to boxes, the prior of an
    offset being its column (``axis`` 0) or its row (``axis`` 1)."""
    xp = ctx.xp
    prior, target = ins["PriorBox"], ins["TargetBox"]
    one = _pixel(attrs["box_normalized"])
    var = _variances(xp, ins, attrs, target.dtype)
    px, py, pw, ph = _center_size(prior, one)
    kind = attrs["code_type"].lower()
    if kind == "encode_center_size":
        tx, ty = (target[:, 0] + target[:, 2]) / 2, (target[:, 1] + target[:, 3]) / 2
        tw, th = target[:, 2] - target[:, 0] + one, target[:, 3] - target[:, 1] + one
        v = var if var.ndim == 1 else var[None]
        out = xp.stack([(tx[:, None] - px[None]) / pw[None], (ty[:, None] - py[None]) / ph[None],
                        xp.log(xp.abs(tw[:, None] / pw[None])), xp.log(xp.abs(th[:, None] / ph[None]))], axis=-1) / v
        return {"OutputBox": out.astype(target.dtype, copy=False)}
    if kind != "decode_center_size":
        raise ValueError("op 'box_coder': code_type must be 'encode_center_size' or 'decode_center_size', got %r"
                         % (attrs["code_type"],))
    view = (1, -1) if attrs["axis"] == 0 else (-1, 1)
    px, py, pw, ph = (a.reshape(view) for a in (px, py, pw, ph))
    v = var if var.ndim == 1 else var.reshape(view + (4,))
    t = target * v
    cx, cy = t[..., 0] * pw + px, t[..., 1] * ph + py
    w, h = xp.exp(t[..., 2]) * pw, xp.exp(t[..., 3]) * ph
    out = xp.stack([cx - w / 2, cy - h / 2, cx + w / 2 - one, cy + h / 2 - one], axis=-1)
    return {"OutputBox": out.astype(target.dtype, copy=False)}


# ------------------------------------------------------------------ box_clip
@register_op("box_clip", inputs=["Input", "ImInfo"], outputs=["Output"], infer=lambda ctx: ctx.share("Output", "Input"),
             share_lod=("Input", "Output"), host_inputs=("ImInfo",))
def box_clip(ctx, ins, attrs):
    """Boxes of image i (its LoD sequence, or row block i without LoD) clipped to
    ``[0, round(w / scale) - 1] x [0, round(h / scale) - 1]`` of its ImInfo row ``(h, w, scale)``."""
    xp = ctx.xp
    boxes = ins["Input"]
    info = np.asarray(ins["ImInfo"], dtype=np.float64).reshape(-1, 3)
    offsets = seq_offsets(ctx, "Input", boxes) if ctx.lod("Input") else [0, boxes.shape[0]]
    if len(offsets) - 1 != info.shape[0]:
        raise ValueError("op 'box_clip': Input %r holds %d images but ImInfo %r has %d rows"
                         % (ctx.op.inputs["Input"][0], len(offsets) - 1, ctx.op.inputs["ImInfo"][0], info.shape[0]))
    out = boxes.copy()
    for i in range(len(offsets) - 1):
        h, w = np.round(info[i, 0] / info[i, 2]), np.round(info[i, 1] / info[i, 2])
        part = boxes[offsets[i]:offsets[i + 1]]
        limit = xp.asarray(np.array([w - 1, h - 1, w - 1, h - 1], dtype=boxes.dtype))
        out[offsets[i]:offsets[i + 1]] = xp.maximum(xp.minimum(part.reshape(part.shape[:-1] + (-1, 4)), limit),
                                                    0).reshape(part.shape)
    return {"Output": out}


# ------------------------------------------------------------------ box_decoder_and_assign
def _dec_assign_infer(ctx):
    ts, ss = ctx.input_shape("TargetBox"), ctx.input_shape("BoxScore")
    if ts is not None:
        ctx.set_output("DecodeBox", ts, ctx.input_dtype("TargetBox"), ctx.input_lod_level("TargetBox"))
        ctx.set_output("OutputAssignBox", (ts[0], 4), ctx.input_dtype("TargetBox"), ctx.input_lod_level("TargetBox"))


@register_op("box_decoder_and_assign", inputs=["PriorBox", "PriorBoxVar?", "TargetBox", "BoxScore"],
             outputs=["DecodeBox", "OutputAssignBox"], attrs={"box_clip": 4.135}, infer=_dec_assign_infer)
def box_decoder_and_assign(ctx, ins, attrs):
    """Each roi's per-class deltas [N, 4 * classes] decoded against the roi (pixel boxes, weights
    PriorBoxVar, log-size deltas clipped at ``box_clip``); OutputAssignBox is the box of the roi's best
    scoring class other than the background (class 0)."""
    xp = ctx.xp
    prior, deltas, score = ins["PriorBox"], ins["TargetBox"], ins["BoxScore"]
    var = ins.get("PriorBoxVar")
    wx, wy, ww, wh = (xp.asarray([1.0] * 4) if var is None else var.reshape(-1)[:4].astype(deltas.dtype))
    px, py, pw, ph = (a[:, None] for a in _center_size(prior.astype(deltas.dtype), 1.0))
    dx, dy = deltas[:, 0::4] * wx, deltas[:, 1::4] * wy
    dw, dh = xp.minimum(deltas[:, 2::4] * ww, attrs["box_clip"]), xp.minimum(deltas[:, 3::4] * wh, attrs["box_clip"])
    cx, cy, w, h = dx * pw + px, dy * ph + py, xp.exp(dw) * pw, xp.exp(dh) * ph
    boxes = xp.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w - 1, cy + 0.5 * h - 1], axis=-1)
    decoded = boxes.reshape(deltas.shape).astype(deltas.dtype, copy=False)
    if score.shape[1] > 1:
        best = 1 + xp.argmax(score[:, 1:], axis=1)
        assigned = boxes[xp.arange(boxes.shape[0]), best]
    else:
        assigned = prior
    for slot in ("DecodeBox", "OutputAssignBox"):
        ctx.set_lod(slot, ctx.lod("TargetBox"))
    return {"DecodeBox": decoded, "OutputAssignBox": assigned.astype(deltas.dtype, copy=False)}


# ------------------------------------------------------------------ yolo_box
def _yolo_box_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    anchors = len(ctx.attr("anchors")) // 2
    n = -1 if xs[2] < 0 or xs[3] < 0 else anchors * xs[2] * xs[3]
    ctx.set_output("Boxes", (xs[0], n, 4), ctx.input_dtype("X"))
    ctx.set_output("Scores", (xs[0], n, ctx.attr("class_num")), ctx.input_dtype("X"))


_YOLO_BOX_ATTRS = {"class_num": 0, "anchors": [], "downsample_ratio": 32, "conf_thresh": 0.01, "clip_bbox": True,
                   "scale_x_y": 1.0}


@register_op("yolo_box", inputs=["X", "ImgSize"], outputs=["Boxes", "Scores"], attrs=_YOLO_BOX_ATTRS,
             infer=_yolo_box_infer)
def yolo_box(ctx, ins, attrs):
    """YOLOv3 head decoding: X [N, anchors * (5 + classes), H, W] to boxes in ImgSize's (h, w) pixels
    [N, anchors * H * W, 4] and class scores ``sigmoid(class) * objectness`` [N, ..., classes]; cells
    whose objectness is under ``conf_thresh`` give zero boxes and scores. As Paddle 1.8's kernel, the
    grid's width is taken to be its height (x centres are divided by H)."""
    xp = ctx.xp
    x = ins["X"]
    img = ins["ImgSize"].astype(x.dtype)
    n, _, h, w = x.shape
    anchors = np.asarray(attrs["anchors"], dtype=np.float64).reshape(-1, 2)
    na, classes = anchors.shape[0], int(attrs["class_num"])
    if x.shape[1] != na * (5 + classes):
        raise ValueError("op 'yolo_box': X %r has %d channels, not anchors (%d) x (5 + class_num %d)"
                         % (ctx.op.inputs["X"][0], x.shape[1], na, classes))
    p = x.reshape(n, na, 5 + classes, h, w)
    scale, bias = attrs["scale_x_y"], -0.5 * (attrs["scale_x_y"] - 1)
    gx, gy = xp.arange(w, dtype=x.dtype)[None, None, None, :], xp.arange(h, dtype=x.dtype)[None, None, :, None]
    size = attrs["downsample_ratio"] * h
    cx = (gx + stable_sigmoid(xp, p[:, :, 0]) * scale + bias) / h     # Paddle divides by the height here too
    cy = (gy + stable_sigmoid(xp, p[:, :, 1]) * scale + bias) / h
    bw = xp.exp(p[:, :, 2]) * xp.asarray((anchors[:, 0] / size).astype(x.dtype))[None, :, None, None]
    bh = xp.exp(p[:, :, 3]) * xp.asarray((anchors[:, 1] / size).astype(x.dtype))[None, :, None, None]
    conf = stable_sigmoid(xp, p[:, :, 4])
    keep = conf >= attrs["conf_thresh"]
    conf = xp.where(keep, conf, 0)
    img_h, img_w = img[:, 0].reshape(n, 1, 1, 1), img[:, 1].reshape(n, 1, 1, 1)
    boxes = xp.stack([(cx - bw / 2) * img_w, (cy - bh / 2) * img_h, (cx + bw / 2) * img_w, (cy + bh / 2) * img_h],
                     axis=-1)
    if attrs["clip_bbox"]:
        boxes = xp.stack([xp.maximum(boxes[..., 0], 0), xp.maximum(boxes[..., 1], 0),
                          xp.minimum(boxes[..., 2], img_w - 1), xp.minimum(boxes[..., 3], img_h - 1)], axis=-1)
    boxes = xp.where(keep[..., None], boxes, 0)
    scores = stable_sigmoid(xp, p[:, :, 5:]) * conf[:, :, None]
    return {"Boxes": boxes.reshape(n, -1, 4).astype(x.dtype, copy=False),
            "Scores": scores.transpose(0, 1, 3, 4, 2).reshape(n, -1, classes).astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ prior_box / density_prior_box / anchor_generator
def _expanded_ratios(ratios, flip):
    """1, then each aspect ratio not yet listed (and its inverse with ``flip``)."""
    out = [1.0]
    for r in ratios:
        if any(abs(r - o) < 1e-6 for o in out):
            continue
        out.append(float(r))
        if flip:
            out.append(1.0 / float(r))
    return out


def _prior_sizes(attrs):
    """The (half width, half height) of each prior of a cell, in Paddle's order."""
    ratios = _expanded_ratios(attrs["aspect_ratios"], attrs["flip"])
    maxes = list(attrs["max_sizes"])
    sizes = []
    for s, m in enumerate(attrs["min_sizes"]):
        by_ratio = [(m * math.sqrt(r) / 2, m / math.sqrt(r) / 2) for r in ratios]
        big = [(math.sqrt(m * maxes[s]) / 2,) * 2] if maxes else []
        if attrs["min_max_aspect_ratios_order"]:
            sizes += by_ratio[:1] + big + [hw for r, hw in zip(ratios, by_ratio) if abs(r - 1.0) >= 1e-6]
        else:
            sizes += by_ratio + big
    return sizes


def _grid_boxes(layer_hw, image_hw, steps, offset, half_sizes, centre_shift=None):
    """[H, W, P, 4] boxes ``centre -+ half size`` over the normalised image, the cell centres at
    ``(index + offset) * step`` (plus each prior's ``centre_shift``)."""
    (lh, lw), (ih, iw), (sh, sw) = layer_hw, image_hw, steps
    cx = ((np.arange(lw) + offset) * sw)[None, :, None]
    cy = ((np.arange(lh) + offset) * sh)[:, None, None]
    hw = np.asarray(half_sizes, dtype=np.float64).reshape(-1, 2)
    shift = np.zeros_like(hw) if centre_shift is None else np.asarray(centre_shift, dtype=np.float64)
    cx, cy = cx + shift[None, None, :, 0], cy + shift[None, None, :, 1]
    return np.stack(np.broadcast_arrays((cx - hw[:, 0]) / iw, (cy - hw[:, 1]) / ih, (cx + hw[:, 0]) / iw,
                                        (cy + hw[:, 1]) / ih), axis=-1)


def _steps(ins, attrs):
    (ih, iw), (lh, lw) = ins["Image"].shape[2:], ins["Input"].shape[2:]
    return (lh, lw), (ih, iw), (attrs["step_h"] or ih / lh, attrs["step_w"] or iw / lw)


def _prior_infer(count):
    def infer(ctx):
        xs = ctx.input_shape("Input")
        if xs is None:
            return
        shape = (xs[2], xs[3], count(ctx.op.attrs), 4)
        if ctx.attr("flatten_to_2d"):
            shape = (-1 if xs[2] < 0 or xs[3] < 0 else xs[2] * xs[3] * shape[2], 4)
        ctx.set_output("Boxes", shape, ctx.input_dtype("Input"))
        ctx.set_output("Variances", shape, ctx.input_dtype("Input"))
    return infer


def _boxes_and_variances(xp, boxes, attrs, dtype):
    if attrs["clip"]:
        boxes = np.clip(boxes, 0.0, 1.0)
    var = np.broadcast_to(np.asarray(attrs["variances"], dtype=np.float64), boxes.shape)
    if attrs.get("flatten_to_2d"):
        boxes, var = boxes.reshape(-1, 4), var.reshape(-1, 4)
    return {"Boxes": xp.asarray(boxes.astype(dtype)), "Variances": xp.asarray(np.ascontiguousarray(var).astype(dtype))}


_PRIOR_ATTRS = {"min_sizes": [], "max_sizes": [], "aspect_ratios": [], "variances": [], "flip": False, "clip": True,
                "step_w": 0.0, "step_h": 0.0, "offset": 0.5, "min_max_aspect_ratios_order": False,
                "use_mkldnn": False, "use_quantizer": False}


@register_op("prior_box", inputs=["Input", "Image"], outputs=["Boxes", "Variances"], attrs=_PRIOR_ATTRS,
             infer=_prior_infer(lambda a: len(_prior_sizes(dict(a, flatten_to_2d=False)))))
def prior_box(ctx, ins, attrs):
    """SSD prior boxes for each cell of Input's feature map, normalised by Image's size: per min size,
    one box per (expanded) aspect ratio and one of size ``sqrt(min * max)``: [H, W, priors, 4], and
    the variances beside them."""
    boxes = _grid_boxes(*_steps(ins, attrs), attrs["offset"], _prior_sizes(attrs))
    return _boxes_and_variances(ctx.xp, boxes, dict(attrs, flatten_to_2d=False), ins["Input"].dtype)


def _density_boxes(attrs, step_w, step_h):
    """(half sizes, centre shifts) of a cell's density priors."""
    average = int((step_w + step_h) * 0.5)
    halves, shifts = [], []
    for density, size in zip(attrs["densities"], attrs["fixed_sizes"]):
        shift = int(average / density)
        for r in attrs["fixed_ratios"]:
            for di in range(density):
                for dj in range(density):
                    halves.append((size * math.sqrt(r) / 2, size / math.sqrt(r) / 2))
                    shifts.append((-average / 2.0 + shift / 2.0 + dj * shift, -average / 2.0 + shift / 2.0 + di * shift))
    return halves, shifts


_DENSITY_ATTRS = {"variances": [], "clip": True, "flatten_to_2d": False, "step_w": 0.0, "step_h": 0.0, "offset": 0.5,
                  "fixed_sizes": [], "fixed_ratios": [], "densities": []}


@register_op("density_prior_box", inputs=["Input", "Image"], outputs=["Boxes", "Variances"], attrs=_DENSITY_ATTRS,
             infer=_prior_infer(lambda a: sum(len(a["fixed_ratios"]) * d * d for d in a["densities"])))
def density_prior_box(ctx, ins, attrs):
    """Density prior boxes: for each (density, fixed size) and fixed ratio, ``density^2`` boxes spread
    over each cell, each clipped to the image; [H, W, priors, 4] (or [H * W * priors, 4] with
    ``flatten_to_2d``) and the variances beside them."""
    layer, image, (sh, sw) = _steps(ins, attrs)
    halves, shifts = _density_boxes(attrs, sw, sh)
    boxes = _grid_boxes(layer, image, (sh, sw), attrs["offset"], halves, shifts)
    boxes[..., :2], boxes[..., 2:] = np.maximum(boxes[..., :2], 0), np.minimum(boxes[..., 2:], 1)
    return _boxes_and_variances(ctx.xp, boxes, attrs, ins["Input"].dtype)


def _anchor_infer(ctx):
    xs = ctx.input_shape("Input")
    if xs is not None:
        count = len(ctx.attr("anchor_sizes")) * len(ctx.attr("aspect_ratios"))
        ctx.set_output("Anchors", (xs[2], xs[3], count, 4), ctx.input_dtype("Input"))
        ctx.set_output("Variances", (xs[2], xs[3], count, 4), ctx.input_dtype("Input"))


@register_op("anchor_generator", inputs=["Input"], outputs=["Anchors", "Variances"],
             attrs={"anchor_sizes": [], "aspect_ratios": [], "variances": [0.1, 0.1, 0.2, 0.2], "stride": [16.0, 16.0],
                    "offset": 0.5}, infer=_anchor_infer)
def anchor_generator(ctx, ins, attrs):
    """Faster R-CNN anchors in pixels for each cell of Input's feature map: per aspect ratio and
    anchor size, a box of ``size / stride * round(sqrt(stride area / ratio))`` (and that times the
    ratio high) around ``index * stride + offset * (stride - 1)``: [H, W, anchors, 4]."""
    h, w = ins["Input"].shape[2:]
    sw, sh = attrs["stride"][0], attrs["stride"][1]
    halves = []
    for r in attrs["aspect_ratios"]:
        base_w = np.round(np.sqrt(sw * sh / r))
        base_h = np.round(base_w * r)
        for size in attrs["anchor_sizes"]:
            halves.append((0.5 * (size / sw * base_w - 1), 0.5 * (size / sh * base_h - 1)))
    cx = (np.arange(w) * sw + attrs["offset"] * (sw - 1))[None, :, None]
    cy = (np.arange(h) * sh + attrs["offset"] * (sh - 1))[:, None, None]
    hw = np.asarray(halves).reshape(-1, 2)
    anchors = np.stack(np.broadcast_arrays(cx - hw[:, 0], cy - hw[:, 1], cx + hw[:, 0], cy + hw[:, 1]), axis=-1)
    var = np.broadcast_to(np.asarray(attrs["variances"], dtype=np.float64), anchors.shape)
    dtype = ins["Input"].dtype
    return {"Anchors": ctx.xp.asarray(anchors.astype(dtype)), "Variances": ctx.xp.asarray(np.ascontiguousarray(var).astype(dtype))}


@register_op("polygon_box_transform", inputs=["Input"], outputs=["Output"],
             infer=lambda ctx: ctx.share("Output", "Input"))
def polygon_box_transform(ctx, ins, attrs):
    """EAST's geometry map to quadrilateral corners: channel 2k holds ``4 * column - value``, channel
    2k + 1 ``4 * row - value``."""
    xp = ctx.xp
    x = ins["Input"]
    n, c, h, w = x.shape
    cols = xp.broadcast_to(xp.arange(w, dtype=x.dtype)[None, :], (h, w))
    rows = xp.broadcast_to(xp.arange(h, dtype=x.dtype)[:, None], (h, w))
    grid = xp.stack([cols, rows] * (c // 2))
    return {"Output": (4 * grid[None] - x).astype(x.dtype, copy=False)}
