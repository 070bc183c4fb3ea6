"""Weight decay: ``grad += coeff * param`` (L2) or ``grad += coeff * sign(param)`` (L1).

Given per optimizer (``Optimizer(regularization=...)``) or per parameter
(``ParamAttr(regularizer=...)``, which wins). The ops run under the parameter's optimize guard
(op_role Optimize, op_role_var [param, grad]) so the transpiler moves them with the update:

- dense gradient: ``scale`` (L1: ``sign`` + ``scale``) of the parameter, then ``sum([grad, decay])``
  into the gradient itself (same name), the op Paddle 1.8 appends;
- row-sparse gradient (``SelectedRows``, from ``embedding(is_sparse=True)``): the decay term is the
  whole parameter, so the sum is dense: ``sum([grad, decay])`` into a new dense variable
  ``<grad>@NEWGRAD`` (Paddle's name for it), which the optimizer then uses. Every row decays every
  step, exactly as with a dense embedding. (Paddle decayed only the rows present in the batch; that
  made sparse and dense training differ, and we chose the exact gradient instead.)
"""
from __future__ import annotations

from typing import Any, Sequence, Tuple

from ..framework import registry
from ..framework.dtypes import VarType
from ..framework.program import name_scope
from ..framework.serialization import serializable

__all__ = ["L1Decay", "L2Decay", "L1DecayRegularizer", "L2DecayRegularizer", "WeightDecayRegularizer",
           "append_regularization_ops"]

NEW_GRAD_SUFFIX = "@NEWGRAD"


class WeightDecayRegularizer:
    """The base of regularizers: ``__call__(param, grad, block)`` appends the ops computing the decay
    term and returns its variable (``append_regularization_ops`` adds it to the gradient).

    Examples:
        >>> class NoDecay(fluid.regularizer.WeightDecayRegularizer):
        ...     _regularization_coeff = 0.0
        ...     def __call__(self, param, grad, block):
        ...         return fluid.regularizer.L2Decay(0.0)(param, grad, block)
        >>> w = fluid.layers.create_parameter(shape=[2], dtype="float32", attr=fluid.ParamAttr(regularizer=NoDecay()))
    """

    def __call__(self, param: Any, grad: Any, block: Any) -> Any:
        """Append the decay term's ops to ``block``; returns the term's Variable."""
        raise NotImplementedError

    def __str__(self):
        return "%s, regularization_coeff=%f" % (type(self).__name__.replace("Regularizer", ""),
                                                self._regularization_coeff)


def is_selected_rows_grad(grad: Any) -> bool:
    """True when ``grad`` holds a SelectedRows at run time, judged from the op that last writes it:
    a gradient op with ``is_sparse`` set (a sparse lookup's), an op whose registry entry
    ``keeps_rows`` (``sum``, ``scale``, ``clip``, ``merge_selected_rows``, ...) when every ``X`` it
    reads is row-sparse; else (or with no producer) from its var type."""
    block = grad.block

    def declared(name):
        var = block._find_var_recursive(name)
        return var is not None and var.type == VarType.SELECTED_ROWS

    def sparse(name, limit):
        for i in range(limit - 1, -1, -1):
            op = block.ops[i]
            if name not in op.output_arg_names:
                continue
            if registry.fact(op, "forward") is not None and op.has_attr("is_sparse"):
                return bool(op.attr("is_sparse"))
            if registry.fact(op, "keeps_rows", False):
                xs = op.input("X")
                return bool(xs) and all(sparse(x, i) for x in xs)
            return declared(name)
        return declared(name)

    return sparse(grad.name, len(block.ops))


