"""``fluid.layers.detection``: Paddle 1.8's object-detection layers over fluidist's detection ops (box
coding and clipping, IoU, prior boxes and anchors, YOLO box decoding, multi-class NMS, SSD matching,
focal loss; the YOLOv3 loss, RPN / FPN proposals and mAP are in ``detection_heads.py``). The heads
whose ops fluidist leaves out (``fluidist/ops/refused_ops.py``) exist and raise NotImplementedError
saying what to do instead (``fluidist.compat.refused``)."""
from __future__ import annotations

from typing import Sequence

from ..compat import refused
from ..reader.data_feeder import check_type, check_variable_and_dtype
from ..framework.program import Variable
from ._build import multi_out_op as _op

_FLOATS = ["float32", "float64"]
_HEAD = ("fluidist has no detection heads of this kind; fetch the network's feature maps and run the head's "
         "decoding in NumPy, or train the detector with Paddle")
_RCNN = ("fluidist has no two-stage (R-CNN) detector training or proposal ops; compute the targets / proposals in "
         "NumPy and feed them")

__all__ = ["prior_box", "density_prior_box", "multi_box_head", "bipartite_match", "target_assign",
           "detection_output", "ssd_loss", "rpn_target_assign", "retinanet_target_assign", "sigmoid_focal_loss",
           "anchor_generator", "roi_perspective_transform", "generate_proposal_labels", "generate_proposals",
           "generate_mask_labels", "iou_similarity", "box_coder", "polygon_box_transform", "yolov3_loss",
           "yolo_box", "box_clip", "multiclass_nms", "locality_aware_nms", "matrix_nms",
           "retinanet_detection_output", "distribute_fpn_proposals", "box_decoder_and_assign",
           "collect_fpn_proposals"]


def _float_list(value, arg, layer) -> list:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError("%s: %s must be numbers, got %r" % (layer, arg, value)) from None


def _steps(steps, layer, what="steps"):
    if not isinstance(steps, (list, tuple)) or len(steps) != 2:
        raise ValueError("%s: %s must be a list or tuple of two numbers (width, height), got %r" % (layer, what, steps))
    return [float(s) for s in steps]


# ------------------------------------------------------------------ prior boxes and anchors
def prior_box(input: Variable, image: Variable, min_sizes: float | Sequence[float],
              max_sizes: float | Sequence[float] | None = None, aspect_ratios: float | Sequence[float] = (1.0,),
              variance: Sequence[float] = (0.1, 0.1, 0.2, 0.2), flip: bool = False, clip: bool = False,
              steps: Sequence[float] = (0.0, 0.0), offset: float = 0.5, name: str | None = None,
              min_max_aspect_ratios_order: bool = False) -> tuple[Variable, Variable]:
    """SSD prior boxes for each cell of ``input``'s feature map, normalised by ``image``'s size.

    Returns:
        ``(boxes, variances)``, each ``[H, W, num_priors, 4]``.

    Args:
        input: the feature map ``[N, C, H, W]`` whose cells get priors.
        image: the input image ``[N, C, H_img, W_img]``; its size normalises the boxes.
        min_sizes: the prior sizes (a float or a list).
        max_sizes: with each min size, one more square box of side ``sqrt(min * max)``; None: none.
        aspect_ratios: the aspect ratios (1 is always used).
        variance: the four variances put beside each box.
        flip: also use the inverse of each aspect ratio.
        clip: clip the boxes to ``[0, 1]``.
        steps: the cell size ``(width, height)`` on the image; 0 derives it from the sizes.
        offset: the cell centre's offset within its cell.
        name: unused (Paddle's signature).
        min_max_aspect_ratios_order: order each min size's boxes min, max, then the other ratios.

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 8, 4, 4], dtype="float32")
        >>> img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
        >>> boxes, var = fluid.layers.prior_box(feat, img, min_sizes=[8.0], aspect_ratios=[2.0], flip=True)
    """
    check_variable_and_dtype(input, "input", ["uint8", "int8", "float32", "float64"], "prior_box")
    step_w, step_h = _steps(steps, "prior_box")
    attrs = {"min_sizes": _float_list(min_sizes, "min_sizes", "prior_box"),
             "aspect_ratios": _float_list(aspect_ratios, "aspect_ratios", "prior_box"),
             "variances": _float_list(variance, "variance", "prior_box"), "flip": flip, "clip": clip,
             "step_w": step_w, "step_h": step_h, "offset": offset,
             "min_max_aspect_ratios_order": min_max_aspect_ratios_order}
    if max_sizes is not None:
        sizes = _float_list(max_sizes, "max_sizes", "prior_box")
        if sizes and sizes[0] > 0:
            attrs["max_sizes"] = sizes
    return _op("prior_box", "prior_box", {"Input": input, "Image": image},
               {"Boxes": input.dtype, "Variances": input.dtype}, attrs, name, stop_gradient=True)


