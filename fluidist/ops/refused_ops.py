"""The op types of Paddle 1.8 that fluidist leaves out on purpose: one table, each entry saying why
and what to use instead. The registry refuses them by name (``registry.refuse_op``): appending or
loading such an op raises NotImplementedError "op type 'X' is not implemented in fluidist: ...".

An op type is either registered (an op family of ``fluidist.ops``) or here, never both; implementing
one means deleting its entry.
"""
from ..framework import registry

_INT8 = ("an MKL-DNN int8 op that Paddle's inference quantisation passes (cpu_quantize_pass) write into an "
         "optimised program; fluidist runs float programs: load the program as save_inference_model wrote it, "
         "before those passes")
_PSLIB = ("an op of Paddle's PSLib / BoxPS parameter servers, which run as Baidu's closed services; fluidist's "
          "parameter servers are the DistributeTranspiler's: use layers.embedding(is_distributed=True) and "
          "fleet's transpiler mode")
_RCNN_TARGETS = ("a Faster R-CNN / RetinaNet training-target op (sampling anchors or proposals against the "
                 "ground truth); fluidist has no two-stage detector training: compute the targets in the data "
                 "pipeline with NumPy and feed them")
REFUSED_OPS = {
    # detection heads and training ops
    "deformable_psroi_pooling": ("deformable position-sensitive ROI pooling; use "
                                 "psroi_pool"),
    "matrix_nms": "Matrix NMS (SOLOv2); use multiclass_nms",
    "retinanet_detection_output": ("RetinaNet's multi-level decoding and NMS; "
                                   "decode each level with box_coder and run multiclass_nms on the concatenation"),
    "roi_perspective_transform": ("the perspective warp of quadrilateral ROIs; "
                                  "warp the regions in the data pipeline, or use roi_align on their bounding boxes"),
    "generate_proposal_labels": _RCNN_TARGETS,
    "generate_mask_labels": _RCNN_TARGETS,
    "rpn_target_assign": _RCNN_TARGETS,
    "retinanet_target_assign": _RCNN_TARGETS,
    # optimised inference programs
    "quantize": _INT8,
    "dequantize": _INT8,
    "requantize": _INT8,
    "lookup_table_dequant": ("an embedding lookup over an int8-quantised table that Paddle's embedding "
                             "quantisation writes; fluidist reads float tables: use lookup_table on the float "
                             "table"),
    # other runtimes
    "pull_sparse": _PSLIB,
    "pull_sparse_v2": _PSLIB,
    "pull_box_sparse": _PSLIB,
    "push_dense": _PSLIB,
    "fl_listen_and_serv": ("the server loop of Paddle's federated-learning mode; use listen_and_serv (the "
                           "DistributeTranspiler's pserver program)"),
    "dgc_momentum": ("Deep Gradient Compression's update (DGCMomentumOptimizer, which needs Paddle's CUDA dgc "
                     "library); use fluid.optimizer.Momentum"),
    "dgc_clip_by_norm": ("Deep Gradient Compression's gradient clipping; use "
                         "fluid.clip.GradientClipByNorm with fluid.optimizer.Momentum"),
    "run_program": ("the op dygraph-to-static writes to run a traced program from dygraph (not provided by "
                    "fluidist); run the static program itself"),
}

for _type, _reason in REFUSED_OPS.items():
    registry.refuse_op(_type, _reason)
