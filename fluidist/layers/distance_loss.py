"""Regression, distance and ranking losses of fluid 1.8 (``layers.loss`` and ``layers.nn``):
smooth_l1, huber_loss, kldiv_loss, mse_loss, center_loss, dice_loss, rank_loss, margin_rank_loss,
bpr_loss, npair_loss, teacher_student_sigmoid_loss."""
from ..framework.program import Variable
from ..initializer import Constant
from . import nn
from .control_flow import equal
from .layer_helper import LayerHelper, check_variable
from .loss import softmax_with_cross_entropy, square_error_cost
from .indexing import one_hot
from .manipulation import expand
from .tensor import cast, reshape, transpose

__all__ = ["smooth_l1", "huber_loss", "kldiv_loss", "mse_loss", "center_loss", "dice_loss", "rank_loss",
           "margin_rank_loss", "bpr_loss", "npair_loss", "teacher_student_sigmoid_loss"]


def _check(x, layer, arg, dtypes=("float32", "float64")):
    check_variable(x, layer, arg, dtypes)


def smooth_l1(x, y, inside_weight=None, outside_weight=None, sigma=None):
    """Smooth L1 of ``(x - y) * inside_weight`` (times ``outside_weight``), summed per sample: [N, 1]."""
    _check(x, "smooth_l1", "x")
    _check(y, "smooth_l1", "y")
    helper = LayerHelper("smooth_l1_loss")
    diff = helper.create_variable_for_type_inference(x.dtype)
    loss = helper.create_variable_for_type_inference(x.dtype)
    inputs = {"X": [x], "Y": [y]}
    if inside_weight is not None:
        inputs["InsideWeight"] = [inside_weight]
    if outside_weight is not None:
        inputs["OutsideWeight"] = [outside_weight]
    helper.append_op("smooth_l1_loss", inputs=inputs, outputs={"Diff": [diff], "Out": [loss]},
                     attrs={"sigma": float(sigma) if sigma is not None else 1.0})
    return loss


def huber_loss(input, label, delta):
    """Huber loss of ``label - input`` elementwise (quadratic within ``delta``, linear beyond)."""
    _check(input, "huber_loss", "input")
    _check(label, "huber_loss", "label")
    helper = LayerHelper("huber_loss")
    residual = helper.create_variable_for_type_inference(input.dtype)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("huber_loss", inputs={"X": [input], "Y": [label]}, outputs={"Out": [out], "Residual": [residual]},
                     attrs={"delta": float(delta)})
    return out


def kldiv_loss(x, target, reduction="mean", name=None):
    """Kullback-Leibler divergence of ``target`` from log-probabilities ``x``; ``reduction`` is none,
    batchmean, mean or sum."""
    _check(x, "kldiv_loss", "x")
    _check(target, "kldiv_loss", "target")
    if reduction not in ("none", "batchmean", "mean", "sum"):
        raise ValueError("kldiv_loss: reduction must be 'none', 'batchmean', 'mean' or 'sum', got %r" % (reduction,))
    helper = LayerHelper("kldiv_loss", name=name)
    loss = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("kldiv_loss", inputs={"X": [x], "Target": [target]}, outputs={"Loss": [loss]},
                     attrs={"reduction": reduction})
    return loss


def mse_loss(input, label):
    """Mean of ``(input - label)^2`` (``reduce_mean`` of ``square_error_cost``)."""
    _check(input, "mse_loss", "input")
    _check(label, "mse_loss", "label")
    return nn.reduce_mean(square_error_cost(input, label))


def center_loss(input, label, num_classes, alpha, param_attr, update_center=True):
    """``0.5 * |input - centers[label]|^2`` per sample; the centres ([num_classes, D], a non-trainable
    parameter from ``param_attr``) move toward their samples by ``alpha`` each step when
    ``update_center``. ``alpha`` is a float or a [1] Variable."""
    _check(input, "center_loss", "input")
    _check(label, "center_loss", "label", ("int32", "int64"))
    helper = LayerHelper("center_loss", input=input, param_attr=param_attr)
    dtype = helper.input_dtype()
    centers = helper.create_parameter(attr=param_attr, shape=[num_classes, input.shape[1]], dtype=dtype)
    centers.stop_gradient = True
    if isinstance(alpha, Variable):
        rate = alpha
    else:
        if not isinstance(alpha, float):
            raise TypeError("center_loss: alpha must be a float or a Variable, got %r" % type(alpha).__name__)
        rate = helper.create_global_variable(name="centerloss_alpha", shape=[1], dtype="float32", persistable=True,
                                             stop_gradient=True)
        helper.set_variable_initializer(rate, Constant(alpha))
    diff = helper.create_variable_for_type_inference(input.dtype)
    loss = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("center_loss", inputs={"X": [input], "Label": [label], "Centers": [centers],
                                            "CenterUpdateRate": [rate]},
                     outputs={"SampleCenterDiff": [diff], "Loss": [loss], "CentersOut": [centers]},
                     attrs={"cluster_num": int(num_classes), "need_update": bool(update_center)})
    return loss