def density_prior_box(input: Variable, image: Variable, densities: Sequence[int] | None = None,
                      fixed_sizes: Sequence[float] | None = None, fixed_ratios: Sequence[float] | None = None,
                      variance: Sequence[float] = (0.1, 0.1, 0.2, 0.2), clip: bool = False,
                      steps: Sequence[float] = (0.0, 0.0), offset: float = 0.5, flatten_to_2d: bool = False,
                      name: str | None = None) -> tuple[Variable, Variable]:
    """Density prior boxes: ``density^2`` boxes of each fixed size and ratio spread over each cell.

    Returns:
        ``(boxes, variances)``, ``[H, W, num_priors, 4]`` (``[H * W * num_priors, 4]`` with
        ``flatten_to_2d``).

    Args:
        input: the feature map ``[N, C, H, W]``.
        image: the input image; its size normalises the boxes.
        densities: per fixed size, the number of boxes along each side of a cell.
        fixed_sizes: the box sizes.
        fixed_ratios: the aspect ratios used with every size.
        variance: the four variances put beside each box.
        clip: clip the boxes to ``[0, 1]``.
        steps: the cell size ``(width, height)`` on the image; 0 derives it from the sizes.
        offset: the cell centre's offset within its cell.
        flatten_to_2d: return ``[H * W * num_priors, 4]``.
        name: unused (Paddle's signature).

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 8, 4, 4], dtype="float32")
        >>> img = fluid.data(name="img", shape=[None, 3, 32, 32], dtype="float32")
        >>> boxes, var = fluid.layers.density_prior_box(feat, img, densities=[2], fixed_sizes=[8.0],
        ...                                             fixed_ratios=[1.0])
    """
    check_variable_and_dtype(input, "input", _FLOATS, "density_prior_box")
    for arg, value in (("densities", densities), ("fixed_sizes", fixed_sizes), ("fixed_ratios", fixed_ratios)):
        check_type(value, arg, (list, tuple), "density_prior_box")
    assert densities is not None and fixed_sizes is not None and fixed_ratios is not None   # checked above
    if len(densities) != len(fixed_sizes):
        raise ValueError("density_prior_box: densities and fixed_sizes must have the same length")
    step_w, step_h = _steps(steps, "density_prior_box")
    attrs = {"variances": _float_list(variance, "variance", "density_prior_box"), "clip": clip, "step_w": step_w,
             "step_h": step_h, "offset": offset, "densities": [int(d) for d in densities],
             "fixed_sizes": [float(s) for s in fixed_sizes], "fixed_ratios": [float(r) for r in fixed_ratios],
             "flatten_to_2d": flatten_to_2d}
    return _op("density_prior_box", "density_prior_box", {"Input": input, "Image": image},
               {"Boxes": input.dtype, "Variances": input.dtype}, attrs, name, stop_gradient=True)


def anchor_generator(input: Variable, anchor_sizes: float | Sequence[float] | None = None,
                     aspect_ratios: float | Sequence[float] | None = None,
                     variance: Sequence[float] = (0.1, 0.1, 0.2, 0.2), stride: Sequence[float] | None = None,
                     offset: float = 0.5, name: str | None = None) -> tuple[Variable, Variable]:
    """Faster R-CNN anchors in pixels for each cell of ``input``'s feature map.

    Returns:
        ``(anchors, variances)``, each ``[H, W, num_anchors, 4]``.

    Args:
        input: the feature map ``[N, C, H, W]``.
        anchor_sizes: the anchor sizes in pixels.
        aspect_ratios: the height / width ratios.
        variance: the four variances put beside each anchor.
        stride: the cell size ``(width, height)`` in pixels.
        offset: the cell centre's offset within its cell.
        name: unused (Paddle's signature).

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 8, 4, 4], dtype="float32")
        >>> anchors, var = fluid.layers.anchor_generator(feat, anchor_sizes=[64.0], aspect_ratios=[1.0],
        ...                                              stride=[16.0, 16.0])
    """
    stride_wh = _steps(stride, "anchor_generator", "stride")
    attrs = {"anchor_sizes": _float_list(anchor_sizes, "anchor_sizes", "anchor_generator"),
             "aspect_ratios": _float_list(aspect_ratios, "aspect_ratios", "anchor_generator"),
             "variances": _float_list(variance, "variance", "anchor_generator"), "stride": stride_wh,
             "offset": offset}
    return _op("anchor_generator", "anchor_generator", {"Input": input},
               {"Anchors": input.dtype, "Variances": input.dtype}, attrs, name, stop_gradient=True)


