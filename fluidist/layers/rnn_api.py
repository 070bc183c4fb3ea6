"""Paddle 1.8's RNN cell and decoding API (``layers/rnn.py``): ``RNNCell``, ``GRUCell``, ``LSTMCell``,
``rnn`` (a ``StaticRNN`` over the cell), ``Decoder``, ``BeamSearchDecoder``, ``dynamic_decode`` (a
``While`` over the decoder's steps), ``DecodeHelper``, ``TrainingHelper``, ``GreedyEmbeddingHelper``,
``SampleEmbeddingHelper`` and ``BasicDecoder``. The programs they build are Paddle's: the same layers
in the same order, parameters under the same names.

These classes compose the public layers (``fluidist.layers``), which they look up when they run:
the layer package imports this module, so this module does not import it back."""
import collections
import sys
import warnings
from functools import partial

import numpy as np

from ..framework import unique_name
from ..framework.dtypes import convert_dtype
from ..framework.program import default_main_program
from .layer_helper import LayerHelper, check_variable
from .nest import flatten, map_structure, pack_sequence_as, same_structure
from .rnn_blocks import StaticRNN
from .while_loop import While

__all__ = ["RNNCell", "GRUCell", "LSTMCell", "Decoder", "BeamSearchDecoder", "rnn", "dynamic_decode",
           "DecodeHelper", "TrainingHelper", "GreedyEmbeddingHelper", "SampleEmbeddingHelper", "BasicDecoder"]


def _L():
    """The public layers, looked up at call time (see the module docstring)."""
    return sys.modules["fluidist.layers"]


_check_var = check_variable


# ---------------------------------------------------------------------------- cells
class RNNCell:
    """A cell: ``call(inputs, states) -> (outputs, new_states)``; ``state_shape`` (and optionally
    ``state_dtype``) say what ``get_initial_states`` makes."""

    def call(self, inputs, states, **kwargs):
        raise NotImplementedError("RNNCell must implement call()")

    def __call__(self, inputs, states, **kwargs):
        return self.call(inputs, states, **kwargs)

    def get_initial_states(self, batch_ref, shape=None, dtype=None, init_value=0, batch_dim_idx=0):
        """Zeros (``init_value``) shaped ``[batch] + shape`` for each state, the batch size read from
        dimension ``batch_dim_idx`` of ``batch_ref``."""
        L = _L()
        batch_ref = flatten(batch_ref)[0]
        shapes = self.state_shape if shape is None else shape
        shape_list = _shape_leaves(shapes)
        try:
            dtypes = self.state_dtype if dtype is None else dtype
        except NotImplementedError:
            dtypes = "float32"
        flat_dtypes = flatten(dtypes)
        if len(flat_dtypes) == 1:
            flat_dtypes = flat_dtypes * len(shape_list)
        states = [L.fill_constant_batch_size_like(input=batch_ref, shape=s if s[0] == -1 else [-1] + list(s),
                                                  dtype=d, value=init_value, input_dim_idx=batch_dim_idx)
                  for s, d in zip(shape_list, flat_dtypes)]
        return _pack_shapes(shapes, iter(states))

    @property
    def state_shape(self):
        raise NotImplementedError("the cell must define state_shape")

    @property
    def state_dtype(self):
        raise NotImplementedError("the cell must define state_dtype")


def _is_shape(s):
    return isinstance(s, (list, tuple)) and all(isinstance(d, int) for d in s)


def _shape_leaves(shapes):
    if _is_shape(shapes):
        return [list(shapes)]
    if isinstance(shapes, dict):
        return [leaf for k in sorted(shapes) for leaf in _shape_leaves(shapes[k])]
    return [leaf for s in shapes for leaf in _shape_leaves(s)]


def _pack_shapes(shapes, it):
    if _is_shape(shapes):
        return next(it)
    if isinstance(shapes, dict):
        return {k: _pack_shapes(shapes[k], it) for k in sorted(shapes)}
    items = [_pack_shapes(s, it) for s in shapes]
    return tuple(items) if isinstance(shapes, tuple) else items


