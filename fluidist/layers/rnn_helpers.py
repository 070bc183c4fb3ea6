"""The helpers of ``BasicDecoder`` (Paddle 1.8's ``layers/rnn.py``): ``DecodeHelper``, ``TrainingHelper``
(teacher forcing), ``GreedyEmbeddingHelper`` and ``SampleEmbeddingHelper``; re-exported by
``rnn_decode.py`` and ``rnn.py``. Like ``rnn_api``, they look the public layers up when they run."""
from __future__ import annotations

from typing import Any, Callable

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from .nest import map_structure
from .rnn_api import _L

__all__ = ["DecodeHelper", "TrainingHelper", "GreedyEmbeddingHelper", "SampleEmbeddingHelper"]


class DecodeHelper:
    """The base of ``BasicDecoder``'s helpers: how decoding starts, picks each step's ids and feeds
    the next step.

    A subclass defines the three methods; ``TrainingHelper``, ``GreedyEmbeddingHelper`` and
    ``SampleEmbeddingHelper`` are the usual ones.

    Examples:
        >>> class FeedOutputs(fluid.layers.DecodeHelper):
        ...     def __init__(self, first, steps):
        ...         self.first, self.steps = first, steps
        ...     def initialize(self):
        ...         done = fluid.layers.fill_constant_batch_size_like(self.first, [-1], "bool", False)
        ...         return self.first, done
        ...     def sample(self, time, outputs, states):
        ...         return fluid.layers.argmax(outputs, axis=-1)
        ...     def next_inputs(self, time, outputs, states, sample_ids):
        ...         t = fluid.layers.expand(fluid.layers.cast(time, "int64"), [2])     # one per batch row
        ...         done = fluid.layers.greater_equal(t, fluid.layers.expand(self.steps, [2]))
        ...         return done, outputs, states
        >>> x = fluid.data(name="x", shape=[2, 4], dtype="float32")
        >>> steps = fluid.layers.fill_constant(shape=[1], dtype="int64", value=2)
        >>> decoder = fluid.layers.BasicDecoder(fluid.layers.GRUCell(hidden_size=4), FeedOutputs(x, steps))
        >>> outputs, _ = fluid.layers.dynamic_decode(decoder, inits=x)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[outputs.cell_outputs])[0].shape
        (2, 3, 4)
    """

    def initialize(self) -> Any:
        """``(initial_inputs, initial_finished)``: the first step's inputs and a bool ``[batch]``."""

    def sample(self, time: Variable, outputs: Any, states: Any) -> Any:
        """The ids chosen at step ``time`` from the cell's ``outputs``."""

    def next_inputs(self, time: Variable, outputs: Any, states: Any, sample_ids: Any) -> Any:
        """``(finished, next_inputs, next_states)`` after step ``time``."""


class TrainingHelper(DecodeHelper):
    """Teacher forcing, for training a decoder: step ``t`` reads the given ``inputs[:, t]``, whatever
    the decoder predicted; an entry finishes at its ``sequence_length``.

    Args:
        inputs: the target-side inputs ``[batch, time, ...]`` (``[time, batch, ...]`` with
            ``time_major``), or a nest of them.
        sequence_length: int ``[batch]`` lengths.
        time_major: the inputs are time-major.

    Examples:
        >>> enc = fluid.data(name="enc", shape=[None, 8], dtype="float32")
        >>> tgt = fluid.data(name="tgt", shape=[None, 6, 8], dtype="float32")
        >>> n = fluid.data(name="n", shape=[None], dtype="int64")
        >>> decoder = fluid.layers.BasicDecoder(fluid.layers.GRUCell(hidden_size=8),
        ...                                     fluid.layers.TrainingHelper(tgt, n))
        >>> outputs, _ = fluid.layers.dynamic_decode(decoder, inits=enc)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> feed = {"enc": np.zeros((2, 8), "float32"), "tgt": np.ones((2, 6, 8), "float32"),
        ...         "n": np.array([6, 3], "int64")}
        >>> exe.run(feed=feed, fetch_list=[outputs.cell_outputs])[0].shape
        (2, 6, 8)
    """

    def __init__(self, inputs: Any, sequence_length: Variable, time_major: bool = False):
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

    def initialize(self) -> Any:
        """Step 0 of ``inputs``, and which entries are empty."""
        L = _L()
        init_finished = L.equal(self.sequence_length,
                                L.fill_constant(shape=[1], dtype=self.sequence_length.dtype, value=0))
        init_inputs = map_structure(lambda x: self._step_of(x, 0), self.inputs)
        return init_inputs, init_finished

    def sample(self, time: Variable, outputs: Any, states: Any) -> Any:
        """The arg-max of ``outputs``."""
        return _L().argmax(outputs, axis=-1)

    def next_inputs(self, time: Variable, outputs: Any, states: Any, sample_ids: Any) -> Any:
        """Step ``time + 1`` of ``inputs``; entries finish at their length."""
        L = _L()
        time = L.cast(time, "int32") if convert_dtype(time.dtype) != "int32" else time
        if self.sequence_length.dtype != time.dtype:
            self.sequence_length = L.cast(self.sequence_length, time.dtype)
        next_time = L.elementwise_add(time, L.fill_constant([1], "int32", 1))
        finished = L.less_equal(self.sequence_length, next_time)
        next_inputs = map_structure(lambda x: self._step_of(x, next_time), self.inputs_)
        return finished, next_inputs, states