# ------------------------------------------------------------------ box arithmetic
def iou_similarity(x: Variable, y: Variable, box_normalized: bool = True, name: str | None = None) -> Variable:
    """``[N, M]``: the IoU of each box of ``x`` with each box of ``y``.

    Args:
        x: boxes ``[N, 4]`` (a LoD tensor keeps its LoD).
        y: boxes ``[M, 4]``.
        box_normalized: normalised boxes (else pixel boxes, whose width is ``x2 - x1 + 1``).
        name: unused (Paddle's signature).

    Returns:
        A Variable ``[N, M]``.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 4], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 4], dtype="float32")
        >>> iou = fluid.layers.iou_similarity(a, b)
    """
    return _op("iou_similarity", "iou_similarity", {"X": x, "Y": y}, {"Out": x.dtype},
               {"box_normalized": box_normalized}, name)[0]


def box_coder(prior_box: Variable, prior_box_var: Variable | list, target_box: Variable, code_type: str = "encode_center_size",
              box_normalized: bool = True, name: str | None = None, axis: int = 0) -> Variable:
    """Encode boxes against priors as centre / size offsets, or decode offsets back to boxes;
    ``prior_box_var`` is a Variable ``[M, 4]`` or a list of four variances.

    Args:
        prior_box: the priors ``[M, 4]``.
        prior_box_var: their variances: a Variable ``[M, 4]`` or a list of four numbers.
        target_box: boxes ``[N, 4]`` to encode, or offsets ``[N, M, 4]`` to decode.
        code_type: ``'encode_center_size'`` or ``'decode_center_size'``.
        box_normalized: normalised boxes (else pixel boxes).
        name: unused (Paddle's signature).
        axis: when decoding, the axis of ``target_box`` the priors run along (0 or 1).

    Returns:
        A Variable ``[N, M, 4]``.

    Examples:
        >>> priors = fluid.data(name="priors", shape=[10, 4], dtype="float32")
        >>> deltas = fluid.data(name="deltas", shape=[None, 10, 4], dtype="float32")
        >>> boxes = fluid.layers.box_coder(priors, [0.1, 0.1, 0.2, 0.2], deltas, code_type="decode_center_size")
    """
    inputs = {"PriorBox": prior_box, "TargetBox": target_box}
    attrs = {"code_type": code_type, "box_normalized": box_normalized, "axis": axis}
    if isinstance(prior_box_var, Variable):
        inputs["PriorBoxVar"] = prior_box_var
    elif isinstance(prior_box_var, list):
        attrs["variance"] = prior_box_var
    else:
        raise TypeError("box_coder: prior_box_var must be a Variable or a list, got %s" % type(prior_box_var).__name__)
    return _op("box_coder", "box_coder", inputs, {"OutputBox": prior_box.dtype}, attrs, name)[0]


def box_clip(input: Variable, im_info: Variable, name: str | None = None) -> Variable:
    """Boxes clipped to their image, ``im_info`` rows being ``(height, width, scale)``.

    Args:
        input: boxes ``[..., 4]`` with one LoD sequence per image.
        im_info: ``[N, 3]`` rows ``(height, width, scale)``.
        name: unused (Paddle's signature).

    Returns:
        The clipped boxes, of ``input``'s shape.

    Examples:
        >>> boxes = fluid.data(name="boxes", shape=[None, 8, 4], dtype="float32", lod_level=1)
        >>> info = fluid.data(name="info", shape=[None, 3], dtype="float32")
        >>> clipped = fluid.layers.box_clip(boxes, info)
    """
    check_variable_and_dtype(input, "input", _FLOATS, "box_clip")
    check_variable_and_dtype(im_info, "im_info", _FLOATS, "box_clip")
    return _op("box_clip", "box_clip", {"Input": input, "ImInfo": im_info}, {"Output": input.dtype}, {}, name)[0]


