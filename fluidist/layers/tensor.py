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
from .tensor_fill import _int_shape, _str_value, assign, fill_constant, zeros  # noqa: F401 (fluid.layers.tensor's names)
from .tensor_fill import (arange, diag, eye, full, full_like, kron, linspace, ones_like, range,  # noqa: F401
                          trace, tril, triu)
from .tensor_search import argmax, argmin, argsort, has_inf, has_nan, isfinite, reverse  # noqa: F401

__all__ = ["fill_constant", "fill_constant_batch_size_like", "cast", "assign", "sums", "concat", "split", "reshape",
           "transpose", "create_global_var", "create_tensor", "create_parameter", "zeros", "ones", "zeros_like",
           "argmax", "argmin"]


_check_var = check_variable


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


__all__ += ["argsort", "reverse", "has_inf", "has_nan", "isfinite", "range", "arange", "linspace", "full",
            "full_like", "ones_like", "diag", "eye", "kron", "tril", "triu", "trace"]
