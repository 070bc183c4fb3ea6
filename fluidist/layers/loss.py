"""Loss layers."""
from __future__ import annotations

from typing import Literal, overload

from ..framework.variable import Variable
from .layer_helper import LayerHelper, check_variable

__all__ = ["square_error_cost", "cross_entropy", "softmax_with_cross_entropy", "sigmoid_cross_entropy_with_logits",
           "log_loss"]

kIgnoreIndex = -100


def square_error_cost(input: Variable, label: Variable) -> Variable:
    """Elementwise ``(input - label) ** 2`` (an ``elementwise_sub`` then a ``square``).

    Args:
        input: the predictions.
        label: the targets, of ``input``'s shape.

    Returns:
        A Variable of ``input``'s shape; reduce it with ``mean`` for a loss.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
    """
    _check(input, "square_error_cost", "input")
    _check(label, "square_error_cost", "label")
    helper = LayerHelper("square_error_cost")
    minus = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [minus]})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("square", inputs={"X": [minus]}, outputs={"Out": [out]})
    return out


_check = check_variable


def cross_entropy(input: Variable, label: Variable, soft_label: bool = False,
                  ignore_index: int = kIgnoreIndex) -> Variable:
    """Cross entropy of probabilities ``input`` against ``label``, one loss per row.

    As in Paddle 1.5+, hard labels build a ``cross_entropy2`` op and soft labels a ``cross_entropy``
    op; ``-log(0)`` is clamped to 1e20 as Paddle's kernel does.

    Args:
        input: probabilities, ``[N, D]`` (for example a softmax's output).
        label: int64 class ids ``[N, 1]``, or ``[N, D]`` probabilities with ``soft_label``.
        soft_label: ``label`` holds a distribution per row.
        ignore_index: rows whose label is this id get loss 0 (hard labels only).

    Returns:
        A Variable of shape ``[N, 1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> loss = fluid.layers.cross_entropy(fluid.layers.fc(x, 3, act="softmax"), label)
    """
    _check(input, "cross_entropy", "input")
    _check(label, "cross_entropy", "label")
    helper = LayerHelper("cross_entropy")
    out = helper.create_variable_for_type_inference(input.dtype)
    if soft_label:
        helper.append_op("cross_entropy", inputs={"X": [input], "Label": [label]}, outputs={"Y": [out]},
                         attrs={"soft_label": True, "ignore_index": int(ignore_index)})
        return out
    match_x = helper.create_variable_for_type_inference(input.dtype)
    xshape = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("cross_entropy2", inputs={"X": [input], "Label": [label]},
                     outputs={"Y": [out], "MatchX": [match_x], "XShape": [xshape]},
                     attrs={"ignore_index": int(ignore_index)})
    return out


@overload
def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = ..., ignore_index: int = ...,
                               numeric_stable_mode: bool = ..., return_softmax: Literal[False] = ...,
                               axis: int = ...) -> Variable: ...


@overload
def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool, ignore_index: int,
                               numeric_stable_mode: bool, return_softmax: Literal[True],
                               axis: int = ...) -> tuple[Variable, Variable]: ...


@overload
def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = ..., ignore_index: int = ...,
                               numeric_stable_mode: bool = ..., *, return_softmax: Literal[True],
                               axis: int = ...) -> tuple[Variable, Variable]: ...


def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = False,
                               ignore_index: int = kIgnoreIndex, numeric_stable_mode: bool = True,
                               return_softmax: bool = False, axis: int = -1) -> Variable | tuple[Variable, Variable]:
    """Softmax of ``logits`` over ``axis`` and its cross entropy against ``label``, in one op.

    More stable than ``softmax`` then ``cross_entropy``: as in Paddle 1.8's CPU kernel the shifted
    logits are clipped at -64, so a hopeless class costs 64, not infinity.

    Args:
        logits: unnormalised scores, ``[N, D]`` (or any rank, classes on ``axis``).
        label: int64 class ids with size 1 on ``axis``, or probabilities with ``soft_label``.
        soft_label: ``label`` holds a distribution.
        ignore_index: positions whose label is this id get loss 0.
        numeric_stable_mode: accepted for Paddle's signature (fluidist is always stable).
        return_softmax: also return the softmax.
        axis: the class axis.

    Returns:
        The loss (``logits``'s shape with size 1 on ``axis``), or ``(loss, softmax)``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(x, 3), label))
    """
    _check(logits, "softmax_with_cross_entropy", "logits")
    _check(label, "softmax_with_cross_entropy", "label")
    helper = LayerHelper("softmax_with_cross_entropy")
    softmax = helper.create_variable_for_type_inference(logits.dtype)
    loss = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op("softmax_with_cross_entropy", inputs={"Logits": [logits], "Label": [label]},
                     outputs={"Softmax": [softmax], "Loss": [loss]},
                     attrs={"soft_label": bool(soft_label), "ignore_index": int(ignore_index),
                            "numeric_stable_mode": bool(numeric_stable_mode), "axis": int(axis)})
    if return_softmax:
        return loss, softmax
    return loss


def sigmoid_cross_entropy_with_logits(x: Variable, label: Variable, ignore_index: int = kIgnoreIndex,
                                      name: str | None = None, normalize: bool = False) -> Variable:
    """Elementwise logistic loss of logits ``x`` against 0/1 (or probability) ``label``.

    Computed in Paddle's shifted form (``max(x, 0) - x * label + log(1 + exp(-|x|))``), so large
    logits do not overflow.

    Args:
        x: logits of any shape.
        label: targets of ``x``'s shape, in ``[0, 1]``.
        ignore_index: elements whose label is this value give 0.
        name: the output's name (generated when None).
        normalize: divide by the number of elements not ignored.

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> logit = fluid.data(name="logit", shape=[None, 5], dtype="float32")
        >>> target = fluid.data(name="target", shape=[None, 5], dtype="float32")
        >>> loss = fluid.layers.sigmoid_cross_entropy_with_logits(logit, target)
    """
    _check(x, "sigmoid_cross_entropy_with_logits", "input")
    _check(label, "sigmoid_cross_entropy_with_logits", "label")
    helper = LayerHelper("sigmoid_cross_entropy_with_logits", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("sigmoid_cross_entropy_with_logits", inputs={"X": [x], "Label": [label]},
                     outputs={"Out": [out]}, attrs={"ignore_index": int(ignore_index), "normalize": bool(normalize)})
    return out


def log_loss(input: Variable, label: Variable, epsilon: float = 1e-4, name: str | None = None) -> Variable:
    """Elementwise ``-label * log(input + eps) - (1 - label) * log(1 - input + eps)``.

    Args:
        input: probabilities ``[N, 1]``.
        label: 0/1 targets ``[N, 1]``.
        epsilon: keeps the logarithms finite.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> p = fluid.data(name="p", shape=[None, 1], dtype="float32")
        >>> t = fluid.data(name="t", shape=[None, 1], dtype="float32")
        >>> loss = fluid.layers.log_loss(p, t)
    """
    _check(input, "log_loss", "input")
    _check(label, "log_loss", "label")
    helper = LayerHelper("log_loss", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("log_loss", inputs={"Predicted": [input], "Labels": [label]}, outputs={"Loss": [out]},
                     attrs={"epsilon": float(epsilon)})
    return out