def box_decoder_and_assign(prior_box: Variable, prior_box_var: Variable, target_box: Variable, box_score: Variable,
                           box_clip: float, name: str | None = None) -> tuple[Variable, Variable]:
    """Per-class box deltas decoded against their ROIs, and each ROI's best non-background box.

    Returns:
        ``(decoded_box, output_assign_box)``.

    Args:
        prior_box: the ROIs ``[N, 4]``.
        prior_box_var: the four delta weights.
        target_box: the deltas ``[N, 4 * classes]``.
        box_score: the scores ``[N, classes]``.
        box_clip: the largest log-size delta.
        name: unused (Paddle's signature).

    Examples:
        >>> rois = fluid.data(name="rois", shape=[None, 4], dtype="float32", lod_level=1)
        >>> var = fluid.data(name="var", shape=[4], dtype="float32")
        >>> deltas = fluid.data(name="deltas", shape=[None, 8], dtype="float32", lod_level=1)
        >>> score = fluid.data(name="score", shape=[None, 2], dtype="float32", lod_level=1)
        >>> boxes, best = fluid.layers.box_decoder_and_assign(rois, var, deltas, score, box_clip=4.135)
    """
    return _op("box_decoder_and_assign", "box_decoder_and_assign",
               {"PriorBox": prior_box, "PriorBoxVar": prior_box_var, "TargetBox": target_box, "BoxScore": box_score},
               {"DecodeBox": prior_box.dtype, "OutputAssignBox": prior_box.dtype}, {"box_clip": box_clip}, name)


def polygon_box_transform(input: Variable, name: str | None = None) -> Variable:
    """EAST's geometry map turned into quadrilateral corner coordinates.

    Args:
        input: the geometry map ``[N, 2k, H, W]``.
        name: unused (Paddle's signature).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> geo = fluid.data(name="geo", shape=[None, 8, 16, 16], dtype="float32")
        >>> quads = fluid.layers.polygon_box_transform(geo)
    """
    check_variable_and_dtype(input, "input", _FLOATS, "polygon_box_transform")
    return _op("polygon_box_transform", "polygon_box_transform", {"Input": input}, {"Output": input.dtype}, {},
               name)[0]


def yolo_box(x: Variable, img_size: Variable, anchors: Sequence[int], class_num: int, conf_thresh: float,
             downsample_ratio: int, clip_bbox: bool = True, name: str | None = None,
             scale_x_y: float = 1.0) -> tuple[Variable, Variable]:
    """YOLOv3 head decoding into boxes (in ``img_size`` pixels) and class scores.

    Returns:
        ``(boxes [N, M, 4], scores [N, M, class_num])``.

    Args:
        x: the head's output ``[N, anchors * (5 + class_num), H, W]``.
        img_size: ``[N, 2]`` int32 image ``(height, width)``.
        anchors: the anchors' ``(width, height)`` pairs, flattened.
        class_num: the number of classes.
        conf_thresh: the objectness below which a cell gives no box.
        downsample_ratio: the input size over the grid's.
        clip_bbox: clip the boxes to the image.
        name: unused (Paddle's signature).
        scale_x_y: the centre's scale (YOLOv4's grid sensitivity).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 21, 13, 13], dtype="float32")
        >>> size = fluid.data(name="size", shape=[None, 2], dtype="int32")
        >>> boxes, scores = fluid.layers.yolo_box(x, size, anchors=[10, 13, 16, 30, 33, 23], class_num=2,
        ...                                       conf_thresh=0.01, downsample_ratio=32)
    """
    check_type(x, "x", Variable, "yolo_box")
    check_type(img_size, "img_size", Variable, "yolo_box")
    check_type(anchors, "anchors", (list, tuple), "yolo_box")
    check_type(class_num, "class_num", int, "yolo_box")
    check_type(conf_thresh, "conf_thresh", float, "yolo_box")
    attrs = {"anchors": list(anchors), "class_num": class_num, "conf_thresh": conf_thresh,
             "downsample_ratio": downsample_ratio, "clip_bbox": clip_bbox, "scale_x_y": scale_x_y}
    return _op("yolo_box", "yolo_box", {"X": x, "ImgSize": img_size}, {"Boxes": x.dtype, "Scores": x.dtype}, attrs,
               name)


