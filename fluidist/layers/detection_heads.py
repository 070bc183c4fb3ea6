"""The detection training heads and R-CNN proposal layers of ``fluid.layers.detection`` that fluidist
provides: ``yolov3_loss``, ``generate_proposals``, ``distribute_fpn_proposals``,
``collect_fpn_proposals`` and ``detection_map`` (``layers/detection.py`` re-exports them where
Paddle keeps them)."""
from __future__ import annotations

from typing import Sequence

from ..reader.data_feeder import check_type, check_variable_and_dtype
from ..framework.program import Variable
from ._build import multi_out_op as _op
from .layer_helper import LayerHelper

_FLOATS = ["float32", "float64"]

__all__ = ["yolov3_loss", "generate_proposals", "distribute_fpn_proposals", "collect_fpn_proposals"]


def yolov3_loss(x: Variable, gt_box: Variable, gt_label: Variable, anchors: Sequence[int], anchor_mask: Sequence[int],
                class_num: int, ignore_thresh: float, downsample_ratio: int, gt_score: Variable | None = None,
                use_label_smooth: bool = True, name: str | None = None, scale_x_y: float = 1.0) -> Variable:
    """YOLOv3's training loss of one head, per image.

    Args:
        x: the head's output ``[N, len(anchor_mask) * (5 + class_num), H, H]``.
        gt_box: ``[N, B, 4]`` ground truth boxes (centre x, centre y, width, height, normalised; zero
            boxes are padding).
        gt_label: ``[N, B]`` int32 classes.
        anchors: all anchors' ``(width, height)`` pairs, flattened.
        anchor_mask: the anchors this head predicts.
        class_num: the number of classes.
        ignore_thresh: the IoU above which a prediction takes no objectness loss.
        downsample_ratio: the input size over the grid's.
        gt_score: ``[N, B]`` the boxes' weights (mixup); None: ones.
        use_label_smooth: smooth the class labels.
        name: unused (Paddle's signature).
        scale_x_y: the centre's scale (YOLOv4's grid sensitivity).

    Returns:
        The loss ``[N]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 24, 5, 5], dtype="float32")
        >>> box = fluid.data(name="box", shape=[None, 3, 4], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 3], dtype="int32")
        >>> loss = fluid.layers.yolov3_loss(x, box, label, anchors=[10, 13, 16, 30, 33, 23], anchor_mask=[0, 1],
        ...                                 class_num=7, ignore_thresh=0.7, downsample_ratio=32)
    """
    for arg, value, kind in (("x", x, Variable), ("gt_box", gt_box, Variable), ("gt_label", gt_label, Variable),
                             ("gt_score", gt_score, (Variable, type(None))), ("anchors", anchors, (list, tuple)),
                             ("anchor_mask", anchor_mask, (list, tuple)), ("class_num", class_num, int),
                             ("ignore_thresh", ignore_thresh, float), ("use_label_smooth", use_label_smooth, bool)):
        check_type(value, arg, kind, "yolov3_loss")
    attrs = {"anchors": list(anchors), "anchor_mask": list(anchor_mask), "class_num": class_num,
             "ignore_thresh": ignore_thresh, "downsample_ratio": downsample_ratio,
             "use_label_smooth": use_label_smooth, "scale_x_y": scale_x_y}
    return _op("yolov3_loss", "yolov3_loss", {"X": x, "GTBox": gt_box, "GTLabel": gt_label, "GTScore": gt_score},
               {"Loss": x.dtype, "ObjectnessMask": "int32", "GTMatchMask": "int32"}, attrs, name)[0]


