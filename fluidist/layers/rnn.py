"""Recurrent layers of Paddle 1.8's ``layers/rnn.py``: ``dynamic_lstm``, ``dynamic_lstmp``,
``dynamic_gru``, ``gru_unit``, ``lstm_unit``, ``lstm`` (cuDNN's LSTM), ``beam_search``,
``beam_search_decode``; the cell API (``rnn_api.py``) and the decoders (``rnn_decode.py``) are
re-exported here."""
from __future__ import annotations

from ..framework.program import Variable
from .hints import DType, ParamAttrLike
from ..initializer import Initializer
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable
from .nn import fc
from .tensor import concat

from .rnn_api import *  # noqa: F401,F403
from .rnn_decode import *  # noqa: F401,F403

# a literal list: type checkers read no other form
__all__ = ["dynamic_lstm", "dynamic_lstmp", "dynamic_gru", "gru_unit", "lstm_unit", "lstm", "beam_search",
           "beam_search_decode", "gather_tree", "RNNCell", "GRUCell", "LSTMCell", "rnn", "Decoder",
           "BeamSearchDecoder", "dynamic_decode", "DecodeHelper", "TrainingHelper", "GreedyEmbeddingHelper",
           "SampleEmbeddingHelper", "BasicDecoder"]


def _check_var(x, layer, arg="input"):
    return check_variable(x, layer, arg)


def _check_state(state, layer, arg, width):
    if state is None:
        return
    _check_var(state, layer, arg)
    if state.shape is not None and len(state.shape) == 2 and state.shape[1] not in (-1, width):
        raise ValueError("%s: %s %r must be [batch, %d], got shape %s" % (layer, arg, state.name, width,
                                                                        list(state.shape)))


def dynamic_lstm(input: Variable, size: int, h_0: Variable | None = None, c_0: Variable | None = None,
                 param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None, use_peepholes: bool = True,
                 is_reverse: bool = False, gate_activation: str = "sigmoid", cell_activation: str = "tanh",
                 candidate_activation: str = "tanh", dtype: DType = "float32",
                 name: str | None = None) -> tuple[Variable, Variable]:
    """An LSTM over each sequence of a LoD batch (one ``lstm`` op).

    ``input`` is the input already projected to the four gates (usually an ``fc`` of size
    ``size``); the layer adds the hidden-to-hidden weight ``[size / 4, size]`` and the bias
    (``[1, 7 * size / 4]`` with peepholes: the gate biases then the three peephole weights).

    Args:
        input: a LoD tensor ``[T, size]``.
        size: 4 times the hidden size.
        h_0: the initial hidden state ``[sequences, size / 4]``; zeros when None.
        c_0: the initial cell state ``[sequences, size / 4]``; zeros when None.
        param_attr: the hidden-to-hidden weight's attribute.
        bias_attr: the bias's attribute.
        use_peepholes: connect the cell state to the gates.
        is_reverse: run each sequence from its end.
        gate_activation: the gates' activation (``"sigmoid"``, ``"tanh"``, ``"relu"`` or
            ``"identity"``).
        cell_activation: the cell output's activation.
        candidate_activation: the candidate's activation.
        dtype: the parameters' dtype.
        name: the prefix of the parameters' names (generated when None).

    Returns:
        ``(hidden, cell)``, each a LoD Variable ``[T, size / 4]`` with ``input``'s LoD.

    Raises:
        ValueError: an ``h_0`` / ``c_0`` of another width.

    Examples:
        >>> words = fluid.data(name="words", shape=[None, 16], dtype="float32", lod_level=1)
        >>> gates = fluid.layers.fc(words, size=4 * 32)
        >>> hidden, cell = fluid.layers.dynamic_lstm(gates, size=4 * 32)
        >>> hidden.shape
        (-1, 32)
    """
    _check_var(input, "dynamic_lstm")
    helper = LayerHelper("lstm", param_attr=param_attr, bias_attr=bias_attr, name=name)
    size = size // 4
    _check_state(h_0, "dynamic_lstm", "h_0", size)
    _check_state(c_0, "dynamic_lstm", "c_0", size)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, 4 * size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, (7 if use_peepholes else 4) * size],
                                   dtype=dtype, is_bias=True)
    hidden, cell, batch_gate, batch_cell = [helper.create_variable_for_type_inference(dtype) for _ in range(4)]
    inputs = {"Input": [input], "Weight": [weight], "Bias": [bias]}
    if h_0 is not None:
        inputs["H0"] = [h_0]
    if c_0 is not None:
        inputs["C0"] = [c_0]
    helper.append_op("lstm", inputs=inputs,
                     outputs={"Hidden": [hidden], "Cell": [cell], "BatchGate": [batch_gate],
                              "BatchCellPreAct": [batch_cell]},
                     attrs={"use_peepholes": bool(use_peepholes), "is_reverse": bool(is_reverse),
                            "gate_activation": gate_activation, "cell_activation": cell_activation,
                            "candidate_activation": candidate_activation})
    return hidden, cell


