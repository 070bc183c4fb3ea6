"""``fluid.optimizer.LookaheadOptimizer`` (Zhang et al., 2019): an inner optimizer updates the
"fast" parameters every step; every ``k`` steps the "slow" copies move ``alpha`` of the way towards
them and the fast parameters are reset to the slow ones.

Each parameter with a gradient gets a ``lookahead`` op right after its inner update, under the same
optimize guard, with its slow copy (``<param>@SLOW``, filled from the parameter by the startup
program) and a step counter as accumulators: where the update runs (a pserver, on a slice of the
parameter), Lookahead runs too. Parameters without a gradient (batch-norm statistics) are
interpolated the same way by ops that stay where they are.

fluidist differences from Paddle 1.8: one op per parameter (with a step counter per parameter)
instead of a ``Switch`` over elementwise ops with one global ``lookahead_step``; same numbers.
"""
from __future__ import annotations

from typing import Any

from ..framework import unique_name
from ..framework.program import default_startup_program, name_scope
from ..initializer import ConstantInitializer
from ..layers.layer_helper import LayerHelper


class LookaheadOptimizer:
    """Lookahead: the inner optimizer updates the parameters every step; every ``k`` steps slow
    copies move ``alpha`` of the way towards them and the parameters are reset to the slow copies.

    Paddle 1.8 difference: one ``lookahead`` op per parameter instead of Paddle's ``Switch`` over
    elementwise ops (same numbers; see the module).

    Args:
        inner_optimizer: the optimizer of the fast steps.
        alpha: how far the slow copies move, in ``[0, 1]``.
        k: the number of fast steps between slow updates (a positive int).

    Raises:
        ValueError: no inner optimizer, or ``alpha`` / ``k`` out of range.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> opt = fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(learning_rate=0.1), alpha=0.5, k=5)
        >>> optimize_ops, params_grads = opt.minimize(loss)
    """

    def __init__(self, inner_optimizer: Any, alpha: float = 0.5, k: int = 5):
        if inner_optimizer is None:
            raise ValueError("LookaheadOptimizer: inner optimizer can not be None")
        if not 0.0 <= alpha <= 1.0:
            raise ValueError("LookaheadOptimizer: alpha should be larger or equal to 0.0, and less or equal than 1.0, "
                             "got %r" % (alpha,))
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ValueError("LookaheadOptimizer: k should be a positive integer, got %r" % (k,))
        self.inner_optimizer = inner_optimizer
        self.alpha = float(alpha)
        self.k = k
        self.type = "lookahead"

    def minimize(self, loss: Any, startup_program: Any = None, parameter_list: Any = None,
                 no_grad_set: Any = None) -> tuple[list, list]:
        """The inner optimizer's ``minimize``, then one ``lookahead`` op per parameter:
        ``(optimize_ops, params_grads)``."""
        optimize_ops, params_grads = self.inner_optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        startup = startup_program if startup_program is not None else default_startup_program()
        program = loss.block.program
        block = program.global_block()
        grads = {p.name: g for p, g in params_grads if g is not None}
        sblock = startup.global_block()
        for param in block.all_parameters():
            slow = block.create_var(name=param.name + "@SLOW", shape=param.shape, dtype=param.dtype, persistable=True,
                                    stop_gradient=True)
            sblock.create_var(name=slow.name, shape=param.shape, dtype=param.dtype, persistable=True)
            sblock.append_op("assign", inputs={"X": [param.name]}, outputs={"Out": [slow.name]})
            step = block.create_var(name=unique_name.generate(param.name + "_lookahead_step"), shape=[1],
                                    dtype="int64", persistable=True, stop_gradient=True)
            LayerHelper("lookahead").set_variable_initializer(step, ConstantInitializer(0.0))
            grad = grads.get(param.name)
            guard = program._optimized_guard([param, grad]) if grad is not None else program._role_guard(0)
            with guard, name_scope("lookahead"):
                block.append_op("lookahead", inputs={"Param": [param], "SlowParam": [slow], "Step": [step]},
                                outputs={"ParamOut": [param], "SlowParamOut": [slow], "StepOut": [step]},
                                attrs={"alpha": self.alpha, "k": self.k})
        return optimize_ops, params_grads
