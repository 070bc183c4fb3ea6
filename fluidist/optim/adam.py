"""Adam and its kin (``fluid.optimizer.Adam``, ``Adamax``, ``Lamb``): the optimizers that keep a first
and a second moment of the gradient and their beta powers. :mod:`fluidist.optim.optimizer` names them
as Paddle's ``fluid.optimizer`` does; how an optimizer builds its ops is in :mod:`fluidist.optim.base`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..framework.program import Parameter, Variable, name_scope
from .base import Optimizer, _check_range

__all__ = ["AdamOptimizer", "AdamaxOptimizer", "LambOptimizer"]


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with Paddle's bias correction.

    With a row-sparse gradient (``embedding(is_sparse=True)``) and ``lazy_mode=False`` every row's
    moments decay each step, exactly as with a dense gradient; with ``lazy_mode=True`` only the rows
    in the batch are updated. Available as ``fluid.optimizer.Adam``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule
            (``fluid.layers.exponential_decay``, ...).
        beta1: the decay of the first moment, a float or a one-element Variable.
        beta2: the decay of the second moment, a float or a one-element Variable.
        epsilon: keeps the division finite.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer (``fluid.regularizer.L2Decay(1e-4)``) applied to every
            parameter without one of its own.
        grad_clip: a gradient clip (``fluid.clip.GradientClipByGlobalNorm``, ...) applied before the
            update; it takes precedence over the parameters' own ``gradient_clip``.
        name: a prefix for the accumulators' names.
        lazy_mode: update only the rows of a sparse gradient.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    """

    type = "adam"
    _moment1_acc_str = "moment1"
    _moment2_acc_str = "moment2"
    _beta1_pow_acc_str = "beta1_pow_acc"
    _beta2_pow_acc_str = "beta2_pow_acc"
    _accumulator_names = {"Moment1": _moment1_acc_str, "Moment2": _moment2_acc_str,
                          "Beta1Pow": _beta1_pow_acc_str, "Beta2Pow": _beta2_pow_acc_str}

    def __init__(self, learning_rate: float | Variable = 0.001, beta1: float | Variable = 0.9,
                 beta2: float | Variable = 0.999, epsilon: float = 1e-8,
                 parameter_list: Sequence[Parameter | str] | None = None, regularization: Any = None,
                 grad_clip: Any = None, name: str | None = None, lazy_mode: bool = False) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        self._beta1 = _beta(type(self).__name__, "beta1", beta1)
        self._beta2 = _beta(type(self).__name__, "beta2", beta2)
        self._epsilon = float(epsilon)
        self._lazy_mode = bool(lazy_mode)

    def _accumulator_fill(self, slot):
        """The beta powers start at beta1 / beta2 (at 0.9 / 0.999 for a beta given as a Variable, as in
        Paddle 1.8); the moments at 0."""
        fills = {"Beta1Pow": (self._beta1, 0.9), "Beta2Pow": (self._beta2, 0.999)}
        if slot not in fills:
            return 0.0
        beta, default = fills[slot]
        return default if isinstance(beta, Variable) else beta

    def _update_attrs(self, param_and_grad):
        """As Paddle 1.8's: the adam op advances the beta powers itself (no scale ops); a beta given as
        a Variable goes in as Beta1Tensor / Beta2Tensor instead of an attr."""
        attrs = {"epsilon": self._epsilon, "lazy_mode": self._lazy_mode, "min_row_size_to_use_multithread": 1000}
        for attr, beta in (("beta1", self._beta1), ("beta2", self._beta2)):
            if not isinstance(beta, Variable):
                attrs[attr] = beta
        return attrs

    def _update_inputs(self, param_and_grad):
        return {slot: [beta] for slot, beta in (("Beta1Tensor", self._beta1), ("Beta2Tensor", self._beta2))
                if isinstance(beta, Variable)}


def _beta(owner, what, value):
    """A beta of Adam: a float in [0, 1), or a Variable holding it (Paddle 1.8 takes both)."""
    if isinstance(value, Variable):
        return value
    _check_range(owner, what, value, 0.0, 1.0, high_open=True)
    return float(value)


def _scale_pows(opt, block, parameters_and_grads, pows):
    """``acc *= beta`` for each ``(accumulator name, beta)`` of ``pows`` and each parameter, under
    the parameter's optimize guard."""
    program = block.program
    for p, g in parameters_and_grads:
        with program._optimized_guard([p, g]), name_scope("optimizer"):
            for acc, beta in pows:
                v = opt._get_accumulator(acc, p)
                block.append_op("scale", inputs={"X": [v]}, outputs={"Out": [v]}, attrs={"scale": beta})