def dynamic_lstmp(input: Variable, size: int, proj_size: int, param_attr: ParamAttrLike = None,
                  bias_attr: ParamAttrLike = None, use_peepholes: bool = True, is_reverse: bool = False,
                  gate_activation: str = "sigmoid", cell_activation: str = "tanh",
                  candidate_activation: str = "tanh", proj_activation: str = "tanh", dtype: DType = "float32",
                  name: str | None = None, h_0: Variable | None = None, c_0: Variable | None = None,
                  cell_clip: float | None = None, proj_clip: float | None = None) -> tuple[Variable, Variable]:
    """An LSTM with a projection layer over each sequence of a LoD batch (one ``lstmp`` op).

    The recurrent state is the projection ``act(hidden @ P)`` of width ``proj_size``, not the
    hidden state itself.

    Args:
        input: a LoD tensor ``[T, size]``, the input projected to the four gates.
        size: 4 times the hidden size.
        proj_size: the projection's width.
        param_attr: the attribute of the recurrent and projection weights.
        bias_attr: the bias's attribute.
        use_peepholes: connect the cell state to the gates.
        is_reverse: run each sequence from its end.
        gate_activation: the gates' activation.
        cell_activation: the cell output's activation.
        candidate_activation: the candidate's activation.
        proj_activation: the projection's activation.
        dtype: the parameters' dtype.
        name: the prefix of the parameters' names (generated when None).
        h_0: the initial projection ``[sequences, proj_size]``; zeros when None.
        c_0: the initial cell state ``[sequences, size / 4]``; zeros when None.
        cell_clip: clip the cell state to ``[-cell_clip, cell_clip]`` (None or 0: no clip).
        proj_clip: clip the projection likewise.

    Returns:
        ``(projection, cell)``: LoD Variables ``[T, proj_size]`` and ``[T, size / 4]``.

    Raises:
        ValueError: a negative clip, or an ``h_0`` / ``c_0`` of another width.

    Examples:
        >>> words = fluid.data(name="words", shape=[None, 16], dtype="float32", lod_level=1)
        >>> gates = fluid.layers.fc(words, size=4 * 32)
        >>> proj, cell = fluid.layers.dynamic_lstmp(gates, size=4 * 32, proj_size=8)
        >>> proj.shape, cell.shape
        ((-1, 8), (-1, 32))
    """
    _check_var(input, "dynamic_lstmp")
    helper = LayerHelper("lstmp", param_attr=param_attr, bias_attr=bias_attr, name=name)
    size = size // 4
    _check_state(h_0, "dynamic_lstmp", "h_0", proj_size)
    _check_state(c_0, "dynamic_lstmp", "c_0", size)
    for what, v in (("cell_clip", cell_clip), ("proj_clip", proj_clip)):
        if v is not None and v < 0:
            raise ValueError("dynamic_lstmp: %s must not be negative, got %r" % (what, v))
    weight = helper.create_parameter(attr=helper.param_attr, shape=[proj_size, 4 * size], dtype=dtype)
    proj_weight = helper.create_parameter(attr=helper.param_attr, shape=[size, proj_size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, (7 if use_peepholes else 4) * size],
                                   dtype=dtype, is_bias=True)
    projection, cell, batch_hidden, batch_gate, batch_cell = \
        [helper.create_variable_for_type_inference(dtype) for _ in range(5)]
    inputs = {"Input": [input], "Weight": [weight], "ProjWeight": [proj_weight], "Bias": [bias]}
    if h_0 is not None:
        inputs["H0"] = [h_0]
    if c_0 is not None:
        inputs["C0"] = [c_0]
    helper.append_op("lstmp", inputs=inputs,
                     outputs={"Projection": [projection], "Cell": [cell], "BatchHidden": [batch_hidden],
                              "BatchGate": [batch_gate], "BatchCellPreAct": [batch_cell]},
                     attrs={"use_peepholes": bool(use_peepholes), "cell_clip": float(cell_clip or 0.0),
                            "proj_clip": float(proj_clip or 0.0), "is_reverse": bool(is_reverse),
                            "gate_activation": gate_activation, "cell_activation": cell_activation,
                            "candidate_activation": candidate_activation, "proj_activation": proj_activation})
    return projection, cell


