"""Optimizers: each appends its update ops after backward, as Paddle 1.x did.

``minimize(loss)`` = ``append_backward`` + ``apply_gradients``, which

1. sorts the (param, grad) pairs by parameter name (so the optimize ops, and the transpiler's
   dispatch, come out in Paddle's order);
2. appends gradient clipping (``clip.py``) and weight decay (``regularizer.py``);
3. creates the accumulators (persistable ``<name>_<n>`` variables such as ``velocity_0``,
   ``moment1_3``, filled by ``fill_constant`` in the startup program) and the learning rate (a
   persistable ``learning_rate_<n>``, or the Variable of an LR schedule);
4. appends one update op per parameter under ``program._optimized_guard([param, grad])`` (op_role
   Optimize, op_role_var [param, grad]), and then ``_finish_update`` (Adam's beta-pow ``scale``
   ops, each under its own parameter's guard).

A parameter with ``ParamAttr(learning_rate=x)`` gets ``scale(global lr, x)`` built under the LR guard
(op_role LRSched|Optimize) as its LearningRate. The transpiler finds all of this through op_role,
op_role_var and the slot names (Param, Grad, LearningRate, the accumulator slots) only.
"""
from collections import defaultdict

from .backward import append_backward
from .framework import unique_name
from .framework.program import Variable, default_main_program, default_startup_program, name_scope, program_guard
from .initializer import ConstantInitializer
from .layers.layer_helper import LayerHelper

__all__ = ["Optimizer", "SGDOptimizer", "MomentumOptimizer", "LarsMomentumOptimizer", "AdagradOptimizer",
           "AdamOptimizer", "AdamaxOptimizer", "DecayedAdagradOptimizer", "RMSPropOptimizer", "FtrlOptimizer",
           "LambOptimizer", "SGD", "Momentum", "LarsMomentum", "Adagrad", "Adam", "Adamax", "DecayedAdagrad",
           "RMSProp", "Ftrl", "Lamb", "AdadeltaOptimizer", "Adadelta", "DpsgdOptimizer", "Dpsgd", "ModelAverage",
           "ExponentialMovingAverage", "LookaheadOptimizer", "RecomputeOptimizer", "PipelineOptimizer",
           "DGCMomentumOptimizer"]


