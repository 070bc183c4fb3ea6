"""Loss layers."""
from .layer_helper import LayerHelper, check_variable

__all__ = ["square_error_cost", "cross_entropy", "softmax_with_cross_entropy", "sigmoid_cross_entropy_with_logits",
           "log_loss"]

kIgnoreIndex = -100


def square_error_cost(input, label):
    """``(input - label)^2`` elementwise: ``elementwise_sub`` then ``square``."""
    helper = LayerHelper("square_error_cost")
    minus = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [minus]})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("square", inputs={"X": [minus]}, outputs={"Out": [out]})
    return out


_check = check_variable


def cross_entropy(input, label, soft_label=False, ignore_index=kIgnoreIndex):
    """Cross entropy of probabilities ``input`` ([N, D]) against ``label`` (int64 [N, 1], or [N, D]
    probabilities with ``soft_label``); one loss per row, [N, 1]. As in Paddle 1.5+, hard labels build
    a ``cross_entropy2`` op and soft labels a ``cross_entropy`` op."""
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


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=kIgnoreIndex, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):
    """Softmax of ``logits`` over ``axis`` and its cross entropy against ``label``; returns the loss
    (size 1 along ``axis``), or ``(loss, softmax)`` with ``return_softmax``."""
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


def sigmoid_cross_entropy_with_logits(x, label, ignore_index=kIgnoreIndex, name=None, normalize=False):
    """Elementwise logistic loss of logits ``x`` against 0/1 (or probability) ``label``; elements whose
    label is ``ignore_index`` give 0, and ``normalize`` divides by the number of the others."""
    _check(x, "sigmoid_cross_entropy_with_logits", "x")
    _check(label, "sigmoid_cross_entropy_with_logits", "label")
    helper = LayerHelper("sigmoid_cross_entropy_with_logits", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("sigmoid_cross_entropy_with_logits", inputs={"X": [x], "Label": [label]},
                     outputs={"Out": [out]}, attrs={"ignore_index": int(ignore_index), "normalize": bool(normalize)})
    return out


def log_loss(input, label, epsilon=1e-4, name=None):
    """``-label * log(input + eps) - (1 - label) * log(1 - input + eps)`` elementwise."""
    _check(input, "log_loss", "input")
    _check(label, "log_loss", "label")
    helper = LayerHelper("log_loss", name=name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("log_loss", inputs={"Predicted": [input], "Labels": [label]}, outputs={"Loss": [out]},
                     attrs={"epsilon": float(epsilon)})
    return out