def dynamic_gru(input: Variable, size: int, param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None,
                is_reverse: bool = False, gate_activation: str = "sigmoid", candidate_activation: str = "tanh",
                h_0: Variable | None = None, origin_mode: bool = False) -> Variable:
    """A GRU over each sequence of a LoD batch (one ``gru`` op).

    Args:
        input: a LoD tensor ``[T, 3 * size]``, the input projected to the update gate, reset gate
            and candidate.
        size: the hidden size.
        param_attr: the hidden-to-hidden weight's attribute (``[size, 3 * size]``).
        bias_attr: the bias's attribute (``[1, 3 * size]``).
        is_reverse: run each sequence from its end.
        gate_activation: the gates' activation.
        candidate_activation: the candidate's activation.
        h_0: the initial hidden state ``[sequences, size]``; zeros when None.
        origin_mode: use the update rule of the original GRU paper
            (``h = u * h_prev + (1 - u) * c``) instead of ``h = (1 - u) * h_prev + u * c``.

    Returns:
        A LoD Variable ``[T, size]``, the hidden states.

    Raises:
        ValueError: an ``h_0`` of another width.

    Examples:
        >>> words = fluid.data(name="words", shape=[None, 16], dtype="float32", lod_level=1)
        >>> hidden = fluid.layers.dynamic_gru(fluid.layers.fc(words, size=3 * 8), size=8)
        >>> hidden.shape
        (-1, 8)
    """
    _check_var(input, "dynamic_gru")
    _check_state(h_0, "dynamic_gru", "h_0", size)
    helper = LayerHelper("gru", param_attr=param_attr, bias_attr=bias_attr)
    dtype = input.dtype
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, 3 * size], dtype=dtype)
    bias = helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * size], dtype=dtype, is_bias=True)
    inputs = {"Input": [input], "Weight": [weight], "Bias": [bias]}
    if h_0 is not None:
        inputs["H0"] = [h_0]
    hidden, batch_gate, batch_reset, batch_hidden = [helper.create_variable_for_type_inference(dtype)
                                                     for _ in range(4)]
    helper.append_op("gru", inputs=inputs,
                     outputs={"Hidden": [hidden], "BatchGate": [batch_gate], "BatchResetHiddenPrev": [batch_reset],
                              "BatchHidden": [batch_hidden]},
                     attrs={"is_reverse": bool(is_reverse), "gate_activation": gate_activation,
                            "activation": candidate_activation, "origin_mode": bool(origin_mode)})
    return hidden


