"""``RecomputeOptimizer``: an optimizer whose backward pass recomputes activations between checkpoints
(how the program changes is described in :mod:`fluidist.passes.recompute`); re-exported by
``fluid.optimizer``."""
from __future__ import annotations

from typing import Any, Sequence

from ..passes.backward import append_backward
from ..framework.program import Variable, default_startup_program, program_guard
from .base import Optimizer, _check_clip


class RecomputeOptimizer(Optimizer):
    """Wraps an optimizer so that backward re-runs the forward ops between checkpoints instead of
    reading their outputs; the gradients, and so the parameters, are those of plain training.

    Call ``_set_checkpoints([vars])`` (as in Paddle) before ``minimize``. See
    ``backward.append_backward(checkpoints=...)`` and :mod:`fluidist.passes.recompute`.

    Paddle 1.8 difference: fluidist's executor keeps every variable of a step, so recomputation
    changes the program but not the memory it needs.

    Args:
        optimizer: the optimizer that applies the updates.

    Raises:
        TypeError: ``optimizer`` is not an Optimizer.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> hidden = fluid.layers.fc(x, size=8, act="relu")
        >>> loss = fluid.layers.mean(fluid.layers.fc(hidden, size=1))
        >>> opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(learning_rate=0.1))
        >>> opt._set_checkpoints([hidden])
        >>> optimize_ops, params_grads = opt.minimize(loss)
    """

    def __init__(self, optimizer: Optimizer):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("RecomputeOptimizer wraps an Optimizer, got %r" % type(optimizer).__name__)
        self._optimizer = optimizer
        self._checkpoints = None
        self._learning_rate = optimizer._learning_rate
        self._learning_rate_map = optimizer._learning_rate_map
        self.regularization = optimizer.regularization
        self._grad_clip = optimizer._grad_clip
        self._parameter_list = optimizer._parameter_list
        self._name = optimizer._name
        self._dtype = None

    def _set_checkpoints(self, checkpoints):
        if not isinstance(checkpoints, (list, tuple)) or not all(isinstance(c, (Variable, str)) for c in checkpoints):
            raise TypeError("RecomputeOptimizer: checkpoints must be a list of Variables")
        self._checkpoints = list(checkpoints)

    def load(self, stat_dict: Any) -> None:
        """Not supported, as in Paddle (NotImplementedError)."""
        raise NotImplementedError("load function is not supported by Recompute Optimizer for now")

    def backward(self, loss: Variable, startup_program: Any = None, parameter_list: Sequence[Any] | None = None,
                 no_grad_set: Any = None, callbacks: Any = None) -> list:
        """``append_backward`` with the checkpoints: the (param, grad) pairs."""
        self._dtype = loss.dtype
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            return append_backward(loss, parameter_list if parameter_list is not None else self._parameter_list,
                                   no_grad_set, callbacks, checkpoints=self._checkpoints)

    def apply_gradients(self, params_grads: list) -> list:
        """The wrapped optimizer's ``apply_gradients``."""
        return self._optimizer.apply_gradients(params_grads)

    def apply_optimize(self, loss: Variable, startup_program: Any, params_grads: list) -> list:
        """The wrapped optimizer's ``apply_optimize``."""
        return self._optimizer.apply_optimize(loss, startup_program, params_grads)

    def minimize(self, loss: Variable, startup_program: Any = None, parameter_list: Sequence[Any] | None = None,
                 no_grad_set: Any = None, grad_clip: Any = None) -> tuple[list, list]:
        """Backward with recomputation, then the wrapped optimizer's updates: ``(optimize_ops,
        params_grads)``. ValueError before ``_set_checkpoints``."""
        if not isinstance(loss, Variable):
            raise TypeError("RecomputeOptimizer.minimize: the loss should be a Variable")
        if self._checkpoints is None:
            raise ValueError("RecomputeOptimizer: call _set_checkpoints([...]) before minimize")
        if grad_clip is not None:
            _check_clip(grad_clip)
            self._optimizer._grad_clip = grad_clip
        self._optimizer._dtype = self._optimizer._dtype or loss.dtype
        params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
        optimize_ops = self.apply_optimize(loss, startup_program, params_grads)
        return optimize_ops, params_grads