def _suffixed(attr, suffix):
    """A copy of ``attr`` whose name (when it has one) gets ``suffix``."""
    from ..param_attr import ParamAttr
    if attr is None or attr is False:
        return attr
    attr = ParamAttr._to_attr(attr)
    if attr.name is None:
        return attr
    new = ParamAttr(name=attr.name + suffix, initializer=attr.initializer, learning_rate=attr.learning_rate,
                    regularizer=attr.regularizer, trainable=attr.trainable, gradient_clip=attr.gradient_clip,
                    do_model_average=attr.do_model_average)
    return new


class _BasicGRUUnit:
    """The GRU step of Paddle's ``GRUCell`` (its contrib ``BasicGRUUnit``): gates ``[r, u]`` from
    ``concat([x, h]) @ gate_weight``, ``h' = u * h + (1 - u) * c``; parameters made at the first call,
    named ``<name>/BasicGRUUnit_<n>.w_0`` (gates), ``.w_1`` (candidate), ``.b_0``, ``.b_1``."""

    def __init__(self, name_scope, hidden_size, param_attr, bias_attr, gate_activation, activation, dtype):
        self.helper = LayerHelper("gru_unit", name=unique_name.generate(name_scope + "/BasicGRUUnit"))
        self.hidden_size = hidden_size
        self.param_attr, self.bias_attr = param_attr, bias_attr
        self.gate_activation, self.activation = gate_activation, activation
        self.dtype = dtype
        self.built = False

    def _build(self, input_size):
        h, d = self.hidden_size, self.dtype
        self.gate_weight = self.helper.create_parameter(_suffixed(self.param_attr, "_gate"), [input_size + h, 2 * h], d)
        self.candidate_weight = self.helper.create_parameter(_suffixed(self.param_attr, "_candidate"),
                                                             [input_size + h, h], d)
        self.gate_bias = self.helper.create_parameter(_suffixed(self.bias_attr, "_gate"), [2 * h], d, is_bias=True)
        self.candidate_bias = self.helper.create_parameter(_suffixed(self.bias_attr, "_candidate"), [h], d,
                                                           is_bias=True)
        self.built = True

    def __call__(self, x, h):
        L = _L()
        if not self.built:
            self._build(x.shape[-1])
        gate_act = self.gate_activation or L.sigmoid
        act = self.activation or L.tanh
        gate = gate_act(L.elementwise_add(L.matmul(L.concat([x, h], 1), self.gate_weight), self.gate_bias))
        r, u = L.split(gate, num_or_sections=2, dim=1)
        cand = L.elementwise_add(L.matmul(L.concat([x, L.elementwise_mul(r, h)], 1), self.candidate_weight),
                                 self.candidate_bias)
        c = act(cand)
        return L.elementwise_add(L.elementwise_mul(u, h),
                                 L.elementwise_mul(L.scale(u, scale=-1.0, bias=1.0), c))


class _BasicLSTMUnit:
    """The LSTM step of Paddle's ``LSTMCell`` (its contrib ``BasicLSTMUnit``): gates ``[i, j, f, o]`` from
    ``concat([x, h]) @ weight + bias``, ``forget_bias`` added to ``f``; parameters
    ``<name>/BasicLSTMUnit_<n>.w_0`` and ``.b_0``, made at the first call."""

    def __init__(self, name_scope, hidden_size, param_attr, bias_attr, gate_activation, activation, forget_bias,
                 dtype):
        L = _L()
        self.helper = LayerHelper("lstm_unit", name=unique_name.generate(name_scope + "/BasicLSTMUnit"))
        self.hidden_size = hidden_size
        self.param_attr, self.bias_attr = param_attr, bias_attr
        self.gate_activation, self.activation = gate_activation, activation
        self.dtype = dtype
        self.forget_bias = L.fill_constant([1], dtype=dtype, value=forget_bias)
        self.forget_bias.stop_gradient = False
        self.built = False

    def __call__(self, x, h, c):
        L = _L()
        if not self.built:
            size = self.hidden_size
            self.weight = self.helper.create_parameter(self.param_attr, [x.shape[-1] + size, 4 * size], self.dtype)
            self.bias = self.helper.create_parameter(self.bias_attr, [4 * size], self.dtype, is_bias=True)
            self.built = True
        gate_act = self.gate_activation or L.sigmoid
        act = self.activation or L.tanh
        gates = L.elementwise_add(L.matmul(L.concat([x, h], 1), self.weight), self.bias)
        i, j, f, o = L.split(gates, num_or_sections=4, dim=-1)
        new_c = L.elementwise_add(L.elementwise_mul(c, gate_act(L.elementwise_add(f, self.forget_bias))),
                                  L.elementwise_mul(gate_act(i), act(j)))
        new_h = L.elementwise_mul(act(new_c), gate_act(o))
        return new_h, new_c


