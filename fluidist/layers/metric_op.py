"""Metric layers: ``topk``, ``accuracy`` (a ``top_k`` op feeding an ``accuracy`` op) and ``auc``."""
from ..framework.program import Variable
from ..initializer import Constant
from .layer_helper import LayerHelper

__all__ = ["topk", "accuracy", "auc"]


def topk(input, k, name=None):
    """The ``k`` largest entries along the last axis of ``input`` and their int64 indices:
    ``(values, indices)``. ``k`` may be an int or a ``[1]`` int Variable."""
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


def accuracy(input, label, k=1, correct=None, total=None):
    """Top-``k`` accuracy of the scores ``input`` ([N, D]) against int64 ``label`` ([N, 1]): a float32
    ``[1]`` Variable. ``correct`` / ``total`` (int32 ``[1]``) receive the counts when given."""
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


def auc(input, label, curve="ROC", num_thresholds=2 ** 12 - 1, topk=1, slide_steps=1):
    """Area under the ROC curve of the positive-class probabilities ``input`` ([N, 2] or [N, 1]: the
    last column) against int ``label`` [N, 1]. Returns ``(auc, batch_auc, [batch_stat_pos,
    batch_stat_neg, stat_pos, stat_neg])``: ``auc`` over everything seen since the stat buckets were
    zeroed, ``batch_auc`` over the last ``slide_steps`` batches. The four buckets are persistable
    int64 global variables named like Paddle's (``_generated_var_N``: in a program with no other
    unnamed global variables, stat_pos and stat_neg are ``_generated_var_2`` and ``_3``, the names
    Paddle's CTR tools read them by); zero them to start over."""
    if not isinstance(input, Variable) or input.dtype not in ("float32", "float64"):
        raise TypeError("auc: 'input' must be a float32/float64 Variable")
    if not isinstance(label, Variable) or label.dtype not in ("int32", "int64"):
        raise TypeError("auc: 'label' must be an int32/int64 Variable")
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
