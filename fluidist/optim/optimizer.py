"""Paddle 1.x's optimizers (``fluid.optimizer``): SGD, Momentum, LARS, Adagrad, DecayedAdagrad, Adam,
Adamax, RMSProp, FTRL, LAMB, Adadelta, Dpsgd, and RecomputeOptimizer; ModelAverage, EMA and Lookahead
from their modules. How an optimizer builds its ops is described in :mod:`fluidist.optim.base`,
which holds their base class ``Optimizer`` (re-exported here); Adam, Adamax and LAMB are defined in
:mod:`fluidist.optim.adam`, and named here as Paddle's module names them.

Every constructor takes its arguments in Paddle 1.8.5's order (``tests/test_optimizer_signatures.py``
compares them), so positional calls land where they do in Paddle: after each optimizer's own
arguments come ``parameter_list``, ``regularization``, ``grad_clip`` and ``name`` (Adagrad's
``initial_accumulator_value``, Adam's ``lazy_mode`` and LAMB's ``exclude_from_weight_decay_fn`` sit
where Paddle puts them).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..framework.program import Parameter, Variable
from .adam import AdamaxOptimizer, AdamOptimizer, LambOptimizer
from .base import Optimizer, _check_range

__all__ = ["Optimizer", "SGDOptimizer", "MomentumOptimizer", "LarsMomentumOptimizer", "AdagradOptimizer",
           "AdamOptimizer", "AdamaxOptimizer", "DecayedAdagradOptimizer", "RMSPropOptimizer", "FtrlOptimizer",
           "LambOptimizer", "SGD", "Momentum", "LarsMomentum", "Adagrad", "Adam", "Adamax", "DecayedAdagrad",
           "RMSProp", "Ftrl", "Lamb", "AdadeltaOptimizer", "Adadelta", "DpsgdOptimizer", "Dpsgd", "ModelAverage",
           "ExponentialMovingAverage", "LookaheadOptimizer", "RecomputeOptimizer", "PipelineOptimizer",
           "DGCMomentumOptimizer"]


class SGDOptimizer(Optimizer):
    """Stochastic gradient descent: ``param -= lr * grad``.

    Available as ``fluid.optimizer.SGD``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule
            (``fluid.layers.exponential_decay``, ...).
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer (``fluid.regularizer.L2Decay(1e-4)``) applied to every
            parameter without one of its own.
        grad_clip: a gradient clip (``fluid.clip.GradientClipByGlobalNorm``, ...) applied before the
            update; it takes precedence over the parameters' own ``gradient_clip``.
        name: a prefix for the accumulators' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    """

    type = "sgd"

    def __init__(self, learning_rate: float | Variable, parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: Any = None, grad_clip: Any = None, name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)


