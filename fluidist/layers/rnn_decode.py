"""Paddle 1.8's decoding API (``layers/rnn.py``): ``Decoder``, ``BeamSearchDecoder``, ``dynamic_decode``
(a ``While`` over the decoder's steps), ``DecodeHelper``, ``TrainingHelper``, ``GreedyEmbeddingHelper``,
``SampleEmbeddingHelper`` (``rnn_helpers.py``) and ``BasicDecoder``; re-exported by ``layers/rnn.py``. Like ``rnn_api``,
it looks the public layers up when it runs (the layer package imports it)."""
from __future__ import annotations

import collections
import warnings
from typing import Any, Callable

import numpy as np

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable, default_main_program
from .nest import flatten, map_structure
from .rnn_api import RNNCell, _L, _check_var, _dim, _transpose_batch_time
from .rnn_helpers import DecodeHelper, GreedyEmbeddingHelper, SampleEmbeddingHelper, TrainingHelper  # noqa: F401
from .while_loop import While

__all__ = ["Decoder", "BeamSearchDecoder", "dynamic_decode", "DecodeHelper", "TrainingHelper",
           "GreedyEmbeddingHelper", "SampleEmbeddingHelper", "BasicDecoder"]


# ---------------------------------------------------------------------------- decoders
class Decoder:
    """The base of decoders that ``dynamic_decode`` runs: ``initialize``, then ``step`` until every
    entry has finished, then ``finalize``.

    ``BeamSearchDecoder`` and ``BasicDecoder`` are the ready ones; a subclass defines
    ``initialize`` and ``step`` (``finalize`` is optional).

    Examples:
        >>> class CountDown(fluid.layers.Decoder):
        ...     def initialize(self, inits):
        ...         return inits, inits, fluid.layers.less_equal(inits, fluid.layers.zeros_like(inits))
        ...     def step(self, time, inputs, states, **kwargs):
        ...         left = fluid.layers.scale(states, bias=-1.0)
        ...         return left, left, left, fluid.layers.less_equal(left, fluid.layers.zeros_like(left))
        >>> start = fluid.layers.fill_constant(shape=[2], dtype="float32", value=3.0)
        >>> outputs, _ = fluid.layers.dynamic_decode(CountDown(), inits=start, output_time_major=True)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[outputs])[0][:, 0].tolist()
        [2.0, 1.0, 0.0]
    """

    def initialize(self, inits: Any) -> tuple[Any, Any, Variable]:
        """``(initial_inputs, initial_states, initial_finished)`` from ``dynamic_decode``'s ``inits``;
        ``initial_finished`` is a bool ``[batch]`` (or ``[batch, beam]``)."""
        raise NotImplementedError

    def step(self, time: Variable, inputs: Any, states: Any, **kwargs: Any) -> tuple[Any, Any, Any, Variable]:
        """``(outputs, next_states, next_inputs, finished)`` of step ``time`` (int64 ``[1]``)."""
        raise NotImplementedError

    def finalize(self, outputs: Any, final_states: Any, sequence_lengths: Variable) -> tuple[Any, Any]:
        """``(final_outputs, final_states)`` from the stacked outputs (optional)."""
        raise NotImplementedError

    @property
    def tracks_own_finished(self) -> bool:
        """True when ``step`` keeps finished entries as they are (``dynamic_decode`` then does not)."""
        return False


