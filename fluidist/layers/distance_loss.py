"""Regression, distance and ranking losses of fluid 1.8 (``layers.loss`` and ``layers.nn``):
smooth_l1, huber_loss, kldiv_loss, mse_loss, center_loss, dice_loss, rank_loss, margin_rank_loss,
bpr_loss, npair_loss, teacher_student_sigmoid_loss."""
from __future__ import annotations

from ..framework.program import Variable
from .hints import ParamAttrLike
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


def _check(x, layer, arg):
    """A Variable of the dtypes Paddle 1.8's ``layer`` takes for ``arg`` (``input_dtypes``)."""
    check_variable(x, layer, arg)


def smooth_l1(x: Variable, y: Variable, inside_weight: Variable | None = None, outside_weight: Variable | None = None,
              sigma: float | None = None) -> Variable:
    """Smooth L1 loss of ``(x - y) * inside_weight`` (times ``outside_weight``), summed per sample.

    Args:
        x: the predictions ``[N, ...]``.
        y: the targets, of ``x``'s shape.
        inside_weight: weights applied to the difference, or None.
        outside_weight: weights applied to the loss, or None.
        sigma: the switch point is ``1 / sigma ** 2`` (None means 1).

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> box = fluid.data(name="box", shape=[None, 4], dtype="float32")
        >>> target = fluid.data(name="target", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.smooth_l1(box, target)
    """
    _check(x, "smooth_l1", "X")
    _check(y, "smooth_l1", "Y")
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


def huber_loss(input: Variable, label: Variable, delta: float) -> Variable:
    """Huber loss of ``label - input``: quadratic within ``delta``, linear beyond.

    Args:
        input: the predictions ``[N, 1]``.
        label: the targets ``[N, 1]``.
        delta: where the loss turns linear.

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> pred = fluid.data(name="pred", shape=[None, 1], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.huber_loss(pred, label, delta=1.0)
    """
    _check(input, "huber_loss", "input")
    _check(label, "huber_loss", "label")
    helper = LayerHelper("huber_loss")
    residual = helper.create_variable_for_type_inference(input.dtype)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("huber_loss", inputs={"X": [input], "Y": [label]}, outputs={"Out": [out], "Residual": [residual]},
                     attrs={"delta": float(delta)})
    return out


def kldiv_loss(x: Variable, target: Variable, reduction: str = "mean", name: str | None = None) -> Variable:
    """Kullback-Leibler divergence of ``target`` from the log-probabilities ``x``.

    Args:
        x: log-probabilities.
        target: probabilities of ``x``'s shape.
        reduction: ``"none"``, ``"batchmean"``, ``"mean"`` or ``"sum"``.
        name: the output's name (generated when None).

    Returns:
        A Variable: ``x``'s shape with ``"none"``, else ``[1]``.

    Examples:
        >>> logp = fluid.data(name="logp", shape=[None, 5], dtype="float32")
        >>> p = fluid.data(name="p", shape=[None, 5], dtype="float32")
        >>> loss = fluid.layers.kldiv_loss(logp, p, reduction="batchmean")
    """
    _check(x, "kldiv_loss", "x")
    _check(target, "kldiv_loss", "target")
    if reduction not in ("none", "batchmean", "mean", "sum"):
        raise ValueError("kldiv_loss: reduction must be 'none', 'batchmean', 'mean' or 'sum', got %r" % (reduction,))
    helper = LayerHelper("kldiv_loss", name=name)
    loss = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("kldiv_loss", inputs={"X": [x], "Target": [target]}, outputs={"Loss": [loss]},
                     attrs={"reduction": reduction})
    return loss


def mse_loss(input: Variable, label: Variable) -> Variable:
    """The mean of ``(input - label) ** 2``.

    Args:
        input: the predictions.
        label: the targets, of ``input``'s shape.

    Returns:
        A Variable ``[1]``.

    Examples:
        >>> pred = fluid.data(name="pred", shape=[None, 1], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.mse_loss(pred, label)
    """
    _check(input, "mse_loss", "input")
    _check(label, "mse_loss", "label")
    return nn.reduce_mean(square_error_cost(input, label))


def center_loss(input: Variable, label: Variable, num_classes: int, alpha: float | Variable, param_attr: ParamAttrLike,
                update_center: bool = True) -> Variable:
    """``0.5 * |input - centers[label]| ** 2`` per sample, with class centres that follow their samples.

    Args:
        input: features ``[N, D]``.
        label: int64 class ids ``[N, 1]``.
        num_classes: the number of classes.
        alpha: how far the centres move toward their samples each step (a float or a ``[1]`` Variable).
        param_attr: the attribute of the centres (a non-trainable ``[num_classes, D]`` parameter).
        update_center: move the centres during training.

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> feat = fluid.data(name="feat", shape=[None, 8], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> loss = fluid.layers.center_loss(feat, label, num_classes=10, alpha=0.1, param_attr=None)
    """
    _check(input, "center_loss", "input")
    _check(label, "center_loss", "label")
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