def dice_loss(input, label, epsilon=0.00001, name=None):
    """``mean(1 - 2 * |input * onehot(label)| / (|input| + |onehot(label)| + epsilon))`` over samples,
    sums over every dim but the first; ``label`` holds int64 class ids in its last dim."""
    _check(input, "dice_loss", "input")
    label = one_hot(label, depth=input.shape[-1])
    dims = list(range(1, len(input.shape)))
    inse = nn.reduce_sum(input * label, dim=dims)
    denominator = nn.reduce_sum(input, dim=dims) + nn.reduce_sum(label, dim=dims)
    score = 1 - inse * 2 / (denominator + epsilon)
    return nn.reduce_mean(score)


def rank_loss(label, left, right, name=None):
    """RankNet loss ``log(1 + exp(left - right)) - label * (left - right)``; all three [N, 1]."""
    for arg, v in (("label", label), ("left", left), ("right", right)):
        _check(v, "rank_loss", arg, ("float32",))
    helper = LayerHelper("rank_loss", name=name)
    out = helper.create_variable_for_type_inference("float32")
    helper.append_op("rank_loss", inputs={"Label": [label], "Left": [left], "Right": [right]}, outputs={"Out": [out]})
    return out


def margin_rank_loss(label, left, right, margin=0.1, name=None):
    """``max(0, -label * (left - right) + margin)``; label is 1 or -1."""
    for arg, v in (("label", label), ("left", left), ("right", right)):
        _check(v, "margin_rank_loss", arg, ("float32",))
    helper = LayerHelper("margin_rank_loss", name=name)
    out = helper.create_variable_for_type_inference(left.dtype)
    act = helper.create_variable_for_type_inference(left.dtype)
    helper.append_op("margin_rank_loss", inputs={"Label": [label], "X1": [left], "X2": [right]},
                     outputs={"Out": [out], "Activated": [act]}, attrs={"margin": float(margin)})
    return out


def bpr_loss(input, label, name=None):
    """Bayesian personalised ranking of the scores ``input`` [N, C] against the positive class
    ``label`` (int64 [N, 1]): [N, 1]."""
    _check(input, "bpr_loss", "input")
    _check(label, "bpr_loss", "label", ("int64",))
    helper = LayerHelper("bpr_loss", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("bpr_loss", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]})
    return out


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """N-pair loss: softmax cross entropy of ``anchor @ positive^T`` against the same-label matrix
    (rows normalised), plus ``l2_reg * 0.25 *`` the mean squared norms of both embeddings."""
    _check(anchor, "npair_loss", "anchor")
    _check(positive, "npair_loss", "positive")
    beta = 0.25
    batch_size = labels.shape[0]
    labels = reshape(labels, shape=[batch_size, 1], inplace=True)
    labels = expand(labels, expand_times=[1, batch_size])
    labels = cast(equal(labels, transpose(labels, perm=[1, 0])), "float32")
    labels = labels / nn.reduce_sum(labels, dim=1, keep_dim=True)
    l2loss = nn.reduce_mean(nn.reduce_sum(nn.square(anchor), 1)) + nn.reduce_mean(nn.reduce_sum(nn.square(positive), 1))
    l2loss = l2loss * beta * l2_reg
    similarity = nn.matmul(anchor, positive, transpose_x=False, transpose_y=True)
    ce = softmax_with_cross_entropy(logits=similarity, label=labels, soft_label=True)
    cross_entropy = nn.reduce_sum(labels * ce, 0)
    return l2loss + nn.reduce_mean(cross_entropy)


def teacher_student_sigmoid_loss(input, label, soft_max_up_bound=15.0, soft_max_lower_bound=-15.0):
    """Click plus distillation loss of logits ``input`` [N, 1]; ``label`` encodes the click and an
    optional teacher score (see the op)."""
    _check(input, "teacher_student_sigmoid_loss", "input")
    _check(label, "teacher_student_sigmoid_loss", "label")
    helper = LayerHelper("teacher_student_sigmoid_loss")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("teacher_student_sigmoid_loss", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]},
                     attrs={"soft_max_lower_bound": float(soft_max_lower_bound),
                            "soft_max_up_bound": float(soft_max_up_bound)})
    return out