class GreedyEmbeddingHelper(DecodeHelper):
    """Greedy decoding, for inference: the arg-max id of each step feeds the next step through
    ``embedding_fn``; an entry finishes when it produces ``end_token``.

    Args:
        embedding_fn: a function from int64 ids ``[batch]`` to the cell's inputs.
        start_tokens: int64 ``[batch]``, the first ids.
        end_token: the id that ends an entry.

    Examples:
        >>> enc = fluid.data(name="enc", shape=[None, 8], dtype="float32")
        >>> start = fluid.data(name="start", shape=[None], dtype="int64")
        >>> emb = lambda ids: fluid.embedding(ids, size=[20, 8], param_attr=fluid.ParamAttr(name="emb"))
        >>> proj = lambda h: fluid.layers.fc(h, size=20, param_attr=fluid.ParamAttr(name="proj"))
        >>> helper = fluid.layers.GreedyEmbeddingHelper(emb, start, end_token=1)
        >>> decoder = fluid.layers.BasicDecoder(fluid.layers.GRUCell(hidden_size=8), helper, output_fn=proj)
        >>> outputs, _ = fluid.layers.dynamic_decode(decoder, inits=enc, max_step_num=4)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> ids, = exe.run(feed={"enc": np.zeros((2, 8), "float32"), "start": np.zeros(2, "int64")},
        ...                fetch_list=[outputs.sample_ids])
        >>> ids.shape[0], ids.shape[1] <= 5
        (2, True)
    """

    def __init__(self, embedding_fn: Callable[[Variable], Any], start_tokens: Variable, end_token: int):
        L = _L()
        self.embedding_fn = embedding_fn
        self.start_tokens = start_tokens
        self.end_token = L.fill_constant(shape=[1], dtype="int64", value=end_token)

    def initialize(self) -> Any:
        """The embedded start tokens, none finished."""
        L = _L()
        init_finished = L.fill_constant_batch_size_like(input=self.start_tokens, shape=[-1], dtype="bool",
                                                        value=False, force_cpu=True)
        return self.embedding_fn(self.start_tokens), init_finished

    def sample(self, time: Variable, outputs: Any, states: Any) -> Any:
        """The arg-max of ``outputs``."""
        return _L().argmax(outputs, axis=-1)

    def next_inputs(self, time: Variable, outputs: Any, states: Any, sample_ids: Any) -> Any:
        """The embedded ``sample_ids``; entries that produced ``end_token`` finish."""
        finished = _L().equal(sample_ids, self.end_token)
        return finished, self.embedding_fn(sample_ids), states


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """Sampling decoding: like ``GreedyEmbeddingHelper``, but each id is drawn from
    ``softmax(outputs / softmax_temperature)``.

    Args:
        embedding_fn: a function from int64 ids ``[batch]`` to the cell's inputs.
        start_tokens: int64 ``[batch]``, the first ids.
        end_token: the id that ends an entry.
        softmax_temperature: divides the logits (None: 1); lower is greedier.
        seed: the sampler's seed (None or 0: fresh draws each run).

    Examples:
        >>> start = fluid.data(name="start", shape=[None], dtype="int64")
        >>> emb = lambda ids: fluid.embedding(ids, size=[20, 8])
        >>> helper = fluid.layers.SampleEmbeddingHelper(emb, start, end_token=1, softmax_temperature=0.5)
    """

    def __init__(self, embedding_fn: Callable[[Variable], Any], start_tokens: Variable, end_token: int,
                 softmax_temperature: float | None = None, seed: int | None = None):
        super().__init__(embedding_fn, start_tokens, end_token)
        L = _L()
        self.softmax_temperature = L.fill_constant(shape=[1], dtype="float32", value=softmax_temperature) \
            if softmax_temperature is not None else None
        self.seed = seed

    def sample(self, time: Variable, outputs: Any, states: Any) -> Any:
        """Ids drawn from the softmax of the (tempered) ``outputs``."""
        L = _L()
        logits = L.elementwise_div(outputs, self.softmax_temperature) if self.softmax_temperature is not None \
            else outputs
        probs = L.softmax(logits)
        probs.stop_gradient = True
        return L.sampling_id(probs, seed=self.seed or 0, dtype=self.start_tokens.dtype)
