"""Tensor layers with Paddle 1.x signatures: constants, casts, copies, concat/split, reshape/transpose,
global variables and parameters, arg-max/min. (``increment`` lives in ``control_flow``, as in Paddle.)"""
import builtins

import numpy as np

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
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


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of ``shape`` filled with ``value`` (``out`` is filled when given). No gradient."""
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


def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0, output_dim_idx=0, force_cpu=False):
    """Like ``fill_constant``, but dimension ``output_dim_idx`` of the result is taken at run time from
    dimension ``input_dim_idx`` of ``input`` (the batch size)."""
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


def cast(x, dtype):
    """``x`` converted to ``dtype``; the gradient is cast back."""
    _check_var(x, "cast", "x")
    helper = LayerHelper("cast")
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("cast", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"in_dtype": x.dtype, "out_dtype": out.dtype})
    return out


_ASSIGN_VALUE_SLOTS = {"float32": "fp32_values", "int32": "int32_values", "int64": "int64_values",
                       "bool": "bool_values"}


def assign(input, output=None):
    """Copy a Variable (``assign`` op) or a numpy array (``assign_value`` op, its values stored in the
    program) into ``output`` (a new Variable when None)."""
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


def sums(input, out=None):
    """The elementwise sum of a list of Variables (a ``sum`` op)."""
    helper = LayerHelper("sum", input=input)
    xs = helper.multiple_input()
    if out is None:
        out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op("sum", inputs={"X": xs}, outputs={"Out": [out]}, attrs={"use_mkldnn": False})
    return out


def concat(input, axis=0, name=None):
    """Join Variables along ``axis``."""
    helper = LayerHelper("concat", input=input, name=name)
    xs = helper.multiple_input()
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op("concat", inputs={"X": xs}, outputs={"Out": [out]}, attrs={"axis": int(axis)})
    return out


def split(input, num_or_sections, dim=-1, name=None):
    """Split ``input`` along ``dim`` into ``num_or_sections`` equal parts, or parts of the given sizes
    (one of which may be -1: the rest). Returns the list of parts."""
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


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """``x`` viewed with ``shape`` (a ``reshape2`` op): 0 copies the input's size at that position and
    one -1 takes the rest. ``actual_shape`` (an int Variable) overrides ``shape`` at run time.
    ``inplace`` is accepted for compatibility; the result is always a new Variable (same values)."""
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


def transpose(x, perm, name=None):
    """``x`` with its dimensions permuted by ``perm`` (a ``transpose2`` op)."""
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


def create_global_var(shape, value, dtype, persistable=False, force_cpu=False, name=None):
    """A variable of the main program's global block, filled with ``value`` by the startup program."""
    helper = LayerHelper("global_var")
    var = helper.create_global_variable(dtype=convert_dtype(dtype), shape=_int_shape(shape, "create_global_var"),
                                        persistable=persistable, name=name, stop_gradient=True)
    helper.set_variable_initializer(var, ConstantInitializer(float(value), force_cpu=force_cpu))
    return var


def create_tensor(dtype, name=None, persistable=False):
    """An empty variable to be written later (for example by ``assign``)."""
    helper = LayerHelper("create_tensor", name=name)
    return helper.create_variable(name=helper.name, dtype=convert_dtype(dtype), persistable=persistable)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False, default_initializer=None):
    """A trainable parameter, initialised in the startup program (Xavier, or 0 for a bias, unless
    ``attr`` / ``default_initializer`` say otherwise)."""
    helper = LayerHelper("create_parameter")
    if attr is None:
        attr = ParamAttr(name=name)
    return helper.create_parameter(attr, _int_shape(shape, "create_parameter"), dtype, is_bias, default_initializer)


def zeros(shape, dtype, force_cpu=False):
    return fill_constant(shape, dtype, 0.0, force_cpu=force_cpu)


def ones(shape, dtype, force_cpu=False):
    return fill_constant(shape, dtype, 1.0, force_cpu=force_cpu)


def zeros_like(x, out=None):
    """Zeros shaped like ``x`` (a ``fill_zeros_like`` op). No gradient."""
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


def argmax(x, axis=0):
    """int64 indices of the largest values along ``axis`` (that axis removed)."""
    return _arg_layer("arg_max", x, axis)


def argmin(x, axis=0):
    """int64 indices of the smallest values along ``axis`` (that axis removed)."""
    return _arg_layer("arg_min", x, axis)


