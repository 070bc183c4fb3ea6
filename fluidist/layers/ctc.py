"""Sequence selection layers: ``ctc_greedy_decoder`` (the best path of CTC outputs: ``top_k`` then
``ctc_align``) and ``filter_by_instag`` (instances kept by their tags)."""
from ..framework.program import Variable
from .layer_helper import LayerHelper
from .metric_op import topk
from ._build import check_var

__all__ = ["ctc_greedy_decoder", "filter_by_instag"]


def ctc_greedy_decoder(input, blank, input_length=None, padding_value=0, name=None):
    """The most likely class at each step, repeats merged and ``blank`` dropped. ``input`` is a LoD
    tensor [T, classes] (the result is a LoD tensor of int64 ids), or with ``input_length`` a padded
    [N, T, classes] tensor (the result is ``(ids [N, T] padded with padding_value, lengths [N, 1])``)."""
    check_var(input, "ctc_greedy_decoder", "input")
    helper = LayerHelper("ctc_greedy_decoder", name=name)
    _, ids = topk(input, k=1)
    out = helper.create_variable_for_type_inference("int64")
    if input_length is None:
        helper.append_op("ctc_align", inputs={"Input": [ids]}, outputs={"Output": [out]},
                         attrs={"merge_repeated": True, "blank": int(blank)})
        return out
    if not isinstance(input_length, Variable):
        raise TypeError("ctc_greedy_decoder: input_length must be a Variable of lengths [N, 1]")
    from .manipulation import squeeze
    out_len = helper.create_variable_for_type_inference("int64")
    helper.append_op("ctc_align", inputs={"Input": [squeeze(ids, [2])], "InputLength": [input_length]},
                     outputs={"Output": [out], "OutputLength": [out_len]},
                     attrs={"merge_repeated": True, "blank": int(blank), "padding_value": int(padding_value)})
    return out, out_len


def filter_by_instag(ins, ins_tag, filter_tag, is_lod, out_val_if_empty=0):
    """The instances of ``ins`` (its sequences with ``is_lod``, else its rows) one of whose tags
    (``ins_tag``, a LoD tensor: the tags of each instance) is in ``filter_tag``; returns
    ``[out, loss_weight]`` (a 1 per kept instance). Nothing kept: one row of ``out_val_if_empty``
    and a weight of 0."""
    for v, what in ((ins, "ins"), (ins_tag, "ins_tag"), (filter_tag, "filter_tag")):
        check_var(v, "filter_by_instag", what)
    helper = LayerHelper("filter_by_instag")
    out = helper.create_variable_for_type_inference(ins.dtype)
    loss_weight = helper.create_variable_for_type_inference("float32")
    index_map = helper.create_variable_for_type_inference(ins_tag.dtype)
    helper.append_op("filter_by_instag", inputs={"Ins": [ins], "Ins_tag": [ins_tag], "Filter_tag": [filter_tag]},
                     outputs={"Out": [out], "LossWeight": [loss_weight], "IndexMap": [index_map]},
                     attrs={"is_lod": bool(is_lod), "out_val_if_empty": int(out_val_if_empty)})
    return [out, loss_weight]