_ACTIVATION_CODES = {"identity": 0, "sigmoid": 1, "tanh": 2, "relu": 3}


def gru_unit(input: Variable, hidden: Variable, size: int, param_attr: ParamAttrLike = None,
             bias_attr: ParamAttrLike = None, activation: str = "tanh", gate_activation: str = "sigmoid",
             origin_mode: bool = False) -> tuple[Variable, Variable, Variable]:
    """One GRU step, for loops written by hand (``StaticRNN``, ``DynamicRNN``).

    As in Paddle 1.8 the op always uses tanh and sigmoid: ``activation`` / ``gate_activation`` are
    checked but not passed on.

    Args:
        input: ``[N, size]``, the step's input projected to the three parts.
        hidden: the previous hidden state ``[N, size / 3]``.
        size: 3 times the hidden size.
        param_attr: the weight's attribute (``[size / 3, size]``).
        bias_attr: the bias's attribute; ``False`` for none.
        activation: checked, one of ``"identity"``, ``"sigmoid"``, ``"tanh"``, ``"relu"``.
        gate_activation: checked likewise.
        origin_mode: the original paper's update rule (see ``dynamic_gru``).

    Returns:
        ``(hidden, reset_hidden_prev, gate)``: ``[N, size / 3]``, ``[N, size / 3]``, ``[N, size]``.

    Raises:
        ValueError: an unknown activation name.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 24], dtype="float32")
        >>> h_prev = fluid.data(name="h_prev", shape=[None, 8], dtype="float32")
        >>> h, _, _ = fluid.layers.gru_unit(x, h_prev, size=24)
        >>> h.shape
        (-1, 8)
    """
    _check_var(input, "gru_unit")
    _check_var(hidden, "gru_unit", "hidden")
    for what, a in (("activation", activation), ("gate_activation", gate_activation)):
        if a not in _ACTIVATION_CODES:
            raise ValueError("gru_unit: %s must be one of %s, got %r" % (what, sorted(_ACTIVATION_CODES), a))
    helper = LayerHelper("gru_unit", param_attr=param_attr, bias_attr=bias_attr)
    dtype = input.dtype
    size = size // 3
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, 3 * size], dtype=dtype)
    gate, reset_hidden, updated = [helper.create_variable_for_type_inference(dtype) for _ in range(3)]
    inputs = {"Input": [input], "HiddenPrev": [hidden], "Weight": [weight]}
    if helper.bias_attr:
        inputs["Bias"] = [helper.create_parameter(attr=helper.bias_attr, shape=[1, 3 * size], dtype=dtype,
                                                  is_bias=True)]
    helper.append_op("gru_unit", inputs=inputs,
                     outputs={"Gate": [gate], "ResetHiddenPrev": [reset_hidden], "Hidden": [updated]},
                     attrs={"activation": 2, "gate_activation": 1, "origin_mode": bool(origin_mode)})
    return updated, reset_hidden, gate


