"""Tensor layers with Paddle 1.x signatures: constants, casts, copies, concat/split, reshape/transpose,
global variables and parameters, arg-max/min. (``increment`` lives in ``control_flow``, as in Paddle.)"""
from __future__ import annotations

import builtins
from typing import Any, List, Sequence

import numpy as np

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from .hints import DType, ParamAttrLike
from ..initializer import ConstantInitializer
from ..param_attr import ParamAttr
from ..reader.data_feeder import check_type, check_variable_and_dtype
from .layer_helper import LayerHelper, check_variable, refuse_tuple
from .shape_args import attr_values, has_variable, tensor_list
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
    refuse_tuple(input, "sums", "input")
    helper = LayerHelper("sum", input=input)
    xs = helper.multiple_input()
    for x in xs:
        check_variable_and_dtype(x, "input", ["float32", "float64", "int32", "int64"], "sums")
    if out is None:
        out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op("sum", inputs={"X": xs}, outputs={"Out": [out]}, attrs={"use_mkldnn": False})
    return out


def concat(input: Sequence[Variable], axis: int | Variable = 0, name: str | None = None) -> Variable:
    """Join Variables along ``axis``; the other dimensions must agree.

    Args:
        input: the Variables, in order (one Variable is taken as a list of one, as Paddle warns).
        axis: the axis to join along (negative counts from the end), or a ``[1]`` int Variable
            holding it (read when the program runs).
        name: the output's name (generated when None).

    Returns:
        The joined Variable.

    Raises:
        TypeError: an input that is not a float16/32/64 or int32/64 Variable, or an ``axis`` that is
            no int or Variable (as Paddle 1.8).

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="float32")
        >>> b = fluid.data(name="b", shape=[None, 5], dtype="float32")
        >>> fluid.layers.concat([a, b], axis=1).shape
        (-1, 8)
    """
    refuse_tuple(input, "concat", "input")
    xs = list(input) if isinstance(input, list) else [input]
    for i, x in enumerate(xs):
        check_variable_and_dtype(x, "input[%d]" % i, ["float16", "float32", "float64", "int32", "int64"], "concat")
    check_type(axis, "axis", (int, np.integer, Variable), "concat")
    helper = LayerHelper("concat", input=xs, name=name)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    inputs: dict = {"X": xs}
    attrs = {}
    if isinstance(axis, Variable):
        axis.stop_gradient = True
        inputs["AxisTensor"] = [axis]
    else:
        attrs["axis"] = int(axis)
    helper.append_op("concat", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    return out


def split(input: Variable, num_or_sections: int | Sequence[int | Variable], dim: int | Variable = -1,
          name: str | None = None) -> list[Variable]:
    """Split ``input`` along ``dim`` into equal parts or parts of given sizes.

    Args:
        input: the tensor to split.
        num_or_sections: the number of equal parts, or the list of sizes (one of which may be -1:
            whatever is left); sizes may be int Variables (read when the program runs).
        dim: the axis to split, or a ``[1]`` int Variable holding it.
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
    if not isinstance(num_or_sections, (int, np.integer, list, tuple)):
        raise TypeError("split: argument 'num_or_sections' takes an int, a list or a tuple, got %s"
                        % type(num_or_sections).__name__)
    if not isinstance(dim, (int, np.integer, Variable)):
        raise TypeError("split: argument 'dim' takes an int or a Variable, got %s" % type(dim).__name__)
    if isinstance(dim, Variable) or has_variable(num_or_sections):
        return _split_with_tensors(input, num_or_sections, dim, name)
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


def _split_with_tensors(input, num_or_sections, dim, name):
    """``split`` where the axis or some sizes are Variables (the ``AxisTensor`` and
    ``SectionsTensorList`` inputs, read when the program runs; -1 in ``sections`` for each Variable)."""
    helper = LayerHelper("split", name=name)
    inputs: dict = {"X": [input]}
    attrs: dict = {"num": int(num_or_sections) if isinstance(num_or_sections, (int, np.integer)) else 0}
    if isinstance(dim, Variable):
        dim.stop_gradient = True
        inputs["AxisTensor"] = [dim]
    else:
        attrs["axis"] = int(dim) + len(input.shape) if dim < 0 else int(dim)
    if isinstance(num_or_sections, (int, np.integer)):
        if num_or_sections < 2:
            raise ValueError("split: num_or_sections must be more than 1, got %d" % num_or_sections)
        num = int(num_or_sections)
    else:
        num = len(num_or_sections)
        attrs["sections"] = attr_values(num_or_sections, "split", "num_or_sections")
        if has_variable(num_or_sections):
            inputs["SectionsTensorList"] = tensor_list(num_or_sections, "split", "num_or_sections")
    outs = [helper.create_variable_for_type_inference(input.dtype) for _ in builtins.range(num)]
    helper.append_op("split", inputs=inputs, outputs={"Out": outs}, attrs=attrs)
    return outs


def reshape(x: Variable, shape: Sequence[int | Variable] | Variable, actual_shape: Variable | None = None,
            act: str | None = None, inplace: bool = False, name: str | None = None) -> Variable:
    """``x`` with a new shape and the same values (a ``reshape2`` op).

    Args:
        x: the tensor.
        shape: the new shape: 0 copies ``x``'s size at that position, one -1 takes what is left.
            Its entries may be int Variables (their values when the program runs: the
            ``ShapeTensor`` input), or ``shape`` one int Variable holding the whole shape.
        actual_shape: an int Variable that overrides ``shape`` at run time (ignored, as in Paddle,
            when ``shape`` holds Variables).
        act: an activation applied to the result, or None.
        inplace: accepted for Paddle's signature; the result is always a new Variable.
        name: the output's name (generated when None).

    Returns:
        The reshaped Variable.

    Raises:
        TypeError: as Paddle 1.8: ``x`` is not a float16/32/64 or int32/64 Variable, ``shape`` is no
            list, tuple or Variable, ``actual_shape`` is no Variable.
        AssertionError: as Paddle 1.8: ``shape`` is empty, has two -1, a 0 past ``x``'s rank or a
            size below -1.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2, 3], dtype="float32")
        >>> fluid.layers.reshape(x, shape=[0, -1]).shape
        (-1, 6)
        >>> fluid.layers.reshape(x, shape=[fluid.layers.shape(x)[0], 3, 2]).shape
        (-1, 3, 2)
    """
    check_variable_and_dtype(x, "x", ["float16", "float32", "float64", "int32", "int64"], "reshape")
    check_type(shape, "shape", (list, tuple, Variable), "reshape")
    check_type(actual_shape, "actual_shape", (Variable, type(None)), "reshape")
    helper = LayerHelper("reshape2", act=act, name=name)
    inputs, attrs = {"X": [x]}, {}
    if isinstance(shape, Variable):
        shape.stop_gradient = True
        inputs["Shape"] = [shape]
    else:
        attrs["shape"] = _reshape_attr(x, shape)
        if has_variable(shape):
            inputs["ShapeTensor"] = tensor_list(shape, "reshape", "shape")
        elif actual_shape is not None:
            actual_shape.stop_gradient = True
            inputs["Shape"] = [actual_shape]
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("reshape2", inputs=inputs, outputs={"Out": [out], "XShape": [x_shape]}, attrs=attrs)
    return helper.append_activation(out)


def _reshape_attr(x, shape):
    """The ``shape`` attr of ``reshape2``: -1 where a Variable stands; one -1 at most, 0 only where
    ``x`` has a dimension, no other negative size. Paddle 1.8 asserts these (AssertionError)."""
    if not shape:
        raise AssertionError("reshape: shape must not be empty")
    attr = attr_values(shape, "reshape", "shape")
    given = [d for v, d in zip(shape, attr) if not isinstance(v, Variable)]
    if given.count(-1) > 1:
        raise AssertionError("reshape: only one dimension of shape %s may be -1" % attr)
    for i, (v, d) in enumerate(zip(shape, attr)):
        if isinstance(v, Variable):
            continue
        if d < -1:
            raise AssertionError("reshape: dimension %d of shape %s is negative (only -1 is allowed)" % (i, attr))
        if d == 0 and i >= len(x.shape):
            raise AssertionError("reshape: shape %s has 0 at position %d, but x %r has only %d dimensions"
                                 % (attr, i, x.name, len(x.shape)))
    return attr


def transpose(x: Variable, perm: List[int], name: str | None = None) -> Variable:
    """``x`` with its dimensions permuted (a ``transpose2`` op).

    Args:
        x: the tensor.
        perm: the new order of ``x``'s dimensions (a list, as Paddle 1.8 takes).
        name: the output's name (generated when None).

    Returns:
        The transposed Variable.

    Raises:
        TypeError: ``perm`` is not a list (Paddle 1.8's check_type).
        ValueError: ``perm`` is not a permutation of ``x``'s dimensions.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2, 3], dtype="float32")
        >>> fluid.layers.transpose(x, perm=[0, 2, 1]).shape
        (-1, 3, 2)
    """
    _check_var(x, "transpose", "x")
    check_type(perm, "perm", list, "transpose")     # Paddle 1.8 takes a list only
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


def ones(shape: Sequence[int | Variable], dtype: DType, force_cpu: bool = False) -> Variable:
    """A tensor of ones (``fill_constant`` with 1).

    Args:
        shape: the shape, a list or tuple of ints and int Variables.
        dtype: the dtype.
        force_cpu: accepted for Paddle's signature.

    Returns:
        The Variable.

    Raises:
        TypeError: ``shape`` is not a list or tuple (as Paddle 1.8).

    Examples:
        >>> o = fluid.layers.ones(shape=[2, 3], dtype="int64")
    """
    check_type(shape, "shape", (list, tuple), "ones")
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