class Optimizer:
    """Base class. Subclasses implement ``_create_accumulators``, ``_append_optimize_op`` and, when
    they have per-step bookkeeping, ``_finish_update``."""

    type = "optimizer"

    def __init__(self, learning_rate, regularization=None, name=None, grad_clip=None, parameter_list=None):
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (float, int, Variable)):
            raise TypeError("%s: learning_rate must be a float or a Variable, got %r"
                            % (type(self).__name__, type(learning_rate).__name__))
        if grad_clip is not None:
            _check_clip(grad_clip)
        self._learning_rate = learning_rate
        self.regularization = regularization
        self._grad_clip = grad_clip
        self._name = name
        self._parameter_list = parameter_list
        self._dtype = None
        self._learning_rate_map = {}
        self._accumulators = defaultdict(dict)
        self._opti_name_list = []
        self.helper = None

    # ---------------------------------------------------------------- learning rate
    def _create_global_learning_rate(self):
        program = default_main_program()
        if program in self._learning_rate_map:
            return
        if isinstance(self._learning_rate, Variable):
            if self._learning_rate.block.program is not program:
                raise ValueError("%s: the learning-rate variable %r belongs to another program than the one "
                                 "being optimized" % (type(self).__name__, self._learning_rate.name))
            self._learning_rate_map[program] = self._learning_rate
            return
        lr = program.global_block().create_var(name=unique_name.generate("learning_rate"), shape=[1],
                                               dtype=self._dtype or "float32", persistable=True,
                                               stop_gradient=True)
        LayerHelper("learning_rate").set_variable_initializer(lr, ConstantInitializer(float(self._learning_rate)))
        self._learning_rate_map[program] = lr

    def _global_learning_rate(self, program=None):
        return self._learning_rate_map.get(program or default_main_program())

    def _create_param_lr(self, param_and_grad):
        """The LearningRate of one parameter: the global one, or ``scale``d by its
        ``ParamAttr(learning_rate=...)`` (built under the LR guard, op_role LRSched|Optimize)."""
        param = param_and_grad[0]
        param_lr = getattr(param, "optimize_attr", {}).get("learning_rate", 1.0)
        if isinstance(param_lr, Variable):
            return param_lr
        glr = self._global_learning_rate()
        if float(param_lr) == 1.0:
            return glr
        program = default_main_program()
        block = program.global_block()
        with program._lr_schedule_guard(is_with_opt=True), name_scope("scale_with_param_lr"):
            out = block.create_var(name=unique_name.generate_with_ignorable_key("learning_rate"), shape=[1],
                                   dtype=glr.dtype, stop_gradient=True)
            block.append_op("scale", inputs={"X": [glr]}, outputs={"Out": [out]},
                            attrs={"scale": float(param_lr)})
        return out

    # ---------------------------------------------------------------- accumulators
    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None):
        """A persistable variable named as Paddle names it, ``unique_name.generate(<param>_<name>)``
        (``fc_0.w_0_velocity_0``...), so that Paddle's saved optimizer state loads by name; of the
        parameter's shape (or ``shape``), filled with ``fill_value`` by the startup program."""
        if self._name is not None:
            name = self._name + "_" + name
        if param.name in self._accumulators[name]:
            raise ValueError("accumulator %r for parameter %r already exists" % (name, param.name))
        if shape is None:
            shape = param.shape
        var = default_main_program().global_block().create_var(
            name=unique_name.generate(param.name + "_" + name), persistable=True, dtype=dtype or param.dtype,
            type=param.type,
            shape=shape, stop_gradient=True)
        self.helper.set_variable_initializer(var, ConstantInitializer(float(fill_value)))
        self._accumulators[name][param.name] = var
        self._opti_name_list.append(var.name)
        return var

    def _get_accumulator(self, name, param):
        if self._name is not None:
            name = self._name + "_" + name
        if param.name not in self._accumulators[name]:
            raise ValueError("accumulator %r for parameter %r does not exist" % (name, param.name))
        return self._accumulators[name][param.name]

    def get_opti_var_name_list(self):
        """Names of the accumulators this optimizer created."""
        return list(self._opti_name_list)

    # ---------------------------------------------------------------- hooks for subclasses
    def _create_accumulators(self, block, parameters):
        pass

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError

    def _finish_update(self, block, parameters_and_grads):
        """Ops after all updates; each must be built under its own parameter's optimize guard."""

    def _update_inputs(self, param_and_grad):
        """Param, Grad and LearningRate slots of an update op."""
        p, g = param_and_grad
        return {"Param": [p], "Grad": [g], "LearningRate": [self._create_param_lr(param_and_grad)]}

    # ---------------------------------------------------------------- passes
    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        """``append_backward``; as in Paddle, ``error_clip_callback`` runs unless other callbacks are given."""
        parameter_list = parameter_list if parameter_list is not None else self._parameter_list
        if callbacks is None:
            from .clip import error_clip_callback
            callbacks = [error_clip_callback]
        return append_backward(loss, parameter_list, no_grad_set, callbacks)

    def _create_optimization_pass(self, parameters_and_grads):
        """Append accumulators, learning rate and update ops; returns the ops appended."""
        program = default_main_program()
        block = program.global_block()
        start = len(block.ops)
        self.helper = LayerHelper(self.__class__.__name__)
        self._create_accumulators(block, [p for p, g in parameters_and_grads if p.trainable])
        self._create_global_learning_rate()
        for pg in parameters_and_grads:
            if pg[1] is None or not pg[0].trainable:
                continue
            with program._optimized_guard(pg), name_scope("optimizer"):
                self._append_optimize_op(block, pg)
        self._finish_update(block, [pg for pg in parameters_and_grads if pg[1] is not None and pg[0].trainable])
        return block.ops[start:]

    def apply_gradients(self, params_grads):
        """Clip, regularize and update: returns the optimize ops."""
        from .clip import append_gradient_clip_ops
        from .regularizer import append_regularization_ops
        params_grads = sorted(params_grads, key=lambda pg: pg[0].name)
        if self._grad_clip is not None:
            params_grads = self._grad_clip(params_grads)
        else:
            params_grads = append_gradient_clip_ops(params_grads)
        params_grads = append_regularization_ops(params_grads, self.regularization)
        return self._create_optimization_pass(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            return self.apply_gradients(params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, grad_clip=None):
        """Append backward and optimize ops; returns ``(optimize_ops, params_grads)``.

        ``grad_clip`` (or the constructor's) clips every gradient and takes precedence over the
        parameters' own ``gradient_clip`` attrs."""
        if grad_clip is not None:
            _check_clip(grad_clip)
            self._grad_clip = grad_clip
        if not isinstance(loss, Variable):
            raise TypeError("%s.minimize: loss must be a Variable, got %r" % (type(self).__name__,
                                                                               type(loss).__name__))
        self._dtype = self._dtype or loss.dtype
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
            optimize_ops = self.apply_gradients(params_grads)
        return optimize_ops, params_grads


def _check_clip(clip):
    from .clip import BaseGradientClipAttr
    if not isinstance(clip, BaseGradientClipAttr):
        raise TypeError("grad_clip must be a GradientClip* object (clip.GradientClipByValue, ByNorm, "
                        "ByGlobalNorm), got %r" % type(clip).__name__)


def _check_range(owner, name, value, low, high, low_open=False, high_open=False):
    ok = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        raise ValueError("%s: %s must be in %s%s, %s%s, got %r" % (owner, name, "(" if low_open else "[", low,
                                                                 high, ")" if high_open else "]", value))


class SGDOptimizer(Optimizer):
    """``param -= lr * grad``."""

    type = "sgd"

    def __init__(self, learning_rate, regularization=None, name=None, grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        return block.append_op("sgd", inputs=self._update_inputs(param_and_grad), outputs={"ParamOut": [p]})


class MomentumOptimizer(Optimizer):
    """``velocity = momentum * velocity + grad``; ``param -= lr * velocity`` (Nesterov:
    ``param -= lr * (grad + momentum * velocity)``)."""

    type = "momentum"
    _velocity_acc_str = "velocity"

    def __init__(self, learning_rate, momentum, use_nesterov=False, regularization=None, name=None,
                 grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        if momentum is None:
            raise ValueError("MomentumOptimizer: momentum must be given")
        self._momentum = float(momentum)
        self._use_nesterov = bool(use_nesterov)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        v = self._get_accumulator(self._velocity_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs["Velocity"] = [v]
        return block.append_op("momentum", inputs=inputs, outputs={"ParamOut": [p], "VelocityOut": [v]},
                               attrs={"mu": self._momentum, "use_nesterov": self._use_nesterov})


class LarsMomentumOptimizer(Optimizer):
    """Momentum with a layer-wise learning rate ``lr * lars_coeff * |p| / (|g| + wd * |p|)``."""

    type = "lars_momentum"
    _velocity_acc_str = "velocity"

    def __init__(self, learning_rate, momentum, lars_coeff=0.001, lars_weight_decay=0.0005, regularization=None,
                 name=None, grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        self._momentum = float(momentum)
        self._lars_coeff = float(lars_coeff)
        self._lars_weight_decay = float(lars_weight_decay)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        v = self._get_accumulator(self._velocity_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs["Velocity"] = [v]
        return block.append_op("lars_momentum", inputs=inputs, outputs={"ParamOut": [p], "VelocityOut": [v]},
                               attrs={"mu": self._momentum, "lars_coeff": self._lars_coeff,
                                      "lars_weight_decay": self._lars_weight_decay})


class AdagradOptimizer(Optimizer):
    """``moment += grad^2``; ``param -= lr * grad / (sqrt(moment) + epsilon)``."""

    type = "adagrad"
    _moment_acc_str = "moment"

    def __init__(self, learning_rate, epsilon=1.0e-6, regularization=None, name=None, initial_accumulator_value=0.0,
                 grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        self._epsilon = float(epsilon)
        self.initial_accumulator_value = float(initial_accumulator_value)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment_acc_str, p, fill_value=self.initial_accumulator_value)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        m = self._get_accumulator(self._moment_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs["Moment"] = [m]
        return block.append_op("adagrad", inputs=inputs, outputs={"ParamOut": [p], "MomentOut": [m]},
                               attrs={"epsilon": self._epsilon})


class DecayedAdagradOptimizer(Optimizer):
    """``moment = decay * moment + (1 - decay) * grad^2``; ``param -= lr * grad / (sqrt(moment) + eps)``."""

    type = "decayed_adagrad"
    _moment_acc_str = "moment"

    def __init__(self, learning_rate, decay=0.95, epsilon=1.0e-6, regularization=None, name=None,
                 grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        _check_range("DecayedAdagradOptimizer", "decay", decay, 0.0, 1.0)
        self._decay = float(decay)
        self._epsilon = float(epsilon)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        m = self._get_accumulator(self._moment_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs["Moment"] = [m]
        return block.append_op("decayed_adagrad", inputs=inputs, outputs={"ParamOut": [p], "MomentOut": [m]},
                               attrs={"epsilon": self._epsilon, "decay": self._decay})


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba) with Paddle's bias correction.

    With a row-sparse gradient and ``lazy_mode=False`` (the default) every row's moments decay each
    step (absent rows have a zero gradient), exactly as with a dense gradient; with
    ``lazy_mode=True`` only the rows present in the batch are updated."""

    type = "adam"
    _moment1_acc_str = "moment1"
    _moment2_acc_str = "moment2"
    _beta1_pow_acc_str = "beta1_pow_acc"
    _beta2_pow_acc_str = "beta2_pow_acc"
    _op_type = "adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, regularization=None, name=None,
                 lazy_mode=False, grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        _check_range(type(self).__name__, "beta1", beta1, 0.0, 1.0, high_open=True)
        _check_range(type(self).__name__, "beta2", beta2, 0.0, 1.0, high_open=True)
        self._beta1 = float(beta1)
        self._beta2 = float(beta2)
        self._epsilon = float(epsilon)
        self._lazy_mode = bool(lazy_mode)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment1_acc_str, p)
            self._add_accumulator(self._moment2_acc_str, p)
            self._add_accumulator(self._beta1_pow_acc_str, p, dtype="float32", fill_value=self._beta1, shape=[1])
            self._add_accumulator(self._beta2_pow_acc_str, p, dtype="float32", fill_value=self._beta2, shape=[1])

    def _adam_inputs_outputs(self, param_and_grad):
        p = param_and_grad[0]
        m1 = self._get_accumulator(self._moment1_acc_str, p)
        m2 = self._get_accumulator(self._moment2_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs.update({"Moment1": [m1], "Moment2": [m2],
                       "Beta1Pow": [self._get_accumulator(self._beta1_pow_acc_str, p)],
                       "Beta2Pow": [self._get_accumulator(self._beta2_pow_acc_str, p)]})
        return inputs, {"ParamOut": [p], "Moment1Out": [m1], "Moment2Out": [m2]}

    def _append_optimize_op(self, block, param_and_grad):
        inputs, outputs = self._adam_inputs_outputs(param_and_grad)
        return block.append_op("adam", inputs=inputs, outputs=outputs,
                               attrs={"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
                                      "lazy_mode": self._lazy_mode})

    def _finish_update(self, block, parameters_and_grads):
        """``beta1_pow_acc *= beta1`` and ``beta2_pow_acc *= beta2`` by ``scale`` ops, each under its
        parameter's optimize guard (the transpiler moves them with that parameter's update)."""
        program = block.program
        for p, g in parameters_and_grads:
            with program._optimized_guard([p, g]), name_scope("optimizer"):
                for acc, beta in ((self._beta1_pow_acc_str, self._beta1), (self._beta2_pow_acc_str, self._beta2)):
                    v = self._get_accumulator(acc, p)
                    block.append_op("scale", inputs={"X": [v]}, outputs={"Out": [v]}, attrs={"scale": beta})


class AdamaxOptimizer(Optimizer):
    """Adamax: ``moment = b1 m + (1-b1) g``; ``inf_norm = max(b2 u + eps, |g|)``;
    ``param -= lr / (1 - b1^t) * moment / inf_norm``."""

    type = "adamax"
    _moment_acc_str = "moment"
    _inf_norm_acc_str = "inf_norm"
    _beta1_pow_acc_str = "beta1_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, regularization=None, name=None,
                 grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        _check_range("AdamaxOptimizer", "beta1", beta1, 0.0, 1.0, high_open=True)
        _check_range("AdamaxOptimizer", "beta2", beta2, 0.0, 1.0, high_open=True)
        self._beta1 = float(beta1)
        self._beta2 = float(beta2)
        self._epsilon = float(epsilon)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment_acc_str, p)
            self._add_accumulator(self._inf_norm_acc_str, p)
            self._add_accumulator(self._beta1_pow_acc_str, p, dtype="float32", fill_value=self._beta1, shape=[1])

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        m = self._get_accumulator(self._moment_acc_str, p)
        u = self._get_accumulator(self._inf_norm_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs.update({"Moment": [m], "InfNorm": [u], "Beta1Pow": [self._get_accumulator(self._beta1_pow_acc_str, p)]})
        return block.append_op("adamax", inputs=inputs, outputs={"ParamOut": [p], "MomentOut": [m], "InfNormOut": [u]},
                               attrs={"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon})

    def _finish_update(self, block, parameters_and_grads):
        program = block.program
        for p, g in parameters_and_grads:
            with program._optimized_guard([p, g]), name_scope("optimizer"):
                v = self._get_accumulator(self._beta1_pow_acc_str, p)
                block.append_op("scale", inputs={"X": [v]}, outputs={"Out": [v]}, attrs={"scale": self._beta1})


class RMSPropOptimizer(Optimizer):
    """``ms = rho ms + (1-rho) g^2``; centered: ``mg = rho mg + (1-rho) g`` and the denominator is
    ``sqrt(ms - mg^2 + eps)`` (else ``sqrt(ms + eps)``); ``mom = momentum mom + lr g / denom``;
    ``param -= mom``."""

    type = "rmsprop"
    _momentum_acc_str = "momentum"
    _mean_square_acc_str = "mean_square"
    _mean_grad_acc_str = "mean_grad"

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False, regularization=None,
                 name=None, grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        if rho is None or epsilon is None or momentum is None:
            raise ValueError("RMSPropOptimizer: rho, epsilon and momentum must be given")
        self._rho = float(rho)
        self._epsilon = float(epsilon)
        self._momentum = float(momentum)
        self._centered = bool(centered)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._momentum_acc_str, p)
            self._add_accumulator(self._mean_square_acc_str, p)
            self._add_accumulator(self._mean_grad_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        mom = self._get_accumulator(self._momentum_acc_str, p)
        ms = self._get_accumulator(self._mean_square_acc_str, p)
        mg = self._get_accumulator(self._mean_grad_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs.update({"Moment": [mom], "MeanSquare": [ms], "MeanGrad": [mg]})
        return block.append_op("rmsprop", inputs=inputs,
                               outputs={"ParamOut": [p], "MomentOut": [mom], "MeanSquareOut": [ms],
                                        "MeanGradOut": [mg]},
                               attrs={"epsilon": self._epsilon, "decay": self._rho, "momentum": self._momentum,
                                      "centered": self._centered})


class FtrlOptimizer(Optimizer):
    """FTRL-proximal; a row-sparse gradient updates only its rows."""

    type = "ftrl"
    _squared_acc_str = "squared"
    _linear_acc_str = "linear"

    def __init__(self, learning_rate, l1=0.0, l2=0.0, lr_power=-0.5, regularization=None, name=None,
                 grad_clip=None, parameter_list=None):
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        self._l1 = float(l1)
        self._l2 = float(l2)
        self._lr_power = float(lr_power)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._squared_acc_str, p)
            self._add_accumulator(self._linear_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        sq = self._get_accumulator(self._squared_acc_str, p)
        lin = self._get_accumulator(self._linear_acc_str, p)
        inputs = self._update_inputs(param_and_grad)
        inputs.update({"SquaredAccumulator": [sq], "LinearAccumulator": [lin]})
        return block.append_op("ftrl", inputs=inputs,
                               outputs={"ParamOut": [p], "SquaredAccumOut": [sq], "LinearAccumOut": [lin]},
                               attrs={"l1": self._l1, "l2": self._l2, "lr_power": self._lr_power})


class LambOptimizer(AdamOptimizer):
    """LAMB (You et al.): Adam's bias-corrected step plus ``lamb_weight_decay * param``, scaled by
    the trust ratio ``|param| / |step|``. ``exclude_from_weight_decay_fn(param) -> bool`` turns the
    decay off for some parameters."""

    type = "lamb"

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 regularization=None, exclude_from_weight_decay_fn=None, name=None, grad_clip=None,
                 parameter_list=None):
        super().__init__(learning_rate, beta1, beta2, epsilon, regularization, name, False, grad_clip,
                         parameter_list)
        self._weight_decay = float(lamb_weight_decay)
        self._exclude_from_weight_decay_fn = exclude_from_weight_decay_fn

    def _append_optimize_op(self, block, param_and_grad):
        inputs, outputs = self._adam_inputs_outputs(param_and_grad)
        wd = self._weight_decay
        if self._exclude_from_weight_decay_fn is not None and self._exclude_from_weight_decay_fn(param_and_grad[0]):
            wd = 0.0
        return block.append_op("lamb", inputs=inputs, outputs=outputs,
                               attrs={"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
                                      "weight_decay": wd})


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler, 2012) as Paddle 1.8 runs it: the ``adadelta`` op takes no learning rate
    (``learning_rate`` is required, as in Paddle, but does not scale the step)."""

    type = "adadelta"
    _avg_squared_grad_acc_str = "_avg_squared_grad"
    _avg_squared_update_acc_str = "_avg_squared_update"

    def __init__(self, learning_rate, epsilon=1.0e-6, rho=0.95, parameter_list=None, regularization=None,
                 grad_clip=None, name=None):
        if learning_rate is None:
            raise ValueError("learning_rate is not set.")
        if epsilon is None:
            raise ValueError("epsilon is not set.")
        if rho is None:
            raise ValueError("rho is not set.")
        super().__init__(learning_rate, regularization, name, grad_clip, parameter_list)
        self._epsilon = float(epsilon)
        self._rho = float(rho)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._avg_squared_grad_acc_str, p)
            self._add_accumulator(self._avg_squared_update_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        p, g = param_and_grad
        asg = self._get_accumulator(self._avg_squared_grad_acc_str, p)
        asu = self._get_accumulator(self._avg_squared_update_acc_str, p)
        return block.append_op("adadelta", inputs={"Param": [p], "Grad": [g], "AvgSquaredGrad": [asg],
                                                   "AvgSquaredUpdate": [asu]},
                               outputs={"ParamOut": [p], "AvgSquaredGradOut": [asg], "AvgSquaredUpdateOut": [asu]},
                               attrs={"epsilon": self._epsilon, "rho": self._rho})


class DpsgdOptimizer(Optimizer):
    """Differentially private SGD (the ``dpsgd`` op): the gradient clipped to L2 norm ``clip``,
    plus Gaussian noise of scale ``sigma / batch_size``. ``self._seed`` (0: fresh noise every step)
    fixes the noise for debugging, as in Paddle."""

    type = "dpsgd"

    def __init__(self, learning_rate=0.001, clip=0.9, batch_size=0.999, sigma=1e-8, parameter_list=None):
        for what, v in (("learning_rate", learning_rate), ("clip", clip), ("batch_size", batch_size),
                        ("sigma", sigma)):
            if v is None:
                raise ValueError("DpsgdOptimizer: %s must be given" % what)
        super().__init__(learning_rate, parameter_list=parameter_list)
        self._clip = float(clip)
        self._batch_size = float(batch_size)
        self._sigma = float(sigma)
        self._seed = None

    def _append_optimize_op(self, block, param_and_grad):
        p = param_and_grad[0]
        return block.append_op("dpsgd", inputs=self._update_inputs(param_and_grad), outputs={"ParamOut": [p]},
                               attrs={"clip": self._clip, "batch_size": self._batch_size, "sigma": self._sigma,
                                      "seed": int(self._seed or 0)})


class RecomputeOptimizer(Optimizer):
    """Wraps an optimizer so that backward re-runs the forward ops between checkpoints instead of
    reading their outputs (``_set_checkpoints([vars])`` first); the gradients, and so the
    parameters, are those of plain training. See ``backward.append_backward(checkpoints=...)``."""

    def __init__(self, optimizer):
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

    def load(self, stat_dict):
        raise NotImplementedError("load function is not supported by Recompute Optimizer for now")

    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        self._dtype = loss.dtype
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            return append_backward(loss, parameter_list if parameter_list is not None else self._parameter_list,
                                   no_grad_set, callbacks, checkpoints=self._checkpoints)

    def apply_gradients(self, params_grads):
        return self._optimizer.apply_gradients(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        return self._optimizer.apply_optimize(loss, startup_program, params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, grad_clip=None):
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


from .compat import refused_class  # noqa: E402
from .lookahead import LookaheadOptimizer  # noqa: E402
from .model_averaging import ExponentialMovingAverage, ModelAverage  # noqa: E402

PipelineOptimizer = refused_class(
    "fluid.optimizer.PipelineOptimizer", "pipeline training needs Paddle's section workers over several devices; "
    "train the whole program on each place with CompiledProgram.with_data_parallel, or split large models with "
    "RecomputeOptimizer")
DGCMomentumOptimizer = refused_class(
    "fluid.optimizer.DGCMomentumOptimizer", "deep gradient compression is a GPU/NCCL feature of Paddle; use "
    "MomentumOptimizer (with fleet's collective mode for all-reduce)")

SGD = SGDOptimizer
Momentum = MomentumOptimizer
LarsMomentum = LarsMomentumOptimizer
Adagrad = AdagradOptimizer
DecayedAdagrad = DecayedAdagradOptimizer
Adam = AdamOptimizer
Adamax = AdamaxOptimizer
RMSProp = RMSPropOptimizer
Ftrl = FtrlOptimizer
Lamb = LambOptimizer
Adadelta = AdadeltaOptimizer
Dpsgd = DpsgdOptimizer
