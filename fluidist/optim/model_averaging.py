"""``fluid.optimizer.ModelAverage`` and ``fluid.optimizer.ExponentialMovingAverage``: averages of
the parameters over training, applied for evaluation and restored afterwards.

Both append one op per parameter to the main program (``average_accumulates``,
``exponential_moving_average``, after the optimizer's updates, under the parameter's optimize
guard) and build two programs of their own: ``apply_program`` saves each parameter into a backup
variable and replaces it by its average; ``restore_program`` copies the backups back, bit for bit.
``apply(exe)`` is a context manager that runs the first, then the second on exit.

fluidist differences from Paddle 1.8: ``ExponentialMovingAverage.apply`` leaves the moving
averages untouched (Paddle divided them by the bias correction in place, so each apply changed
the next); the moving average is one op per parameter instead of five elementwise ops. With
parameter servers both run on the trainer after the parameters are received (their ops carry the
registry fact ``after_update``).
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ..framework import unique_name
from ..framework.program import Program, default_main_program, name_scope, program_guard
from ..initializer import ConstantInitializer
from ..layers.layer_helper import LayerHelper


def _averaged_params(program):
    return [p for p in program.global_block().all_parameters() if p.do_model_average is not False and p.trainable]


def _state_var(program, name, shape, dtype, fill=0.0):
    """A persistable variable of ``program``'s global block, filled with ``fill`` by the startup."""
    var = program.global_block().create_var(name=name, shape=shape, dtype=dtype, persistable=True,
                                            stop_gradient=True)
    LayerHelper("average_state").set_variable_initializer(var, ConstantInitializer(float(fill)))
    return var


def _clone_into(block, var):
    return block._clone_variable(var)


class _AppliedAverage:
    """``apply`` / ``restore`` over the ``apply_program`` and ``restore_program`` of a subclass."""

    apply_program: Program
    restore_program: Program

    @contextlib.contextmanager
    def apply(self, executor: Any, need_restore: bool = True) -> Iterator[None]:
        """Replace the parameters by their averages; with ``need_restore``, put them back on exit."""
        executor.run(self.apply_program)
        try:
            yield
        finally:
            if need_restore:
                self.restore(executor)

    def restore(self, executor: Any) -> None:
        """Put back the parameters saved by ``apply``."""
        executor.run(self.restore_program)


class ModelAverage(_AppliedAverage):
    """Average of each parameter over a sliding window of recent updates (Paddle's
    ``average_accumulates``), to evaluate with; create it after ``minimize``, in the same program
    guard.

    ``with model_average.apply(exe):`` puts the averages in the parameters and the trained values
    back on exit (``restore``).

    Args:
        average_window_rate: the window is about this fraction of the updates so far...
        min_average_window: ...but at least this many updates...
        max_average_window: ...and at most this many.
        regularization: accepted for Paddle's signature.
        name: a prefix for the accumulators' names.

    Raises:
        ValueError: ``min_average_window > max_average_window``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w")))
        >>> _ = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> average = fluid.optimizer.ModelAverage(0.15, min_average_window=2, max_average_window=10)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> for _ in range(3):
        ...     _ = exe.run(feed={"x": np.ones((2, 2), "float32")}, fetch_list=[loss])
        >>> w = lambda: np.array(fluid.global_scope().find_var("w").get_tensor()).copy()
        >>> trained = w()
        >>> with average.apply(exe):
        ...     averaged = w()
        >>> bool(np.allclose(averaged, trained)), bool(np.allclose(w(), trained))
        (False, True)
    """

    def __init__(self, average_window_rate: float, min_average_window: int = 10000, max_average_window: int = 10000,
                 regularization: Any = None, name: str | None = None):
        if min_average_window > max_average_window:
            raise ValueError("ModelAverage: min_average_window %d > max_average_window %d"
                             % (min_average_window, max_average_window))
        self.average_window = float(average_window_rate)
        self.min_average_window = int(min_average_window)
        self.max_average_window = int(max_average_window)
        self.regularization = regularization
        self._name = name
        program = default_main_program()
        self.params_grads = []
        self._state: dict[str, Any] = {}
        for param in _averaged_params(program):
            backup = program.global_block().create_var(
                name=unique_name.generate_with_ignorable_key(param.name + ".tmp"), shape=param.shape,
                dtype=param.dtype, persistable=False, stop_gradient=True)
            self.params_grads.append((param, backup))
        for param, backup in self.params_grads:
            with program._optimized_guard([param, backup]), name_scope("move_average"):
                self._append_accumulate_op(program, param)
        self.apply_program = Program()
        with program_guard(self.apply_program, Program()):
            for param, backup in self.params_grads:
                self._append_apply_ops(param, backup)
        self.restore_program = Program()
        with program_guard(self.restore_program, Program()):
            for param, backup in self.params_grads:
                _restore_ops(param, backup)

    def _acc(self, param, what, shape=None, dtype=None):
        name = (self._name + "_" if self._name else "") + param.name + "_" + what
        return _state_var(default_main_program(), unique_name.generate(name), shape or param.shape,
                          dtype or param.dtype)

    def _append_accumulate_op(self, program, param):
        s = {k: self._acc(param, k) for k in ("sum_1", "sum_2", "sum_3")}
        for k in ("num_accumulates", "old_num_accumulates", "num_updates"):
            s[k] = self._acc(param, k, [1], "int64")
        self._state[param.name] = s
        program.global_block().append_op(
            "average_accumulates",
            inputs={"param": [param], "in_sum_1": [s["sum_1"]], "in_sum_2": [s["sum_2"]], "in_sum_3": [s["sum_3"]],
                    "in_num_accumulates": [s["num_accumulates"]], "in_old_num_accumulates": [s["old_num_accumulates"]],
                    "in_num_updates": [s["num_updates"]]},
            outputs={"out_sum_1": [s["sum_1"]], "out_sum_2": [s["sum_2"]], "out_sum_3": [s["sum_3"]],
                     "out_num_accumulates": [s["num_accumulates"]],
                     "out_old_num_accumulates": [s["old_num_accumulates"]], "out_num_updates": [s["num_updates"]]},
            attrs={"average_window": self.average_window, "min_average_window": self.min_average_window,
                   "max_average_window": self.max_average_window})

    def _append_apply_ops(self, param, backup):
        import fluidist.layers as layers
        block = self.apply_program.global_block()
        p, b = _clone_into(block, param), _clone_into(block, backup)
        s = {k: _clone_into(block, v) for k, v in self._state[param.name].items()}
        layers.assign(p, b)
        count = layers.cast(layers.sums([s["num_accumulates"], s["old_num_accumulates"]]), param.dtype)
        total = layers.sums([s["sum_1"], s["sum_2"], s["sum_3"]])
        block.append_op("elementwise_div", inputs={"X": [total], "Y": [count]}, outputs={"Out": [p]})



