"""Gradient clipping.

A clip is given per parameter (``ParamAttr(gradient_clip=...)``, or for many at once with
``set_gradient_clip(clip, param_list)``), or to the optimizer (``Optimizer(grad_clip=...)`` or
``minimize(grad_clip=...)``, Paddle 1.8's form), which then applies to every parameter and takes
precedence over the per-parameter ones. The clip ops run under each parameter's optimize guard
(op_role Optimize, op_role_var [param, grad]) and name scope ``gradient_clip``, before
regularization.

- ``GradientClipByValue(max, min)``: ``clip`` each element into [min, max];
- ``GradientClipByNorm(clip_norm)``: ``clip_by_norm``, each gradient scaled to an L2 norm of at
  most ``clip_norm``;
- ``GradientClipByGlobalNorm(clip_norm, group_name)``: all gradients of a group scaled by
  ``clip_norm / max(clip_norm, global_norm)``, global_norm = sqrt(sum of ``squared_l2_norm``).

A row-sparse gradient stays row-sparse: its merged rows are clipped (and counted once in norms).
"""
from __future__ import annotations

import copy
from typing import Any, Sequence, Tuple

from ..framework.program import Parameter, default_main_program, name_scope
from ..framework.serialization import serializable

__all__ = ["BaseGradientClipAttr", "NullGradientClipAttr", "GradientClipByValue", "GradientClipByNorm",
           "GradientClipByGlobalNorm", "set_gradient_clip", "append_gradient_clip_ops", "BaseErrorClipAttr",
           "ErrorClipByValue", "error_clip_callback"]


def _clip_range(who, max, min):
    """(max, min) as floats, ``min`` defaulting to ``-max``."""
    max = float(max)
    min = -max if min is None else float(min)
    if min > max:
        raise ValueError("%s: min (%s) must not exceed max (%s)" % (who, min, max))
    return max, min


class BaseErrorClipAttr:
    """The base of error clips: set on a variable (``var._set_error_clip(clip)``), one clips that
    variable's gradient in place right after the backward op that produces it.

    Examples:
        >>> clip = fluid.clip.ErrorClipByValue(max=1.0)
        >>> isinstance(clip, fluid.clip.BaseErrorClipAttr)
        True
    """

    def _append_clip_op(self, block, grad_name):
        raise NotImplementedError


class ErrorClipByValue(BaseErrorClipAttr):
    """Clips a variable's gradient into ``[min, max]`` as the backward pass produces it (a ``clip``
    op writing the gradient onto itself), so the layers below see the clipped gradient.

    Args:
        max: the upper bound.
        min: the lower bound; ``-max`` when None.

    Raises:
        ValueError: ``min > max``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> hidden = fluid.layers.fc(x, size=4)
        >>> hidden._set_error_clip(fluid.clip.ErrorClipByValue(max=0.01))
        >>> loss = fluid.layers.mean(fluid.layers.fc(hidden, size=1))
        >>> _ = fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    """

    def __init__(self, max: float, min: float | None = None):
        self.max, self.min = _clip_range("ErrorClipByValue", max, min)

    def __str__(self):
        return "ByValue, min=%f, max=%f" % (self.min, self.max)

    def _append_clip_op(self, block, grad_name):
        block.append_op("clip", inputs={"X": [grad_name]}, outputs={"Out": [grad_name]},
                        attrs={"min": self.min, "max": self.max})


def error_clip_callback(block: Any, context: dict) -> None:
    """Backward callback (the optimizer's default): after each grad op, clip the gradients it wrote
    whose forward variable carries an error clip. ``context`` maps gradient names to variable names."""
    for grad_name, var_name in list(context.items()):
        var = block._find_var_recursive(var_name)
        clip = getattr(var, "error_clip", None) if var is not None else None
        if clip is None:
            continue
        if not isinstance(clip, BaseErrorClipAttr):
            raise TypeError("variable %r: error_clip must be a BaseErrorClipAttr (e.g. clip.ErrorClipByValue), got %r"
                            % (var_name, type(clip).__name__))
        clip._append_clip_op(block, grad_name)