def lstm_unit(x_t: Variable, hidden_t_prev: Variable, cell_t_prev: Variable, forget_bias: float = 0.0,
              param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None,
              name: str | None = None) -> tuple[Variable, Variable]:
    """One LSTM step: ``fc(concat([x_t, hidden_t_prev]), 4 * D)`` then the ``lstm_unit`` op.

    Args:
        x_t: the step's input ``[N, M]``.
        hidden_t_prev: the previous hidden state ``[N, D]``.
        cell_t_prev: the previous cell state ``[N, D]``.
        forget_bias: added to the forget gate before its sigmoid.
        param_attr: the fc weight's attribute.
        bias_attr: the fc bias's attribute.
        name: the prefix of the op's output names (generated when None).

    Returns:
        ``(hidden, cell)``, each ``[N, D]``.

    Raises:
        ValueError: inputs that are not 2-D, batch sizes that differ, or hidden and cell states
            of different widths.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 16], dtype="float32")
        >>> h_prev = fluid.data(name="h_prev", shape=[None, 8], dtype="float32")
        >>> c_prev = fluid.data(name="c_prev", shape=[None, 8], dtype="float32")
        >>> h, c = fluid.layers.lstm_unit(x, h_prev, c_prev)
        >>> h.shape, c.shape
        ((-1, 8), (-1, 8))
    """
    for arg, v in (("x_t", x_t), ("hidden_t_prev", hidden_t_prev), ("cell_t_prev", cell_t_prev)):
        _check_var(v, "lstm_unit", arg)
        if v.shape is None or len(v.shape) != 2:
            raise ValueError("lstm_unit: %s %r must have rank 2, got shape %s" % (arg, v.name, v.shape))
    if x_t.shape[0] != hidden_t_prev.shape[0] or x_t.shape[0] != cell_t_prev.shape[0]:
        raise ValueError("lstm_unit: the first dimensions of x_t, hidden_t_prev and cell_t_prev must agree")
    if hidden_t_prev.shape[1] != cell_t_prev.shape[1]:
        raise ValueError("lstm_unit: hidden_t_prev and cell_t_prev must have the same width")
    helper = LayerHelper("lstm_unit", name=name)
    if bias_attr is None:
        bias_attr = ParamAttr()
    size = cell_t_prev.shape[1]
    fc_out = fc(concat([x_t, hidden_t_prev], axis=1), 4 * size, param_attr=param_attr, bias_attr=bias_attr)
    c = helper.create_variable_for_type_inference(x_t.dtype)
    h = helper.create_variable_for_type_inference(x_t.dtype)
    helper.append_op("lstm_unit", inputs={"X": [fc_out], "C_prev": [cell_t_prev]}, outputs={"C": [c], "H": [h]},
                     attrs={"forget_bias": float(forget_bias)})
    return h, c


def lstm(input: Variable, init_h: Variable, init_c: Variable, max_len: int, hidden_size: int, num_layers: int,
         dropout_prob: float = 0.0, is_bidirec: bool = False, is_test: bool = False, name: str | None = None,
         default_initializer: Initializer | None = None, seed: int = -1) -> tuple[Variable, Variable, Variable]:
    """A multi-layer LSTM over a dense, time-major batch (Paddle's cuDNN LSTM, ``cudnn_lstm``).

    One flat weight parameter is laid out as cuDNN lays it: per layer and direction, the input
    weights, the hidden weights and their two biases, gates in the order i, f, g, o.

    Paddle 1.8 difference: it runs on the CPU too (Paddle's op needs cuDNN); dropout between layers
    is not supported, and there is no cuDNN ``Cache`` input.

    Args:
        input: ``[seq_len, batch, input_size]``.
        init_h: the initial hidden states ``[num_layers * directions, batch, hidden_size]``.
        init_c: the initial cell states, ``init_h``'s shape.
        max_len: the sequence length.
        hidden_size: the hidden size.
        num_layers: the number of stacked layers.
        dropout_prob: dropout between layers (must be 0, see above).
        is_bidirec: run a second direction from the end; outputs are concatenated.
        is_test: an inference program.
        name: the prefix of the parameter's name (generated when None).
        default_initializer: the weight's initializer.
        seed: the dropout seed (accepted for Paddle's signature).

    Returns:
        ``(out, last_h, last_c)``: ``[seq_len, batch, hidden_size * directions]`` and the final
        states, of ``init_h``'s shape.

    Raises:
        TypeError: ``max_len``, ``hidden_size`` or ``num_layers`` not an int.

    Examples:
        >>> seq = fluid.data(name="seq", shape=[5, None, 16], dtype="float32")
        >>> h0 = fluid.layers.fill_constant(shape=[1, 2, 8], dtype="float32", value=0.0)
        >>> out, last_h, last_c = fluid.layers.lstm(seq, h0, h0, max_len=5, hidden_size=8, num_layers=1)
        >>> out.shape
        (5, -1, 8)
    """
    _check_var(input, "lstm")
    _check_var(init_h, "lstm", "init_h")
    _check_var(init_c, "lstm", "init_c")
    for what, v in (("max_len", max_len), ("hidden_size", hidden_size), ("num_layers", num_layers)):
        if not isinstance(v, int):
            raise TypeError("lstm: %s must be an int, got %r" % (what, type(v).__name__))
    helper = LayerHelper("cudnn_lstm", name=name)
    dtype = input.dtype
    input_size = input.shape[-1]
    dirs = 2 if is_bidirec else 1
    weight_size = 0
    for layer in range(num_layers):
        in_size = input_size if layer == 0 else hidden_size * dirs
        weight_size += dirs * (4 * hidden_size * (in_size + hidden_size) + 8 * hidden_size)
    weight = helper.create_parameter(attr=None, shape=[weight_size], dtype=dtype,
                                     default_initializer=default_initializer)
    out, last_h, last_c = [helper.create_variable_for_type_inference(dtype) for _ in range(3)]
    helper.append_op("cudnn_lstm", inputs={"Input": [input], "InitH": [init_h], "InitC": [init_c], "W": [weight]},
                     outputs={"Out": [out], "last_h": [last_h], "last_c": [last_c]},
                     attrs={"max_len": max_len, "is_bidirec": bool(is_bidirec), "input_size": int(input_size),
                            "hidden_size": hidden_size, "num_layers": num_layers, "is_test": bool(is_test),
                            "dropout_prob": float(dropout_prob), "seed": int(seed)})
    return out, last_h, last_c