class BeamSearchDecoder(Decoder):
    """Beam search over a cell, built as Paddle 1.8 builds it: each step keeps the ``beam_size`` best
    continuations of each batch entry (by summed log-probability); ``finalize`` follows the parents
    back (``gather_tree``) to whole sequences.

    The cell's states are ``[batch * beam_size, ...]`` inside the search; states computed from
    per-entry data (an encoder's output) are tiled with ``tile_beam_merge_with_batch``.

    Args:
        cell: an ``RNNCell``.
        start_token: the id that starts every sequence.
        end_token: the id that ends a sequence.
        beam_size: how many continuations to keep.
        embedding_fn: a function from ids to the cell's inputs (``fluid.embedding``).
        output_fn: a function from the cell's outputs to logits over the vocabulary.

    Examples:
        >>> enc = fluid.data(name="enc", shape=[None, 8], dtype="float32")
        >>> emb = lambda ids: fluid.embedding(ids, size=[20, 8], param_attr=fluid.ParamAttr(name="emb"))
        >>> proj = lambda h: fluid.layers.fc(h, size=20, num_flatten_dims=len(h.shape) - 1,
        ...                                  param_attr=fluid.ParamAttr(name="proj"))
        >>> decoder = fluid.layers.BeamSearchDecoder(fluid.layers.GRUCell(hidden_size=8), start_token=0,
        ...                                          end_token=1, beam_size=3, embedding_fn=emb, output_fn=proj)
        >>> ids, _ = fluid.layers.dynamic_decode(decoder, inits=enc, max_step_num=5)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> out, = exe.run(feed={"enc": np.zeros((2, 8), "float32")}, fetch_list=[ids])
        >>> out.shape[0], out.shape[2]
        (2, 3)
    """

    OutputWrapper = collections.namedtuple("OutputWrapper", ("scores", "predicted_ids", "parent_ids"))
    StateWrapper = collections.namedtuple("StateWrapper", ("cell_states", "log_probs", "finished", "lengths"))

    def __init__(self, cell: RNNCell, start_token: int, end_token: int, beam_size: int,
                 embedding_fn: Callable[[Variable], Any] | None = None,
                 output_fn: Callable[[Any], Variable] | None = None):
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = start_token
        self.end_token = end_token
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x: Variable, beam_size: int) -> Variable:
        """``[batch, ...]`` to ``[batch * beam_size, ...]``, each entry repeated ``beam_size`` times.

        Args:
            x: a Variable ``[batch, ...]``.
            beam_size: the repeats.

        Returns:
            A Variable ``[batch * beam_size, ...]``.
        """
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

    def initialize(self, initial_cell_states: Any) -> tuple[Any, Any, Variable]:
        """The start tokens (embedded), the cell states tiled to the beams, none finished."""
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

    def step(self, time: Variable, inputs: Any, states: Any, **kwargs: Any) -> tuple[Any, Any, Any, Variable]:
        """One search step: the cell, then the ``beam_size`` best continuations per entry."""
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

    def finalize(self, outputs: Any, final_states: Any, sequence_lengths: Variable) -> tuple[Any, Any]:
        """The whole id sequences (``gather_tree`` over the steps' ids and parents)."""
        return _L().gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self) -> bool:
        """True: finished beams keep their scores in ``step``."""
        return True


def _maybe_copy(L, state, new_state, step_mask):
    """``new_state`` where ``step_mask`` is 0, ``state`` (kept) where it is 1 (a finished entry)."""
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


def _array_outside_while(L, dtype):
    """A tensor array created in the block enclosing the current (While) block."""
    program = default_main_program()
    current = program.current_block_idx
    program.current_block_idx = program.current_block().parent_idx
    array = L.create_array(dtype)
    program.current_block_idx = current
    return array