# ------------------------------------------------------------------ NMS, matching, losses
def multiclass_nms(bboxes: Variable, scores: Variable, score_threshold: float, nms_top_k: int, keep_top_k: int,
                   nms_threshold: float = 0.3, normalized: bool = True, nms_eta: float = 1.0,
                   background_label: int = 0, name: str | None = None) -> Variable:
    """Per-class non-maximum suppression, then the ``keep_top_k`` best detections of each image:
    rows ``[label, score, xmin, ymin, xmax, ymax]`` with one LoD sequence per image.

    Args:
        bboxes: ``[N, M, 4]`` boxes shared by the classes, or ``[M, C, 4]`` per class (LoD).
        scores: ``[N, C, M]``, or ``[M, C]`` with LoD.
        score_threshold: the scores kept (above it).
        nms_top_k: the candidates per class (-1: all).
        keep_top_k: the detections per image (-1: all).
        nms_threshold: the IoU above which a box is suppressed.
        normalized: normalised boxes (else pixel boxes).
        nms_eta: the threshold's decay (adaptive NMS) while above 0.5.
        background_label: the class left out (-1: none).
        name: unused (Paddle's signature).

    Returns:
        A Variable ``[K, 6]`` (``[[-1]]`` when nothing is detected).

    Examples:
        >>> boxes = fluid.data(name="boxes", shape=[None, 81, 4], dtype="float32")
        >>> scores = fluid.data(name="scores", shape=[None, 3, 81], dtype="float32")
        >>> out = fluid.layers.multiclass_nms(boxes, scores, score_threshold=0.5, nms_top_k=400, keep_top_k=100)
    """
    check_variable_and_dtype(bboxes, "BBoxes", _FLOATS, "multiclass_nms")
    check_variable_and_dtype(scores, "Scores", _FLOATS, "multiclass_nms")
    for arg, value, kind in (("score_threshold", score_threshold, float), ("nms_top_k", nms_top_k, int),
                             ("keep_top_k", keep_top_k, int), ("nms_threshold", nms_threshold, float),
                             ("normalized", normalized, bool), ("nms_eta", nms_eta, float),
                             ("background_label", background_label, int)):
        check_type(value, arg, kind, "multiclass_nms")
    attrs = {"background_label": background_label, "score_threshold": score_threshold, "nms_top_k": nms_top_k,
             "nms_threshold": nms_threshold, "nms_eta": nms_eta, "keep_top_k": keep_top_k, "normalized": normalized}
    return _op("multiclass_nms", "multiclass_nms", {"BBoxes": bboxes, "Scores": scores}, {"Out": bboxes.dtype},
               attrs, name, stop_gradient=True)[0]


