"""Paddle 1.8's RNN cell and decoding API (``layers/rnn.py``): ``RNNCell``, ``GRUCell``, ``LSTMCell``,
``rnn`` (a ``StaticRNN`` over the cell); the decoders are in ``rnn_decode.py``. The programs they build are Paddle's: the same layers
in the same order, parameters under the same names.

These classes compose the public layers (``fluidist.layers``), which they look up when they run:
the layer package imports this module, so this module does not import it back."""
from __future__ import annotations

import sys
from functools import partial
from typing import Any, Callable

from ..framework.program import Variable
from .hints import DType, ParamAttrLike

from ..framework import unique_name
from .layer_helper import LayerHelper, check_variable
from .nest import flatten, map_structure, pack_sequence_as, same_structure
from .rnn_blocks import StaticRNN

__all__ = ["RNNCell", "GRUCell", "LSTMCell", "rnn"]


def _L():
    """The public layers, looked up at call time (see the module docstring)."""
    return sys.modules["fluidist.layers"]


_check_var = check_variable


# ---------------------------------------------------------------------------- cells
class RNNCell:
    """The base of recurrent cells: one time step, ``call(inputs, states) -> (outputs, new_states)``.

    A subclass defines ``call`` and ``state_shape`` (and ``state_dtype`` when not float32);
    ``rnn`` and the decoders run it over time. States may be nested lists, tuples or dicts of
    Variables.

    Examples:
        >>> class Accumulate(fluid.layers.RNNCell):
        ...     def call(self, inputs, states):
        ...         new = fluid.layers.elementwise_add(states, inputs)
        ...         return new, new
        ...     @property
        ...     def state_shape(self):
        ...         return [4]
        >>> x = fluid.data(name="x", shape=[None, 3, 4], dtype="float32")
        >>> sums, total = fluid.layers.rnn(Accumulate(), x)
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.ones((1, 3, 4), "float32")}, fetch_list=[total])
        >>> out.tolist()
        [[3.0, 3.0, 3.0, 3.0]]
    """

    def call(self, inputs: Any, states: Any, **kwargs: Any) -> tuple[Any, Any]:
        """One step: ``(outputs, new_states)`` from the step's inputs and the previous states."""
        raise NotImplementedError("RNNCell must implement call()")

    def __call__(self, inputs, states, **kwargs):
        return self.call(inputs, states, **kwargs)

    def get_initial_states(self, batch_ref: Any, shape: Any = None, dtype: Any = None, init_value: float = 0,
                           batch_dim_idx: int = 0) -> Any:
        """Initial states filled with ``init_value``, one per state of ``state_shape``.

        Args:
            batch_ref: a Variable (or nest of them; the first is used) holding the batch size.
            shape: the states' shapes without the batch dimension; ``state_shape`` when None.
            dtype: their dtypes (one for all, or a nest); ``state_dtype`` (or float32) when None.
            init_value: the fill value.
            batch_dim_idx: the dimension of ``batch_ref`` that is the batch size.

        Returns:
            Variables ``[batch] + shape``, in the structure of ``shape``.
        """
        L = _L()
        batch_ref = flatten(batch_ref)[0]
        _check_var(batch_ref, "get_initial_states", "batch_ref")
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
    def state_shape(self) -> Any:
        """The shape of each state without the batch dimension (a list of ints, or a nest of them)."""
        raise NotImplementedError("the cell must define state_shape")

    @property
    def state_dtype(self) -> Any:
        """The dtype of each state (one for all, or a nest like ``state_shape``)."""
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
    """A GRU cell: ``call(inputs, h) -> (h', h')``, built as Paddle 1.8's ``GRUCell`` builds it.

    The gates ``[r, u]`` come from ``concat([x, h]) @ W_gate + b_gate``, the candidate from
    ``concat([x, r * h]) @ W_cand + b_cand``, and ``h' = u * h + (1 - u) * c``. The parameters are
    made at the first call, named ``<name>/BasicGRUUnit_<n>.w_0`` ... as in Paddle.

    Args:
        hidden_size: the state's width.
        param_attr: the weights' attribute (a name gets ``_gate`` / ``_candidate`` appended).
        bias_attr: the biases' attribute, likewise.
        gate_activation: a function for the gates; ``fluid.layers.sigmoid`` when None.
        activation: a function for the candidate; ``fluid.layers.tanh`` when None.
        dtype: the parameters' dtype.
        name: the prefix of the parameters' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5, 16], dtype="float32")
        >>> outputs, final_h = fluid.layers.rnn(fluid.layers.GRUCell(hidden_size=8), x)
        >>> outputs.shape, final_h.shape
        ((-1, 5, 8), (-1, 8))
    """

    def __init__(self, hidden_size: int, param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None,
                 gate_activation: Callable[[Variable], Variable] | None = None,
                 activation: Callable[[Variable], Variable] | None = None, dtype: DType = "float32",
                 name: str = "GRUCell"):
        self.hidden_size = hidden_size
        self.gru_unit = _BasicGRUUnit(name, hidden_size, param_attr, bias_attr, gate_activation, activation, dtype)

    def call(self, inputs: Variable, states: Variable) -> tuple[Variable, Variable]:  # type: ignore[override]
        """One step: the new hidden state, as the output and as the state."""
        _check_var(inputs, "GRUCell", "inputs")
        _check_var(states, "GRUCell", "states")
        new_hidden = self.gru_unit(inputs, states)
        return new_hidden, new_hidden

    @property
    def state_shape(self) -> list[int]:
        """``[hidden_size]``."""
        return [self.hidden_size]