def beam_search(pre_ids: Variable, pre_scores: Variable, ids: Variable | None, scores: Variable, beam_size: int,
                end_id: int, level: int = 0, is_accumulated: bool = True, name: str | None = None,
                return_parent_idx: bool = False) -> tuple[Variable, ...]:
    """One step of a beam search: for each source, the ``beam_size`` best (prefix, candidate) pairs.

    A prefix that has ended (its last id is ``end_id``) is carried on with its score unchanged.

    Args:
        pre_ids: int64 ``[prefixes, 1]``, the last id of each prefix (2-level LoD: sources, then
            the prefixes of each).
        pre_scores: ``[prefixes, 1]``, each prefix's score.
        ids: int64 ``[prefixes, K]``, the candidates' ids; None for the column numbers.
        scores: ``[prefixes, K]``, the candidates' scores (with ``pre_ids``' LoD).
        beam_size: how many pairs to keep per source.
        end_id: the id that ends a sentence.
        level: the LoD level that groups the prefixes by source.
        is_accumulated: ``scores`` already include the prefix's score; when False, the layer
            adds ``log(scores)`` to ``pre_scores``.
        name: the outputs' name prefix (generated when None).
        return_parent_idx: also return, for each selected pair, the row of its prefix.

    Returns:
        ``(selected_ids, selected_scores)`` with a 2-level LoD, and ``parent_idx`` (int32) with
        ``return_parent_idx``.

    Examples:
        >>> pre_ids = fluid.data(name="pre_ids", shape=[None, 1], dtype="int64", lod_level=2)
        >>> pre_scores = fluid.data(name="pre_scores", shape=[None, 1], dtype="float32", lod_level=2)
        >>> probs = fluid.data(name="probs", shape=[None, 100], dtype="float32")
        >>> top_scores, top_ids = fluid.layers.topk(probs, k=4)
        >>> acc = fluid.layers.elementwise_add(fluid.layers.log(top_scores), pre_scores, axis=0)
        >>> sel_ids, sel_scores = fluid.layers.beam_search(pre_ids, pre_scores, top_ids, acc,
        ...                                                beam_size=4, end_id=1)
    """
    _check_var(pre_ids, "beam_search", "pre_ids")
    _check_var(pre_scores, "beam_search", "pre_scores")
    _check_var(scores, "beam_search", "scores")
    if ids is not None:
        _check_var(ids, "beam_search", "ids")
    helper = LayerHelper("beam_search", name=name)
    inputs = {"pre_ids": [pre_ids], "pre_scores": [pre_scores], "scores": [scores]}
    if ids is not None:
        inputs["ids"] = [ids]
    selected_scores = helper.create_variable_for_type_inference(dtype=pre_scores.dtype)
    selected_ids = helper.create_variable_for_type_inference(dtype=pre_ids.dtype)
    parent_idx = helper.create_variable_for_type_inference(dtype="int32")
    helper.append_op("beam_search", inputs=inputs,
                     outputs={"selected_ids": [selected_ids], "selected_scores": [selected_scores],
                              "parent_idx": [parent_idx]},
                     attrs={"level": int(level), "beam_size": int(beam_size), "end_id": int(end_id),
                            "is_accumulated": bool(is_accumulated)})
    if return_parent_idx:
        return selected_ids, selected_scores, parent_idx
    return selected_ids, selected_scores