def dice_loss(input: Variable, label: Variable, epsilon: float = 0.00001, name: str | None = None) -> Variable:
    """``mean(1 - 2 * |input * onehot(label)| / (|input| + |onehot(label)| + epsilon))`` over samples.

    The sums run over every dimension but the first.

    Args:
        input: probabilities, classes in the last dimension.
        label: int64 class ids, 1 in the last dimension.
        epsilon: keeps the division finite.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[1]``.

    Examples:
        >>> probs = fluid.data(name="probs", shape=[None, 4, 4, 3], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 4, 4, 1], dtype="int64")
        >>> loss = fluid.layers.dice_loss(probs, label)
    """
    _check(input, "dice_loss", "input")
    label = one_hot(label, depth=input.shape[-1])
    dims = list(range(1, len(input.shape)))
    inse = nn.reduce_sum(input * label, dim=dims)
    denominator = nn.reduce_sum(input, dim=dims) + nn.reduce_sum(label, dim=dims)
    score = 1 - inse * 2 / (denominator + epsilon)
    return nn.reduce_mean(score)


def rank_loss(label: Variable, left: Variable, right: Variable, name: str | None = None) -> Variable:
    """RankNet's loss ``log(1 + exp(left - right)) - label * (left - right)``.

    Args:
        label: whether ``left`` should rank above ``right`` (1 or 0), ``[N, 1]``.
        left: the scores of the first items, ``[N, 1]``.
        right: the scores of the second items, ``[N, 1]``.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="float32")
        >>> left = fluid.data(name="left", shape=[None, 1], dtype="float32")
        >>> right = fluid.data(name="right", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.rank_loss(label, left, right)
    """
    for arg, v in (("label", label), ("left", left), ("right", right)):
        _check(v, "rank_loss", arg)
    helper = LayerHelper("rank_loss", name=name)
    out = helper.create_variable_for_type_inference("float32")
    helper.append_op("rank_loss", inputs={"Label": [label], "Left": [left], "Right": [right]}, outputs={"Out": [out]})
    return out


def margin_rank_loss(label: Variable, left: Variable, right: Variable, margin: float = 0.1,
                     name: str | None = None) -> Variable:
    """``max(0, -label * (left - right) + margin)``.

    Args:
        label: 1 where ``left`` should rank higher, -1 where ``right`` should.
        left: the first scores ``[N, 1]``.
        right: the second scores ``[N, 1]``.
        margin: the required gap.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="float32")
        >>> left = fluid.data(name="left", shape=[None, 1], dtype="float32")
        >>> right = fluid.data(name="right", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.margin_rank_loss(label, left, right, margin=0.2)
    """
    for arg, v in (("label", label), ("left", left), ("right", right)):
        _check(v, "margin_rank_loss", arg)
    helper = LayerHelper("margin_rank_loss", name=name)
    out = helper.create_variable_for_type_inference(left.dtype)
    act = helper.create_variable_for_type_inference(left.dtype)
    helper.append_op("margin_rank_loss", inputs={"Label": [label], "X1": [left], "X2": [right]},
                     outputs={"Out": [out], "Activated": [act]}, attrs={"margin": float(margin)})
    return out


def bpr_loss(input: Variable, label: Variable, name: str | None = None) -> Variable:
    """Bayesian personalised ranking of the scores ``input`` against the positive class ``label``.

    Args:
        input: scores ``[N, C]``.
        label: the positive class of each row, int64 ``[N, 1]``.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> scores = fluid.data(name="scores", shape=[None, 10], dtype="float32")
        >>> pos = fluid.data(name="pos", shape=[None, 1], dtype="int64")
        >>> loss = fluid.layers.bpr_loss(scores, pos)
    """
    _check(input, "bpr_loss", "input")
    _check(label, "bpr_loss", "label")
    helper = LayerHelper("bpr_loss", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("bpr_loss", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]})
    return out


def npair_loss(anchor: Variable, positive: Variable, labels: Variable, l2_reg: float = 0.002) -> Variable:
    """N-pair loss: softmax cross entropy of ``anchor @ positive^T`` against the same-label matrix
    (rows normalised), plus ``l2_reg * 0.25`` times the mean squared norms of both embeddings.

    Args:
        anchor: embeddings ``[N, D]``.
        positive: embeddings ``[N, D]``, row ``i`` a positive for anchor ``i``.
        labels: the class of each pair, ``[N]`` or ``[N, 1]``.
        l2_reg: the weight of the embeddings' norms.

    Returns:
        A Variable ``[1]``.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 8], dtype="float32")
        >>> p = fluid.data(name="p", shape=[None, 8], dtype="float32")
        >>> labels = fluid.data(name="labels", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.npair_loss(a, p, labels)
    """
    _check(anchor, "npair_loss", "anchor")
    _check(positive, "npair_loss", "positive")
    _check(labels, "npair_loss", "labels")
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


def teacher_student_sigmoid_loss(input: Variable, label: Variable, soft_max_up_bound: float = 15.0,
                                 soft_max_lower_bound: float = -15.0) -> Variable:
    """A click loss plus a distillation loss toward a teacher's score, for logits ``input``.

    Args:
        input: logits ``[N, 1]``.
        label: ``[N, 1]``, encoding the click and, when present, the teacher's score (as in Paddle's op).
        soft_max_up_bound: the logits' upper clip.
        soft_max_lower_bound: the logits' lower clip.

    Returns:
        A Variable ``[N, 1]``.

    Examples:
        >>> logit = fluid.data(name="logit", shape=[None, 1], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.teacher_student_sigmoid_loss(logit, label)
    """
    _check(input, "teacher_student_sigmoid_loss", "input")
    _check(label, "teacher_student_sigmoid_loss", "label")
    helper = LayerHelper("teacher_student_sigmoid_loss")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("teacher_student_sigmoid_loss", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]},
                     attrs={"soft_max_lower_bound": float(soft_max_lower_bound),
                            "soft_max_up_bound": float(soft_max_up_bound)})
    return out