class AdamaxOptimizer(Optimizer):
    """Adamax, Adam with the infinity norm: ``moment = beta1 * moment + (1 - beta1) * g``,
    ``inf_norm = max(beta2 * inf_norm + epsilon, |g|)``, ``param -= lr / (1 - beta1 ** t) * moment /
    inf_norm``. Available as ``fluid.optimizer.Adamax``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule.
        beta1: the decay of the moment, in ``[0, 1)``.
        beta2: the decay of the infinity norm, in ``[0, 1)``.
        epsilon: keeps the division finite.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer applied to every parameter without one of its own.
        grad_clip: a gradient clip applied before the update.
        name: a prefix for the accumulators' names.

    Raises:
        ValueError: a ``beta1`` or ``beta2`` outside ``[0, 1)``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Adamax(learning_rate=0.002).minimize(loss)
    """

    type = "adamax"
    _moment_acc_str = "moment"
    _inf_norm_acc_str = "inf_norm"
    _beta1_pow_acc_str = "beta1_pow_acc"
    _accumulator_names = {"Moment": _moment_acc_str, "InfNorm": _inf_norm_acc_str, "Beta1Pow": _beta1_pow_acc_str}

    def __init__(self, learning_rate: float | Variable = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: Any = None, grad_clip: Any = None, name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        _check_range("AdamaxOptimizer", "beta1", beta1, 0.0, 1.0, high_open=True)
        _check_range("AdamaxOptimizer", "beta2", beta2, 0.0, 1.0, high_open=True)
        self._beta1 = float(beta1)
        self._beta2 = float(beta2)
        self._epsilon = float(epsilon)

    def _accumulator_fill(self, slot):
        return self._beta1 if slot == "Beta1Pow" else 0.0

    def _update_attrs(self, param_and_grad):
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon}

    def _finish_update(self, block, parameters_and_grads):
        _scale_pows(self, block, parameters_and_grads, ((self._beta1_pow_acc_str, self._beta1),))


class LambOptimizer(AdamOptimizer):
    """LAMB (You et al.), for large-batch training: Adam's step plus ``lamb_weight_decay * param``,
    scaled by the trust ratio ``|param| / |step|``. As in Paddle 1.8 the moments are not
    bias-corrected: the ``lamb`` op takes the beta powers but does not read them, and no op advances
    them. Available as ``fluid.optimizer.Lamb``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule.
        lamb_weight_decay: the decoupled weight decay.
        beta1: the decay of the first moment, in ``[0, 1)``.
        beta2: the decay of the second moment, in ``[0, 1)``.
        epsilon: keeps the division finite.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer applied to every parameter without one of its own.
        grad_clip: a gradient clip applied before the update.
        exclude_from_weight_decay_fn: ``fn(param) -> bool``; True turns the decay off for that
            parameter (biases, norms).
        name: a prefix for the accumulators' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Lamb(learning_rate=0.002, exclude_from_weight_decay_fn=lambda p: p.name.endswith(".b_0")).minimize(loss)
    """

    type = "lamb"

    def __init__(self, learning_rate: float | Variable = 0.001, lamb_weight_decay: float = 0.01, beta1: float = 0.9,
                 beta2: float = 0.999, epsilon: float = 1e-6,
                 parameter_list: Sequence[Parameter | str] | None = None, regularization: Any = None,
                 grad_clip: Any = None, exclude_from_weight_decay_fn: Callable[[Parameter], bool] | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, beta1, beta2, epsilon, parameter_list=parameter_list,
                         regularization=regularization, grad_clip=grad_clip, name=name, lazy_mode=False)
        if isinstance(beta1, Variable) or isinstance(beta2, Variable):
            raise TypeError("LambOptimizer: beta1 and beta2 must be floats (the lamb op has no Beta1Tensor slot)")
        self._weight_decay = float(lamb_weight_decay)
        self._exclude_from_weight_decay_fn = exclude_from_weight_decay_fn

    def _update_attrs(self, param_and_grad):
        wd = self._weight_decay
        if self._exclude_from_weight_decay_fn is not None and self._exclude_from_weight_decay_fn(param_and_grad[0]):
            wd = 0.0
        return {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon, "weight_decay": wd}
