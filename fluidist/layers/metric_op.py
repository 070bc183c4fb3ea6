"""Metric layers: ``topk``, ``accuracy`` (a ``top_k`` op feeding an ``accuracy`` op) and ``auc``."""
from __future__ import annotations

from ..framework.program import Variable
from ..initializer import Constant
from .layer_helper import LayerHelper, check_variable

__all__ = ["topk", "accuracy", "auc"]


def topk(input: Variable, k: int | Variable, name: str | None = None) -> tuple[Variable, Variable]:
    """The ``k`` largest entries along the last axis, and their indices.

    Args:
        input: a tensor; the search runs along its last axis.
        k: how many, an int or a ``[1]`` int Variable.
        name: the outputs' name prefix (generated when None).

    Returns:
        ``(values, indices)``: ``input``'s shape with the last axis ``k``; indices are int64.

    Examples:
        >>> scores = fluid.data(name="scores", shape=[None, 10], dtype="float32")
        >>> values, indices = fluid.layers.topk(scores, k=3)
    """
    if not isinstance(input, Variable):
        raise TypeError("topk: 'input' must be a Variable, got %r" % type(input).__name__)
    helper = LayerHelper("top_k", name=name)
    values = helper.create_variable_for_type_inference(input.dtype)
    indices = helper.create_variable_for_type_inference("int64")
    inputs = {"X": [input]}
    attrs = {}
    if isinstance(k, Variable):
        inputs["K"] = [k]
    else:
        attrs["k"] = int(k)
    helper.append_op("top_k", inputs=inputs, outputs={"Out": [values], "Indices": [indices]}, attrs=attrs)
    indices.stop_gradient = True
    return values, indices


def accuracy(input: Variable, label: Variable, k: int = 1, correct: Variable | None = None,
             total: Variable | None = None) -> Variable:
    """Top-``k`` accuracy of the scores ``input`` against the labels: the fraction of rows whose label
    is among the ``k`` highest scores.

    Args:
        input: scores ``[N, D]``.
        label: int64 class ids ``[N, 1]``.
        k: how many of the top scores count as a hit.
        correct: an int32 ``[1]`` Variable to receive the number of hits, or None.
        total: an int32 ``[1]`` Variable to receive the number of rows, or None.

    Returns:
        A float32 ``[1]`` Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> acc = fluid.layers.accuracy(input=fluid.layers.fc(x, 3, act="softmax"), label=label)
    """
    check_variable(input, "accuracy", "input")
    if not isinstance(label, Variable):
        raise TypeError("accuracy: 'label' must be a Variable, got %r" % type(label).__name__)
    helper = LayerHelper("accuracy")
    topk_out, topk_indices = topk(input, k=k)
    acc_out = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    if correct is None:
        correct = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    if total is None:
        total = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("accuracy", inputs={"Out": [topk_out], "Indices": [topk_indices], "Label": [label]},
                     outputs={"Accuracy": [acc_out], "Correct": [correct], "Total": [total]})
    return acc_out


def auc(input: Variable, label: Variable, curve: str = "ROC", num_thresholds: int = 2 ** 12 - 1, topk: int = 1,
        slide_steps: int = 1) -> tuple[Variable, Variable, list[Variable]]:
    """Area under the ROC curve of the positive-class probabilities against the labels.

    The state lives in four persistable int64 global variables (histograms of positive and negative
    scores), named like Paddle's (``_generated_var_N``: in a program with no other unnamed global
    variables, stat_pos and stat_neg are ``_generated_var_2`` and ``_3``, the names Paddle's CTR tools
    read them by); zero them to start over.

    Args:
        input: probabilities ``[N, 2]`` or ``[N, 1]``; the last column is the positive class.
        label: int labels ``[N, 1]``, 0 or 1.
        curve: ``"ROC"`` (the only curve).
        num_thresholds: the number of histogram buckets.
        topk: accepted for Paddle's signature.
        slide_steps: how many recent batches ``batch_auc`` covers.

    Returns:
        ``(auc, batch_auc, [batch_stat_pos, batch_stat_neg, stat_pos, stat_neg])``: ``auc`` over all
        batches since the stats were zeroed, ``batch_auc`` over the last ``slide_steps`` batches.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> auc_var, batch_auc, states = fluid.layers.auc(fluid.layers.fc(x, 2, act="softmax"), label)
    """
    check_variable(input, "auc", "input")
    check_variable(label, "auc", "label")
    if curve != "ROC":
        raise ValueError("auc: only curve='ROC' is supported, got %r" % (curve,))
    helper = LayerHelper("auc")
    auc_out = helper.create_variable_for_type_inference("float64")
    batch_auc_out = helper.create_variable_for_type_inference("float64")
    buckets = num_thresholds + 1
    stats = []
    for shape in ([(1 + slide_steps) * buckets + 1],) * 2 + ([1, buckets],) * 2:
        v = helper.create_global_variable(persistable=True, dtype="int64", shape=shape)
        helper.set_variable_initializer(v, Constant(0.0, force_cpu=False))
        stats.append(v)
    batch_pos, batch_neg, pos, neg = stats
    helper.append_op("auc", inputs={"Predict": [input], "Label": [label], "StatPos": [batch_pos],
                                    "StatNeg": [batch_neg]},
                     outputs={"AUC": [batch_auc_out], "StatPosOut": [batch_pos], "StatNegOut": [batch_neg]},
                     attrs={"curve": curve, "num_thresholds": int(num_thresholds), "slide_steps": int(slide_steps)})
    helper.append_op("auc", inputs={"Predict": [input], "Label": [label], "StatPos": [pos], "StatNeg": [neg]},
                     outputs={"AUC": [auc_out], "StatPosOut": [pos], "StatNegOut": [neg]},
                     attrs={"curve": curve, "num_thresholds": int(num_thresholds), "slide_steps": 0})
    return auc_out, batch_auc_out, stats
