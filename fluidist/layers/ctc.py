"""Sequence selection layers: ``ctc_greedy_decoder`` (the best path of CTC outputs: ``top_k`` then
``ctc_align``) and ``filter_by_instag`` (instances kept by their tags)."""
from __future__ import annotations

from ..framework.program import Variable
from .layer_helper import LayerHelper
from .metric_op import topk
from ._build import check_var

__all__ = ["ctc_greedy_decoder", "filter_by_instag"]


def ctc_greedy_decoder(input: Variable, blank: int, input_length: Variable | None = None, padding_value: int = 0,
                       name: str | None = None) -> Variable | tuple[Variable, Variable]:
    """The best path of CTC outputs: the most likely class at each step, repeats merged, ``blank``
    dropped (``topk`` then ``ctc_align``).

    Args:
        input: class probabilities: a LoD tensor ``[T, classes]``, or padded ``[N, T, classes]``
            with ``input_length``.
        blank: the blank class.
        input_length: int64 ``[N, 1]`` lengths, for padded input.
        padding_value: what pads the padded result.
        name: the output's name prefix (generated when None).

    Returns:
        For LoD input, a LoD Variable of int64 ids ``[ids, 1]``; for padded input, ``(ids, lengths)``:
        ``[N, T]`` padded with ``padding_value`` and ``[N, 1]``.

    Raises:
        TypeError: an ``input_length`` that is not a Variable.

    Examples:
        >>> probs = fluid.data(name="probs", shape=[None, 4], dtype="float32", lod_level=1)
        >>> ids = fluid.layers.ctc_greedy_decoder(probs, blank=0)
        >>> one_hot = np.eye(4, dtype="float32")[[1, 1, 0, 3]]
        >>> t = fluid.create_lod_tensor(one_hot, [[4]], fluid.CPUPlace())
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(feed={"probs": t}, fetch_list=[ids], return_numpy=False)
        >>> np.array(out).ravel().tolist(), out.lod()
        ([1, 3], [[0, 2]])
    """
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


def filter_by_instag(ins: Variable, ins_tag: Variable, filter_tag: Variable, is_lod: bool,
                     out_val_if_empty: int = 0) -> list[Variable]:
    """The instances that carry one of the wanted tags.

    Args:
        ins: the instances: its sequences with ``is_lod``, else its rows.
        ins_tag: an int64 LoD tensor, the tags of each instance (one sequence per instance).
        filter_tag: int64 ``[tags]``, the wanted tags.
        is_lod: whether ``ins``' instances are sequences.
        out_val_if_empty: when nothing is kept, the result is one row of this value.

    Returns:
        ``[out, loss_weight]``: the kept instances, and float32 ``[kept, 1]`` ones (a single 0 when
        nothing is kept).

    Examples:
        >>> ins = fluid.data(name="ins", shape=[None, 4], dtype="float32", lod_level=1)
        >>> tags = fluid.data(name="tags", shape=[None, 1], dtype="int64", lod_level=1)
        >>> wanted = fluid.data(name="wanted", shape=[None], dtype="int64")
        >>> kept, weight = fluid.layers.filter_by_instag(ins, tags, wanted, is_lod=True)
    """
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