class LSTMCell(RNNCell):
    """An LSTM cell: ``call(inputs, [h, c]) -> (h', [h', c'])``, built as Paddle 1.8's ``LSTMCell``.

    The gates ``[i, j, f, o]`` come from ``concat([x, h]) @ W + b``; ``c' = c * sigmoid(f +
    forget_bias) + sigmoid(i) * tanh(j)`` and ``h' = tanh(c') * sigmoid(o)``. The parameters are
    made at the first call, named ``<name>/BasicLSTMUnit_<n>.w_0`` and ``.b_0`` as in Paddle.

    Args:
        hidden_size: the width of ``h`` and ``c``.
        param_attr: the weight's attribute.
        bias_attr: the bias's attribute.
        gate_activation: a function for the gates; ``fluid.layers.sigmoid`` when None.
        activation: a function for the candidate and the cell output; ``fluid.layers.tanh`` when None.
        forget_bias: added to the forget gate.
        dtype: the parameters' dtype.
        name: the prefix of the parameters' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5, 16], dtype="float32")
        >>> outputs, (h, c) = fluid.layers.rnn(fluid.layers.LSTMCell(hidden_size=8), x)
        >>> outputs.shape, c.shape
        ((-1, 5, 8), (-1, 8))
    """

    def __init__(self, hidden_size: int, param_attr: ParamAttrLike = None, bias_attr: ParamAttrLike = None,
                 gate_activation: Callable[[Variable], Variable] | None = None,
                 activation: Callable[[Variable], Variable] | None = None, forget_bias: float = 1.0,
                 dtype: DType = "float32", name: str = "LSTMCell"):
        self.hidden_size = hidden_size
        self.lstm_unit = _BasicLSTMUnit(name, hidden_size, param_attr, bias_attr, gate_activation, activation,
                                        forget_bias, dtype)

    def call(self, inputs: Variable,  # type: ignore[override]
             states: list[Variable]) -> tuple[Variable, list[Variable]]:
        """One step: ``h'`` as the output, ``[h', c']`` as the states."""
        _check_var(inputs, "LSTMCell", "inputs")
        if not isinstance(states, list):
            raise TypeError("LSTMCell: argument 'states' takes a list [hidden, cell], got %s" % type(states).__name__)
        for state in states:
            _check_var(state, "LSTMCell", "states")
        pre_hidden, pre_cell = states
        new_hidden, new_cell = self.lstm_unit(inputs, pre_hidden, pre_cell)
        return new_hidden, [new_hidden, new_cell]

    @property
    def state_shape(self) -> list[list[int]]:
        """``[[hidden_size], [hidden_size]]`` (h and c)."""
        return [[self.hidden_size], [self.hidden_size]]


# ---------------------------------------------------------------------------- rnn
def _transpose_batch_time(x):
    return _L().transpose(x, [1, 0] + list(range(2, len(x.shape))))


def _last_step(x):
    L = _L()
    return L.squeeze(L.slice(x, axes=[0], starts=[-1], ends=[2 ** 31 - 1]), axes=[0])


def _check_rnn_args(inputs, sequence_length, initial_states=None):
    """Paddle 1.8's checks of ``rnn``'s tensors: float32 / float64 inputs and states."""
    for x in flatten(inputs) if inputs is not None else []:
        _check_var(x, "rnn", "inputs")
    if sequence_length is not None:
        _check_var(sequence_length, "rnn", "sequence_length")
    for state in flatten(initial_states) if initial_states is not None else []:
        _check_var(state, "rnn", "states")


def rnn(cell: RNNCell, inputs: Any, initial_states: Any = None, sequence_length: Variable | None = None,
        time_major: bool = False, is_reverse: bool = False, **kwargs: Any) -> tuple[Any, Any]:
    """Run a cell over the time steps of a dense batch (a ``StaticRNN``, as Paddle 1.8 builds it).

    Args:
        cell: an ``RNNCell``.
        inputs: ``[batch, time, ...]`` (or ``[time, batch, ...]`` with ``time_major``), or a nest
            of such Variables.
        initial_states: the cell's first states; ``cell.get_initial_states`` (zeros) when None.
        sequence_length: int ``[batch]`` lengths; past each sequence's end its states stop
            changing (its outputs are still computed).
        time_major: the inputs and outputs are time-major.
        is_reverse: run from the last step to the first.
        **kwargs: passed on to ``cell.call``.

    Returns:
        ``(outputs, final_states)``: the outputs of all steps (stacked along the time axis, in
        ``inputs``' layout) and the last states.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5, 16], dtype="float32")
        >>> n = fluid.data(name="n", shape=[None], dtype="int64")
        >>> outputs, final_h = fluid.layers.rnn(fluid.layers.GRUCell(hidden_size=8), x, sequence_length=n)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> o, h = exe.run(feed={"x": np.ones((2, 5, 16), "float32"), "n": np.array([5, 2], "int64")},
        ...                fetch_list=[outputs, final_h])
        >>> o.shape, bool(np.allclose(h[1], o[1, 1]))
        ((2, 5, 8), True)
    """
    L = _L()
    _check_rnn_args(inputs, sequence_length)

    def _maybe_copy(state, new_state, step_mask):
        return L.elementwise_sub(L.elementwise_mul(new_state, step_mask, axis=0),
                                 L.elementwise_mul(state, L.scale(step_mask, bias=-1.0), axis=0))

    def _switch_grad(x, stop=False):
        x.stop_gradient = stop
        return x

    if initial_states is None:
        initial_states = cell.get_initial_states(batch_ref=inputs, batch_dim_idx=1 if time_major else 0)
    _check_rnn_args(None, None, initial_states)
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