def append_regularization_ops(params_grads: Sequence[Tuple[Any, Any]],
                              regularization: WeightDecayRegularizer | None = None) -> list[Tuple[Any, Any]]:
    """Add each parameter's decay term to its gradient (what ``Optimizer.minimize`` does).

    Args:
        params_grads: ``(parameter, gradient)`` pairs, from ``append_backward``.
        regularization: the regularizer of parameters that have none of their own.

    Returns:
        The new pairs: a dense gradient is updated in place; a row-sparse one becomes the dense
        ``<grad>@NEWGRAD``.

    Raises:
        TypeError: a regularizer that is not a ``WeightDecayRegularizer``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> pairs = fluid.backward.append_backward(loss)
        >>> pairs = fluid.regularizer.append_regularization_ops(pairs, fluid.regularizer.L2Decay(1e-4))
    """
    out = []
    for param, grad in params_grads:
        reg = getattr(param, "regularizer", None)
        if reg is None:
            reg = regularization
        if grad is None or reg is None:
            out.append((param, grad))
            continue
        if not isinstance(reg, WeightDecayRegularizer):
            raise TypeError("the regularizer of parameter %r must be a WeightDecayRegularizer (L1Decay, "
                            "L2Decay), got %r" % (param.name, type(reg).__name__))
        block = grad.block
        with param.block.program._optimized_guard([param, grad]), name_scope("regularization"):
            term = reg(param, grad, block)
            if is_selected_rows_grad(grad):
                new_grad = block.create_var(name=grad.name + NEW_GRAD_SUFFIX, dtype=param.dtype,
                                            shape=param.shape, lod_level=param.lod_level,
                                            type=VarType.LOD_TENSOR)
                block.append_op("sum", inputs={"X": [grad, term]}, outputs={"Out": [new_grad]})
                new_grad.type = VarType.LOD_TENSOR   # row-sparse + dense is dense
            else:
                new_grad = grad
                block.append_op("sum", inputs={"X": [grad, term]}, outputs={"Out": [new_grad]})
        out.append((param, new_grad))
    return out


def _decay_var(block, param, suffix):
    return block.create_var(name=param.name + suffix, dtype=param.dtype, shape=param.shape,
                            lod_level=param.lod_level)


@serializable
class L2DecayRegularizer(WeightDecayRegularizer):
    """L2 weight decay, ``grad += coeff * param``; ``L2Decay`` is its short name.

    Given to the optimizer (``regularization=``, for every parameter) or to one parameter
    (``ParamAttr(regularizer=...)``, which wins).

    Paddle 1.8 difference: with a row-sparse gradient (``embedding(is_sparse=True)``) every row
    decays every step, as with a dense one; Paddle decayed only the rows in the batch.

    Args:
        regularization_coeff: the coefficient.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[2], dtype="float32", name="w",
        ...                                   default_initializer=fluid.initializer.Constant(2.0))
        >>> loss = fluid.layers.reduce_sum(fluid.layers.scale(w, 0.0))
        >>> sgd = fluid.optimizer.SGD(learning_rate=1.0, regularization=fluid.regularizer.L2Decay(0.1))
        >>> _ = sgd.minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> _ = exe.run(fetch_list=[loss])
        >>> np.array(fluid.global_scope().find_var("w").get_tensor()).tolist()
        [1.7999999523162842, 1.7999999523162842]
    """

    def __init__(self, regularization_coeff: float = 0.0):
        self._regularization_coeff = float(regularization_coeff)

    def __call__(self, param: Any, grad: Any, block: Any) -> Any:
        decay = _decay_var(block, param, "@L2DECAY")
        block.append_op("scale", inputs={"X": [param]}, outputs={"Out": [decay]},
                        attrs={"scale": self._regularization_coeff})
        return decay


@serializable
class L1DecayRegularizer(WeightDecayRegularizer):
    """L1 weight decay, ``grad += coeff * sign(param)``; ``L1Decay`` is its short name.

    Given like ``L2DecayRegularizer``, with the same Paddle 1.8 difference for row-sparse gradients.

    Args:
        regularization_coeff: the coefficient.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[2], dtype="float32", name="w",
        ...                                   default_initializer=fluid.initializer.Constant(2.0))
        >>> loss = fluid.layers.reduce_sum(fluid.layers.scale(w, 0.0))
        >>> sgd = fluid.optimizer.SGD(learning_rate=1.0, regularization=fluid.regularizer.L1Decay(0.1))
        >>> _ = sgd.minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> _ = exe.run(fetch_list=[loss])
        >>> np.array(fluid.global_scope().find_var("w").get_tensor()).tolist()
        [1.899999976158142, 1.899999976158142]
    """

    def __init__(self, regularization_coeff: float = 0.0):
        self._regularization_coeff = float(regularization_coeff)

    def __call__(self, param: Any, grad: Any, block: Any) -> Any:
        sign = _decay_var(block, param, "@L1SIGN")
        decay = _decay_var(block, param, "@L1DECAY")
        block.append_op("sign", inputs={"X": [param]}, outputs={"Out": [sign]})
        block.append_op("scale", inputs={"X": [sign]}, outputs={"Out": [decay]},
                        attrs={"scale": self._regularization_coeff})
        return decay


L2Decay = L2DecayRegularizer
"""``L2Decay``: the short name of ``L2DecayRegularizer`` (the same class)."""
L1Decay = L1DecayRegularizer
"""``L1Decay``: the short name of ``L1DecayRegularizer`` (the same class)."""
