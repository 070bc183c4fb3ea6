"""Recurrent layers of Paddle 1.8's ``layers/rnn.py``: ``dynamic_lstm``, ``dynamic_lstmp``,
``dynamic_gru``, ``gru_unit``, ``lstm_unit``, ``lstm`` (cuDNN's LSTM), ``beam_search``,
``beam_search_decode``; the cell API (``rnn_api.py``) and the decoders (``rnn_decode.py``) are
re-exported here."""
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable
from .nn import fc
from .tensor import concat

from .rnn_api import *  # noqa: F401,F403
from .rnn_api import __all__ as _api_names
from .rnn_decode import *  # noqa: F401,F403
from .rnn_decode import __all__ as _decode_names

__all__ = ["dynamic_lstm", "dynamic_lstmp", "dynamic_gru", "gru_unit", "lstm_unit", "lstm", "beam_search",
           "beam_search_decode", "gather_tree"] + list(_api_names) + list(_decode_names)


def _check_var(x, layer, arg="input"):
    return check_variable(x, layer, arg)


def _check_state(state, layer, arg, width):
    if state is None:
        return
    _check_var(state, layer, arg)
    if state.shape is not None and len(state.shape) == 2 and state.shape[1] not in (-1, width):
        raise ValueError("%s: %s %r must be [batch, %d], got shape %s" % (layer, arg, state.name, width,
                                                                        list(state.shape)))


def dynamic_lstm(input, size, h_0=None, c_0=None, param_attr=None, bias_attr=None, use_peepholes=True,
                 is_reverse=False, gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
                 dtype="float32", name=None):
    """An LSTM over LoD sequences; ``input`` ``[T, size]`` is the input already projected (``size`` =
    4 x hidden size). Returns ``(hidden, cell)``, each ``[T, size / 4]``."""
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


def dynamic_lstmp(input, size, proj_size, param_attr=None, bias_attr=None, use_peepholes=True, is_reverse=False,
                  gate_activation="sigmoid", cell_activation="tanh", candidate_activation="tanh",
                  proj_activation="tanh", dtype="float32", name=None, h_0=None, c_0=None, cell_clip=None,
                  proj_clip=None):
    """An LSTM with a projection layer (``proj_size``) over LoD sequences; ``h_0`` is the initial
    projection ``[batch, proj_size]``. Returns ``(projection, cell)``."""
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


def dynamic_gru(input, size, param_attr=None, bias_attr=None, is_reverse=False, gate_activation="sigmoid",
                candidate_activation="tanh", h_0=None, origin_mode=False):
    """A GRU over LoD sequences; ``input`` ``[T, 3 * size]`` is the input already projected. Returns
    the hidden states ``[T, size]``."""
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


def gru_unit(input, hidden, size, param_attr=None, bias_attr=None, activation="tanh", gate_activation="sigmoid",
             origin_mode=False):
    """One GRU step: ``input`` ``[N, size]`` (projected, ``size`` = 3 x hidden size), ``hidden`` the
    previous state. Returns ``(hidden, reset_hidden_prev, gate)``. As in Paddle 1.8 the op always
    uses tanh and sigmoid: ``activation`` / ``gate_activation`` are checked but not passed on."""
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


def lstm_unit(x_t, hidden_t_prev, cell_t_prev, forget_bias=0.0, param_attr=None, bias_attr=None, name=None):
    """One LSTM step: ``fc(concat([x_t, hidden_t_prev]), 4 * D)`` then the ``lstm_unit`` op.
    Returns ``(hidden, cell)``."""
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


def lstm(input, init_h, init_c, max_len, hidden_size, num_layers, dropout_prob=0.0, is_bidirec=False,
         is_test=False, name=None, default_initializer=None, seed=-1):
    """cuDNN's LSTM (``cudnn_lstm``): ``input`` ``[seq_len, batch, input_size]``, ``init_h`` /
    ``init_c`` ``[num_layers * directions, batch, hidden_size]``; one flat weight parameter laid out as
    cuDNN lays it (per layer and direction: input weights, hidden weights, their two biases; gates
    i, f, g, o). Returns ``(out, last_h, last_c)``. Runs on the CPU too; dropout between layers is
    not supported, and there is no cuDNN ``Cache`` input."""
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


def beam_search(pre_ids, pre_scores, ids, scores, beam_size, end_id, level=0, is_accumulated=True, name=None,
                return_parent_idx=False):
    """One beam-search step: per source, the ``beam_size`` best (prefix, candidate) pairs of
    ``scores`` (``[prefixes, K]`` with a 2-level LoD; ``ids`` their word ids, or None for the column
    numbers). Returns ``(selected_ids, selected_scores)`` (and ``parent_idx`` with
    ``return_parent_idx``)."""
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


def beam_search_decode(ids, scores, beam_size, end_id, name=None):
    """Whole sentences from the arrays of ``beam_search`` steps (``ids``, ``scores``): returns
    ``(sentence_ids, sentence_scores)`` with a 2-level LoD (sources, sentences best first)."""
    _check_var(ids, "beam_search_decode", "ids")
    _check_var(scores, "beam_search_decode", "scores")
    helper = LayerHelper("beam_search_decode", name=name)
    sentence_ids = helper.create_variable_for_type_inference(dtype=ids.dtype)
    sentence_scores = helper.create_variable_for_type_inference(dtype=scores.dtype)
    helper.append_op("beam_search_decode", inputs={"Ids": [ids], "Scores": [scores]},
                     outputs={"SentenceIds": [sentence_ids], "SentenceScores": [sentence_scores]},
                     attrs={"beam_size": int(beam_size), "end_id": int(end_id)})
    return sentence_ids, sentence_scores


def gather_tree(ids, parents):
    """The full paths of a beam search from its per-step ids and parent beams
    (``[max_time, batch, beam]`` each)."""
    _check_var(ids, "gather_tree", "ids")
    _check_var(parents, "gather_tree", "parents")
    helper = LayerHelper("gather_tree")
    out = helper.create_variable_for_type_inference(dtype=ids.dtype)
    helper.append_op("gather_tree", inputs={"Ids": [ids], "Parents": [parents]}, outputs={"Out": [out]})
    return out
