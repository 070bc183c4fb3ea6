"""Optimizers: each appends its update ops (op_role Optimize, op_role_var [param, grad]) after backward.

Parameters are visited sorted by name, so the optimize ops (and the transpiler's dispatch) come
out in Paddle's order. The learning rate is a persistable variable (``learning_rate_0``) filled in
the startup program, or the output of an LR schedule (``layers.exponential_decay`` and friends).
"""
from collections import defaultdict

from .backward import append_backward
from .framework import unique_name
from .framework.program import Variable, default_main_program, default_startup_program, program_guard
from .initializer import ConstantInitializer
from .layers.layer_helper import LayerHelper


class Optimizer:
    def __init__(self, learning_rate, regularization=None, name=None, grad_clip=None, parameter_list=None):
        if not isinstance(learning_rate, (float, int, Variable)):
            raise TypeError("learning_rate must be a float or a Variable, got %r" % type(learning_rate).__name__)
        self._learning_rate = learning_rate
        self.regularization = regularization
        self._grad_clip = grad_clip
        self._name = name
        self._parameter_list = parameter_list
        self._learning_rate_map = {}
        self._accumulators = defaultdict(dict)
        self.helper = None
        self.type = getattr(self, "type", "optimizer")

    # ---------------------------------------------------------------- learning rate
    def _create_global_learning_rate(self):
        program = default_main_program()
        if program in self._learning_rate_map:
            return
        if isinstance(self._learning_rate, Variable):
            self._learning_rate_map[program] = self._learning_rate
            return
        lr = program.global_block().create_var(name=unique_name.generate("learning_rate"), shape=[1],
                                               dtype="float32", persistable=True)
        LayerHelper("learning_rate").set_variable_initializer(lr, ConstantInitializer(float(self._learning_rate)))
        self._learning_rate_map[program] = lr

    def _global_learning_rate(self, program=None):
        return self._learning_rate_map.get(program or default_main_program())

    def _create_param_lr(self, param_and_grad):
        param = param_and_grad[0]
        param_lr = param.optimize_attr.get("learning_rate", 1.0) if hasattr(param, "optimize_attr") else 1.0
        glr = self._global_learning_rate()
        if param_lr == 1.0:
            return glr
        block = default_main_program().global_block()
        out = block.create_var(name=unique_name.generate("learning_rate"), shape=[1], dtype=glr.dtype)
        block.append_op("scale", inputs={"X": [glr]}, outputs={"Out": [out]}, attrs={"scale": float(param_lr)})
        return out

    # ---------------------------------------------------------------- accumulators
    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None):
        if self._name is not None:
            name = self._name + "_" + name
        if param.name in self._accumulators[name]:
            raise ValueError("accumulator %r for parameter %r already exists" % (name, param.name))
        if shape is None:
            shape = param.shape
        var = default_main_program().global_block().create_var(
            name=unique_name.generate(name), persistable=True, dtype=dtype or param.dtype, type=param.type,
            shape=shape)
        self.helper.set_variable_initializer(var, ConstantInitializer(float(fill_value)))
        self._accumulators[name][param.name] = var
        return var

    def _get_accumulator(self, name, param):
        if self._name is not None:
            name = self._name + "_" + name
        if param.name not in self._accumulators[name]:
            raise ValueError("accumulator %r for parameter %r does not exist" % (name, param.name))
        return self._accumulators[name][param.name]

    # ---------------------------------------------------------------- hooks for subclasses
    def _create_accumulators(self, block, parameters):
        pass

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError

    def _finish_update(self, block, parameters_and_grads):
        pass

    # ---------------------------------------------------------------- passes
    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, callbacks=None):
        parameter_list = parameter_list if parameter_list is not None else self._parameter_list
        return append_backward(loss, parameter_list, no_grad_set, callbacks)

    def _create_optimization_pass(self, parameters_and_grads):
        program = default_main_program()
        block = program.global_block()
        self.helper = LayerHelper(self.__class__.__name__)
        self._create_accumulators(block, [p for p, g in parameters_and_grads if p.trainable])
        self._create_global_learning_rate()
        ops = []
        for pg in parameters_and_grads:
            if pg[1] is None or not pg[0].trainable:
                continue
            with program._optimized_guard(pg):
                ops.append(self._append_optimize_op(block, pg))
        with program._optimized_guard([]):
            self._finish_update(block, parameters_and_grads)
        return ops

    def apply_gradients(self, params_grads):
        from .clip import append_gradient_clip_ops
        from .regularizer import append_regularization_ops
        params_grads = sorted(params_grads, key=lambda pg: pg[0].name)
        params_grads = append_gradient_clip_ops(params_grads, self._grad_clip)
        params_grads = append_regularization_ops(params_grads, self.regularization)
        return self._create_optimization_pass(params_grads)

    def apply_optimize(self, loss, startup_program, params_grads):
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            return self.apply_gradients(params_grads)

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None, grad_clip=None):
        """Append backward and optimize ops; returns ``(optimize_ops, params_grads)``."""
        if grad_clip is not None:
            self._grad_clip = grad_clip
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
            optimize_ops = self.apply_gradients(params_grads)
        return optimize_ops, params_grads


class SGDOptimizer(Optimizer):
    type = "sgd"

    def _append_optimize_op(self, block, param_and_grad):
        p, g = param_and_grad
        return block.append_op("sgd", inputs={"Param": [p], "Grad": [g],
                                              "LearningRate": [self._create_param_lr(param_and_grad)]},
                               outputs={"ParamOut": [p]})


SGD = SGDOptimizer
