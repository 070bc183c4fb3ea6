"""Paddle 1.8's RNN cell and decoding API (``layers/rnn.py``): ``RNNCell``, ``GRUCell``, ``LSTMCell``,
``rnn`` (a ``StaticRNN`` over the cell); the decoders are in ``rnn_decode.py``. The programs they build are Paddle's: the same layers
in the same order, parameters under the same names.

These classes compose the public layers (``fluidist.layers``), which they look up when they run:
the layer package imports this module, so this module does not import it back."""
import sys
from functools import partial


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