class BaseGradientClipAttr:
    """The base of gradient clips: ``_create_operators(param, grad) -> (param, new_grad)`` appends
    its ops. ``GradientClipBase`` is its Paddle 1.8 name.

    Clips that need to see every gradient first (global norm) also implement
    ``_process_context(context, param, grad)``, called for all pairs before any
    ``_create_operators``; they get the shared ``context`` dict in ``_create_operators_in(context, ...)``.
    Clip objects hang on Parameters and travel in a program's JSON form, so they hold plain values only.

    Examples:
        >>> isinstance(fluid.clip.GradientClipByNorm(1.0), fluid.clip.BaseGradientClipAttr)
        True
    """

    def _process_context(self, context, param, grad):
        pass

    def _create_operators(self, param, grad):
        raise NotImplementedError

    def _create_operators_in(self, context, param, grad):
        return self._create_operators(param, grad)

    def __call__(self, params_grads: Sequence[Tuple[Any, Any]]) -> list[Tuple[Any, Any]]:
        """Clip every (param, grad) pair with this clip (the optimizer's ``grad_clip``)."""
        return append_gradient_clip_ops(params_grads, self, override=True)

    def __str__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%s" % kv for kv in sorted(vars(self).items())))


def _out_var(grad):
    block = grad.block
    return block.create_var(name=grad.name + "@CLIP", dtype=grad.dtype, shape=grad.shape,
                            lod_level=grad.lod_level, type=grad.type)


@serializable
class NullGradientClipAttr(BaseGradientClipAttr):
    """No clipping (for a parameter that ``set_gradient_clip`` should leave alone).

    Examples:
        >>> attr = fluid.ParamAttr(gradient_clip=fluid.clip.NullGradientClipAttr())
    """

    def _create_operators(self, param, grad):
        return param, grad


@serializable
class GradientClipByValue(BaseGradientClipAttr):
    """Clips each gradient element into ``[min, max]``; ``ClipByValue`` is its Paddle 1.8 name.

    Args:
        max: the upper bound.
        min: the lower bound; ``-max`` when None.

    Raises:
        ValueError: ``min > max``.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[2], dtype="float32", name="w",
        ...                                   default_initializer=fluid.initializer.Constant(1.0))
        >>> loss = fluid.layers.reduce_sum(fluid.layers.scale(w, 10.0))
        >>> _ = fluid.optimizer.SGD(learning_rate=1.0, grad_clip=fluid.clip.GradientClipByValue(max=1.0)).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> _ = exe.run(fetch_list=[loss])
        >>> [round(float(v), 4) for v in np.array(fluid.global_scope().find_var("w").get_tensor())]
        [0.0, 0.0]
    """

    def __init__(self, max: float, min: float | None = None):
        self.max, self.min = _clip_range("GradientClipByValue", max, min)

    def _create_operators(self, param, grad):
        out = _out_var(grad)
        grad.block.append_op("clip", inputs={"X": [grad]}, outputs={"Out": [out]},
                             attrs={"min": self.min, "max": self.max})
        return param, out


@serializable
class GradientClipByNorm(BaseGradientClipAttr):
    """Scales each gradient so that its L2 norm is at most ``clip_norm``; ``ClipByNorm`` is its
    Paddle 1.8 name.

    Args:
        clip_norm: the largest norm kept (> 0).

    Raises:
        ValueError: ``clip_norm <= 0``.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[2], dtype="float32", name="w",
        ...                                   default_initializer=fluid.initializer.Constant(1.0))
        >>> loss = fluid.layers.reduce_sum(fluid.layers.scale(w, 10.0))
        >>> _ = fluid.optimizer.SGD(learning_rate=1.0, grad_clip=fluid.clip.GradientClipByNorm(1.0)).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> _ = exe.run(fetch_list=[loss])
        >>> [round(float(v), 4) for v in np.array(fluid.global_scope().find_var("w").get_tensor())]
        [0.2929, 0.2929]
    """

    def __init__(self, clip_norm: float):
        if float(clip_norm) <= 0:
            raise ValueError("GradientClipByNorm: clip_norm must be > 0, got %r" % (clip_norm,))
        self.clip_norm = float(clip_norm)

    def _create_operators(self, param, grad):
        out = _out_var(grad)
        grad.block.append_op("clip_by_norm", inputs={"X": [grad]}, outputs={"Out": [out]},
                             attrs={"max_norm": self.clip_norm})
        return param, out