def locality_aware_nms(bboxes: Variable, scores: Variable, score_threshold: float, nms_top_k: int, keep_top_k: int,
                       nms_threshold: float = 0.3, normalized: bool = True, nms_eta: float = 1.0,
                       background_label: int = -1, name: str | None = None) -> Variable:
    """EAST's locality-aware NMS: consecutive overlapping boxes merged (weighted by their scores), then
    NMS, for one class.

    Args:
        bboxes: ``[N, M, 4]`` boxes (polygon boxes are not implemented in fluidist).
        scores: ``[N, 1, M]`` scores.
        score_threshold: the scores kept (above it).
        nms_top_k: the candidates kept before NMS (-1: all).
        keep_top_k: the detections per image (-1: all).
        nms_threshold: the IoU above which boxes merge, and NMS suppresses.
        normalized: normalised boxes (else pixel boxes).
        nms_eta: the NMS threshold's decay.
        background_label: the class left out (-1: none).
        name: unused (Paddle's signature).

    Returns:
        The detections ``[K, 6]`` with one LoD sequence per image (``[[-1]]`` when none).

    Examples:
        >>> boxes = fluid.data(name="boxes", shape=[None, 81, 4], dtype="float32")
        >>> scores = fluid.data(name="scores", shape=[None, 1, 81], dtype="float32")
        >>> out = fluid.layers.locality_aware_nms(boxes, scores, score_threshold=0.5, nms_top_k=400, keep_top_k=200)
    """
    check_variable_and_dtype(bboxes, "bboxes", _FLOATS, "locality_aware_nms")
    check_variable_and_dtype(scores, "scores", _FLOATS, "locality_aware_nms")
    for arg, value, kind in (("background_label", background_label, int), ("score_threshold", score_threshold, float),
                             ("nms_top_k", nms_top_k, int), ("nms_eta", nms_eta, float),
                             ("nms_threshold", nms_threshold, float), ("keep_top_k", keep_top_k, int),
                             ("normalized", normalized, bool)):
        check_type(value, arg, kind, "locality_aware_nms")
    if scores.shape is None or len(scores.shape) != 3 or scores.shape[1] != 1:
        raise ValueError("locality_aware_nms: scores must be [N, 1, M] (one class), got %s" % (scores.shape,))
    attrs = {"background_label": background_label, "score_threshold": score_threshold, "nms_top_k": nms_top_k,
             "nms_threshold": nms_threshold, "nms_eta": nms_eta, "keep_top_k": keep_top_k, "normalized": normalized}
    return _op("locality_aware_nms", "locality_aware_nms", {"BBoxes": bboxes, "Scores": scores},
               {"Out": bboxes.dtype}, attrs, name, stop_gradient=True)[0]


def detection_output(loc: Variable, scores: Variable, prior_box: Variable, prior_box_var: Variable,
                     background_label: int = 0, nms_threshold: float = 0.3, nms_top_k: int = 400,
                     keep_top_k: int = 200, score_threshold: float = 0.01, nms_eta: float = 1.0,
                     return_index: bool = False) -> Variable | tuple[Variable, Variable]:
    """SSD's output: ``loc`` decoded against the priors, ``scores`` soft-maxed, then multi-class NMS
    (with ``return_index``, also the index of each kept box).

    Args:
        loc: the location offsets ``[N, M, 4]``.
        scores: the class logits ``[N, M, C]``.
        prior_box: the priors ``[M, 4]``.
        prior_box_var: their variances ``[M, 4]``.
        background_label: the background class.
        nms_threshold: the IoU above which a box is suppressed.
        nms_top_k: the candidates per class.
        keep_top_k: the detections per image.
        score_threshold: the scores kept.
        nms_eta: the threshold's decay.
        return_index: also return the index of each kept box.

    Returns:
        The detections ``[K, 6]`` (and their indices with ``return_index``).

    Examples:
        >>> loc = fluid.data(name="loc", shape=[None, 10, 4], dtype="float32")
        >>> conf = fluid.data(name="conf", shape=[None, 10, 3], dtype="float32")
        >>> pb = fluid.data(name="pb", shape=[10, 4], dtype="float32")
        >>> pbv = fluid.data(name="pbv", shape=[10, 4], dtype="float32")
        >>> out = fluid.layers.detection_output(loc, conf, pb, pbv)
    """
    from .nn import softmax
    from .tensor import transpose
    decoded = box_coder(prior_box, prior_box_var, loc, code_type="decode_center_size")
    probs = transpose(softmax(scores), perm=[0, 2, 1])
    probs.stop_gradient = True
    attrs = {"background_label": 0, "nms_threshold": nms_threshold, "nms_top_k": nms_top_k,
             "keep_top_k": keep_top_k, "score_threshold": score_threshold, "nms_eta": 1.0}
    if return_index:
        return _op("detection_output", "multiclass_nms2", {"Scores": probs, "BBoxes": decoded},
                   {"Out": decoded.dtype, "Index": "int32"}, attrs, stop_gradient=True)
    return _op("detection_output", "multiclass_nms", {"Scores": probs, "BBoxes": decoded}, {"Out": decoded.dtype},
               attrs, stop_gradient=True)[0]


