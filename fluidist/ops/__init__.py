"""Op families; importing this package registers every op type."""
from ..framework import registry  # noqa: F401  (fluidist.ops.registry: where op authors look)
from . import math, matmul, activation, tensor, random_init, optimizer_ops  # noqa: F401
from . import indexing, manipulation, rearrange, numeric, sampling, norm_act, sequence_decode  # noqa: F401
from . import dist_ops, io_ops  # noqa: F401
from . import conv, sync_batch_norm  # noqa: F401
from . import control_flow, tensor_array, recurrent, sequence, sequence_build, rnn, cudnn_lstm, beam_search  # noqa: F401
from . import nn, loss, metric  # noqa: F401
from . import norm, nn_misc, conv_nd, resize  # noqa: F401
from . import double_grad  # noqa: F401  (after the families whose gradient ops it differentiates)
from . import regression_loss, ranking_loss, crf, edit_distance, ctc, sampled_loss, py_func  # noqa: F401
from . import collective_ops  # noqa: F401
from . import rpc_ops  # noqa: F401
from . import reader_ops  # noqa: F401
from . import averaging_ops  # noqa: F401
from . import classic_ops, deformable_conv, detection_boxes, detection_loss, detection_map, detection_nms, detection_proposals, fused, fused_rnn, fused_sequence, pool_index, quantize, roi_ops, text_matching  # noqa: F401
from . import no_need_buffer  # noqa: F401  (facts set on the entries of every family above)
from . import refused_ops  # noqa: F401  (last: the refusals check against every registered op type)