@serializable
class GradientClipByGlobalNorm(BaseGradientClipAttr):
    """Scales all gradients of a group by ``clip_norm / max(clip_norm, global_norm)``, the global
    norm taken over all of them together; ``ClipByGlobalNorm`` is its Paddle 1.8 name.

    Ops: per gradient a ``squared_l2_norm``; under the first parameter's guard the ``fill_constant``
    of ``clip_norm`` and, once, ``sum``, ``sqrt``, ``elementwise_max``, ``elementwise_div`` giving the
    scale; then per gradient an ``elementwise_mul`` by the scale.

    Args:
        clip_norm: the largest global norm kept (> 0).
        group_name: parameters with clips of one group share one global norm (and must share
            ``clip_norm``).

    Raises:
        ValueError: ``clip_norm <= 0``, or one group with two ``clip_norm`` values.
        TypeError: a ``group_name`` that is not a string.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[2], dtype="float32", name="w",
        ...                                   default_initializer=fluid.initializer.Constant(1.0))
        >>> loss = fluid.layers.reduce_sum(fluid.layers.scale(w, 10.0))
        >>> clip = fluid.clip.GradientClipByGlobalNorm(clip_norm=1.0)
        >>> _ = fluid.optimizer.SGD(learning_rate=1.0, grad_clip=clip).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> _ = exe.run(fetch_list=[loss])
        >>> [round(float(v), 4) for v in np.array(fluid.global_scope().find_var("w").get_tensor())]
        [0.2929, 0.2929]
    """

    def __init__(self, clip_norm: float, group_name: str = "default_group"):
        if float(clip_norm) <= 0:
            raise ValueError("GradientClipByGlobalNorm: clip_norm must be > 0, got %r" % (clip_norm,))
        if not isinstance(group_name, str):
            raise TypeError("GradientClipByGlobalNorm: group_name must be a string, got %r"
                            % type(group_name).__name__)
        self.clip_norm = float(clip_norm)
        self.group_name = group_name

    def _process_context(self, context, param, grad):
        block = grad.block
        group = context.get(self.group_name)
        if group is None:
            clip_var = block.create_var(name="%s@CLIP_NORM" % self.group_name, shape=[1], dtype=grad.dtype,
                                        stop_gradient=True)
            block.append_op("fill_constant", outputs={"Out": [clip_var]},
                            attrs={"shape": [1], "dtype": grad.dtype or "float32", "value": self.clip_norm})
            group = context[self.group_name] = {"clip_norm": self.clip_norm, "clip_var": clip_var,
                                                "squares": [], "scale": None}
        elif group["clip_norm"] != self.clip_norm:
            raise ValueError("GradientClipByGlobalNorm: all parameters of group %r must have the same "
                             "clip_norm; %r has %s, an earlier one %s"
                             % (self.group_name, param.name, self.clip_norm, group["clip_norm"]))
        sq = block.create_var(name=grad.name + "@SQUARED_L2_NORM", shape=[1], dtype=grad.dtype,
                              stop_gradient=True)
        block.append_op("squared_l2_norm", inputs={"X": [grad]}, outputs={"Out": [sq]})
        group["squares"].append(sq)

    def _create_operators_in(self, context, param, grad):
        block = grad.block
        group = context[self.group_name]
        if group["scale"] is None:
            prefix = self.group_name + "@CLIP"
            total = block.create_var(name=prefix + "_SUM", shape=[1], dtype=grad.dtype, stop_gradient=True)
            norm = block.create_var(name=prefix + "_GLOBAL_NORM", shape=[1], dtype=grad.dtype,
                                    stop_gradient=True)
            bigger = block.create_var(name=prefix + "_MAX", shape=[1], dtype=grad.dtype, stop_gradient=True)
            scale = block.create_var(name=prefix + "_SCALE", shape=[1], dtype=grad.dtype, stop_gradient=True)
            block.append_op("sum", inputs={"X": group["squares"]}, outputs={"Out": [total]})
            block.append_op("sqrt", inputs={"X": [total]}, outputs={"Out": [norm]})
            block.append_op("elementwise_max", inputs={"X": [group["clip_var"]], "Y": [norm]},
                            outputs={"Out": [bigger]})
            block.append_op("elementwise_div", inputs={"X": [group["clip_var"]], "Y": [bigger]},
                            outputs={"Out": [scale]})
            group["scale"] = scale
        out = _out_var(grad)
        block.append_op("elementwise_mul", inputs={"X": [grad], "Y": [group["scale"]]}, outputs={"Out": [out]})
        return param, out

    def _create_operators(self, param, grad):
        raise ValueError("GradientClipByGlobalNorm needs every gradient of its group: use it through "
                         "append_gradient_clip_ops / the optimizer")