def bipartite_match(dist_matrix: Variable, match_type: str | None = None, dist_threshold: float | None = None,
                    name: str | None = None) -> tuple[Variable, Variable]:
    """Greedy bipartite matching of rows (ground truth) to columns (priors) by largest distance.

    Returns:
        ``(match_indices [N, M] int32, match_distance [N, M])``.

    Args:
        dist_matrix: ``[rows, M]`` distances, one LoD sequence per instance.
        match_type: ``'bipartite'`` or ``'per_prediction'`` (None: bipartite).
        dist_threshold: per_prediction's threshold (None: 0.5).
        name: unused (Paddle's signature).

    Examples:
        >>> dist = fluid.data(name="dist", shape=[None, 10], dtype="float32", lod_level=1)
        >>> idx, dist_out = fluid.layers.bipartite_match(dist)
    """
    return _op("bipartite_match", "bipartite_match", {"DistMat": dist_matrix},
               {"ColToRowMatchIndices": "int32", "ColToRowMatchDist": dist_matrix.dtype},
               {"match_type": match_type, "dist_threshold": dist_threshold}, name)


def target_assign(input: Variable, matched_indices: Variable, negative_indices: Variable | None = None,
                  mismatch_value: int | float | None = None, name: str | None = None) -> tuple[Variable, Variable]:
    """Each prior's target from its matched ground truth (``mismatch_value`` where unmatched), and
    its weight.

    Returns:
        ``(out [N, P, K], out_weight [N, P, 1])``.

    Args:
        input: the ground truth ``[G, P or 1, K]``, one LoD sequence per image.
        matched_indices: ``[N, P]`` the matched ground truth of each prior (-1: none).
        negative_indices: the negative priors (LoD per image), weighted 1 too.
        mismatch_value: the target of unmatched priors (None: 0).
        name: unused (Paddle's signature).

    Examples:
        >>> gt = fluid.data(name="gt", shape=[None, 10, 4], dtype="float32", lod_level=1)
        >>> match = fluid.data(name="match", shape=[None, 10], dtype="int32")
        >>> target, weight = fluid.layers.target_assign(gt, match, mismatch_value=0)
    """
    return _op("target_assign", "target_assign",
               {"X": input, "MatchIndices": matched_indices, "NegIndices": negative_indices},
               {"Out": input.dtype, "OutWeight": "float32"}, {"mismatch_value": mismatch_value}, name)


def sigmoid_focal_loss(x: Variable, label: Variable, fg_num: Variable, gamma: float = 2.0,
                       alpha: float = 0.25) -> Variable:
    """RetinaNet's focal loss per anchor and class (labels 1..C, 0 background, -1 ignored).

    Args:
        x: the logits ``[N, C]``.
        label: ``[N, 1]`` int32 labels.
        fg_num: ``[1]`` int32 number of foreground anchors.
        gamma: the focusing exponent.
        alpha: the positive class weight.

    Returns:
        A Variable ``[N, C]``.

    Examples:
        >>> logits = fluid.data(name="logits", shape=[None, 3], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int32")
        >>> fg = fluid.data(name="fg", shape=[1], dtype="int32")
        >>> loss = fluid.layers.sigmoid_focal_loss(logits, label, fg)
    """
    check_variable_and_dtype(x, "x", _FLOATS, "sigmoid_focal_loss")
    check_variable_and_dtype(label, "label", ["int32"], "sigmoid_focal_loss")
    check_variable_and_dtype(fg_num, "fg_num", ["int32"], "sigmoid_focal_loss")
    return _op("sigmoid_focal_loss", "sigmoid_focal_loss", {"X": x, "Label": label, "FgNum": fg_num},
               {"Out": x.dtype}, {"gamma": gamma, "alpha": alpha})[0]


multi_box_head = refused("fluid.layers.multi_box_head", _HEAD)
ssd_loss = refused("fluid.layers.ssd_loss", _HEAD)
retinanet_detection_output = refused("fluid.layers.retinanet_detection_output", _HEAD)
matrix_nms = refused("fluid.layers.matrix_nms", _HEAD)
rpn_target_assign = refused("fluid.layers.rpn_target_assign", _RCNN)
retinanet_target_assign = refused("fluid.layers.retinanet_target_assign", _RCNN)
roi_perspective_transform = refused("fluid.layers.roi_perspective_transform", _RCNN)
generate_proposal_labels = refused("fluid.layers.generate_proposal_labels", _RCNN)
generate_mask_labels = refused("fluid.layers.generate_mask_labels", _RCNN)
from .detection_heads import (collect_fpn_proposals, detection_map, distribute_fpn_proposals,  # noqa: E402,F401
                              generate_proposals, yolov3_loss)
