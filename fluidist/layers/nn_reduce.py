"""The reductions ``reduce_sum``, ``reduce_mean``, ``reduce_max``, ``reduce_min`` and ``reduce_prod``
over some or all axes; ``fluid.layers.nn`` re-exports them."""
from __future__ import annotations

from ..framework.variable import Variable
from .hints import Axes
from ._build import _unary
from .layer_helper import check_variable

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]


def _reduce(op_type: str, input: Variable, dim: Axes | None, keep_dim: bool, name: str | None) -> Variable:
    dims: list | None = None if dim is None else list(dim) if isinstance(dim, (list, tuple)) else [dim]
    attrs = {"dim": dims if dims else [0], "keep_dim": keep_dim, "reduce_all": not dims}
    check_variable(input, op_type, "input")    # (Paddle checks the dtypes of reduce_sum and reduce_mean)
    return _unary(op_type, input, name, attrs)


def reduce_sum(input: Variable, dim: Axes | None = None, keep_dim: bool = False, name: str | None = None) -> Variable:
    """Sum of ``input``'s elements along ``dim``.

    Args:
        input: the tensor to reduce.
        dim: an axis or a list of axes (negative counts from the end); None or ``[]`` reduces over all.
        keep_dim: keep the reduced axes with size 1.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s dtype; with no axes left it has shape ``[1]``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> row_sums = fluid.layers.reduce_sum(x, dim=1)
    """
    return _reduce("reduce_sum", input, dim, keep_dim, name)


def reduce_mean(input: Variable, dim: Axes | None = None, keep_dim: bool = False, name: str | None = None) -> Variable:
    """Mean of ``input``'s elements along ``dim``.

    Args:
        input: the tensor to reduce.
        dim: an axis or a list of axes; None or ``[]`` reduces over all.
        keep_dim: keep the reduced axes with size 1.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> loss = fluid.layers.reduce_mean(x)
    """
    return _reduce("reduce_mean", input, dim, keep_dim, name)


def reduce_max(input: Variable, dim: Axes | None = None, keep_dim: bool = False, name: str | None = None) -> Variable:
    """Largest element of ``input`` along ``dim`` (the gradient goes to every maximal element).

    Args:
        input: the tensor to reduce.
        dim: an axis or a list of axes; None or ``[]`` reduces over all.
        keep_dim: keep the reduced axes with size 1.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> biggest = fluid.layers.reduce_max(x, dim=-1, keep_dim=True)
    """
    return _reduce("reduce_max", input, dim, keep_dim, name)


def reduce_min(input: Variable, dim: Axes | None = None, keep_dim: bool = False, name: str | None = None) -> Variable:
    """Smallest element of ``input`` along ``dim``.

    Args:
        input: the tensor to reduce.
        dim: an axis or a list of axes; None or ``[]`` reduces over all.
        keep_dim: keep the reduced axes with size 1.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> smallest = fluid.layers.reduce_min(x, dim=0)
    """
    return _reduce("reduce_min", input, dim, keep_dim, name)


def reduce_prod(input: Variable, dim: Axes | None = None, keep_dim: bool = False, name: str | None = None) -> Variable:
    """Product of ``input``'s elements along ``dim``.

    Args:
        input: the tensor to reduce.
        dim: an axis or a list of axes; None or ``[]`` reduces over all.
        keep_dim: keep the reduced axes with size 1.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s dtype.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> p = fluid.layers.reduce_prod(x, dim=[0, 1])
    """
    return _reduce("reduce_prod", input, dim, keep_dim, name)
