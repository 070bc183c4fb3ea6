"""Tensors made from numbers: ranges (``range``, ``arange``, ``linspace``), filled tensors (``full``,
``full_like``, ``ones_like``) and matrices (``diag``, ``eye``, ``kron``, ``tril``, ``triu``,
``trace``); ``fluid.layers.tensor`` re-exports them."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from .hints import DType
from ..reader.data_feeder import check_dtype, check_type, check_variable_and_dtype
from .layer_helper import LayerHelper, check_variable
from .shape_args import shape_tensor_inputs

__all__ = ["fill_constant", "assign", "zeros", "range", "arange", "linspace", "full", "full_like", "ones_like", "diag", "eye", "kron", "tril", "triu", "trace"]

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


def fill_constant(shape: Sequence[int | Variable] | Variable, dtype: DType, value: float | Variable,
                  force_cpu: bool = False, out: Variable | None = None) -> Variable:
    """A tensor of ``shape`` filled with ``value``; no gradient flows through it.

    Args:
        shape: the shape: a list of ints and int Variables (``[layers.shape(x)[0], 1]``: the sizes
            the Variables hold when the program runs), or an int Variable holding the whole shape.
        dtype: the dtype (bool, float16, float32, float64, int32 or int64).
        value: the fill value (integers keep their exact value for int dtypes), or a Variable
            holding it.
        force_cpu: accepted for Paddle's signature.
        out: an existing Variable to fill (of ``dtype``), or None for a new one.

    Returns:
        The filled Variable (``out`` when given).

    Raises:
        TypeError: as Paddle 1.8: a dtype not listed above, a ``shape`` that is no list, tuple or
            Variable, a shape Variable that is not int32 / int64, an ``out`` of another dtype.

    Examples:
        >>> counter = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        >>> counter.shape, counter.dtype
        ((1,), 'int64')
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> ones = fluid.layers.fill_constant(shape=[fluid.layers.shape(x)[0], 1], dtype="float32", value=1.0)
        >>> ones.shape
        (-1, 1)
    """
    check_dtype(dtype, "dtype", ["bool", "float16", "float32", "float64", "int32", "int64"], "fill_constant")
    check_type(shape, "shape", (Variable, list, tuple), "fill_constant")
    if out is not None:
        check_variable_and_dtype(out, "out", [convert_dtype(dtype)], "fill_constant")
    helper = LayerHelper("fill_constant")
    inputs: dict = {}
    attrs: dict = {"force_cpu": bool(force_cpu)}
    if isinstance(value, Variable):
        inputs["ValueTensor"] = [value]
    else:
        attrs.update(value=float(value), str_value=_str_value(value, dtype))
    shape_tensor_inputs(inputs, attrs, shape, "fill_constant")
    if out is None:
        out = helper.create_variable_for_type_inference(dtype)
    attrs["dtype"] = out.dtype
    helper.append_op("fill_constant", inputs=inputs, outputs={"Out": [out]}, attrs=attrs)
    out.stop_gradient = True
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
        _check_var(input, "assign", "input")
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


def zeros(shape: Sequence[int | Variable], dtype: DType, force_cpu: bool = False) -> Variable:
    """A tensor of zeros (``fill_constant`` with 0).

    Args:
        shape: the shape, a list or tuple of ints and int Variables.
        dtype: the dtype.
        force_cpu: accepted for Paddle's signature.

    Returns:
        The Variable.

    Raises:
        TypeError: ``shape`` is not a list or tuple (as Paddle 1.8).

    Examples:
        >>> z = fluid.layers.zeros(shape=[2, 3], dtype="float32")
    """
    check_type(shape, "shape", (list, tuple), "zeros")
    return fill_constant(shape, dtype, 0.0, force_cpu=force_cpu)


def _scalar_var(v, dtype):
    return v if isinstance(v, Variable) else fill_constant([1], dtype, v)


def _fill_like(x, value, dtype, layer, arg="input"):
    _check_var(x, layer, arg)
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(dtype or x.dtype, stop_gradient=True)
    helper.append_op("fill_any_like", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"value": float(value), "dtype": convert_dtype(dtype) if dtype else ""})
    return out


def _tri(input, diagonal, lower, layer):
    _check_var(input, layer, "x")
    if len(input.shape) < 2:
        raise ValueError("%s: input %r must have at least 2 dimensions" % (layer, input.name))
    helper = LayerHelper(layer)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("tril_triu", inputs={"X": [input]}, outputs={"Out": [out]},
                     attrs={"diagonal": int(diagonal), "lower": lower})
    return out


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
    for value, arg in ((start, "start"), (end, "end"), (step, "step")):
        check_type(value, arg, (float, int, Variable), "range")     # as Paddle 1.8 (a NumPy array: TypeError)
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
    for value, arg in ((start, "start"), (stop, "stop"), (num, "num")):
        check_type(value, arg, (Variable, float, int), "linspace")     # as Paddle 1.8 (a NumPy array: TypeError)
        if isinstance(value, Variable):
            _check_var(value, "linspace", arg)
    ins = {"Start": [_scalar_var(start, dtype)], "Stop": [_scalar_var(stop, dtype)],
           "Num": [_scalar_var(num, "int32")]}
    helper = LayerHelper("linspace")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("linspace", inputs=ins, outputs={"Out": [out]})
    return out


def full(shape: Sequence[int | Variable] | Variable, fill_value: float | Variable, out: Variable | None = None,
         dtype: DType | None = None, device: str | None = None, stop_gradient: bool = True,
         name: str | None = None) -> Variable:
    """A tensor of ``shape`` filled with ``fill_value``.

    Args:
        shape: the shape (as ``fill_constant``'s: ints and int Variables, or one int Variable).
        fill_value: the value, or a Variable holding it.
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
    return _fill_like(x, 1.0, None, "ones_like", "x")


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
    _check_var(diagonal, "diag", "diagonal")
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
