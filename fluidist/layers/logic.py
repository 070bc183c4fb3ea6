"""Comparison and logical layers and ``increment`` (Paddle keeps them in ``layers.control_flow``,
which re-exports them)."""
from __future__ import annotations

from ..framework.variable import Variable
from .layer_helper import LayerHelper, check_variable

__all__ = ["less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal",
           "logical_and", "logical_or", "logical_xor", "logical_not", "increment"]


_check_var = check_variable


def _compare(op_type: str, x: Variable, y: Variable, force_cpu: bool | None, cond: Variable | None,
             name: str | None) -> Variable:
    _check_var(x, op_type, "x")
    _check_var(y, op_type, "y")
    helper = LayerHelper(op_type, name=name)
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype="bool", stop_gradient=True)
    cond.stop_gradient = True
    attrs = {"force_cpu": bool(force_cpu)} if force_cpu is not None else {}
    helper.append_op(op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]}, attrs=attrs)
    return cond


def less_than(x: Variable, y: Variable, force_cpu: bool | None = None, cond: Variable | None = None,
              name: str | None = None) -> Variable:
    """Elementwise ``x < y``, a bool tensor (no gradient flows through it).

    Args:
        x: the left operand.
        y: the right operand, of ``x``'s shape (or broadcastable onto it).
        force_cpu: kept for Paddle 1.x scripts (fluidist compares where the inputs live).
        cond: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``cond`` when given).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> mask = fluid.layers.less_than(x, y)
    """
    return _compare("less_than", x, y, force_cpu, cond, name)


def less_equal(x: Variable, y: Variable, force_cpu: bool | None = None, cond: Variable | None = None,
               name: str | None = None) -> Variable:
    """Elementwise ``x <= y``, a bool tensor (no gradient flows through it).

    Args:
        x: the left operand.
        y: the right operand, of ``x``'s shape (or broadcastable onto it).
        force_cpu: kept for Paddle 1.x scripts (fluidist compares where the inputs live).
        cond: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``cond`` when given).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> mask = fluid.layers.less_equal(x, y)
    """
    return _compare("less_equal", x, y, force_cpu, cond, name)


def greater_than(x: Variable, y: Variable, force_cpu: bool | None = None, cond: Variable | None = None,
                 name: str | None = None) -> Variable:
    """Elementwise ``x > y``, a bool tensor (no gradient flows through it).

    Args:
        x: the left operand.
        y: the right operand, of ``x``'s shape (or broadcastable onto it).
        force_cpu: kept for Paddle 1.x scripts (fluidist compares where the inputs live).
        cond: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``cond`` when given).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> mask = fluid.layers.greater_than(x, y)
    """
    return _compare("greater_than", x, y, force_cpu, cond, name)


def greater_equal(x: Variable, y: Variable, force_cpu: bool | None = None, cond: Variable | None = None,
                  name: str | None = None) -> Variable:
    """Elementwise ``x >= y``, a bool tensor (no gradient flows through it).

    Args:
        x: the left operand.
        y: the right operand, of ``x``'s shape (or broadcastable onto it).
        force_cpu: kept for Paddle 1.x scripts (fluidist compares where the inputs live).
        cond: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``cond`` when given).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> mask = fluid.layers.greater_equal(x, y)
    """
    return _compare("greater_equal", x, y, force_cpu, cond, name)


def equal(x: Variable, y: Variable, force_cpu: bool | None = None, cond: Variable | None = None,
          name: str | None = None) -> Variable:
    """Elementwise ``x == y``, a bool tensor (no gradient flows through it).

    Args:
        x: the left operand.
        y: the right operand, of ``x``'s shape (or broadcastable onto it).
        force_cpu: kept for Paddle 1.x scripts (fluidist compares where the inputs live).
        cond: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``cond`` when given).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> mask = fluid.layers.equal(x, y)
    """
    return _compare("equal", x, y, force_cpu, cond, name)


def not_equal(x: Variable, y: Variable, force_cpu: bool | None = None, cond: Variable | None = None,
              name: str | None = None) -> Variable:
    """Elementwise ``x != y``, a bool tensor (no gradient flows through it).

    Args:
        x: the left operand.
        y: the right operand, of ``x``'s shape (or broadcastable onto it).
        force_cpu: kept for Paddle 1.x scripts (fluidist compares where the inputs live).
        cond: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``cond`` when given).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> mask = fluid.layers.not_equal(x, y)
    """
    return _compare("not_equal", x, y, force_cpu, cond, name)


def _logical(op_type: str, x: Variable, y: Variable | None, out: Variable | None, name: str | None) -> Variable:
    _check_var(x, op_type, "x")
    inputs = {"X": [x]}
    if op_type != "logical_not":
        inputs["Y"] = [_check_var(y, op_type, "y")]
    helper = LayerHelper(op_type, name=name)
    if out is None:
        out = helper.create_variable_for_type_inference(dtype="bool", stop_gradient=True)
    helper.append_op(op_type, inputs=inputs, outputs={"Out": [out]})
    return out


def logical_and(x: Variable, y: Variable, out: Variable | None = None, name: str | None = None) -> Variable:
    """Elementwise ``x AND y`` of two bool tensors.

    Args:
        x: a bool tensor.
        y: a bool tensor of ``x``'s shape.
        out: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``out`` when given).

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="bool")
        >>> b = fluid.data(name="b", shape=[None, 3], dtype="bool")
        >>> c = fluid.layers.logical_and(a, b)
    """
    return _logical("logical_and", x, y, out, name)


def logical_or(x: Variable, y: Variable, out: Variable | None = None, name: str | None = None) -> Variable:
    """Elementwise ``x OR y`` of two bool tensors.

    Args:
        x: a bool tensor.
        y: a bool tensor of ``x``'s shape.
        out: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``out`` when given).

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="bool")
        >>> b = fluid.data(name="b", shape=[None, 3], dtype="bool")
        >>> c = fluid.layers.logical_or(a, b)
    """
    return _logical("logical_or", x, y, out, name)


def logical_xor(x: Variable, y: Variable, out: Variable | None = None, name: str | None = None) -> Variable:
    """Elementwise ``x XOR y`` of two bool tensors.

    Args:
        x: a bool tensor.
        y: a bool tensor of ``x``'s shape.
        out: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``out`` when given).

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="bool")
        >>> b = fluid.data(name="b", shape=[None, 3], dtype="bool")
        >>> c = fluid.layers.logical_xor(a, b)
    """
    return _logical("logical_xor", x, y, out, name)


def logical_not(x: Variable, out: Variable | None = None, name: str | None = None) -> Variable:
    """Elementwise ``NOT x`` of a bool tensor.

    Args:
        x: a bool tensor.
        out: an existing bool Variable to write into, or None for a new one.
        name: the output's name (generated when None).

    Returns:
        A bool Variable (``out`` when given).

    Examples:
        >>> a = fluid.data(name="a", shape=[None, 3], dtype="bool")
        >>> not_a = fluid.layers.logical_not(a)
    """
    return _logical("logical_not", x, None, out, name)


def increment(x: Variable, value: float = 1.0, in_place: bool = True) -> Variable:
    """``x + value`` by one ``increment`` op, typically a loop counter.

    Args:
        x: a tensor with one element.
        value: the amount to add.
        in_place: write the result into ``x`` itself (True) or into a new variable.

    Returns:
        ``x`` when ``in_place``, else the new Variable.

    Examples:
        >>> i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        >>> i = fluid.layers.increment(i, value=1)
    """
    _check_var(x, "increment", "x")
    helper = LayerHelper("increment")
    out = x if in_place else helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out