class GRUCell(RNNCell):
    """A GRU cell: ``call(inputs, h) -> (h', h')``."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None, activation=None,
                 dtype="float32", name="GRUCell"):
        self.hidden_size = hidden_size
        self.gru_unit = _BasicGRUUnit(name, hidden_size, param_attr, bias_attr, gate_activation, activation, dtype)

    def call(self, inputs, states):
        new_hidden = self.gru_unit(inputs, states)
        return new_hidden, new_hidden

    @property
    def state_shape(self):
        return [self.hidden_size]


class LSTMCell(RNNCell):
    """An LSTM cell: ``call(inputs, [h, c]) -> (h', [h', c'])``."""

    def __init__(self, hidden_size, param_attr=None, bias_attr=None, gate_activation=None, activation=None,
                 forget_bias=1.0, dtype="float32", name="LSTMCell"):
        self.hidden_size = hidden_size
        self.lstm_unit = _BasicLSTMUnit(name, hidden_size, param_attr, bias_attr, gate_activation, activation,
                                        forget_bias, dtype)

    def call(self, inputs, states):
        pre_hidden, pre_cell = states
        new_hidden, new_cell = self.lstm_unit(inputs, pre_hidden, pre_cell)
        return new_hidden, [new_hidden, new_cell]

    @property
    def state_shape(self):
        return [[self.hidden_size], [self.hidden_size]]


# ---------------------------------------------------------------------------- rnn
def _transpose_batch_time(x):
    return _L().transpose(x, [1, 0] + list(range(2, len(x.shape))))


def _last_step(x):
    L = _L()
    return L.squeeze(L.slice(x, axes=[0], starts=[-1], ends=[2 ** 31 - 1]), axes=[0])


def rnn(cell, inputs, initial_states=None, sequence_length=None, time_major=False, is_reverse=False, **kwargs):
    """Run ``cell`` over the time steps of ``inputs`` (``[batch, time, ...]``, or ``[time, batch,
    ...]`` with ``time_major``): a ``StaticRNN``. With ``sequence_length`` the states stop changing
    past each sequence's end. Returns ``(outputs, final_states)``."""
    L = _L()
    for x in flatten(inputs):
        _check_var(x, "rnn", "inputs")
    if sequence_length is not None:
        _check_var(sequence_length, "rnn", "sequence_length")

    def _maybe_copy(state, new_state, step_mask):
        return L.elementwise_sub(L.elementwise_mul(new_state, step_mask, axis=0),
                                 L.elementwise_mul(state, L.scale(step_mask, bias=-1.0), axis=0))

    def _switch_grad(x, stop=False):
        x.stop_gradient = stop
        return x

    if initial_states is None:
        initial_states = cell.get_initial_states(batch_ref=inputs, batch_dim_idx=1 if time_major else 0)
    initial_states = map_structure(_switch_grad, initial_states)
    if not time_major:
        inputs = map_structure(_transpose_batch_time, inputs)
    mask = None
    if sequence_length is not None:
        mask = L.sequence_mask(sequence_length, maxlen=_dim(L, flatten(inputs)[0], 0),
                               dtype=flatten(initial_states)[0].dtype)
        mask = L.transpose(mask, [1, 0])
    if is_reverse:
        inputs = map_structure(lambda x: L.reverse(x, axis=[0]), inputs)
        mask = L.reverse(mask, axis=[0]) if mask is not None else None
    static = StaticRNN()
    with static.step():
        inputs = map_structure(static.step_input, inputs)
        states = map_structure(static.memory, initial_states)
        copy_states = map_structure(lambda x: x, states)
        outputs, new_states = cell(inputs, copy_states, **kwargs)
        same_structure(states, new_states)
        if mask is not None:
            step_mask = static.step_input(mask)
            new_states = map_structure(partial(_maybe_copy, step_mask=step_mask), states, new_states)
        map_structure(static.update_memory, states, new_states)
        flat_outputs = flatten(outputs)
        map_structure(static.step_output, outputs)
        map_structure(static.step_output, new_states)
    rnn_out = static()
    rnn_out = rnn_out if isinstance(rnn_out, list) else [rnn_out]
    final_outputs = pack_sequence_as(outputs, rnn_out[:len(flat_outputs)])
    final_states = pack_sequence_as(new_states, [_last_step(x) for x in rnn_out[len(flat_outputs):]])
    if is_reverse:
        final_outputs = map_structure(lambda x: L.reverse(x, axis=[0]), final_outputs)
    if not time_major:
        final_outputs = map_structure(_transpose_batch_time, final_outputs)
    return final_outputs, final_states


def _dim(L, x, i):
    """Dimension ``i`` of ``x`` at run time, an int32 ``[1]`` tensor (``shape(x)[i]``)."""
    return L.slice(L.shape(x), axes=[0], starts=[i], ends=[i + 1])


# ---------------------------------------------------------------------------- decoders
class Decoder:
    """A decoder for ``dynamic_decode``: ``initialize``, ``step``, ``finalize``."""

    def initialize(self, inits):
        raise NotImplementedError

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self):
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over ``cell``: each step keeps the ``beam_size`` best continuations of each batch
    entry; ``finalize`` follows the parents back (``gather_tree``)."""

    OutputWrapper = collections.namedtuple("OutputWrapper", ("scores", "predicted_ids", "parent_ids"))
    StateWrapper = collections.namedtuple("StateWrapper", ("cell_states", "log_probs", "finished", "lengths"))

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None, output_fn=None):
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = start_token
        self.end_token = end_token
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x, beam_size):
        """``[batch, ...]`` to ``[batch * beam_size, ...]``, each entry repeated ``beam_size`` times."""
        L = _L()
        _check_var(x, "BeamSearchDecoder.tile_beam_merge_with_batch", "x")
        x = L.unsqueeze(x, [1])
        expand_times = [1] * len(x.shape)
        expand_times[1] = beam_size
        x = L.expand(x, expand_times)
        x = L.transpose(x, list(range(2, len(x.shape))) + [0, 1])
        x = L.reshape(x, shape=[0] * (len(x.shape) - 2) + [-1])
        return L.transpose(x, [len(x.shape) - 1] + list(range(0, len(x.shape) - 1)))

    def _split_batch_beams(self, x):
        return _L().reshape(x, shape=[-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x):
        return _L().reshape(x, shape=[-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x):
        L = _L()
        x = L.unsqueeze(x, [1])
        expand_times = [1] * len(x.shape)
        expand_times[1] = self.beam_size
        return L.expand(x, expand_times)

    def _mask_probs(self, probs, finished):
        L = _L()
        finished = L.cast(finished, dtype=probs.dtype)
        return L.elementwise_sub(
            L.elementwise_mul(L.expand(L.unsqueeze(finished, [2]), [1, 1, self.vocab_size]), self.noend_mask_tensor,
                              axis=-1),
            L.elementwise_mul(probs, L.scale(finished, bias=-1.0), axis=0))

    def _gather(self, x, indices, batch_size):
        L = _L()
        if batch_size.dtype != indices.dtype:
            batch_size = L.cast(batch_size, indices.dtype)
        batch_size.stop_gradient = True
        batch_pos = L.expand(L.unsqueeze(L.range(0, batch_size, 1, dtype=indices.dtype), [1]), [1, self.beam_size])
        coords = L.stack([batch_pos, indices], axis=2)
        coords.stop_gradient = True
        return L.gather_nd(x, coords)

    def initialize(self, initial_cell_states):
        L = _L()
        self.kinf = 1e9
        state = flatten(initial_cell_states)[0]
        self.batch_size = _dim(L, state, 0)
        self.start_token_tensor = L.fill_constant(shape=[1], dtype="int64", value=self.start_token)
        self.end_token_tensor = L.fill_constant(shape=[1], dtype="int64", value=self.end_token)
        init_cell_states = map_structure(self._expand_to_beam_size, initial_cell_states)
        init_inputs = L.expand(L.unsqueeze(L.expand(self.start_token_tensor, self.batch_size), [1]),
                               [1, self.beam_size])
        log_probs = L.expand(L.assign(np.array([[0.0] + [-self.kinf] * (self.beam_size - 1)], dtype="float32")),
                             [self.batch_size, 1])
        init_finished = L.fill_constant_batch_size_like(input=state, shape=[-1, self.beam_size], dtype="bool",
                                                        value=False, force_cpu=True)
        init_lengths = L.zeros_like(init_inputs)
        init_inputs = self.embedding_fn(init_inputs) if self.embedding_fn else init_inputs
        return init_inputs, self.StateWrapper(init_cell_states, log_probs, init_finished, init_lengths), init_finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        L = _L()
        self.vocab_size = logits.shape[-1]
        self.vocab_size_tensor = L.fill_constant(shape=[1], dtype="int64", value=self.vocab_size)
        noend = [-self.kinf] * self.vocab_size
        noend[self.end_token] = 0
        self.noend_mask_tensor = L.assign(np.array(noend, "float32"))
        step_log_probs = L.log(L.softmax(logits))
        step_log_probs = self._mask_probs(step_log_probs, beam_state.finished)
        log_probs = L.elementwise_add(x=step_log_probs, y=beam_state.log_probs, axis=0)
        scores = L.reshape(log_probs, [-1, self.beam_size * self.vocab_size])
        topk_scores, topk_indices = L.topk(input=scores, k=self.beam_size)
        beam_indices = L.elementwise_floordiv(topk_indices, self.vocab_size_tensor)
        token_indices = L.elementwise_mod(topk_indices, self.vocab_size_tensor)
        next_log_probs = self._gather(L.reshape(log_probs, [-1, self.beam_size * self.vocab_size]), topk_indices,
                                      self.batch_size)
        next_cell_states = map_structure(lambda x: self._gather(x, beam_indices, self.batch_size), next_cell_states)
        next_finished = self._gather(beam_state.finished, beam_indices, self.batch_size)
        next_lengths = self._gather(beam_state.lengths, beam_indices, self.batch_size)
        next_lengths = L.elementwise_add(next_lengths, L.cast(L.logical_not(next_finished), beam_state.lengths.dtype))
        next_finished = L.logical_or(next_finished, L.equal(token_indices, self.end_token_tensor))
        return (self.OutputWrapper(topk_scores, token_indices, beam_indices),
                self.StateWrapper(next_cell_states, next_log_probs, next_finished, next_lengths))

    def step(self, time, inputs, states, **kwargs):
        inputs = map_structure(self._merge_batch_beams, inputs)
        cell_states = map_structure(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = map_structure(self._split_batch_beams, cell_outputs)
        next_cell_states = map_structure(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        output, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        sample_ids = output.predicted_ids
        sample_ids.stop_gradient = True
        next_inputs = self.embedding_fn(sample_ids) if self.embedding_fn else sample_ids
        return output, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        return _L().gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self):
        return True


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False, impute_finished=False,
                   is_test=False, return_length=False, **kwargs):
    """Run ``decoder`` step by step in a ``While`` until every entry finished (or ``max_step_num``
    steps). Returns ``(final_outputs, final_states)`` (and the sequence lengths with
    ``return_length``); outputs are ``[batch, time, ...]`` unless ``output_time_major``."""
    L = _L()
    initial_inputs, initial_states, initial_finished = decoder.initialize(inits)
    global_inputs, global_states, global_finished = initial_inputs, initial_states, initial_finished
    global_finished.stop_gradient = True
    step_idx = L.fill_constant(shape=[1], dtype="int64", value=0)
    cond = L.logical_not(L.reduce_all(initial_finished))
    if max_step_num is not None:
        max_step_num = L.fill_constant(shape=[1], dtype="int64", value=max_step_num)
    loop = While(cond, is_test=is_test)
    sequence_lengths = L.cast(L.zeros_like(initial_finished), "int64")
    sequence_lengths.stop_gradient = True
    if is_test:
        inputs = map_structure(lambda x: x, initial_inputs)
        states = map_structure(lambda x: x, initial_states)
    else:
        inputs_arrays = map_structure(lambda x: L.array_write(x, step_idx), initial_inputs)
        states_arrays = map_structure(lambda x: L.array_write(x, step_idx), initial_states)

    def _maybe_copy(state, new_state, step_mask):
        state_dtype = state.dtype
        if convert_dtype(state_dtype) == "bool":
            state = L.cast(state, dtype="float32")
            new_state = L.cast(new_state, dtype="float32")
        if step_mask.dtype != state.dtype:
            step_mask = L.cast(step_mask, dtype=state.dtype)
            step_mask.stop_gradient = True
        new_state = L.elementwise_sub(L.elementwise_mul(state, step_mask, axis=0),
                                      L.elementwise_mul(new_state, L.scale(step_mask, bias=-1.0), axis=0))
        if convert_dtype(state_dtype) == "bool":
            new_state = L.cast(new_state, dtype=state_dtype)
        return new_state

    def _create_array_out_of_while(dtype):
        program = default_main_program()
        current = program.current_block_idx
        program.current_block_idx = program.current_block().parent_idx
        array = L.create_array(dtype)
        program.current_block_idx = current
        return array

    with loop.block():
        if not is_test:
            inputs = map_structure(lambda array: L.array_read(array, step_idx), inputs_arrays)
            states = map_structure(lambda array: L.array_read(array, step_idx), states_arrays)
        outputs, next_states, next_inputs, next_finished = decoder.step(step_idx, inputs, states, **kwargs)
        if not decoder.tracks_own_finished:
            next_finished = L.logical_or(next_finished, global_finished)
            next_sequence_lengths = L.elementwise_add(
                sequence_lengths, L.cast(L.logical_not(global_finished), sequence_lengths.dtype))
            if impute_finished:
                next_states = map_structure(lambda x, y: _maybe_copy(x, y, global_finished), states, next_states)
        else:
            if not hasattr(next_states, "lengths"):
                warnings.warn("`next_states` has no `lengths` attribute, the returned `sequence_lengths` would be "
                              "all zeros.")
            next_sequence_lengths = getattr(next_states, "lengths", sequence_lengths)
        outputs_arrays = map_structure(lambda x: _create_array_out_of_while(x.dtype), outputs)
        map_structure(lambda x, x_array: L.array_write(x, i=step_idx, array=x_array), outputs, outputs_arrays)
        L.increment(x=step_idx, value=1.0, in_place=True)
        L.assign(next_finished, global_finished)
        L.assign(next_sequence_lengths, sequence_lengths)
        if is_test:
            map_structure(L.assign, next_inputs, global_inputs)
            map_structure(L.assign, next_states, global_states)
        else:
            map_structure(lambda x, x_array: L.array_write(x, i=step_idx, array=x_array), next_inputs, inputs_arrays)
            map_structure(lambda x, x_array: L.array_write(x, i=step_idx, array=x_array), next_states, states_arrays)
        if max_step_num is not None:
            L.logical_and(L.logical_not(L.reduce_all(global_finished)), L.less_equal(step_idx, max_step_num), cond)
        else:
            L.logical_not(L.reduce_all(global_finished), cond)
    final_outputs = map_structure(lambda array: L.tensor_array_to_tensor(array, axis=0, use_stack=True)[0],
                                  outputs_arrays)
    if is_test:
        final_states = global_states
    else:
        final_states = map_structure(lambda array: L.array_read(array, step_idx), states_arrays)
    try:
        final_outputs, final_states = decoder.finalize(final_outputs, final_states, sequence_lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = map_structure(_transpose_batch_time, final_outputs)
    return (final_outputs, final_states, sequence_lengths) if return_length else (final_outputs, final_states)


class DecodeHelper:
    """How a ``BasicDecoder`` starts, samples and feeds its next step."""

    def initialize(self):
        pass

    def sample(self, time, outputs, states):
        pass

    def next_inputs(self, time, outputs, states, sample_ids):
        pass


class TrainingHelper(DecodeHelper):
    """Teacher forcing: step ``t`` reads ``inputs[:, t]`` (``inputs[t]`` when ``time_major``); an entry
    finishes at its ``sequence_length``."""

    def __init__(self, inputs, sequence_length, time_major=False):
        L = _L()
        self.inputs = inputs
        self.sequence_length = sequence_length
        self.time_major = time_major
        self.inputs_ = map_structure(
            lambda x: L.pad(x, paddings=([0, 1] + [0, 0] * (len(x.shape) - 1)) if time_major else
                            ([0, 0, 0, 1] + [0, 0] * (len(x.shape) - 2))), self.inputs)

    def _step_of(self, x, t):
        L = _L()
        axis = 0 if self.time_major else 1
        return L.squeeze(L.slice(x, axes=[axis], starts=[t], ends=[t + 1] if isinstance(t, int) else
                                 [L.elementwise_add(t, L.fill_constant([1], t.dtype, 1))]), axes=[axis])

    def initialize(self):
        L = _L()
        init_finished = L.equal(self.sequence_length,
                                L.fill_constant(shape=[1], dtype=self.sequence_length.dtype, value=0))
        init_inputs = map_structure(lambda x: self._step_of(x, 0), self.inputs)
        return init_inputs, init_finished

    def sample(self, time, outputs, states):
        return _L().argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        L = _L()
        time = L.cast(time, "int32") if convert_dtype(time.dtype) != "int32" else time
        if self.sequence_length.dtype != time.dtype:
            self.sequence_length = L.cast(self.sequence_length, time.dtype)
        next_time = L.elementwise_add(time, L.fill_constant([1], "int32", 1))
        finished = L.less_equal(self.sequence_length, next_time)
        next_inputs = map_structure(lambda x: self._step_of(x, next_time), self.inputs_)
        return finished, next_inputs, states


class GreedyEmbeddingHelper(DecodeHelper):
    """Greedy decoding: the arg-max id feeds the next step through ``embedding_fn``; an entry
    finishes at ``end_token``."""

    def __init__(self, embedding_fn, start_tokens, end_token):
        L = _L()
        self.embedding_fn = embedding_fn
        self.start_tokens = start_tokens
        self.end_token = L.fill_constant(shape=[1], dtype="int64", value=end_token)

    def initialize(self):
        L = _L()
        init_finished = L.fill_constant_batch_size_like(input=self.start_tokens, shape=[-1], dtype="bool",
                                                        value=False, force_cpu=True)
        return self.embedding_fn(self.start_tokens), init_finished

    def sample(self, time, outputs, states):
        return _L().argmax(outputs, axis=-1)

    def next_inputs(self, time, outputs, states, sample_ids):
        finished = _L().equal(sample_ids, self.end_token)
        return finished, self.embedding_fn(sample_ids), states


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """Sampling decoding: the next id is drawn from ``softmax(outputs / softmax_temperature)``."""

    def __init__(self, embedding_fn, start_tokens, end_token, softmax_temperature=None, seed=None):
        super().__init__(embedding_fn, start_tokens, end_token)
        L = _L()
        self.softmax_temperature = L.fill_constant(shape=[1], dtype="float32", value=softmax_temperature) \
            if softmax_temperature is not None else None
        self.seed = seed

    def sample(self, time, outputs, states):
        L = _L()
        logits = L.elementwise_div(outputs, self.softmax_temperature) if self.softmax_temperature is not None \
            else outputs
        probs = L.softmax(logits)
        probs.stop_gradient = True
        return L.sampling_id(probs, seed=self.seed or 0, dtype=self.start_tokens.dtype)


class BasicDecoder(Decoder):
    """A decoder over ``cell`` driven by a ``DecodeHelper`` (teacher forcing, greedy, sampling)."""

    class OutputWrapper(collections.namedtuple("OutputWrapper", ("cell_outputs", "sample_ids"))):
        pass

    def __init__(self, cell, helper, output_fn=None):
        self.cell = cell
        self.helper = helper
        self.output_fn = output_fn

    def initialize(self, initial_cell_states):
        initial_inputs, initial_finished = self.helper.initialize()
        return initial_inputs, initial_cell_states, initial_finished

    def step(self, time, inputs, states, **kwargs):
        cell_outputs, cell_states = self.cell(inputs, states, **kwargs)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        sample_ids = self.helper.sample(time=time, outputs=cell_outputs, states=cell_states)
        sample_ids.stop_gradient = True
        finished, next_inputs, next_states = self.helper.next_inputs(time=time, outputs=cell_outputs,
                                                                     states=cell_states, sample_ids=sample_ids)
        return self.OutputWrapper(cell_outputs, sample_ids), next_states, next_inputs, finished

    def finalize(self, outputs, final_states, sequence_lengths):
        return outputs, final_states