def dynamic_decode(decoder: Decoder, inits: Any = None, max_step_num: int | None = None,
                   output_time_major: bool = False, impute_finished: bool = False, is_test: bool = False,
                   return_length: bool = False, **kwargs: Any) -> tuple[Any, ...]:
    """Run a decoder step by step, in a ``While``, until every entry has finished.

    As in Paddle 1.8, training keeps each step's inputs and states in arrays (for the gradient).

    Args:
        decoder: a ``Decoder`` (``BeamSearchDecoder``, ``BasicDecoder``, ...).
        inits: passed to ``decoder.initialize`` (the initial cell states).
        max_step_num: stop after this many steps even when entries are still running.
        output_time_major: return outputs ``[time, batch, ...]`` instead of ``[batch, time, ...]``.
        impute_finished: keep finished entries' states unchanged (decoders not tracking their own).
        is_test: an inference program (no arrays kept for a gradient).
        return_length: also return each entry's length.
        **kwargs: passed on to ``decoder.step``.

    Returns:
        ``(final_outputs, final_states)``, and the int64 lengths with ``return_length``.

    Examples:
        >>> enc = fluid.data(name="enc", shape=[None, 8], dtype="float32")
        >>> tgt = fluid.data(name="tgt", shape=[None, 6, 8], dtype="float32")
        >>> n = fluid.data(name="n", shape=[None], dtype="int64")
        >>> decoder = fluid.layers.BasicDecoder(fluid.layers.GRUCell(hidden_size=8),
        ...                                     fluid.layers.TrainingHelper(tgt, n))
        >>> outputs, states, lengths = fluid.layers.dynamic_decode(decoder, inits=enc, return_length=True)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> feed = {"enc": np.zeros((2, 8), "float32"), "tgt": np.ones((2, 6, 8), "float32"),
        ...         "n": np.array([6, 3], "int64")}
        >>> exe.run(feed=feed, fetch_list=[lengths])[0].tolist()
        [6, 3]
    """
    L = _L()
    initial_inputs, initial_states, initial_finished = decoder.initialize(inits)
    global_inputs, global_states, global_finished = initial_inputs, initial_states, initial_finished
    global_finished.stop_gradient = True
    step_idx = L.fill_constant(shape=[1], dtype="int64", value=0)
    cond = L.logical_not(L.reduce_all(initial_finished))
    max_steps = None if max_step_num is None else L.fill_constant(shape=[1], dtype="int64", value=max_step_num)
    loop = While(cond, is_test=is_test)
    sequence_lengths = L.cast(L.zeros_like(initial_finished), "int64")
    sequence_lengths.stop_gradient = True
    if is_test:
        inputs = map_structure(lambda x: x, initial_inputs)
        states = map_structure(lambda x: x, initial_states)
    else:
        inputs_arrays = map_structure(lambda x: L.array_write(x, step_idx), initial_inputs)
        states_arrays = map_structure(lambda x: L.array_write(x, step_idx), initial_states)

    with loop.block():
        if not is_test:
            inputs = map_structure(lambda array: L.array_read(array, step_idx), inputs_arrays)
            states = map_structure(lambda array: L.array_read(array, step_idx), states_arrays)
        outputs, next_states, next_inputs, next_finished = decoder.step(step_idx, inputs, states, **kwargs)
        next_finished, next_sequence_lengths, next_states = _track_finished(
            L, decoder, states, next_states, next_finished, global_finished, sequence_lengths, impute_finished)
        outputs_arrays = map_structure(lambda x: _array_outside_while(L, x.dtype), outputs)
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
        if max_steps is not None:
            L.logical_and(L.logical_not(L.reduce_all(global_finished)), L.less_equal(step_idx, max_steps), cond)
        else:
            L.logical_not(L.reduce_all(global_finished), cond)
    final_outputs = map_structure(lambda array: L.tensor_array_to_tensor(array, axis=0, use_stack=True)[0],
                                  outputs_arrays)
    if is_test:
        final_states = global_states
    else:
        final_states = map_structure(lambda array: L.array_read(array, step_idx), states_arrays)
    return _finalize(decoder, final_outputs, final_states, sequence_lengths, output_time_major, return_length)


