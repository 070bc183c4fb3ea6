"""Sequence losses with Paddle 1.8 signatures: warpctc (CTC), ctc_greedy_decoder and edit_distance."""
from .layer_helper import LayerHelper, check_variable
from .metric_op import topk
from .tensor import reshape

__all__ = ["warpctc", "edit_distance", "ctc_greedy_decoder"]


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


def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """Best-path decoding of CTC scores: the top class per step (``top_k``), repeats merged and
    ``blank`` dropped (``ctc_align``). LoD ``input`` [steps, classes]: a LoD int64 result (a lone -1
    if nothing is left); padded [N, T, classes] with ``input_length``: ``(decoded [N, T] padded with
    ``padding_value``, lengths [N, 1])``."""
    _check(input, "ctc_greedy_decoder", "input")
    helper = LayerHelper("ctc_greedy_decoder", name=name)
    _, indices = topk(input, k=1)
    out = helper.create_variable_for_type_inference("int64")
    if input_length is None:
        helper.append_op("ctc_align", inputs={"Input": [indices]}, outputs={"Output": [out]},
                         attrs={"merge_repeated": True, "blank": int(blank)})
        return out
    out_len = helper.create_variable_for_type_inference("int64")
    steps = reshape(indices, [0, -1])  # [N, T, 1] -> [N, T] (Paddle squeezes axis 2)
    helper.append_op("ctc_align", inputs={"Input": [steps], "InputLength": [input_length]},
                     outputs={"Output": [out], "OutputLength": [out_len]},
                     attrs={"merge_repeated": True, "blank": int(blank), "padding_value": int(padding_value)})
    return out, out_len
