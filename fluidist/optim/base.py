"""The optimizers' base class: each optimizer appends its update ops after backward, as Paddle 1.x did.

``minimize(loss)`` = ``append_backward`` + ``apply_gradients``, which

1. sorts the (param, grad) pairs by parameter name (so the optimize ops, and the transpiler's
   dispatch, come out in Paddle's order);
2. appends gradient clipping (``clip.py``) and weight decay (``regularizer.py``);
3. creates the accumulators (persistable ``<name>_<n>`` variables such as ``velocity_0``,
   ``moment1_3``, filled by ``fill_constant`` in the startup program) and the learning rate (a
   persistable ``learning_rate_<n>``, or the Variable of an LR schedule);
4. appends one update op per parameter under ``program._optimized_guard([param, grad])`` (op_role
   Optimize, op_role_var [param, grad]), and then ``_finish_update`` (Adamax's beta-pow ``scale``
   ops, each under its own parameter's guard; Adam's update op advances its own, as in Paddle 1.8).

A parameter with ``ParamAttr(learning_rate=x)`` gets ``scale(global lr, x)`` built under the LR guard
(op_role LRSched|Optimize) as its LearningRate. The transpiler finds all of this through op_role,
op_role_var and the slot names (Param, Grad, LearningRate, the accumulator slots) only.

The update op's slots come from its registry entry (``UpdateRule``): an optimizer names only the
op, its accumulators and its attrs. The optimizers themselves are in :mod:`fluidist.optimizer`.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from ..passes.backward import append_backward
from ..framework import registry, unique_name
from ..framework.program import Program, Variable, default_main_program, default_startup_program, name_scope, program_guard
from ..initializer import ConstantInitializer
from ..layers.layer_helper import LayerHelper

__all__ = ["Optimizer"]


class Optimizer:
    """Base class. A subclass names its update op (``type``, a registry entry with an
    ``UpdateRule``), the accumulator of each of the op's accumulator slots (``_accumulator_names``:
    Paddle's names, so saved optimizer state loads by name), their start values
    (``_accumulator_fill``) and the op's attrs (``_update_attrs``); the base class builds the
    accumulators and the update ops from the rule. Per-step bookkeeping goes in ``_finish_update``.
    An optimizer whose ops do not fit overrides ``_create_accumulators`` / ``_append_optimize_op``."""

    type = "optimizer"
    _accumulator_names: Dict[str, str] = {}    # update-op slot -> accumulator name

    def __init__(self, learning_rate: Union[float, Variable], parameter_list: Optional[Sequence[Any]] = None,
                 regularization: Any = None, grad_clip: Any = None, name: Optional[str] = None) -> None:
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
        self._dtype: Optional[str] = None
        self._learning_rate_map: dict = {}
        self._accumulators: defaultdict = defaultdict(dict)
        self._opti_name_list: List[str] = []
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
        # (a "global_var" helper, as Paddle 1.8's create_global_var: one of type "learning_rate" would
        # draw a second learning_rate_<n> name, and the next optimizer's rate be learning_rate_2)
        LayerHelper("global_var").set_variable_initializer(lr, ConstantInitializer(float(self._learning_rate)))
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
    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None, device=None):
        """A persistable variable named as Paddle names it, ``unique_name.generate(<param>_<name>)``
        (``fc_0.w_0_velocity_0``...), so that Paddle's saved optimizer state loads by name; of the
        parameter's shape (or ``shape``), filled with ``fill_value`` by the startup program, on
        ``device`` when given (``"cpu"``: Paddle 1.8's op_device attr of that startup op, which makes
        the variable on the host whatever the executor's place)."""
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
        if device is not None:
            for op in self.helper.startup_program.global_block().ops:
                if var.name in op.output_arg_names:
                    op._set_attr("op_device", device)
        self._accumulators[name][param.name] = var
        self._opti_name_list.append(var.name)
        return var

    def _get_accumulator(self, name, param):
        if self._name is not None:
            name = self._name + "_" + name
        if param.name not in self._accumulators[name]:
            raise ValueError("accumulator %r for parameter %r does not exist" % (name, param.name))
        return self._accumulators[name][param.name]

    def get_opti_var_name_list(self) -> List[str]:
        """Names of the accumulators this optimizer created."""
        return list(self._opti_name_list)

    # ---------------------------------------------------------------- the update op, from its rule
    def _update_rule(self):
        """The registry's ``UpdateRule`` of this optimizer's update op (``type``)."""
        registry.get(self.type)     # an unknown op type is refused with the registry's error
        rule = registry.fact(self.type, "update")
        if rule is None:
            raise TypeError("%s: op %r is not a parameter update op (it has no UpdateRule)"
                            % (type(self).__name__, self.type))
        return rule

    def _accumulator_name(self, slot):
        name = self._accumulator_names.get(slot)
        if name is None:
            raise TypeError("%s: no accumulator name for slot %r of the %r op (_accumulator_names)"
                            % (type(self).__name__, slot, self.type))
        return name

    def _create_accumulators(self, block, parameters):
        """For each parameter, the accumulators of the update op's slots (the registry's
        ``UpdateRule``): parameter-shaped ones, then one-element float32 ones, named by
        ``_accumulator_names`` and filled with ``_accumulator_fill(slot)``."""
        rule = self._update_rule()
        for p in parameters:
            for slot in rule.param_like:
                self._add_accumulator(self._accumulator_name(slot), p, fill_value=self._accumulator_fill(slot))
            for slot in rule.scalars:
                self._add_accumulator(self._accumulator_name(slot), p, dtype="float32",
                                      fill_value=self._accumulator_fill(slot), shape=[1],
                                      device="cpu" if rule.scalars_on_host else None)

    def _accumulator_fill(self, slot):
        """The value the accumulator of update-op slot ``slot`` starts with."""
        return 0.0

    def _update_attrs(self, param_and_grad):
        """The attrs of the update op of one (param, grad)."""
        return {}

    def _append_optimize_op(self, block, param_and_grad):
        """The update op ``type`` of one (param, grad): Param, Grad, LearningRate (when the op has
        that slot) and the accumulators of its rule in, ParamOut and the accumulators' outputs out
        (the same variables: updates are in place)."""
        rule = self._update_rule()
        p = param_and_grad[0]
        inputs = {"Param": [p], "Grad": [param_and_grad[1]]}
        if "LearningRate" in registry.get(self.type).inputs:
            inputs["LearningRate"] = [self._create_param_lr(param_and_grad)]
        outputs = {"ParamOut": [p]}
        for slot, out in zip(rule.param_like, rule.outputs):
            acc = self._get_accumulator(self._accumulator_name(slot), p)
            inputs[slot] = [acc]
            outputs[out] = [acc]
        for slot, out in zip(rule.scalars, rule.scalar_outputs or (None,) * len(rule.scalars)):
            acc = self._get_accumulator(self._accumulator_name(slot), p)
            inputs[slot] = [acc]
            if out is not None:     # the op advances it (Adam's beta powers)
                outputs[out] = [acc]
        inputs.update(self._update_inputs(param_and_grad))
        return block.append_op(self.type, inputs=inputs, outputs=outputs, attrs=self._update_attrs(param_and_grad))

    def _update_inputs(self, param_and_grad):
        """Inputs of the update op of one (param, grad) beyond its rule's (Adam's Beta1Tensor)."""
        return {}

    # ---------------------------------------------------------------- hooks for subclasses

    def _finish_update(self, block, parameters_and_grads):
        """Ops after all updates; each must be built under its own parameter's optimize guard."""

    # ---------------------------------------------------------------- passes
    def backward(self, loss: Variable, startup_program: Optional[Program] = None,
                 parameter_list: Optional[Sequence[Any]] = None, no_grad_set: Optional[Set[Any]] = None,
                 callbacks: Optional[List[Callable[..., Any]]] = None) -> List[Tuple[Variable, Variable]]:
        """Append the backward ops of ``loss`` (``append_backward``); as in Paddle, the error-clip callback
        runs unless other callbacks are given.

        Returns:
            ``[(parameter, gradient)]`` for every trainable parameter that ``loss`` depends on.
        """
        parameter_list = parameter_list if parameter_list is not None else self._parameter_list
        if callbacks is None:
            from ..passes.clip import error_clip_callback
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

    def apply_gradients(self, params_grads: List[Tuple[Variable, Variable]]) -> List[Any]:
        """Append gradient clipping, regularization and the update ops for ``params_grads``.

        Returns:
            The optimize ops.
        """
        from ..passes.clip import append_gradient_clip_ops
        from ..passes.regularizer import append_regularization_ops
        params_grads = sorted(params_grads, key=lambda pg: pg[0].name)
        if self._grad_clip is not None:
            params_grads = self._grad_clip(params_grads)
        else:
            params_grads = append_gradient_clip_ops(params_grads)
        params_grads = append_regularization_ops(params_grads, self.regularization)
        return self._create_optimization_pass(params_grads)

    def apply_optimize(self, loss: Variable, startup_program: Optional[Program],
                       params_grads: List[Tuple[Variable, Variable]]) -> List[Any]:
        """``apply_gradients`` inside ``program_guard(loss's program, startup_program)``: the
        second half of ``minimize``. Returns the update ops."""
        program = loss.block.program
        with program_guard(program, startup_program or default_startup_program()):
            return self.apply_gradients(params_grads)

    def minimize(self, loss: Variable, startup_program: Optional[Program] = None,
                 parameter_list: Optional[Sequence[Any]] = None, no_grad_set: Optional[Set[Any]] = None,
                 grad_clip: Any = None) -> Tuple[List[Any], List[Tuple[Variable, Variable]]]:
        """Append the backward ops of ``loss`` and the update ops of its parameters: one training step.

        Args:
            loss: a scalar (shape ``[1]``) Variable, usually a ``mean``.
            startup_program: where the accumulators' initialisers go (default: the default startup program).
            parameter_list: the parameters (or their names) to train; default: every trainable one.
            no_grad_set: variables (or names) whose gradients are not computed.
            grad_clip: a gradient clip applied to every gradient; it takes precedence over the
                constructor's and over the parameters' own ``gradient_clip``.

        Returns:
            ``(optimize_ops, params_grads)``: the update ops and the ``(parameter, gradient)`` pairs.

        Examples:
            >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
            >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
            >>> ops, params_grads = fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
            >>> sorted(p.name for p, g in params_grads)
            ['fc_0.b_0', 'fc_0.w_0']
        """
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
    from ..passes.clip import BaseGradientClipAttr
    if not isinstance(clip, BaseGradientClipAttr):
        raise TypeError("grad_clip must be a GradientClip* object (clip.GradientClipByValue, ByNorm, "
                        "ByGlobalNorm), got %r" % type(clip).__name__)


def _check_range(owner, name, value, low, high, low_open=False, high_open=False):
    ok = (value > low if low_open else value >= low) and (value < high if high_open else value <= high)
    if not ok:
        raise ValueError("%s: %s must be in %s%s, %s%s, got %r" % (owner, name, "(" if low_open else "[", low,
                                                                 high, ")" if high_open else "]", value))
