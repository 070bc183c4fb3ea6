"""Sequence losses with Paddle 1.8 signatures: warpctc (CTC) and edit_distance."""
from .layer_helper import LayerHelper, check_variable

__all__ = ["warpctc", "edit_distance"]


_check = check_variable


def warpctc(input, label, blank=0, norm_by_times=False, input_length=None, label_length=None):
    """CTC loss ([N, 1]) of unnormalised logits ``input`` (LoD [steps, classes + 1], or padded
    [T, N, classes + 1] with ``input_length``) against int32 ``label`` (LoD, or padded with
    ``label_length``). ``norm_by_times`` scales the gradient (not the loss) by 1 / steps."""
    _check(input, "warpctc", "input")
    _check(label, "warpctc", "label")
    helper = LayerHelper("warpctc")
    inputs = {"Logits": [input], "Label": [label]}
    if input_length is not None and label_length is not None:
        inputs["LogitsLength"] = [input_length]
        inputs["LabelLength"] = [label_length]
    loss = helper.create_variable_for_type_inference(input.dtype)
    grad = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("warpctc", inputs=inputs, outputs={"WarpCTCGrad": [grad], "Loss": [loss]},
                     attrs={"blank": int(blank), "norm_by_times": bool(norm_by_times)})
    return loss


def edit_distance(input, label, normalized=True, ignored_tokens=None, input_length=None, label_length=None):
    """Levenshtein distances ([N, 1] float32) of the int64 hypotheses ``input`` to the references
    ``label`` (LoD, or padded with the lengths), divided by the reference lengths when
    ``normalized``; ``ignored_tokens`` are erased from both first. Returns ``(distances, sequence_num)``."""
    _check(input, "edit_distance", "input")
    _check(label, "edit_distance", "label")
    helper = LayerHelper("edit_distance")
    if ignored_tokens:
        erased = []
        for v in (input, label):
            out = helper.create_variable_for_type_inference("int64")
            helper.append_op("sequence_erase", inputs={"X": [v]}, outputs={"Out": [out]},
                             attrs={"tokens": [int(t) for t in ignored_tokens]})
            erased.append(out)
        input, label = erased
    inputs = {"Hyps": [input], "Refs": [label]}
    if input_length is not None and label_length is not None:
        inputs["HypsLength"] = [input_length]
        inputs["RefsLength"] = [label_length]
    dist = helper.create_variable_for_type_inference("int64")
    seq_num = helper.create_variable_for_type_inference("int64")
    helper.append_op("edit_distance", inputs=inputs, outputs={"Out": [dist], "SequenceNum": [seq_num]},
                     attrs={"normalized": bool(normalized)})
    return dist, seq_num

