"""Which input slots of an op type are read for their shape only, never their values (Paddle's
``NoNeedBufferVarsInference``): ``elementwise_add_grad`` needs ``X`` and ``Y`` only to shape and
reduce ``Out@GRAD``. The facts, read from Paddle 1.8.5 (``core.infer_no_need_buffer_slots``), are
set on each type's registry entry as its ``no_need_buffer`` fact here, after every family is
registered; ``fluid.core.infer_no_need_buffer_slots`` answers from the entry.
"""
from ..framework import registry

_SHAPE_ONLY = {
    "argsort_grad": ("X",), "bicubic_interp_grad": ("X",), "bilinear_interp_grad": ("X",),
    "center_loss_grad": ("X",), "concat_grad": ("X",), "crop": ("Y",), "cvm": ("CVM",), "cvm_grad": ("X",),
    "elementwise_add_grad": ("X", "Y"), "elementwise_add_grad_grad": ("DOut", "Y"),
    "elementwise_sub_grad": ("X", "Y"), "elementwise_sub_grad_grad": ("DOut", "Y"), "expand_as_grad": ("X",),
    "expand_grad": ("X",), "fill_constant_batch_size_like": ("Input",), "fill_zeros_like2": ("X",),
    "flatten_grad": ("X",), "gather_grad": ("X",), "gather_nd_grad": ("X",),
    "gaussian_random_batch_size_like": ("Input",), "gru_grad": ("Bias", "Input"), "gru_unit_grad": ("Bias",),
    "hierarchical_sigmoid_grad": ("Bias",), "index_sample_grad": ("X",), "index_select_grad": ("X",),
    "kldiv_loss_grad": ("X",), "layer_norm_grad": ("Bias",), "linear_chain_crf_grad": ("Emission", "Transition"),
    "lod_reset_grad": ("X",), "lookup_table_grad": ("W",), "lookup_table_v2_grad": ("W",),
    "max_pool2d_with_index_grad": ("X",), "max_pool3d_with_index_grad": ("X",), "mean_grad": ("X",),
    "nce_grad": ("Bias",), "nearest_interp_grad": ("X",), "pad2d_grad": ("X",), "reduce_mean_grad": ("X",),
    "reduce_sum_grad": ("X",), "reshape2_grad_grad": ("DOut",), "roi_align_grad": ("X",), "roll_grad": ("X",),
    "scatter_grad": ("Updates",), "scatter_nd_add_grad": ("Updates",), "sequence_concat_grad": ("X",),
    "sequence_expand": ("Y",), "sequence_expand_as": ("Y",), "sequence_expand_as_grad": ("X", "Y"),
    "sequence_expand_grad": ("X", "Y"), "sequence_pad_grad": ("X",), "sequence_pool_grad": ("X",),
    "sequence_scatter_grad": ("Updates",), "sequence_slice_grad": ("X",), "sequence_softmax_grad": ("X",),
    "sequence_unpad_grad": ("X",), "slice_grad": ("Input",), "space_to_depth_grad": ("X",),
    "squared_l2_distance_grad": ("X", "Y"), "squeeze_grad": ("X",), "strided_slice_grad": ("Input",),
    "trace_grad": ("Input",), "trilinear_interp_grad": ("X",), "unfold_grad": ("X",),
    "uniform_random_batch_size_like": ("Input",), "unsqueeze_grad": ("X",), "warpctc_grad": ("Logits",),
    "where_grad": ("X", "Y")
}

for _type, _slots in _SHAPE_ONLY.items():
    registry.get(_type).no_need_buffer = _slots