# ------------------------------------------------------------------ Paddle 1.8's newer tensor layers
def argsort(input, axis=-1, descending=False, name=None):
    """``input`` sorted along ``axis`` and the int64 positions the values came from: ``(out, indices)``."""
    _check_var(input, "argsort", "input")
    helper = LayerHelper("argsort", name=name)
    out = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    ids = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("argsort", inputs={"X": [input]}, outputs={"Out": [out], "Indices": [ids]},
                     attrs={"axis": int(axis), "descending": bool(descending)})
    return out, ids


def reverse(x, axis):
    """``x`` reversed along ``axis`` (an int or a list of ints)."""
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


def has_inf(x):
    """Whether ``x`` holds an infinity: a one-element bool tensor (an ``isinf`` op)."""
    return _check_op("isinf", x, "bool")


def has_nan(x):
    """Whether ``x`` holds a NaN: a one-element bool tensor (an ``isnan`` op)."""
    return _check_op("isnan", x, "bool")


def isfinite(x):
    """Whether every element of ``x`` is finite: a one-element bool tensor."""
    return _check_op("isfinite", x, "bool")


def _scalar_var(v, dtype):
    return v if isinstance(v, Variable) else fill_constant([1], dtype, v)


def range(start, end, step, dtype):
    """``[start, end)`` in steps of ``step`` (numbers or one-element Variables), of ``dtype``."""
    dtype = convert_dtype(dtype)
    ins = {k: [_scalar_var(v, dtype)] for k, v in (("Start", start), ("End", end), ("Step", step))}
    helper = LayerHelper("range")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("range", inputs=ins, outputs={"Out": [out]})
    return out


def arange(start, end, step=1, dtype=None, name=None):
    """``range`` with a float32 default dtype."""
    return range(start, end, step, dtype or "float32")


def linspace(start, stop, num, dtype):
    """``num`` evenly spaced values from ``start`` to ``stop``, both included."""
    dtype = convert_dtype(dtype)
    ins = {"Start": [_scalar_var(start, dtype)], "Stop": [_scalar_var(stop, dtype)],
           "Num": [_scalar_var(num, "int32")]}
    helper = LayerHelper("linspace")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("linspace", inputs=ins, outputs={"Out": [out]})
    return out


def full(shape, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """A tensor of ``shape`` filled with ``fill_value`` (float32 unless ``dtype``)."""
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


def full_like(input, fill_value, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """A tensor shaped like ``input`` filled with ``fill_value`` (``input``'s dtype unless ``dtype``)."""
    res = _fill_like(input, fill_value, dtype or input.dtype, "full_like")
    res.stop_gradient = stop_gradient
    return res


def ones_like(x, out=None):
    """Ones shaped like ``x``."""
    return _fill_like(x, 1.0, None, "ones_like")


def diag(diagonal):
    """A square matrix with ``diagonal`` (a 1-D Variable or numpy array) on its diagonal."""
    if not isinstance(diagonal, Variable):
        diagonal = assign(np.asarray(diagonal))
    helper = LayerHelper("diag")
    out = helper.create_variable_for_type_inference(diagonal.dtype, stop_gradient=True)
    helper.append_op("diag", inputs={"Diagonal": [diagonal]}, outputs={"Out": [out]})
    return out


def eye(num_rows, num_columns=None, batch_shape=None, dtype="float32"):
    """An identity matrix (``num_columns`` defaults to ``num_rows``), repeated over ``batch_shape``."""
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


def kron(x, y, out=None, name=None):
    """The Kronecker product of ``x`` and ``y``."""
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


def tril(input, diagonal=0, name=None):
    """The lower triangle (from the ``diagonal``-th diagonal down) of the last two dimensions."""
    return _tri(input, diagonal, True, "tril")


def triu(input, diagonal=0, name=None):
    """The upper triangle (from the ``diagonal``-th diagonal up) of the last two dimensions."""
    return _tri(input, diagonal, False, "triu")


def trace(input, offset=0, dim1=0, dim2=1, out=None, name=None):
    """The sum of the ``offset`` diagonal over dimensions ``dim1`` and ``dim2``."""
    _check_var(input, "trace", "input")
    helper = LayerHelper("trace", name=name)
    res = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("trace", inputs={"Input": [input]}, outputs={"Out": [res]},
                     attrs={"offset": int(offset), "dim1": int(dim1), "dim2": int(dim2)})
    return res


__all__ += ["argsort", "reverse", "has_inf", "has_nan", "isfinite", "range", "arange", "linspace", "full",
            "full_like", "ones_like", "diag", "eye", "kron", "tril", "triu", "trace"]