def _track_finished(L, decoder, states, next_states, next_finished, global_finished, sequence_lengths,
                    impute_finished):
    """``(next_finished, next_sequence_lengths, next_states)`` of a step: finished entries stay
    finished and stop growing (and keep their states with ``impute_finished``), unless the decoder
    tracks that itself (then the lengths are its states' ``lengths``)."""
    if decoder.tracks_own_finished:
        if not hasattr(next_states, "lengths"):
            warnings.warn("`next_states` has no `lengths` attribute, the returned `sequence_lengths` would be "
                          "all zeros.")
        return next_finished, getattr(next_states, "lengths", sequence_lengths), next_states
    next_finished = L.logical_or(next_finished, global_finished)
    next_sequence_lengths = L.elementwise_add(
        sequence_lengths, L.cast(L.logical_not(global_finished), sequence_lengths.dtype))
    if impute_finished:
        next_states = map_structure(lambda x, y: _maybe_copy(L, x, y, global_finished), states, next_states)
    return next_finished, next_sequence_lengths, next_states


def _finalize(decoder, final_outputs, final_states, sequence_lengths, output_time_major, return_length):
    """The decoder's ``finalize`` (when it has one), batch-major outputs unless asked otherwise."""
    try:
        final_outputs, final_states = decoder.finalize(final_outputs, final_states, sequence_lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = map_structure(_transpose_batch_time, final_outputs)
    return (final_outputs, final_states, sequence_lengths) if return_length else (final_outputs, final_states)


class BasicDecoder(Decoder):
    """A decoder over a cell driven by a ``DecodeHelper``: teacher forcing (``TrainingHelper``),
    greedy (``GreedyEmbeddingHelper``) or sampling (``SampleEmbeddingHelper``) decoding.

    Each step's outputs are ``OutputWrapper(cell_outputs, sample_ids)``.

    Args:
        cell: an ``RNNCell``.
        helper: a ``DecodeHelper``.
        output_fn: a function applied to the cell's outputs (a projection to logits).

    Examples:
        >>> enc = fluid.data(name="enc", shape=[None, 8], dtype="float32")
        >>> tgt = fluid.data(name="tgt", shape=[None, 6, 8], dtype="float32")
        >>> n = fluid.data(name="n", shape=[None], dtype="int64")
        >>> proj = lambda h: fluid.layers.fc(h, size=20, num_flatten_dims=len(h.shape) - 1)
        >>> decoder = fluid.layers.BasicDecoder(fluid.layers.GRUCell(hidden_size=8),
        ...                                     fluid.layers.TrainingHelper(tgt, n), output_fn=proj)
        >>> outputs, _ = fluid.layers.dynamic_decode(decoder, inits=enc)
        >>> outputs.cell_outputs.shape
        (-1, -1, 20)
    """

    class OutputWrapper(collections.namedtuple("OutputWrapper", ("cell_outputs", "sample_ids"))):
        pass

    def __init__(self, cell: RNNCell, helper: Any, output_fn: Callable[[Any], Any] | None = None):
        self.cell = cell
        self.helper = helper
        self.output_fn = output_fn

    def initialize(self, initial_cell_states: Any) -> tuple[Any, Any, Variable]:
        """The helper's first inputs, the given cell states, the helper's finished flags."""
        initial_inputs, initial_finished = self.helper.initialize()
        return initial_inputs, initial_cell_states, initial_finished

    def step(self, time: Variable, inputs: Any, states: Any, **kwargs: Any) -> tuple[Any, Any, Any, Variable]:
        """The cell, ``output_fn``, then the helper's sample and next inputs."""
        cell_outputs, cell_states = self.cell(inputs, states, **kwargs)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        sample_ids = self.helper.sample(time=time, outputs=cell_outputs, states=cell_states)
        sample_ids.stop_gradient = True
        finished, next_inputs, next_states = self.helper.next_inputs(time=time, outputs=cell_outputs,
                                                                     states=cell_states, sample_ids=sample_ids)
        return self.OutputWrapper(cell_outputs, sample_ids), next_states, next_inputs, finished

    def finalize(self, outputs: Any, final_states: Any, sequence_lengths: Variable) -> tuple[Any, Any]:
        """The outputs and states as they are."""
        return outputs, final_states