def set_gradient_clip(clip: BaseGradientClipAttr, param_list: Sequence[Any] | None = None,
                      program: Any = None) -> None:
    """Give a clip (a copy each) to several parameters at once.

    An optimizer's own ``grad_clip`` takes precedence over clips set this way.

    Args:
        clip: a ``GradientClip*`` object.
        param_list: Parameters or their names; all parameters of ``program`` when None.
        program: the program; the default main program when None.

    Raises:
        TypeError: ``clip`` is not a gradient clip, or ``param_list`` holds a non-parameter.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[2], dtype="float32", name="w",
        ...                                   default_initializer=fluid.initializer.Constant(1.0))
        >>> loss = fluid.layers.reduce_sum(fluid.layers.scale(w, 10.0))
        >>> fluid.clip.set_gradient_clip(fluid.clip.GradientClipByValue(max=1.0), param_list=["w"])
        >>> _ = fluid.optimizer.SGD(learning_rate=1.0).minimize(loss)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> _ = exe.run(fetch_list=[loss])
        >>> [round(float(v), 4) for v in np.array(fluid.global_scope().find_var("w").get_tensor())]
        [0.0, 0.0]
    """
    if not isinstance(clip, BaseGradientClipAttr):
        raise TypeError("set_gradient_clip: clip must be a GradientClip* object, got %r" % type(clip).__name__)
    program = program if program is not None else default_main_program()
    block = program.global_block()
    if param_list is None:
        params = block.all_parameters()
    else:
        params = []
        for p in param_list:
            if isinstance(p, str):
                p = block.var(p)
            if not isinstance(p, Parameter):
                raise TypeError("set_gradient_clip: param_list holds %r, which is not a Parameter" % (p,))
            params.append(p)
    for p in params:
        p.gradient_clip_attr = copy.deepcopy(clip)


def append_gradient_clip_ops(params_grads: Sequence[Tuple[Any, Any]], global_clip: BaseGradientClipAttr | None = None,
                             override: bool = False) -> list[Tuple[Any, Any]]:
    """Clip each gradient by its parameter's clip (what ``Optimizer.minimize`` does).

    Args:
        params_grads: ``(parameter, gradient)`` pairs, from ``append_backward``.
        global_clip: the clip of parameters that have none of their own.
        override: use ``global_clip`` for every parameter.

    Returns:
        The new pairs (clipped gradients are new variables ``<grad>@CLIP``).

    Raises:
        TypeError: a clip that is not a ``GradientClip*`` object.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> pairs = fluid.backward.append_backward(loss)
        >>> pairs = fluid.clip.append_gradient_clip_ops(pairs, fluid.clip.GradientClipByNorm(1.0))
        >>> sorted(g.name for _, g in pairs)
        ['fc_0.b_0@GRAD@CLIP', 'fc_0.w_0@GRAD@CLIP']
    """
    def clip_of(p):
        c = global_clip if override else (getattr(p, "gradient_clip_attr", None) or global_clip)
        if c is not None and not isinstance(c, BaseGradientClipAttr):
            raise TypeError("the gradient clip of parameter %r must be a GradientClip* object, got %r"
                            % (p.name, type(c).__name__))
        return c

    context: dict[str, Any] = {}
    for p, g in params_grads:
        c = clip_of(p)
        if g is None or c is None:
            continue
        with p.block.program._optimized_guard([p, g]), name_scope("gradient_clip"):
            c._process_context(context, p, g)
    out = []
    for p, g in params_grads:
        c = clip_of(p)
        if g is None or c is None:
            out.append((p, g))
            continue
        with p.block.program._optimized_guard([p, g]), name_scope("gradient_clip"):
            out.append(c._create_operators_in(context, p, g))
    return out


# Paddle 1.8's clip module also has the classes under these names
GradientClipBase = BaseGradientClipAttr
ClipByValue = GradientClipByValue
ClipByNorm = GradientClipByNorm
ClipByGlobalNorm = GradientClipByGlobalNorm
