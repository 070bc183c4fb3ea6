"""``ctc_greedy_decoder``: the best path of CTC outputs (``top_k`` then ``ctc_align``)."""
from ..framework.program import Variable
from .layer_helper import LayerHelper
from .metric_op import topk
from ._build import check_var

__all__ = ["ctc_greedy_decoder"]


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
