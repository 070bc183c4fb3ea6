"""Int-list arguments that may hold Variables (a shape, axes, starts, expand times, ...), turned into
an op's attr and its tensor inputs as Paddle 1.8's layers do: ``shape=[layers.shape(x)[0], 1]``
gives the attr ``[-1, 1]`` and the tensor list ``[that Variable, an int32 [1] constant 1]``; a whole
Variable goes to the op's whole-tensor slot."""
from __future__ import annotations

from typing import Any, Sequence

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from .layer_helper import LayerHelper


def has_variable(values: Any) -> bool:
    """Whether the list or tuple ``values`` holds a Variable (Paddle's ``utils._contain_var``)."""
    return isinstance(values, (list, tuple)) and any(isinstance(v, Variable) for v in values)


def _as_int(value, layer, arg):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TypeError("%s: %s must hold ints and int Variables, got %r (%s)"
                        % (layer, arg, value, type(value).__name__)) from None


def attr_values(values: Sequence[Any], layer: str, arg: str, hole: int = -1) -> list[int]:
    """``values`` as the op's int-list attr: ``hole`` where a Variable stands."""
    return [hole if isinstance(v, Variable) else _as_int(v, layer, arg) for v in values]


def int_constant(value: int, dtype: str = "int32") -> Variable:
    """A CPU ``[1]`` int constant: the ``fill_constant`` op (``force_cpu``) Paddle's layers add for
    an int standing beside Variables."""
    helper = LayerHelper("fill_constant")
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op("fill_constant", outputs={"Out": [out]},
                     attrs={"shape": [1], "dtype": dtype, "value": float(value), "str_value": str(int(value)),
                            "force_cpu": True})
    out.stop_gradient = True
    return out


def tensor_list(values: Sequence[Any], layer: str, arg: str, dtype: str = "int32") -> list[Variable]:
    """``values`` as an op's list of ``[1]`` tensors: each Variable as it is (no gradient flows into
    it), each int a CPU ``dtype`` constant (``int_constant``)."""
    out = []
    for v in values:
        if isinstance(v, Variable):
            v.stop_gradient = True
            out.append(v)
        else:
            out.append(int_constant(_as_int(v, layer, arg), dtype))
    return out


def int_tensors(values: Sequence[Any], layer: str = "layer", arg: str = "values") -> tuple[list[Variable], list[int]]:
    """``(tensor_list(values), attr_values(values))``: the list input and the attr of one argument."""
    return tensor_list(values, layer, arg), attr_values(values, layer, arg)


def _checked_shape_variable(var, layer, arg):
    """A shape Variable of Paddle's dtypes (int32 or int64, TypeError otherwise), as int32 (a
    ``cast`` op for int64, as Paddle's ``_get_shape_tensor_inputs``)."""
    if convert_dtype(var.dtype) not in ("int32", "int64"):
        raise TypeError("%s: argument '%s' takes dtype int32 or int64, got %s"
                        % (layer, arg, convert_dtype(var.dtype)))
    var.stop_gradient = True
    if convert_dtype(var.dtype) == "int32":
        return var
    helper = LayerHelper("cast")
    out = helper.create_variable_for_type_inference("int32")
    helper.append_op("cast", inputs={"X": [var]}, outputs={"Out": [out]},
                     attrs={"in_dtype": var.dtype, "out_dtype": "int32"})
    return out


def shape_tensor_inputs(inputs: dict, attrs: dict, shape: Any, layer: str) -> None:
    """Paddle 1.8's ``utils._get_shape_tensor_inputs`` (``fill_constant``, ``gaussian_random``): a
    Variable ``shape`` is the ``ShapeTensor`` input; a list is the ``shape`` attr (-1 for each
    Variable in it) and, when it holds Variables, the ``ShapeTensorList`` input. Variables must be
    int32 or int64 (int64 ones are cast to int32); the ints become int32 constants."""
    if isinstance(shape, Variable):
        inputs["ShapeTensor"] = [_checked_shape_variable(shape, layer, "shape")]
        return
    attrs["shape"] = attr_values(shape, layer, "shape")
    if has_variable(shape):
        inputs["ShapeTensorList"] = [
            _checked_shape_variable(v, layer, "shape[%d]" % i) if isinstance(v, Variable)
            else tensor_list([v], layer, "shape")[0] for i, v in enumerate(shape)]