def generate_proposals(scores: Variable, bbox_deltas: Variable, im_info: Variable, anchors: Variable,
                       variances: Variable, pre_nms_top_n: int = 6000, post_nms_top_n: int = 1000,
                       nms_thresh: float = 0.5, min_size: float = 0.1, eta: float = 1.0, name: str | None = None,
                       return_rois_num: bool = False) -> tuple:
    """Faster R-CNN's RPN proposals: the best anchors decoded by the deltas, clipped, filtered by size
    and suppressed (NMS).

    Args:
        scores: ``[N, A, H, W]`` objectness.
        bbox_deltas: ``[N, 4A, H, W]`` box deltas.
        im_info: ``[N, 3]`` rows ``(height, width, scale)``.
        anchors: ``[H, W, A, 4]`` anchors (``anchor_generator``'s).
        variances: ``[H, W, A, 4]`` their variances.
        pre_nms_top_n: the anchors kept before NMS.
        post_nms_top_n: the proposals kept after it.
        nms_thresh: the NMS IoU threshold (0 or less: no NMS).
        min_size: the smallest side kept (at the original scale).
        eta: the threshold's decay (adaptive NMS).
        name: unused (Paddle's signature).
        return_rois_num: also return the number of proposals of each image.

    Returns:
        ``(rpn_rois [K, 4], rpn_roi_probs [K, 1])`` with one LoD sequence per image (and the counts with
        ``return_rois_num``).

    Examples:
        >>> s = fluid.data(name="s", shape=[None, 3, 4, 4], dtype="float32")
        >>> d = fluid.data(name="d", shape=[None, 12, 4, 4], dtype="float32")
        >>> info = fluid.data(name="info", shape=[None, 3], dtype="float32")
        >>> a = fluid.data(name="a", shape=[4, 4, 3, 4], dtype="float32")
        >>> v = fluid.data(name="v", shape=[4, 4, 3, 4], dtype="float32")
        >>> rois, probs = fluid.layers.generate_proposals(s, d, info, a, v)
    """
    for arg, value, dtypes in (("scores", scores, ["float32"]), ("bbox_deltas", bbox_deltas, ["float32"]),
                               ("im_info", im_info, _FLOATS), ("anchors", anchors, ["float32"]),
                               ("variances", variances, ["float32"])):
        check_variable_and_dtype(value, arg, dtypes, "generate_proposals")
    outs = _op("generate_proposals", "generate_proposals",
               {"Scores": scores, "BboxDeltas": bbox_deltas, "ImInfo": im_info, "Anchors": anchors,
                "Variances": variances},
               {"RpnRois": bbox_deltas.dtype, "RpnRoiProbs": scores.dtype, "RpnRoisLod": "int32"},
               {"pre_nms_topN": pre_nms_top_n, "post_nms_topN": post_nms_top_n, "nms_thresh": nms_thresh,
                "min_size": min_size, "eta": eta}, name, stop_gradient=True)
    return outs if return_rois_num else outs[:2]


def distribute_fpn_proposals(fpn_rois: Variable, min_level: int, max_level: int, refer_level: int,
                             refer_scale: int, name: str | None = None) -> tuple:
    """FPN: each proposal to the level its size calls for.

    Args:
        fpn_rois: ``[K, 4]`` proposals, one LoD sequence per image.
        min_level: the lowest level.
        max_level: the highest level.
        refer_level: the level of a proposal of side ``refer_scale``.
        refer_scale: that side.
        name: unused (Paddle's signature).

    Returns:
        ``(multi_rois, restore_ind)``: one Variable per level, and ``[K, 1]`` each proposal's position in
        their concatenation.

    Examples:
        >>> rois = fluid.data(name="rois", shape=[None, 4], dtype="float32", lod_level=1)
        >>> levels, restore = fluid.layers.distribute_fpn_proposals(rois, 2, 5, 4, 224)
    """
    helper = LayerHelper("distribute_fpn_proposals", name=name)
    multi = [helper.create_variable_for_type_inference(fpn_rois.dtype) for _ in range(max_level - min_level + 1)]
    restore = helper.create_variable_for_type_inference("int32")
    helper.append_op("distribute_fpn_proposals", inputs={"FpnRois": [fpn_rois]},
                     outputs={"MultiFpnRois": multi, "RestoreIndex": [restore]},
                     attrs={"min_level": min_level, "max_level": max_level, "refer_level": refer_level,
                            "refer_scale": refer_scale})
    return multi, restore


