"""Learning-rate schedules (Paddle 1.x ``fluid.layers.*_decay``).

Each schedule returns a ``[1]`` float32 Variable computed every step from the global step counter
``@LR_DECAY_COUNTER@`` (int64, persistable; an ``increment`` op prepended to the main program makes
the first run see step 0, or 1 for ``noam_decay``), and is passed to an optimizer as its learning
rate. Every op is built under ``_lr_schedule_guard`` (op_role LRSched), which is how the transpiler
finds and moves them. Arithmetic with Python numbers builds the ops that Paddle 1.8's Variable
operators built: ``x + n``, ``n + x``, ``x - n``, ``n - x``, ``x * n``, ``n * x`` and ``x / n`` are one
``scale`` op; ``n / x`` and powers are a ``fill_constant`` for the number and the ``elementwise_*``
op. So ``exponential_decay(..., staircase=True)`` is ``increment, cast, scale, floor,
fill_constant, elementwise_pow, scale``, as in Paddle 1.8.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..framework import unique_name
from ..framework.program import LR_DECAY_COUNTER, Variable, default_main_program
from ..initializer import ConstantInitializer
from . import control_flow
from .layer_helper import LayerHelper

__all__ = ["exponential_decay", "natural_exp_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_decay", "noam_decay", "cosine_decay", "linear_lr_warmup"]


# ---------------------------------------------------------------------------- tiny graph builders
def _block():
    return default_main_program().current_block()


def _tmp(dtype="float32"):
    return _block().create_var(name=unique_name.generate_with_ignorable_key("tmp"), dtype=dtype, shape=[1],
                               stop_gradient=True)


def _const(value, dtype="float32"):
    out = _tmp(dtype)
    _block().append_op("fill_constant", outputs={"Out": [out]},
                       attrs={"shape": [1], "dtype": dtype, "value": float(value)})
    return out


def _op(op_type, x, y=None):
    out = _tmp(x.dtype)
    inputs = {"X": [x]} if y is None else {"X": [x], "Y": [y]}
    attrs = {} if y is None else {"axis": -1}
    _block().append_op(op_type, inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def _arith(op_type, x, y):
    """``x <op> y`` where either may be a Python number (made a ``fill_constant`` first, as
    Paddle's Variable operators did)."""
    if not isinstance(x, Variable):
        x = _const(x)
    if not isinstance(y, Variable):
        y = _const(y)
    return _op("elementwise_" + op_type, x, y)


def _scale(x, scale, bias):
    out = _tmp(x.dtype)
    _block().append_op("scale", inputs={"X": [x]}, outputs={"Out": [out]},
                       attrs={"scale": float(scale), "bias": float(bias), "bias_after_scale": True})
    return out


# (scale, bias) of the scale op standing for ``x <op> n`` and for ``n <op> x``
_VAR_OP_NUM = {"add": lambda n: (1.0, n), "sub": lambda n: (1.0, -n), "mul": lambda n: (n, 0.0),
               "div": lambda n: (1.0 / n, 0.0)}
_NUM_OP_VAR = {"add": lambda n: (1.0, n), "sub": lambda n: (-1.0, n), "mul": lambda n: (n, 0.0)}


def _var_op_num(op_type, x, number):
    """``Variable <op> number``: a ``scale`` op for + - * /, else ``fill_constant`` and the op."""
    if op_type in _VAR_OP_NUM and not isinstance(number, Variable):
        return _scale(x, *_VAR_OP_NUM[op_type](float(number)))
    return _arith(op_type, x, number)


def _num_op_var(op_type, number, x):
    """``number <op> Variable``: a ``scale`` op for + - *, else ``fill_constant`` and the op with
    the number as X (``n / x``, ``n ** x``)."""
    if isinstance(number, Variable):
        return _arith(op_type, number, x)
    if op_type in _NUM_OP_VAR:
        return _scale(x, *_NUM_OP_VAR[op_type](float(number)))
    return _arith(op_type, number, x)


def _decay_step_counter(begin=0):
    """The float32 view of the global LR step counter (``begin`` in the first run)."""
    counter = control_flow.autoincreased_step_counter(counter_name=LR_DECAY_COUNTER, begin=begin, step=1)
    step = _tmp("float32")
    _block().append_op("cast", inputs={"X": [counter]}, outputs={"Out": [step]},
                       attrs={"in_dtype": counter.dtype, "out_dtype": "float32"})
    return step


def _global_lr_var(name, value=0.0, dtype="float32"):
    """A persistable ``[1]`` variable of the main program, filled with ``value`` at startup."""
    block = default_main_program().global_block()
    var = block.create_var(name=unique_name.generate(name), shape=[1], dtype=dtype, persistable=True,
                           stop_gradient=True)
    LayerHelper("global_var").set_variable_initializer(var, ConstantInitializer(float(value)))
    return var


def _assign(src, dst):
    _block().append_op("assign", inputs={"X": [src]}, outputs={"Out": [dst]})


def _check_positive(name, value, what):
    if value <= 0:
        raise ValueError("%s: %s must be > 0, got %r" % (name, what, value))


# ---------------------------------------------------------------------------- schedules
def exponential_decay(learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False) -> Variable:
    """``lr * decay_rate ** (step / decay_steps)``, the exponent floored with ``staircase``.

    Args:
        learning_rate: the initial learning rate.
        decay_steps: the steps per decay period.
        decay_rate: the factor per period.
        staircase: decay in steps rather than continuously.

    Returns:
        The learning-rate Variable (recomputed every step).

    Examples:
        >>> lr = fluid.layers.exponential_decay(learning_rate=0.1, decay_steps=1000, decay_rate=0.5, staircase=True)
        >>> sgd = fluid.optimizer.SGD(learning_rate=lr)
    """
    _check_positive("exponential_decay", decay_steps, "decay_steps")
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        div = _var_op_num("div", step, float(decay_steps))
        if staircase:
            div = _op("floor", div)
        return _num_op_var("mul", learning_rate, _num_op_var("pow", float(decay_rate), div))


def natural_exp_decay(learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False) -> Variable:
    """``lr * exp(-decay_rate * step / decay_steps)``, the quotient floored with ``staircase``.

    Args:
        learning_rate: the initial learning rate.
        decay_steps: the steps per decay period.
        decay_rate: the rate in the exponent.
        staircase: decay in steps rather than continuously.

    Returns:
        The learning-rate Variable.

    Examples:
        >>> lr = fluid.layers.natural_exp_decay(learning_rate=0.1, decay_steps=100, decay_rate=0.5)
    """
    _check_positive("natural_exp_decay", decay_steps, "decay_steps")
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        div = _var_op_num("div", step, float(decay_steps))
        if staircase:
            div = _op("floor", div)
        e = _op("exp", _num_op_var("mul", -1.0 * decay_rate, div))
        return _num_op_var("mul", learning_rate, e)


def inverse_time_decay(learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False) -> Variable:
    """``lr / (1 + decay_rate * step / decay_steps)``, the quotient floored with ``staircase``.

    Args:
        learning_rate: the initial learning rate.
        decay_steps: the steps per decay period.
        decay_rate: the rate.
        staircase: decay in steps rather than continuously.

    Returns:
        The learning-rate Variable.

    Examples:
        >>> lr = fluid.layers.inverse_time_decay(learning_rate=0.1, decay_steps=100, decay_rate=0.5)
    """
    _check_positive("inverse_time_decay", decay_steps, "decay_steps")
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        div = _var_op_num("div", step, float(decay_steps))
        if staircase:
            div = _op("floor", div)
        denom = _num_op_var("add", 1.0, _num_op_var("mul", float(decay_rate), div))
        return _num_op_var("div", learning_rate, denom)


def polynomial_decay(learning_rate: float, decay_steps: int, end_learning_rate: float = 0.0001, power: float = 1.0,
                     cycle: bool = False) -> Variable:
    """``(lr - end) * (1 - step / decay_steps) ** power + end``.

    Without ``cycle`` the step stops at ``decay_steps``; with it ``decay_steps`` grows to the next
    multiple of itself past the step (``decay_steps * max(ceil(step / decay_steps), 1)``).

    Args:
        learning_rate: the initial learning rate.
        decay_steps: the steps to reach ``end_learning_rate``.
        end_learning_rate: the final learning rate.
        power: the polynomial's power.
        cycle: start over after ``decay_steps``.

    Returns:
        The learning-rate Variable.

    Examples:
        >>> lr = fluid.layers.polynomial_decay(learning_rate=0.1, decay_steps=1000, end_learning_rate=0.001)
    """
    _check_positive("polynomial_decay", decay_steps, "decay_steps")
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        if cycle:
            div = _op("ceil", _var_op_num("div", step, float(decay_steps)))
            zero = _const(0.0)
            one = _const(1.0)
            with control_flow.Switch() as switch:
                with switch.case(control_flow.equal(step, zero)):
                    _assign(one, div)
            steps = _num_op_var("mul", float(decay_steps), div)
            frac = _op("elementwise_div", step, steps)
        else:
            steps_var = _const(float(decay_steps))
            step = _op("elementwise_min", step, steps_var)
            frac = _var_op_num("div", step, float(decay_steps))
        base = _num_op_var("sub", 1.0, frac)
        powered = _var_op_num("pow", base, float(power))
        scaled = _num_op_var("mul", float(learning_rate) - float(end_learning_rate), powered)
        return _var_op_num("add", scaled, float(end_learning_rate))


def piecewise_decay(boundaries: Sequence[int], values: Sequence[float]) -> Variable:
    """``values[i]`` while ``step < boundaries[i]`` (the first that holds), else ``values[-1]``.

    Built as a ``Switch`` of ``less_than`` and ``conditional_block`` cases assigning the
    learning-rate variable, as in Paddle.

    Args:
        boundaries: the step boundaries, increasing.
        values: the learning rates, one more than ``boundaries``.

    Returns:
        The learning-rate Variable.

    Examples:
        >>> lr = fluid.layers.piecewise_decay(boundaries=[1000, 2000], values=[0.1, 0.01, 0.001])
    """
    boundaries, values = list(boundaries), list(values)
    if len(values) - len(boundaries) != 1:
        raise ValueError("piecewise_decay: len(values) must be len(boundaries) + 1, got %d values for %d "
                         "boundaries" % (len(values), len(boundaries)))
    if any(b2 < b1 for b1, b2 in zip(boundaries, boundaries[1:])):
        raise ValueError("piecewise_decay: boundaries must be non-decreasing, got %s" % boundaries)
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        lr = _global_lr_var("learning_rate", 0.0)
        with control_flow.Switch() as switch:
            for b, v in zip(boundaries, values):
                boundary = _tmp()
                _block().append_op("fill_constant", outputs={"Out": [boundary]},
                                   attrs={"shape": [1], "dtype": "float32", "value": float(b), "force_cpu": True})
                value = _const(float(v))
                with switch.case(control_flow.less_than(step, boundary)):
                    _assign(value, lr)
            last = _const(float(values[-1]))
            with switch.default():
                _assign(last, lr)
        return lr


def noam_decay(d_model: int, warmup_steps: int, learning_rate: float = 1.0) -> Variable:
    """The Transformer's schedule: ``lr * d_model ** -0.5 * min(step ** -0.5, warmup_steps ** -1.5 * step)``,
    the step counted from 1.

    Args:
        d_model: the model's width.
        warmup_steps: the steps of linear warm-up.
        learning_rate: a scale on the whole schedule.

    Returns:
        The learning-rate Variable.

    Examples:
        >>> lr = fluid.layers.noam_decay(d_model=512, warmup_steps=4000)
    """
    _check_positive("noam_decay", warmup_steps, "warmup_steps")
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter(1)
        a = _var_op_num("pow", step, -0.5)
        b = _num_op_var("mul", float(warmup_steps) ** -1.5, step)
        return _num_op_var("mul", float(learning_rate) * float(d_model) ** -0.5, _op("elementwise_min", a, b))


def cosine_decay(learning_rate: float, step_each_epoch: int, epochs: int) -> Variable:
    """``lr * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1)``: a half cosine over the epochs.

    Args:
        learning_rate: the initial learning rate.
        step_each_epoch: the steps per epoch.
        epochs: the number of epochs the cosine spans.

    Returns:
        The learning-rate Variable.

    Examples:
        >>> lr = fluid.layers.cosine_decay(learning_rate=0.1, step_each_epoch=100, epochs=10)
    """
    _check_positive("cosine_decay", step_each_epoch, "step_each_epoch")
    _check_positive("cosine_decay", epochs, "epochs")
    with default_main_program()._lr_schedule_guard():
        step = _decay_step_counter()
        epoch = _op("floor", _var_op_num("div", step, float(step_each_epoch)))
        angle = _var_op_num("div", _var_op_num("mul", epoch, math.pi), float(epochs))
        c = _var_op_num("add", _op("cos", angle), 1.0)
        return _num_op_var("mul", float(learning_rate) * 0.5, c)


def linear_lr_warmup(learning_rate: float | Variable, warmup_steps: int, start_lr: float, end_lr: float) -> Variable:
    """A linear ramp from ``start_lr`` to ``end_lr`` over ``warmup_steps``, then ``learning_rate``.

    Args:
        learning_rate: the rate after the warm-up: a number or another schedule's Variable.
        warmup_steps: the length of the ramp.
        start_lr: the rate at step 0.
        end_lr: the rate the ramp reaches.

    Returns:
        The learning-rate Variable.

    Examples:
        >>> decayed = fluid.layers.exponential_decay(0.1, decay_steps=1000, decay_rate=0.5)
        >>> lr = fluid.layers.linear_lr_warmup(decayed, warmup_steps=100, start_lr=0.0, end_lr=0.1)
    """
    _check_positive("linear_lr_warmup", warmup_steps, "warmup_steps")
    dtype = learning_rate.dtype if isinstance(learning_rate, Variable) else "float32"
    linear_step = float(end_lr) - float(start_lr)
    with default_main_program()._lr_schedule_guard():
        lr = _global_lr_var("learning_rate_warmup", 0.0, dtype)
        step = _decay_step_counter()
        with control_flow.Switch() as switch:
            with switch.case(control_flow.less_than(step, _const(float(warmup_steps)))):
                frac = _var_op_num("div", step, float(warmup_steps))
                decayed = _num_op_var("add", float(start_lr), _num_op_var("mul", linear_step, frac))
                _assign(decayed, lr)
            with switch.default():
                if not isinstance(learning_rate, Variable):
                    learning_rate = _const(float(learning_rate), dtype)
                _assign(learning_rate, lr)
        return lr
