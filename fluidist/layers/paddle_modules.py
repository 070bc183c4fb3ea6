"""Where Paddle 1.8 keeps each layer: the ``__all__`` of its ``fluid.layers`` modules.

fluidist groups its layers by what they compute (``conv.py``, ``norm.py``, ``manipulation.py``, ...);
scripts import them from Paddle's modules (``from paddle.fluid.layers.nn import conv2d``). After every
layer module has loaded, :func:`place_names` puts each name into the fluidist module of Paddle's name
(``fluidist.layers.nn.conv2d is fluidist.layers.conv2d``) and extends that module's ``__all__``, so
both paths and ``from ... import *`` give Paddle's set. ``tests/compat/fluid18_modules.txt`` (made from
Paddle itself) checks this table.
"""

PADDLE_LAYER_MODULES = {
    "nn": """log1p logsumexp clamp addmm addcmul bmm nonzero index_select dist dot t cross interpolate diag_embed
        meshgrid fc embedding linear_chain_crf crf_decoding cos_sim chunk_eval conv2d conv3d softmax pool2d
        pool3d adaptive_pool2d adaptive_pool3d batch_norm inplace_abn instance_norm data_norm
        conv2d_transpose conv3d_transpose reduce_sum reduce_mean reduce_max reduce_min reduce_prod
        reduce_all reduce_any dropout split ctc_greedy_decoder l2_normalize matmul topk transpose
        im2sequence row_conv multiplex layer_norm group_norm spectral_norm smooth_l1 one_hot
        autoincreased_step_counter reshape squeeze unsqueeze lod_reset lod_append lrn pad pad_constant_like
        label_smooth roi_pool roi_align dice_loss image_resize image_resize_short resize_bilinear
        resize_trilinear resize_nearest gather gather_nd scatter scatter_nd_add scatter_nd random_crop
        mean_iou relu selu log crop crop_tensor elu relu6 pow stanh hard_sigmoid swish prelu brelu
        leaky_relu soft_relu flatten stack pad2d unstack unique unique_with_counts expand expand_as scale
        elementwise_add elementwise_div elementwise_sub elementwise_mul elementwise_max elementwise_min
        elementwise_pow elementwise_mod elementwise_floordiv uniform_random_batch_size_like gaussian_random
        sampling_id gaussian_random_batch_size_like sum slice strided_slice shape rank size logical_and
        logical_or logical_xor logical_not clip clip_by_norm mean mul bmm maxout space_to_depth affine_grid
        affine_channel similarity_focus hash grid_sampler log_loss add_position_encoding
        bilinear_tensor_product merge_selected_rows get_tensor_from_selected_rows shuffle_channel
        temporal_shift py_func psroi_pool prroi_pool pixel_shuffle fsp_matrix continuous_value_model where
        sign deformable_conv unfold deformable_roi_pooling filter_by_instag shard_index hard_swish mish
        gather_tree uniform_random randint randn randperm allclose elementwise_equal flip roll log_softmax
        index_sample""".split(),
    "tensor": """create_tensor create_parameter create_global_var cast tensor_array_to_tensor concat sums assign
        fill_constant_batch_size_like fill_constant argmin argmax argsort ones zeros reverse has_inf has_nan
        isfinite range linspace full_like zeros_like ones_like diag eye kron arange full tril triu trace""".split(),
    "control_flow": """While Switch increment array_write create_array less_than less_equal greater_than greater_equal
        equal not_equal array_read array_length cond IfElse DynamicRNN StaticRNN reorder_lod_tensor_by_rank
        Print is_empty case switch_case while_loop""".split(),
    "io": """data read_file double_buffer py_reader create_py_reader_by_data load""".split(),
    "loss": """center_loss bpr_loss cross_entropy square_error_cost edit_distance warpctc nce hsigmoid
        sampled_softmax_with_cross_entropy softmax_with_cross_entropy rank_loss margin_rank_loss
        sigmoid_cross_entropy_with_logits teacher_student_sigmoid_loss huber_loss kldiv_loss npair_loss
        mse_loss""".split(),
    "ops": """sigmoid logsigmoid exp tanh atan tanh_shrink sqrt rsqrt abs ceil floor cos acos asin sin round
        reciprocal square softplus softsign softshrink hard_shrink cumsum thresholded_relu gelu erf""".split(),
    "sequence_lod": """sequence_conv sequence_softmax sequence_pool sequence_concat sequence_first_step sequence_last_step
        sequence_slice sequence_expand sequence_expand_as sequence_pad sequence_unpad sequence_reshape
        sequence_scatter sequence_enumerate sequence_mask sequence_reverse""".split(),
    "learning_rate_scheduler": """exponential_decay natural_exp_decay inverse_time_decay polynomial_decay piecewise_decay noam_decay
        cosine_decay linear_lr_warmup""".split(),
    "metric_op": """accuracy auc""".split(),
    "rnn": """RNNCell GRUCell LSTMCell Decoder BeamSearchDecoder rnn dynamic_decode DecodeHelper TrainingHelper
        GreedyEmbeddingHelper SampleEmbeddingHelper BasicDecoder dynamic_lstm dynamic_lstmp dynamic_gru
        gru_unit lstm_unit lstm beam_search beam_search_decode""".split(),
}


def place_names(layers_namespace):
    """Give each module of PADDLE_LAYER_MODULES the names Paddle has there, from ``fluidist.layers``."""
    import sys
    from .paddle_extras import EXTRAS
    for module_name, objects in EXTRAS.items():
        module = sys.modules["fluidist.layers." + module_name]
        for name, obj in objects.items():
            if not hasattr(module, name):
                setattr(module, name, obj)
    for module_name, names in PADDLE_LAYER_MODULES.items():
        module = sys.modules["fluidist.layers." + module_name]
        for name in names:
            if not hasattr(module, name):
                setattr(module, name, layers_namespace[name])
        known = list(getattr(module, "__all__", []))
        module.__all__ = known + [n for n in names if n not in known]