class MomentumOptimizer(Optimizer):
    """SGD with momentum: ``velocity = momentum * velocity + grad``, ``param -= lr * velocity``.

    With Nesterov: ``param -= lr * (grad + momentum * velocity)``. Available as ``fluid.optimizer.Momentum``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule
            (``fluid.layers.exponential_decay``, ...).
        momentum: the decay of the velocity.
        parameter_list: the parameters to train (default: every trainable one).
        use_nesterov: use Nesterov's update.
        regularization: a regularizer (``fluid.regularizer.L2Decay(1e-4)``) applied to every
            parameter without one of its own.
        grad_clip: a gradient clip (``fluid.clip.GradientClipByGlobalNorm``, ...) applied before the
            update; it takes precedence over the parameters' own ``gradient_clip``.
        name: a prefix for the accumulators' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Momentum(learning_rate=0.01, momentum=0.9).minimize(loss)
    """

    type = "momentum"
    _velocity_acc_str = "velocity"
    _accumulator_names = {"Velocity": _velocity_acc_str}

    def __init__(self, learning_rate: float | Variable, momentum: float,
                 parameter_list: Sequence[Parameter | str] | None = None, use_nesterov: bool = False,
                 regularization: Any = None, grad_clip: Any = None, name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        if momentum is None:
            raise ValueError("MomentumOptimizer: momentum must be given")
        self._momentum = float(momentum)
        self._use_nesterov = bool(use_nesterov)

    def _update_attrs(self, param_and_grad):
        return {"mu": self._momentum, "use_nesterov": self._use_nesterov}


class LarsMomentumOptimizer(Optimizer):
    """Momentum with LARS's layer-wise learning rate (large-batch training).

    Each parameter's step uses ``local_lr = lr * lars_coeff * |p| / (|g| + wd * |p|)`` and
    ``velocity = momentum * velocity + local_lr * (g + wd * p)``, ``p -= velocity``. Available as
    ``fluid.optimizer.LarsMomentum``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule.
        momentum: the decay of the velocity.
        lars_coeff: how far the layer-wise rate trusts the weights' norm.
        lars_weight_decay: the weight decay ``wd`` inside the update.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer applied to every parameter without one of its own.
        grad_clip: a gradient clip applied before the update.
        name: a prefix for the accumulators' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.LarsMomentum(learning_rate=0.1, momentum=0.9).minimize(loss)
    """

    type = "lars_momentum"
    _velocity_acc_str = "velocity"
    _accumulator_names = {"Velocity": _velocity_acc_str}

    def __init__(self, learning_rate: float | Variable, momentum: float, lars_coeff: float = 0.001,
                 lars_weight_decay: float = 0.0005, parameter_list: Sequence[Parameter | str] | None = None,
                 regularization: Any = None, grad_clip: Any = None, name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        self._momentum = float(momentum)
        self._lars_coeff = float(lars_coeff)
        self._lars_weight_decay = float(lars_weight_decay)

    def _update_attrs(self, param_and_grad):
        return {"mu": self._momentum, "lars_coeff": self._lars_coeff, "lars_weight_decay": self._lars_weight_decay}


class AdagradOptimizer(Optimizer):
    """Adagrad: ``moment += grad ** 2``, ``param -= lr * grad / (sqrt(moment) + epsilon)``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule
            (``fluid.layers.exponential_decay``, ...).
        epsilon: keeps the division finite.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer (``fluid.regularizer.L2Decay(1e-4)``) applied to every
            parameter without one of its own.
        grad_clip: a gradient clip (``fluid.clip.GradientClipByGlobalNorm``, ...) applied before the
            update; it takes precedence over the parameters' own ``gradient_clip``.
        name: a prefix for the accumulators' names.
        initial_accumulator_value: the moment's starting value.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Adagrad(learning_rate=0.1).minimize(loss)
    """

    type = "adagrad"
    _moment_acc_str = "moment"
    _accumulator_names = {"Moment": _moment_acc_str}

    def __init__(self, learning_rate: float | Variable, epsilon: float = 1.0e-6,
                 parameter_list: Sequence[Parameter | str] | None = None, regularization: Any = None,
                 grad_clip: Any = None, name: str | None = None, initial_accumulator_value: float = 0.0) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        self._epsilon = float(epsilon)
        self.initial_accumulator_value = float(initial_accumulator_value)

    def _accumulator_fill(self, slot):
        return self.initial_accumulator_value

    def _update_attrs(self, param_and_grad):
        return {"epsilon": self._epsilon}


class DecayedAdagradOptimizer(Optimizer):
    """Adagrad with a decaying moment: ``moment = decay * moment + (1 - decay) * grad ** 2``,
    ``param -= lr * grad / (sqrt(moment) + epsilon)``. Available as ``fluid.optimizer.DecayedAdagrad``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule.
        decay: the decay of the moment, in ``[0, 1]``.
        epsilon: keeps the division finite.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer applied to every parameter without one of its own.
        grad_clip: a gradient clip applied before the update.
        name: a prefix for the accumulators' names.

    Raises:
        ValueError: a ``decay`` outside ``[0, 1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.DecayedAdagrad(learning_rate=0.1, decay=0.9).minimize(loss)
    """

    type = "decayed_adagrad"
    _moment_acc_str = "moment"
    _accumulator_names = {"Moment": _moment_acc_str}

    def __init__(self, learning_rate: float | Variable, decay: float = 0.95, epsilon: float = 1.0e-6,
                 parameter_list: Sequence[Parameter | str] | None = None, regularization: Any = None,
                 grad_clip: Any = None, name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        _check_range("DecayedAdagradOptimizer", "decay", decay, 0.0, 1.0)
        self._decay = float(decay)
        self._epsilon = float(epsilon)

    def _update_attrs(self, param_and_grad):
        return {"epsilon": self._epsilon, "decay": self._decay}


class RMSPropOptimizer(Optimizer):
    """RMSProp: ``ms = rho * ms + (1 - rho) * grad ** 2``, ``mom = momentum * mom + lr * grad / sqrt(ms + eps)``,
    ``param -= mom``; centered, the mean gradient's square is subtracted from ``ms`` first.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule
            (``fluid.layers.exponential_decay``, ...).
        rho: the decay of the mean square.
        epsilon: keeps the division finite.
        momentum: the decay of the momentum term.
        centered: normalise by the variance instead of the mean square.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer (``fluid.regularizer.L2Decay(1e-4)``) applied to every
            parameter without one of its own.
        grad_clip: a gradient clip (``fluid.clip.GradientClipByGlobalNorm``, ...) applied before the
            update; it takes precedence over the parameters' own ``gradient_clip``.
        name: a prefix for the accumulators' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.RMSProp(learning_rate=0.01).minimize(loss)
    """

    type = "rmsprop"
    _momentum_acc_str = "momentum"
    _mean_square_acc_str = "mean_square"
    _mean_grad_acc_str = "mean_grad"
    _accumulator_names = {"Moment": _momentum_acc_str, "MeanSquare": _mean_square_acc_str,
                          "MeanGrad": _mean_grad_acc_str}

    def __init__(self, learning_rate: float | Variable, rho: float = 0.95, epsilon: float = 1.0e-6,
                 momentum: float = 0.0, centered: bool = False,
                 parameter_list: Sequence[Parameter | str] | None = None, regularization: Any = None,
                 grad_clip: Any = None, name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        if rho is None or epsilon is None or momentum is None:
            raise ValueError("RMSPropOptimizer: rho, epsilon and momentum must be given")
        self._rho = float(rho)
        self._epsilon = float(epsilon)
        self._momentum = float(momentum)
        self._centered = bool(centered)

    def _update_attrs(self, param_and_grad):
        return {"epsilon": self._epsilon, "decay": self._rho, "momentum": self._momentum, "centered": self._centered}


class FtrlOptimizer(Optimizer):
    """FTRL-proximal (follow the regularised leader), common for sparse CTR models; a row-sparse
    gradient updates only its rows. Available as ``fluid.optimizer.Ftrl``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule.
        l1: the L1 strength.
        l2: the L2 strength.
        lr_power: the power of the per-coordinate learning rate (-0.5: divide by the square root
            of the summed squared gradients).
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer applied to every parameter without one of its own.
        grad_clip: a gradient clip applied before the update.
        name: a prefix for the accumulators' names.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Ftrl(learning_rate=0.1, l1=0.01).minimize(loss)
    """

    type = "ftrl"
    _squared_acc_str = "squared"
    _linear_acc_str = "linear"
    _accumulator_names = {"SquaredAccumulator": _squared_acc_str, "LinearAccumulator": _linear_acc_str}

    def __init__(self, learning_rate: float | Variable, l1: float = 0.0, l2: float = 0.0, lr_power: float = -0.5,
                 parameter_list: Sequence[Parameter | str] | None = None, regularization: Any = None,
                 grad_clip: Any = None, name: str | None = None) -> None:
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        self._l1 = float(l1)
        self._l2 = float(l2)
        self._lr_power = float(lr_power)

    def _update_attrs(self, param_and_grad):
        return {"l1": self._l1, "l2": self._l2, "lr_power": self._lr_power}


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012) as Paddle 1.8 runs it: the ``adadelta`` op takes no learning rate
    (``learning_rate`` is required, as in Paddle, but does not scale the step). Available as
    ``fluid.optimizer.Adadelta``.

    Args:
        learning_rate: required, unused by the update (see above).
        epsilon: keeps the division finite.
        rho: the decay of the running averages.
        parameter_list: the parameters to train (default: every trainable one).
        regularization: a regularizer applied to every parameter without one of its own.
        grad_clip: a gradient clip applied before the update.
        name: a prefix for the accumulators' names.

    Raises:
        ValueError: ``learning_rate``, ``epsilon`` or ``rho`` is None.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Adadelta(learning_rate=1.0, rho=0.9).minimize(loss)
    """

    type = "adadelta"
    _avg_squared_grad_acc_str = "_avg_squared_grad"
    _avg_squared_update_acc_str = "_avg_squared_update"
    _accumulator_names = {"AvgSquaredGrad": _avg_squared_grad_acc_str,
                          "AvgSquaredUpdate": _avg_squared_update_acc_str}

    def __init__(self, learning_rate: float | Variable, epsilon: float = 1.0e-6, rho: float = 0.95,
                 parameter_list: Sequence[Parameter | str] | None = None, regularization: Any = None,
                 grad_clip: Any = None, name: str | None = None) -> None:
        if learning_rate is None:
            raise ValueError("learning_rate is not set.")
        if epsilon is None:
            raise ValueError("epsilon is not set.")
        if rho is None:
            raise ValueError("rho is not set.")
        super().__init__(learning_rate, parameter_list=parameter_list, regularization=regularization,
                         grad_clip=grad_clip, name=name)
        self._epsilon = float(epsilon)
        self._rho = float(rho)

    def _update_attrs(self, param_and_grad):
        return {"epsilon": self._epsilon, "rho": self._rho}


class DpsgdOptimizer(Optimizer):
    """Differentially private SGD (the ``dpsgd`` op): the gradient clipped to L2 norm ``clip``,
    plus Gaussian noise of scale ``sigma / batch_size``. ``self._seed`` (0: fresh noise every step)
    fixes the noise for debugging, as in Paddle. Available as ``fluid.optimizer.Dpsgd``.

    Args:
        learning_rate: a float, or a Variable from a learning-rate schedule.
        clip: the L2 norm each gradient is clipped to.
        batch_size: divides the noise's scale (Paddle's default, 0.999, is kept).
        sigma: the noise's scale.
        parameter_list: the parameters to train (default: every trainable one).

    Raises:
        ValueError: an argument given as None.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> optimize_ops, params_grads = fluid.optimizer.Dpsgd(learning_rate=0.01, clip=1.0, batch_size=32.0, sigma=0.1).minimize(loss)
    """

    type = "dpsgd"

    def __init__(self, learning_rate: float | Variable = 0.001, clip: float = 0.9, batch_size: float = 0.999,
                 sigma: float = 1e-8, parameter_list: Sequence[Parameter | str] | None = None) -> None:
        for what, v in (("learning_rate", learning_rate), ("clip", clip), ("batch_size", batch_size),
                        ("sigma", sigma)):
            if v is None:
                raise ValueError("DpsgdOptimizer: %s must be given" % what)
        super().__init__(learning_rate, parameter_list=parameter_list)
        self._clip = float(clip)
        self._batch_size = float(batch_size)
        self._sigma = float(sigma)
        self._seed = None

    def _update_attrs(self, param_and_grad):
        return {"clip": self._clip, "batch_size": self._batch_size, "sigma": self._sigma, "seed": int(self._seed or 0)}


from ..compat import refused_class  # noqa: E402
from .lookahead import LookaheadOptimizer  # noqa: E402
from .recompute_optimizer import RecomputeOptimizer  # noqa: E402
from .model_averaging import ExponentialMovingAverage, ModelAverage  # noqa: E402

PipelineOptimizer = refused_class(
    "fluid.optimizer.PipelineOptimizer", "pipeline training needs Paddle's section workers over several devices; "
    "train the whole program on each place with CompiledProgram.with_data_parallel, or split large models with "
    "RecomputeOptimizer")
DGCMomentumOptimizer = refused_class(
    "fluid.optimizer.DGCMomentumOptimizer", "deep gradient compression is a GPU/NCCL feature of Paddle; use "
    "MomentumOptimizer (with fleet's collective mode for all-reduce)")

SGD = SGDOptimizer
"""``SGD``: the short name of ``SGDOptimizer`` (the same class)."""
Momentum = MomentumOptimizer
"""``Momentum``: the short name of ``MomentumOptimizer`` (the same class)."""
LarsMomentum = LarsMomentumOptimizer
"""``LarsMomentum``: the short name of ``LarsMomentumOptimizer`` (the same class)."""
Adagrad = AdagradOptimizer
"""``Adagrad``: the short name of ``AdagradOptimizer`` (the same class)."""
DecayedAdagrad = DecayedAdagradOptimizer
"""``DecayedAdagrad``: the short name of ``DecayedAdagradOptimizer`` (the same class)."""
Adam = AdamOptimizer
"""``Adam``: the short name of ``AdamOptimizer`` (the same class)."""
Adamax = AdamaxOptimizer
"""``Adamax``: the short name of ``AdamaxOptimizer`` (the same class)."""
RMSProp = RMSPropOptimizer
"""``RMSProp``: the short name of ``RMSPropOptimizer`` (the same class)."""
Ftrl = FtrlOptimizer
"""``Ftrl``: the short name of ``FtrlOptimizer`` (the same class)."""
Lamb = LambOptimizer
"""``Lamb``: the short name of ``LambOptimizer`` (the same class)."""
Adadelta = AdadeltaOptimizer
"""``Adadelta``: the short name of ``AdadeltaOptimizer`` (the same class)."""
Dpsgd = DpsgdOptimizer
"""``Dpsgd``: the short name of ``DpsgdOptimizer`` (the same class)."""

from .paddle_imports import *  # noqa: E402,F401,F403 (names Paddle's module imports for itself)


def __getattr__(name: str) -> Any:
    """A missing name: Paddle 2.x's optimizer names (``AdamW``, ``lr``) say fluid 1.x's spelling."""
    from ..compat import raise_missing
    raise_missing("fluidist.optimizer", name)