def _restore_ops(param, backup):
    import fluidist.layers as layers
    block = default_main_program().global_block()
    layers.assign(_clone_into(block, backup), _clone_into(block, param))


class ExponentialMovingAverage(_AppliedAverage):
    """The exponential moving average of each parameter, to evaluate with:
    ``ema = decay * ema + (1 - decay) * param`` after each update (call ``update()`` after
    ``minimize``); ``apply`` uses the bias-corrected ``ema / (1 - decay ** t)``.

    Paddle 1.8 difference: ``apply`` leaves the moving averages untouched (see the module).

    Args:
        decay: the decay rate.
        thres_steps: a Variable counting steps (the global step); the decay is then
            ``min(decay, (t + 1) / (t + 10))``, smaller early in training.
        name: a prefix for the averages' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1, param_attr=fluid.ParamAttr(name="w")))
        >>> _ = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
        >>> ema = fluid.optimizer.ExponentialMovingAverage(decay=0.9)
        >>> ema.update()
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> for _ in range(3):
        ...     _ = exe.run(feed={"x": np.ones((2, 2), "float32")}, fetch_list=[loss])
        >>> w = lambda: np.array(fluid.global_scope().find_var("w").get_tensor()).copy()
        >>> trained = w()
        >>> with ema.apply(exe):
        ...     averaged = w()
        >>> bool(np.allclose(averaged, trained)), bool(np.allclose(w(), trained))
        (False, True)
    """

    def __init__(self, decay: float = 0.999, thres_steps: Any = None, name: str | None = None):
        self._decay = float(decay)
        self._thres_steps = thres_steps
        self._name = name if name is not None else ""
        program = default_main_program()
        self._decay_var = _state_var(program, "scheduled_ema_decay_rate", [1], "float32", self._decay)
        self._step = _state_var(program, "@EMA_STEP_COUNTER@", [1], "int64", 0)
        self._params_tmps = []
        self._ema_vars = {}
        for param in _averaged_params(program):
            tmp = program.global_block().create_var(
                name=unique_name.generate(self._name + param.name + ".ema_tmp"), shape=param.shape, dtype=param.dtype,
                persistable=False, stop_gradient=True)
            self._params_tmps.append((param, tmp))
            self._ema_vars[param.name] = _state_var(program, unique_name.generate(self._name + param.name + "_ema"),
                                                    param.shape, param.dtype)
        self._updated = False
        self.apply_program = Program()
        with program_guard(self.apply_program, Program()):
            self._append_apply_ops()
        self.restore_program = Program()
        with program_guard(self.restore_program, Program()):
            for param, tmp in self._params_tmps:
                _restore_ops(param, tmp)

    def update(self) -> None:
        """Append the moving-average ops to the main program (once, after ``minimize``)."""
        if self._updated:
            raise RuntimeError("ExponentialMovingAverage.update() was already called for this program")
        self._updated = True
        program = default_main_program()
        block = program.global_block()
        for i, (param, tmp) in enumerate(self._params_tmps):
            ema = self._ema_vars[param.name]
            inputs = {"Param": [param], "Ema": [ema], "Decay": [self._decay_var]}
            outputs = {"EmaOut": [ema], "DecayOut": [self._decay_var]}
            if self._thres_steps is not None:
                inputs["ThresSteps"] = [self._thres_steps]
            if i == 0:
                inputs["Step"], outputs["StepOut"] = [self._step], [self._step]
            with program._optimized_guard([param, tmp]), name_scope("moving_average"):
                block.append_op("exponential_moving_average", inputs=inputs, outputs=outputs,
                                attrs={"decay": self._decay})

    def _append_apply_ops(self):
        import fluidist.layers as layers
        block = self.apply_program.global_block()
        decay = _clone_into(block, self._decay_var)
        step = _clone_into(block, self._step)
        decay_pow = layers.elementwise_pow(decay, layers.cast(step, "float32"))
        never = layers.cast(layers.equal(step, layers.fill_constant([1], "int64", 0)), "float32")
        # 1 - decay^t, or 1 before the first update (the average is then used as it is)
        correction = layers.elementwise_add(layers.scale(decay_pow, scale=-1.0, bias=1.0), never)
        for param, tmp in self._params_tmps:
            p, t = _clone_into(block, param), _clone_into(block, tmp)
            ema = _clone_into(block, self._ema_vars[param.name])
            layers.assign(p, t)
            corr = correction if param.dtype == "float32" else layers.cast(correction, param.dtype)
            block.append_op("elementwise_div", inputs={"X": [ema], "Y": [corr]}, outputs={"Out": [p]})


