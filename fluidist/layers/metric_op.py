"""Metric layers: ``topk`` and ``accuracy`` (a ``top_k`` op feeding an ``accuracy`` op)."""
from ..framework.program import Variable
from .layer_helper import LayerHelper

__all__ = ["topk", "accuracy"]


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
