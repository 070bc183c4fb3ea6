"""Sequence labelling layers with Paddle 1.8 signatures: linear_chain_crf, crf_decoding, chunk_eval."""
from ..framework.program import Parameter
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable

__all__ = ["linear_chain_crf", "crf_decoding", "chunk_eval"]


_check = check_variable


def linear_chain_crf(input, label, param_attr=None, length=None):
    """The negative log-likelihood ([N, 1]) of the gold tags ``label`` under a linear-chain CRF over
    the emissions ``input`` (LoD [rows, tags], or padded [N, T, tags] with ``length`` [N]). Creates
    the transition parameter [tags + 2, tags] (start row, end row, then tag-to-tag weights); name it
    with ``param_attr`` to share it with ``crf_decoding``."""
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


def crf_decoding(input, param_attr, label=None, length=None):
    """The Viterbi tag path (int64) of each sequence of ``input`` with the transition parameter named
    by ``param_attr`` (as created by ``linear_chain_crf``); with ``label``, 1 where the path agrees."""
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


def chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None, seq_length=None):
    """Chunk-level precision, recall and F1 of the tags ``input`` against ``label`` (IOB, IOE, IOBES
    or plain scheme): ``(precision, recall, f1, num_infer_chunks, num_label_chunks,
    num_correct_chunks)``."""
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
