"""Sequence losses with Paddle 1.8 signatures: warpctc (CTC) and edit_distance."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Variable
from .layer_helper import LayerHelper, check_variable

__all__ = ["warpctc", "edit_distance"]


_check = check_variable


def warpctc(input: Variable, label: Variable, blank: int = 0, norm_by_times: bool = False,
            input_length: Variable | None = None, label_length: Variable | None = None) -> Variable:
    """The CTC (connectionist temporal classification) loss of unnormalised logits against label
    sequences.

    Args:
        input: logits: a LoD tensor ``[steps, classes + 1]``, or padded ``[T, N, classes + 1]``
            with ``input_length``.
        label: int32 labels: LoD ``[labels, 1]``, or padded ``[N, L]`` with ``label_length``.
        blank: the blank class.
        norm_by_times: scale the gradient (not the loss) by 1 / the number of steps.
        input_length: int64 ``[N]`` lengths, for padded logits.
        label_length: int64 ``[N]`` lengths, for padded labels.

    Returns:
        A Variable ``[N, 1]``, each sequence's loss.

    Examples:
        >>> logits = fluid.data(name="logits", shape=[None, 5], dtype="float32", lod_level=1)
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int32", lod_level=1)
        >>> loss = fluid.layers.warpctc(logits, label, blank=4)
        >>> p = fluid.CPUPlace()
        >>> feed = {"logits": fluid.create_lod_tensor(np.zeros((3, 5), "float32"), [[3]], p),
        ...         "label": fluid.create_lod_tensor(np.array([[1]], "int32"), [[1]], p)}
        >>> out, = fluid.Executor(p).run(feed=feed, fetch_list=[loss])
        >>> out.shape
        (1, 1)
    """
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


def edit_distance(input: Variable, label: Variable, normalized: bool = True,
                  ignored_tokens: Sequence[int] | None = None, input_length: Variable | None = None,
                  label_length: Variable | None = None) -> tuple[Variable, Variable]:
    """Levenshtein distances of hypotheses to references (insertions, deletions, substitutions).

    Args:
        input: int64 hypotheses: LoD ``[tokens, 1]``, or padded ``[N, T]`` with the lengths.
        label: int64 references, in ``input``'s form.
        normalized: divide each distance by its reference's length.
        ignored_tokens: tokens erased from both (``sequence_erase``) first.
        input_length: int64 ``[N]`` lengths, for padded hypotheses.
        label_length: int64 ``[N]`` lengths, for padded references.

    Returns:
        ``(distances, sequence_num)``: float32 ``[N, 1]`` and int64 ``[1]``, the number of pairs.

    Examples:
        >>> hyp = fluid.data(name="hyp", shape=[None, 1], dtype="int64", lod_level=1)
        >>> ref = fluid.data(name="ref", shape=[None, 1], dtype="int64", lod_level=1)
        >>> dist, n = fluid.layers.edit_distance(hyp, ref, normalized=False)
        >>> p = fluid.CPUPlace()
        >>> feed = {"hyp": fluid.create_lod_tensor(np.array([[1], [2], [3], [1], [2]], "int64"), [[3, 2]], p),
        ...         "ref": fluid.create_lod_tensor(np.array([[1], [3], [1], [2]], "int64"), [[2, 2]], p)}
        >>> d, count = fluid.Executor(p).run(feed=feed, fetch_list=[dist, n])
        >>> d.ravel().tolist(), count.tolist()
        ([1.0, 0.0], [2])
    """
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