def collect_fpn_proposals(multi_rois: Sequence[Variable], multi_scores: Sequence[Variable], min_level: int,
                          max_level: int, post_nms_top_n: int, name: str | None = None) -> Variable:
    """FPN: the ``post_nms_top_n`` best proposals over the levels ``min_level`` to ``max_level``.

    Args:
        multi_rois: each level's proposals ``[K_l, 4]`` (LoD per image).
        multi_scores: their scores ``[K_l, 1]``.
        min_level: the lowest level.
        max_level: the highest level.
        post_nms_top_n: the proposals kept (over all images).
        name: unused (Paddle's signature).

    Returns:
        The proposals ``[K, 4]``, one LoD sequence per image.

    Examples:
        >>> rois = [fluid.data(name="r%d" % i, shape=[None, 4], dtype="float32", lod_level=1) for i in range(2)]
        >>> scores = [fluid.data(name="s%d" % i, shape=[None, 1], dtype="float32", lod_level=1) for i in range(2)]
        >>> best = fluid.layers.collect_fpn_proposals(rois, scores, 2, 3, post_nms_top_n=100)
    """
    levels = max_level - min_level + 1
    helper = LayerHelper("collect_fpn_proposals", name=name)
    out = helper.create_variable_for_type_inference(multi_rois[0].dtype)
    out.stop_gradient = True
    helper.append_op("collect_fpn_proposals", inputs={"MultiLevelRois": list(multi_rois[:levels]),
                                                      "MultiLevelScores": list(multi_scores[:levels])},
                     outputs={"FpnRois": [out]}, attrs={"post_nms_topN": post_nms_top_n})
    return out


def detection_map(detect_res: Variable, label: Variable, class_num: int | None, background_label: int = 0,
                  overlap_threshold: float = 0.3, evaluate_difficult: bool = True, has_state: Variable | None = None,
                  input_states: Sequence[Variable] | None = None, out_states: Sequence[Variable] | None = None,
                  ap_version: str = "integral") -> Variable:
    """The mean average precision of detections against the ground truth (``fluid.layers.detection``'s
    ``detection_map``; ``fluid.metrics.DetectionMAP`` accumulates it over batches).

    Args:
        detect_res: ``[K, 6]`` detections ``[label, score, x1, y1, x2, y2]``, one LoD sequence per image
            (``multiclass_nms``'s output).
        label: ``[G, 6]`` ground truth ``[label, difficult, x1, y1, x2, y2]`` (or ``[G, 5]`` without
            the difficult flag), one LoD sequence per image.
        class_num: the number of classes.
        background_label: unused by the op, as in Paddle 1.8 (the layer does not pass it on).
        overlap_threshold: the IoU above which a detection matches a ground truth box.
        evaluate_difficult: count difficult ground truth.
        has_state: ``[1]`` int32; nonzero: ``input_states`` hold the counts of earlier batches.
        input_states: the accumulated ``(pos_count, true_pos, false_pos)``.
        out_states: where the accumulated counts go (None: new Variables).
        ap_version: ``'integral'`` or ``'11point'``.

    Returns:
        The mAP ``[1]``.

    Examples:
        >>> det = fluid.data(name="det", shape=[None, 6], dtype="float32", lod_level=1)
        >>> gt = fluid.data(name="gt", shape=[None, 6], dtype="float32", lod_level=1)
        >>> m = fluid.layers.detection.detection_map(det, gt, class_num=3)
    """
    helper = LayerHelper("detection_map")
    states = list(out_states) if out_states is not None else [
        helper.create_variable_for_type_inference(dtype) for dtype in ("int32", "float32", "float32")]
    ins = list(input_states) if input_states is not None else [None, None, None]
    map_out = helper.create_variable_for_type_inference("float32")
    inputs = {"Label": label, "DetectRes": detect_res, "HasState": has_state, "PosCount": ins[0], "TruePos": ins[1],
              "FalsePos": ins[2]}
    helper.append_op("detection_map", inputs={k: [v] for k, v in inputs.items() if v is not None},
                     outputs={"MAP": [map_out], "AccumPosCount": [states[0]], "AccumTruePos": [states[1]],
                              "AccumFalsePos": [states[2]]},
                     attrs={"overlap_threshold": overlap_threshold, "evaluate_difficult": evaluate_difficult,
                            "ap_type": ap_version, "class_num": class_num})
    return map_out
