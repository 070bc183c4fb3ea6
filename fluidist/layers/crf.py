"""Sequence labelling layers with Paddle 1.8 signatures: linear_chain_crf, crf_decoding, chunk_eval."""
from __future__ import annotations

from typing import Sequence

from ..framework.program import Parameter, Variable
from .hints import ParamAttrLike
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable

__all__ = ["linear_chain_crf", "crf_decoding", "chunk_eval"]


_check = check_variable


def linear_chain_crf(input: Variable, label: Variable, param_attr: ParamAttrLike = None,
                     length: Variable | None = None) -> Variable:
    """The negative log-likelihood of the gold tags under a linear-chain CRF: the training loss of
    a sequence tagger.

    Creates the transition parameter ``[tags + 2, tags]`` (the start row, the end row, then the
    tag-to-tag weights); name it with ``param_attr`` to share it with ``crf_decoding``.

    Args:
        input: the emission scores: a LoD tensor ``[rows, tags]``, or padded ``[N, T, tags]``
            with ``length``.
        label: int64 gold tags: LoD ``[rows, 1]``, or padded ``[N, T]`` with ``length``.
        param_attr: the transition parameter's attribute.
        length: int64 ``[N]`` sequence lengths, for padded input.

    Returns:
        A Variable ``[sequences, 1]``, each sequence's negative log-likelihood.

    Examples:
        >>> emission = fluid.data(name="emission", shape=[None, 5], dtype="float32", lod_level=1)
        >>> tags = fluid.data(name="tags", shape=[None, 1], dtype="int64", lod_level=1)
        >>> nll = fluid.layers.linear_chain_crf(emission, tags, param_attr=fluid.ParamAttr(name="crf_w"))
        >>> loss = fluid.layers.mean(nll)
    """
    _check(input, "linear_chain_crf", "input")
    _check(label, "linear_chain_crf", "label")
    helper = LayerHelper("linear_chain_crf", input=input, param_attr=param_attr)
    dtype = helper.input_dtype()
    size = input.shape[2] if length is not None else input.shape[1]
    transition = helper.create_parameter(attr=helper.param_attr, shape=[size + 2, size], dtype=dtype)
    alpha = helper.create_variable_for_type_inference(dtype)
    emission_exps = helper.create_variable_for_type_inference(dtype)
    transition_exps = helper.create_variable_for_type_inference(dtype)
    log_likelihood = helper.create_variable_for_type_inference(dtype)
    inputs = {"Emission": [input], "Transition": [transition], "Label": [label]}
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op("linear_chain_crf", inputs=inputs,
                     outputs={"Alpha": [alpha], "EmissionExps": [emission_exps], "TransitionExps": [transition_exps],
                              "LogLikelihood": [log_likelihood]})
    return log_likelihood


def crf_decoding(input: Variable, param_attr: ParamAttrLike, label: Variable | None = None,
                 length: Variable | None = None) -> Variable:
    """The best (Viterbi) tag path of each sequence under the CRF that ``linear_chain_crf`` trains.

    Args:
        input: the emission scores, as for ``linear_chain_crf``.
        param_attr: names the transition parameter (the ``param_attr`` given to
            ``linear_chain_crf``).
        label: gold tags; with them the result is 1 where the path agrees, else 0.
        length: int64 ``[N]`` sequence lengths, for padded input.

    Returns:
        An int64 Variable of ``input``'s rows: the tags (or the agreement with ``label``).

    Raises:
        ValueError: no parameter of ``param_attr``'s name.

    Examples:
        >>> emission = fluid.data(name="emission", shape=[None, 5], dtype="float32", lod_level=1)
        >>> tags = fluid.data(name="tags", shape=[None, 1], dtype="int64", lod_level=1)
        >>> crf_w = fluid.ParamAttr(name="crf_w")
        >>> nll = fluid.layers.linear_chain_crf(emission, tags, param_attr=crf_w)
        >>> best = fluid.layers.crf_decoding(emission, param_attr=crf_w)
    """
    _check(input, "crf_decoding", "input")
    attr = ParamAttr._to_attr(param_attr)
    helper = LayerHelper("crf_decoding")
    block = helper.main_program.global_block()
    transition = block.vars.get(attr.name) if attr and attr.name else None
    if not isinstance(transition, Parameter):
        raise ValueError("crf_decoding: no parameter named %r: pass the param_attr (with its name) given to "
                         "linear_chain_crf" % (getattr(attr, "name", None),))
    path = helper.create_variable_for_type_inference("int64")
    inputs = {"Emission": [input], "Transition": [transition]}
    if label is not None:
        inputs["Label"] = [label]
    if length is not None:
        inputs["Length"] = [length]
    helper.append_op("crf_decoding", inputs=inputs, outputs={"ViterbiPath": [path]})
    return path


def chunk_eval(input: Variable, label: Variable, chunk_scheme: str, num_chunk_types: int,
               excluded_chunk_types: Sequence[int] | None = None,
               seq_length: Variable | None = None) -> tuple[Variable, ...]:
    """Chunk-level precision, recall and F1 of predicted tags against gold tags (named-entity
    recognition and other chunking tasks).

    A tag id encodes a chunk type and a position: with the ``"IOB"`` scheme, ``type * 2`` is B
    (begin), ``type * 2 + 1`` is I (inside), and ``num_chunk_types * 2`` is O (outside).

    Args:
        input: int64 predicted tags (LoD ``[rows, 1]``, or padded with ``seq_length``).
        label: int64 gold tags, ``input``'s shape.
        chunk_scheme: ``"IOB"``, ``"IOE"``, ``"IOBES"`` or ``"plain"``.
        num_chunk_types: the number of chunk types.
        excluded_chunk_types: chunk types left out of the counts.
        seq_length: int64 sequence lengths, for padded input.

    Returns:
        ``(precision, recall, f1, num_infer_chunks, num_label_chunks, num_correct_chunks)``:
        three float32 ``[1]`` and three int64 ``[1]`` Variables (no gradient).

    Examples:
        >>> pred = fluid.data(name="pred", shape=[None, 1], dtype="int64", lod_level=1)
        >>> gold = fluid.data(name="gold", shape=[None, 1], dtype="int64", lod_level=1)
        >>> precision, recall, f1, _, _, _ = fluid.layers.chunk_eval(pred, gold, "IOB", num_chunk_types=2)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> t = fluid.create_lod_tensor(np.array([[0], [1], [4], [2]], "int64"), [[4]], fluid.CPUPlace())
        >>> [float(v[0]) for v in exe.run(feed={"pred": t, "gold": t}, fetch_list=[precision, recall, f1])]
        [1.0, 1.0, 1.0]
    """
    _check(input, "chunk_eval", "input")
    _check(label, "chunk_eval", "label")
    helper = LayerHelper("chunk_eval")
    outs = [helper.create_variable_for_type_inference(dt) for dt in ("float32",) * 3 + ("int64",) * 3]
    inputs = {"Inference": [input], "Label": [label]}
    if seq_length is not None:
        inputs["SeqLength"] = [seq_length]
    names = ["Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"]
    helper.append_op("chunk_eval", inputs=inputs, outputs={n: [v] for n, v in zip(names, outs)},
                     attrs={"num_chunk_types": int(num_chunk_types), "chunk_scheme": chunk_scheme,
                            "excluded_chunk_types": list(excluded_chunk_types or [])})
    for v in outs:
        v.stop_gradient = True
    return tuple(outs)
