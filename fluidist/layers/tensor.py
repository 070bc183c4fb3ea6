"""Tensor layers with Paddle 1.x signatures: constants, casts, copies, concat/split, reshape/transpose,
global variables and parameters, arg-max/min. (``increment`` lives in ``control_flow``, as in Paddle.)"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from ..hints import DType, ParamAttrLike
from ..initializer import ConstantInitializer
from ..param_attr import ParamAttr
from .layer_helper import LayerHelper, check_variable

__all__ = ["fill_constant", "fill_constant_batch_size_like", "cast", "assign", "sums", "concat", "split", "reshape",
           "transpose", "create_global_var", "create_tensor", "create_parameter", "zeros", "ones", "zeros_like",
           "argmax", "argmin"]


_check_var = check_variable


def _int_shape(shape, layer):
    if isinstance(shape, (int, np.integer)):
        shape = [shape]
    if not isinstance(shape, (list, tuple)):
        raise TypeError("%s: shape must be a list or tuple of ints, got %r" % (layer, type(shape).__name__))
    try:
        return [int(d) for d in shape]
    except (TypeError, ValueError):
        raise TypeError("%s: shape must hold ints, got %r" % (layer, list(shape))) from None


def _str_value(value, dtype):
    return str(int(value)) if convert_dtype(dtype) in ("int32", "int64") else str(float(value))


def fill_constant(shape: int | Sequence[int], dtype: DType, value: float, force_cpu: bool = False,
                  out: Variable | None = None) -> Variable:
    """A tensor of ``shape`` filled with ``value``; no gradient flows through it.

    Args:
        shape: the shape, a list of ints (or one int).
        dtype: the dtype (``"float32"``, ``"int64"``, ...).
        value: the fill value (integers keep their exact value for int dtypes).
        force_cpu: accepted for Paddle's signature.
        out: an existing Variable to fill, or None for a new one.

    Returns:
        The filled Variable (``out`` when given).

    Examples:
        >>> counter = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        >>> counter.shape, counter.dtype
        ((1,), 'int64')
    """
    helper = LayerHelper("fill_constant")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype)
    else:
        _check_var(out, "fill_constant", "out")
    shape = _int_shape(shape, "fill_constant")
    helper.append_op("fill_constant", outputs={"Out": [out]},
                     attrs={"shape": shape, "dtype": out.dtype or convert_dtype(dtype), "value": float(value),
                            "str_value": _str_value(value, out.dtype or dtype), "force_cpu": bool(force_cpu)})
    out.stop_gradient = True
    return out


def fill_constant_batch_size_like(input: Variable, shape: Sequence[int], dtype: DType, value: float,
                                  input_dim_idx: int = 0, output_dim_idx: int = 0,
                                  force_cpu: bool = False) -> Variable:
    """Like ``fill_constant``, with one dimension taken at run time from ``input`` (its batch size).

    Args:
        input: the tensor whose dimension ``input_dim_idx`` gives the size.
        shape: the shape; the entry at ``output_dim_idx`` is replaced at run time.
        dtype: the dtype.
        value: the fill value.
        input_dim_idx: which dimension of ``input`` to copy.
        output_dim_idx: which dimension of the result receives it.
        force_cpu: accepted for Paddle's signature.

    Returns:
        The filled Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> h0 = fluid.layers.fill_constant_batch_size_like(x, shape=[-1, 8], dtype="float32", value=0.0)
    """
    _check_var(input, "fill_constant_batch_size_like", "input")
    helper = LayerHelper("fill_constant_batch_size_like")
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("fill_constant_batch_size_like", inputs={"Input": [input]}, outputs={"Out": [out]},
                     attrs={"shape": _int_shape(shape, "fill_constant_batch_size_like"), "dtype": out.dtype,
                            "value": float(value), "str_value": _str_value(value, dtype),
                            "input_dim_idx": int(input_dim_idx), "output_dim_idx": int(output_dim_idx),
                            "force_cpu": bool(force_cpu)})
    out.stop_gradient = True
    return out


def cast(x: Variable, dtype: DType) -> Variable:
    """``x`` converted to ``dtype``; the gradient is cast back.

    Args:
        x: a tensor.
        dtype: the target dtype.

    Returns:
        A Variable with ``x``'s shape.

    Examples:
        >>> label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        >>> as_float = fluid.layers.cast(label, "float32")
    """
    _check_var(x, "cast", "x")
    helper = LayerHelper("cast")
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("cast", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"in_dtype": x.dtype, "out_dtype": out.dtype})
    return out


_ASSIGN_VALUE_SLOTS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
                       "bool": "bool_values"}


def assign(input: Variable | np.ndarray, output: Variable | None = None) -> Variable:
    """Copy a Variable (an ``assign`` op) or a NumPy array (an ``assign_value`` op, whose values are
    stored in the program) into ``output``.

    Args:
        input: a Variable or a NumPy array.
        output: the Variable to write, or None for a new one.

    Returns:
        ``output``, or the new Variable.

    Examples:
        >>> table = fluid.layers.assign(np.arange(6, dtype="float32").reshape(2, 3))
        >>> table.shape
        (2, 3)
    """
    helper = LayerHelper("assign")
    if isinstance(input, Variable):
        if output is None:
            output = helper.create_variable_for_type_inference(input.dtype)
        helper.append_op("assign", inputs={"X": [input]}, outputs={"Out": [output]})
        return output
    if not isinstance(input, np.ndarray):
        raise TypeError("assign: input must be a Variable or a numpy.ndarray, got %r" % type(input).__name__)
    dtype = convert_dtype(input.dtype)
    slot = _ASSIGN_VALUE_SLOTS.get(dtype)
    if slot is None:
        raise TypeError("assign: a numpy input must be float32, int32, int64 or bool, got %s" % dtype)
    if input.size > 1024 * 1024:
        raise ValueError("assign: the array has %d elements; arrays over 1M elements do not belong in a "
                         "program, load them from a file" % input.size)
    if output is None:
        output = helper.create_variable_for_type_inference(dtype)
    values = [bool(v) for v in input.flat] if dtype == "bool" else \
        [float(v) for v in input.flat] if dtype == "float32" else [int(v) for v in input.flat]
    helper.append_op("assign_value", outputs={"Out": [output]},
                     attrs={"dtype": dtype, "shape": list(input.shape), slot: values})
    return output


def sums(input: Sequence[Variable], out: Variable | None = None) -> Variable:
    """The elementwise sum of a list of same-shaped Variables (one ``sum`` op).

    Args:
        input: the Variables to add.
        out: the Variable to write, or None for a new one.

    Returns:
        ``out``, or the new Variable.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 3], dtype="float32")
        >>> total = fluid.layers.sums([a, b])
    """
    helper = LayerHelper("sum", input=input)
    xs = helper.multiple_input()
    if out is None:
        out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op("sum", inputs={"X": xs}, outputs={"Out": [out]}, attrs={"use_mkldnn": False})
    return out


def concat(input: Sequence[Variable], axis: int = 0, name: str | None = None) -> Variable:
    """Join Variables along ``axis``; the other dimensions must agree.

    Args:
        input: the Variables, in order.
        axis: the axis to join along (negative counts from the end).
        name: the output's name (generated when None).

    Returns:
        The joined Variable.

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 5], dtype="float32")
        >>> fluid.layers.concat([a, b], axis=1).shape
        (-1, 8)
    """
    helper = LayerHelper("concat", input=input, name=name)
    xs = helper.multiple_input()
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op("concat", inputs={"X": xs}, outputs={"Out": [out]}, attrs={"axis": int(axis)})
    return out


def split(input: Variable, num_or_sections: int | Sequence[int], dim: int = -1,
          name: str | None = None) -> list[Variable]:
    """Split ``input`` along ``dim`` into equal parts or parts of given sizes.

    Args:
        input: the tensor to split.
        num_or_sections: the number of equal parts, or the list of sizes (one of which may be -1:
            whatever is left).
        dim: the axis to split.
        name: the outputs' name prefix (generated when None).

    Returns:
        The list of parts.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 6], dtype="float32")
        >>> left, right = fluid.layers.split(x, num_or_sections=[2, -1], dim=1)
        >>> right.shape
        (-1, 4)
    """
    _check_var(input, "split", "input")
    helper = LayerHelper("split", name=name)
    rank = len(input.shape)
    if not -rank <= dim < rank:
        raise ValueError("split: dim %d is out of range for input %r of rank %d" % (dim, input.name, rank))
    dim = dim + rank if dim < 0 else dim
    size = input.shape[dim]
    if isinstance(num_or_sections, (int, np.integer)):
        num = int(num_or_sections)
        if num < 1:
            raise ValueError("split: num_or_sections must be >= 1, got %d" % num)
        if size >= 0 and size % num:
            raise ValueError("split: dimension %d of input %r has size %d, not divisible into %d parts"
                             % (dim, input.name, size, num))
        attrs = {"num": num, "sections": [], "axis": dim}
    elif isinstance(num_or_sections, (list, tuple)):
        sections = [int(s) for s in num_or_sections]
        num = len(sections)
        if sections.count(-1) > 1 or any(s < -1 or s == 0 for s in sections):
            raise ValueError("split: sections %s must be positive sizes with at most one -1" % sections)
        if size >= 0 and (sum(sections) != size if -1 not in sections else sum(sections) + 1 >= size):
            raise ValueError("split: sections %s do not fit dimension %d (size %d) of input %r"
                             % (sections, dim, size, input.name))
        attrs = {"num": 0, "sections": sections, "axis": dim}
    else:
        raise TypeError("split: num_or_sections must be an int or a list of ints, got %r"
                        % type(num_or_sections).__name__)
    outs = [helper.create_variable_for_type_inference(input.dtype) for _ in builtins.range(num)]
    helper.append_op("split", inputs={"X": [input]}, outputs={"Out": outs}, attrs=attrs)
    return outs


def reshape(x: Variable, shape: Sequence[int], actual_shape: Variable | None = None, act: str | None = None,
            inplace: bool = False, name: str | None = None) -> Variable:
    """``x`` with a new shape and the same values (a ``reshape2`` op).

    Args:
        x: the tensor.
        shape: the new shape: 0 copies ``x``'s size at that position, one -1 takes what is left.
        actual_shape: an int Variable that overrides ``shape`` at run time.
        act: an activation applied to the result, or None.
        inplace: accepted for Paddle's signature; the result is always a new Variable.
        name: the output's name (generated when None).

    Returns:
        The reshaped Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2, 3], dtype="float32")
        >>> fluid.layers.reshape(x, shape=[0, -1]).shape
        (-1, 6)
    """
    _check_var(x, "reshape", "x")
    shape = _int_shape(shape, "reshape")
    if shape.count(-1) > 1:
        raise ValueError("reshape: only one dimension of shape %s may be -1" % shape)
    for i, d in enumerate(shape):
        if d < -1:
            raise ValueError("reshape: dimension %d of shape %s is negative (only -1 is allowed)" % (i, shape))
        if d == 0 and i >= len(x.shape):
            raise ValueError("reshape: shape %s has 0 at position %d, but x %r has only %d dimensions"
                             % (shape, i, x.name, len(x.shape)))
    helper = LayerHelper("reshape2", act=act, name=name)
    inputs = {"X": [x]}
    if actual_shape is not None:
        _check_var(actual_shape, "reshape", "actual_shape")
        inputs["Shape"] = [actual_shape]
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("reshape2", inputs=inputs, outputs={"Out": [out], "XShape": [x_shape]}, attrs={"shape": shape})
    return helper.append_activation(out)


def transpose(x: Variable, perm: Sequence[int], name: str | None = None) -> Variable:
    """``x`` with its dimensions permuted (a ``transpose2`` op).

    Args:
        x: the tensor.
        perm: the new order of ``x``'s dimensions.
        name: the output's name (generated when None).

    Returns:
        The transposed Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2, 3], dtype="float32")
        >>> fluid.layers.transpose(x, perm=[0, 2, 1]).shape
        (-1, 3, 2)
    """
    _check_var(x, "transpose", "x")
    perm = [int(p) for p in perm]
    if len(perm) != len(x.shape) or sorted(p % len(perm) for p in perm) != list(builtins.range(len(perm))):
        raise ValueError("transpose: perm %s is not a permutation of the %d dimensions of x %r"
                         % (perm, len(x.shape), x.name))
    perm = [p % len(perm) for p in perm]
    helper = LayerHelper("transpose", name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("transpose2", inputs={"X": [x]}, outputs={"Out": [out], "XShape": [x_shape]},
                     attrs={"axis": perm})
    return out


def create_global_var(shape: Sequence[int], value: float, dtype: DType, persistable: bool = False,
                      force_cpu: bool = False, name: str | None = None) -> Variable:
    """A variable of the main program's global block, filled with ``value`` by the startup program.

    Args:
        shape: its shape.
        value: the initial value.
        dtype: its dtype.
        persistable: keep it in the scope across runs (and save it with the persistables).
        force_cpu: accepted for Paddle's signature.
        name: its name (generated when None).

    Returns:
        The Variable.

    Examples:
        >>> step = fluid.layers.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True)
    """
    helper = LayerHelper("global_var")
    var = helper.create_global_variable(dtype=convert_dtype(dtype), shape=_int_shape(shape, "create_global_var"),
                                        persistable=persistable, name=name, stop_gradient=True)
    helper.set_variable_initializer(var, ConstantInitializer(float(value), force_cpu=force_cpu))
    return var


def create_tensor(dtype: DType, name: str | None = None, persistable: bool = False) -> Variable:
    """An empty variable, to be written later (by ``assign``, for example).

    Args:
        dtype: its dtype.
        name: its name (generated when None).
        persistable: keep it in the scope across runs.

    Returns:
        The Variable.

    Examples:
        >>> t = fluid.layers.create_tensor(dtype="float32")
        >>> t = fluid.layers.assign(np.ones((2, 2), "float32"), output=t)
    """
    helper = LayerHelper("create_tensor", name=name)
    return helper.create_variable(name=helper.name, dtype=convert_dtype(dtype), persistable=persistable)


def create_parameter(shape: Sequence[int], dtype: DType, name: str | None = None, attr: ParamAttrLike = None,
                     is_bias: bool = False, default_initializer: Any = None) -> Variable:
    """A trainable parameter, initialised by the startup program.

    Args:
        shape: its shape.
        dtype: its dtype.
        name: its name (generated when None).
        attr: a ParamAttr (name, initializer, regularizer, learning rate, trainable).
        is_bias: a bias: initialised to 0 unless told otherwise (a weight gets Xavier).
        default_initializer: the initializer when ``attr`` names none.

    Returns:
        The Parameter.

    Examples:
        >>> w = fluid.layers.create_parameter(shape=[4, 2], dtype="float32", name="w")
        >>> w.trainable
        True
    """
    helper = LayerHelper("create_parameter")
    if attr is None:
        attr = ParamAttr(name=name)
    return helper.create_parameter(attr, _int_shape(shape, "create_parameter"), dtype, is_bias, default_initializer)


def zeros(shape: int | Sequence[int], dtype: DType, force_cpu: bool = False) -> Variable:
    """A tensor of zeros (``fill_constant`` with 0).

    Args:
        shape: the shape.
        dtype: the dtype.
        force_cpu: accepted for Paddle's signature.

    Returns:
        The Variable.

    Examples:
        >>> z = fluid.layers.zeros(shape=[2, 3], dtype="float32")
    """
    return fill_constant(shape, dtype, 0.0, force_cpu=force_cpu)


def ones(shape: int | Sequence[int], dtype: DType, force_cpu: bool = False) -> Variable:
    """A tensor of ones (``fill_constant`` with 1).

    Args:
        shape: the shape.
        dtype: the dtype.
        force_cpu: accepted for Paddle's signature.

    Returns:
        The Variable.

    Examples:
        >>> o = fluid.layers.ones(shape=[2, 3], dtype="int64")
    """
    return fill_constant(shape, dtype, 1.0, force_cpu=force_cpu)


def zeros_like(x: Variable, out: Variable | None = None) -> Variable:
    """Zeros with ``x``'s shape and dtype (a ``fill_zeros_like`` op); no gradient.

    Args:
        x: the tensor whose shape and dtype to take.
        out: the Variable to write, or None for a new one.

    Returns:
        ``out``, or the new Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> z = fluid.layers.zeros_like(x)
    """
    _check_var(x, "zeros_like", "x")
    helper = LayerHelper("zeros_like")
    if out is None:
        out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("fill_zeros_like", inputs={"X": [x]}, outputs={"Out": [out]})
    out.stop_gradient = True
    return out


def _arg_layer(op_type, x, axis):
    _check_var(x, op_type, "x")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op(op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"axis": int(axis)})
    return out


def argmax(x: Variable, axis: int = 0) -> Variable:
    """The int64 indices of the largest values along ``axis`` (that axis removed).

    Args:
        x: the tensor.
        axis: the axis to search.

    Returns:
        An int64 Variable.

    Examples:
        >>> scores = fluid.data(name="scores", shape=[None, 10], dtype="float32")
        >>> best = fluid.layers.argmax(scores, axis=1)
    """
    return _arg_layer("arg_max", x, axis)


def argmin(x: Variable, axis: int = 0) -> Variable:
    """The int64 indices of the smallest values along ``axis`` (that axis removed).

    Args:
        x: the tensor.
        axis: the axis to search.

    Returns:
        An int64 Variable.

    Examples:
        >>> costs = fluid.data(name="costs", shape=[None, 10], dtype="float32")
        >>> cheapest = fluid.layers.argmin(costs, axis=1)
    """
    return _arg_layer("arg_min", x, axis)


# ------------------------------------------------------------------ Paddle 1.8's newer tensor layers
def argsort(input: Variable, axis: int = -1, descending: bool = False,
            name: str | None = None) -> tuple[Variable, Variable]:
    """``input`` sorted along ``axis``, and where each value came from.

    Args:
        input: the tensor.
        axis: the axis to sort along.
        descending: largest first.
        name: the outputs' name prefix (generated when None).

    Returns:
        ``(sorted, indices)``; indices are int64.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> ordered, order = fluid.layers.argsort(x, axis=1, descending=True)
    """
    _check_var(input, "argsort", "input")
    helper = LayerHelper("argsort", name=name)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    ids = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("argsort", inputs={"X": [input]}, outputs={"Out": [out], "Indices": [ids]},
                     attrs={"axis": int(axis), "descending": bool(descending)})
    return out, ids


def reverse(x: Variable, axis: int | Sequence[int]) -> Variable:
    """``x`` reversed along ``axis``.

    Args:
        x: the tensor.
        axis: an axis or a list of axes.

    Returns:
        A Variable with ``x``'s shape.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> backwards = fluid.layers.reverse(x, axis=1)
    """
    _check_var(x, "reverse", "x")
    axis = [axis] if isinstance(axis, int) else [int(a) for a in axis]
    helper = LayerHelper("reverse")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("reverse", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"axis": axis})
    return out


def _check_op(op_type, x, dtype):
    _check_var(x, op_type, "x")
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(op_type, inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def has_inf(x: Variable) -> Variable:
    """Whether ``x`` holds an infinity: a one-element bool tensor.

    Args:
        x: the tensor.

    Returns:
        A bool Variable of shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> overflowed = fluid.layers.has_inf(x)
    """
    return _check_op("isinf", x, "bool")


def has_nan(x: Variable) -> Variable:
    """Whether ``x`` holds a NaN: a one-element bool tensor.

    Args:
        x: the tensor.

    Returns:
        A bool Variable of shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> broken = fluid.layers.has_nan(x)
    """
    return _check_op("isnan", x, "bool")


def isfinite(x: Variable) -> Variable:
    """Whether every element of ``x`` is finite: a one-element bool tensor.

    Args:
        x: the tensor.

    Returns:
        A bool Variable of shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 5], dtype="float32")
        >>> ok = fluid.layers.isfinite(x)
    """
    return _check_op("isfinite", x, "bool")


def _scalar_var(v, dtype):
    return v if isinstance(v, Variable) else fill_constant([1], dtype, v)


def range(start: float | Variable, end: float | Variable, step: float | Variable, dtype: DType) -> Variable:
    """The values ``[start, end)`` in steps of ``step``.

    Args:
        start: the first value (a number or a one-element Variable).
        end: the bound, not included.
        step: the step.
        dtype: the dtype.

    Returns:
        A 1-D Variable.

    Examples:
        >>> steps = fluid.layers.range(0, 10, 2, "int64")
    """
    dtype = convert_dtype(dtype)
    ins = {k: [_scalar_var(v, dtype)] for k, v in (("Start", start), ("End", end), ("Step", step))}
    helper = LayerHelper("range")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("range", inputs=ins, outputs={"Out": [out]})
    return out


def arange(start: float | Variable, end: float | Variable, step: float | Variable = 1, dtype: DType | None = None,
           name: str | None = None) -> Variable:
    """``range`` with ``step`` 1 and float32 by default.

    Args:
        start: the first value.
        end: the bound, not included.
        step: the step.
        dtype: the dtype (float32 when None).
        name: accepted for Paddle's signature.

    Returns:
        A 1-D Variable.

    Examples:
        >>> xs = fluid.layers.arange(0, 5)
    """
    return range(start, end, step, dtype or "float32")


def linspace(start: float | Variable, stop: float | Variable, num: int | Variable, dtype: DType) -> Variable:
    """``num`` evenly spaced values from ``start`` to ``stop``, both included.

    Args:
        start: the first value.
        stop: the last value.
        num: how many values.
        dtype: the dtype.

    Returns:
        A 1-D Variable.

    Examples:
        >>> grid = fluid.layers.linspace(0.0, 1.0, 11, "float32")
    """
    dtype = convert_dtype(dtype)
    ins = {"Start": [_scalar_var(start, dtype)], "Stop": [_scalar_var(stop, dtype)],
           "Num": [_scalar_var(num, "int32")]}
    helper = LayerHelper("linspace")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("linspace", inputs=ins, outputs={"Out": [out]})
    return out


def full(shape: int | Sequence[int], fill_value: float, out: Variable | None = None, dtype: DType | None = None,
         device: str | None = None, stop_gradient: bool = True, name: str | None = None) -> Variable:
    """A tensor of ``shape`` filled with ``fill_value``.

    Args:
        shape: the shape.
        fill_value: the value.
        out: the Variable to write, or None for a new one.
        dtype: the dtype (float32 when None).
        device: accepted for Paddle's signature.
        stop_gradient: no gradient flows through it.
        name: accepted for Paddle's signature.

    Returns:
        The filled Variable.

    Examples:
        >>> sevens = fluid.layers.full(shape=[2, 2], fill_value=7.0)
    """
    out = fill_constant(shape, dtype or "float32", fill_value, out=out)
    out.stop_gradient = stop_gradient
    return out


def _fill_like(x, value, dtype, layer):
    _check_var(x, layer, "input")
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(dtype or x.dtype, stop_gradient=True)
    helper.append_op("fill_any_like", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"value": float(value), "dtype": convert_dtype(dtype) if dtype else ""})
    return out


def full_like(input: Variable, fill_value: float, out: Variable | None = None, dtype: DType | None = None,
              device: str | None = None, stop_gradient: bool = True, name: str | None = None) -> Variable:
    """A tensor with ``input``'s shape filled with ``fill_value``.

    Args:
        input: the tensor whose shape (and, by default, dtype) to take.
        fill_value: the value.
        out: the Variable to write, or None for a new one.
        dtype: the dtype (``input``'s when None).
        device: accepted for Paddle's signature.
        stop_gradient: no gradient flows through it.
        name: accepted for Paddle's signature.

    Returns:
        The filled Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> halves = fluid.layers.full_like(x, 0.5)
    """
    res = _fill_like(input, fill_value, dtype or input.dtype, "full_like")
    res.stop_gradient = stop_gradient
    return res


def ones_like(x: Variable, out: Variable | None = None) -> Variable:
    """Ones with ``x``'s shape and dtype.

    Args:
        x: the tensor whose shape and dtype to take.
        out: the Variable to write, or None for a new one.

    Returns:
        ``out``, or the new Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> o = fluid.layers.ones_like(x)
    """
    return _fill_like(x, 1.0, None, "ones_like")


def diag(diagonal: Variable | np.ndarray) -> Variable:
    """A square matrix with ``diagonal`` on its diagonal and zeros elsewhere.

    Args:
        diagonal: a 1-D Variable or NumPy array.

    Returns:
        A 2-D Variable.

    Examples:
        >>> d = fluid.layers.diag(np.array([1.0, 2.0, 3.0], dtype="float32"))
    """
    if not isinstance(diagonal, Variable):
        diagonal = assign(np.asarray(diagonal))
    helper = LayerHelper("diag")
    out = helper.create_variable_for_type_inference(diagonal.dtype, stop_gradient=True)
    helper.append_op("diag", inputs={"Diagonal": [diagonal]}, outputs={"Out": [out]})
    return out


def eye(num_rows: int, num_columns: int | None = None, batch_shape: Sequence[int] | None = None,
        dtype: DType = "float32") -> Variable:
    """An identity matrix, optionally repeated over leading batch dimensions.

    Args:
        num_rows: the number of rows.
        num_columns: the number of columns (``num_rows`` when None).
        batch_shape: leading dimensions to repeat it over.
        dtype: the dtype.

    Returns:
        The Variable.

    Examples:
        >>> identity = fluid.layers.eye(3)
    """
    helper = LayerHelper("eye")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("eye", outputs={"Out": [out]},
                     attrs={"num_rows": int(num_rows), "num_columns": int(num_columns) if num_columns is not None
                            else -1, "dtype": convert_dtype(dtype)})
    for n in reversed(list(batch_shape or [])):
        stacked = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
        helper.append_op("stack", inputs={"X": [out] * int(n)}, outputs={"Y": [stacked]}, attrs={"axis": 0})
        out = stacked
    out.stop_gradient = True
    return out


def kron(x: Variable, y: Variable, out: Variable | None = None, name: str | None = None) -> Variable:
    """The Kronecker product of ``x`` and ``y``.

    Args:
        x: the left tensor.
        y: the right tensor, of the same rank.
        out: accepted for Paddle's signature.
        name: the output's name (generated when None).

    Returns:
        A Variable whose sizes are the products of ``x``'s and ``y``'s.

    Examples:
        >>> a = fluid.data(name="a", shape=[2, 2], dtype="float32")
        >>> b = fluid.data(name="b", shape=[3, 3], dtype="float32")
        >>> fluid.layers.kron(a, b).shape
        (6, 6)
    """
    _check_var(x, "kron", "x")
    _check_var(y, "kron", "y")
    helper = LayerHelper("kron", name=name)
    res = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("kron", inputs={"X": [x], "Y": [y]}, outputs={"Out": [res]})
    return res


def _tri(input, diagonal, lower, layer):
    _check_var(input, layer, "input")
    if len(input.shape) < 2:
        raise ValueError("%s: input %r must have at least 2 dimensions" % (layer, input.name))
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("tril_triu", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"diagonal": int(diagonal), "lower": lower})
    return out


def tril(input: Variable, diagonal: int = 0, name: str | None = None) -> Variable:
    """The lower triangle of the last two dimensions (from the ``diagonal``-th diagonal down).

    Args:
        input: a tensor of rank >= 2.
        diagonal: 0 is the main diagonal, positive above it, negative below.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``input``'s shape.

    Examples:
        >>> m = fluid.data(name="m", shape=[4, 4], dtype="float32")
        >>> lower = fluid.layers.tril(m)
    """
    return _tri(input, diagonal, True, "tril")


def triu(input: Variable, diagonal: int = 0, name: str | None = None) -> Variable:
    """The upper triangle of the last two dimensions (from the ``diagonal``-th diagonal up).

    Args:
        input: a tensor of rank >= 2.
        diagonal: 0 is the main diagonal, positive above it, negative below.
        name: the output's name (generated when None).

    Returns:
        A Variable with ``input``'s shape.

    Examples:
        >>> m = fluid.data(name="m", shape=[4, 4], dtype="float32")
        >>> upper = fluid.layers.triu(m, diagonal=1)
    """
    return _tri(input, diagonal, False, "triu")


def trace(input: Variable, offset: int = 0, dim1: int = 0, dim2: int = 1, out: Variable | None = None,
          name: str | None = None) -> Variable:
    """The sum of a diagonal over dimensions ``dim1`` and ``dim2``.

    Args:
        input: a tensor of rank >= 2.
        offset: which diagonal: 0 the main one, positive above, negative below.
        dim1: the first of the two dimensions.
        dim2: the second.
        out: accepted for Paddle's signature.
        name: the output's name (generated when None).

    Returns:
        A Variable without ``dim1`` and ``dim2``.

    Examples:
        >>> m = fluid.data(name="m", shape=[4, 4], dtype="float32")
        >>> t = fluid.layers.trace(m)
    """
    _check_var(input, "trace", "input")
    helper = LayerHelper("trace", name=name)
    res = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("trace", inputs={"Input": [input]}, outputs={"Out": [res]},
                     attrs={"offset": int(offset), "dim1": int(dim1), "dim2": int(dim2)})
    return res


__all__ += ["argsort", "reverse", "has_inf", "has_nan", "isfinite", "range", "arange", "linspace", "full",
            "full_like", "ones_like", "diag", "eye", "kron", "tril", "triu", "trace"]
