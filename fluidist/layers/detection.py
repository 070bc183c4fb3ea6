"""``fluid.layers.detection``: Paddle 1.8's object-detection layers (anchors, box coding, NMS, the SSD /
YOLO / RPN heads and their losses). fluidist does not provide them: each name exists and raises
NotImplementedError saying what to do instead (``fluidist.compat.refused``)."""
from ..compat import refused

_BOXES = ("fluidist has no detection ops; compute it in NumPy on the fetched boxes and scores "
          "(or build it from layers.slice / elementwise ops)")
_HEAD = ("fluidist has no detection heads; fetch the network's feature maps and run the head's box "
         "decoding and NMS in NumPy, or train a detector with Paddle")

__all__ = ["prior_box", "density_prior_box", "multi_box_head", "bipartite_match", "target_assign",
           "detection_output", "ssd_loss", "rpn_target_assign", "retinanet_target_assign", "sigmoid_focal_loss",
           "anchor_generator", "roi_perspective_transform", "generate_proposal_labels", "generate_proposals",
           "generate_mask_labels", "iou_similarity", "box_coder", "polygon_box_transform", "yolov3_loss",
           "yolo_box", "box_clip", "multiclass_nms", "locality_aware_nms", "matrix_nms",
           "retinanet_detection_output", "distribute_fpn_proposals", "box_decoder_and_assign",
           "collect_fpn_proposals"]

_HEADS = {"multi_box_head", "detection_output", "ssd_loss", "rpn_target_assign", "retinanet_target_assign",
          "yolov3_loss", "yolo_box", "retinanet_detection_output", "generate_proposals",
          "generate_proposal_labels", "generate_mask_labels"}

for _name in __all__:
    globals()[_name] = refused("fluid.layers." + _name, _HEAD if _name in _HEADS else _BOXES)
sigmoid_focal_loss = refused("fluid.layers.sigmoid_focal_loss",
                             "write it from layers.sigmoid_cross_entropy_with_logits, layers.sigmoid and "
                             "elementwise ops (loss * alpha_t * (1 - p_t) ** gamma)")
detection_map = refused("fluid.layers.detection_map", "compute mAP in NumPy on the fetched detections")