def beam_search_decode(ids: Variable, scores: Variable, beam_size: int, end_id: int,
                       name: str | None = None) -> tuple[Variable, Variable]:
    """Whole sentences from the steps of a beam search.

    Args:
        ids: a tensor array of each step's ``selected_ids`` (from ``beam_search``).
        scores: a tensor array of each step's ``selected_scores``.
        beam_size: the beam size used in the search.
        end_id: the id that ends a sentence.
        name: the outputs' name prefix (generated when None).

    Returns:
        ``(sentence_ids, sentence_scores)``, LoD Variables with 2 levels: sources, then their
        sentences, best first.

    Examples:
        >>> ids_arr = fluid.layers.create_array("int64")
        >>> scores_arr = fluid.layers.create_array("float32")
        >>> sentences, sentence_scores = fluid.layers.beam_search_decode(ids_arr, scores_arr,
        ...                                                              beam_size=4, end_id=1)
    """
    _check_var(ids, "beam_search_decode", "ids")
    _check_var(scores, "beam_search_decode", "scores")
    helper = LayerHelper("beam_search_decode", name=name)
    sentence_ids = helper.create_variable_for_type_inference(dtype=ids.dtype)
    sentence_scores = helper.create_variable_for_type_inference(dtype=scores.dtype)
    helper.append_op("beam_search_decode", inputs={"Ids": [ids], "Scores": [scores]},
                     outputs={"SentenceIds": [sentence_ids], "SentenceScores": [sentence_scores]},
                     attrs={"beam_size": int(beam_size), "end_id": int(end_id)})
    return sentence_ids, sentence_scores


def gather_tree(ids: Variable, parents: Variable) -> Variable:
    """The full paths of a beam search, traced back from its last step through the parents.

    Args:
        ids: int ``[max_time, batch, beam]``, each step's chosen ids.
        parents: ``ids``' shape and dtype, the beam each choice came from.

    Returns:
        A Variable of ``ids``' shape: ``out[:, b, k]`` is the whole path ending in beam ``k``.

    Examples:
        >>> ids = fluid.layers.assign(np.array([[[2, 3]], [[4, 5]]], "int64"))
        >>> parents = fluid.layers.assign(np.array([[[0, 0]], [[1, 0]]], "int64"))
        >>> paths = fluid.layers.gather_tree(ids, parents)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[paths])[0][:, 0].tolist()
        [[3, 2], [4, 5]]
    """
    _check_var(ids, "gather_tree", "ids")
    _check_var(parents, "gather_tree", "parents")
    helper = LayerHelper("gather_tree")
    out = helper.create_variable_for_type_inference(dtype=ids.dtype)
    helper.append_op("gather_tree", inputs={"Ids": [ids], "Parents": [parents]}, outputs={"Out": [out]})
    return out
