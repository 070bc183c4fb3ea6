"""Math layers of Paddle 1.8's ``layers/nn.py`` beyond the basic ones in ``nn.py``: boolean
reductions, clip_by_norm, log_softmax / logsumexp, clamp, log1p, sign, sum, shape / rank / size,
bmm / addmm / addcmul / dot / cross / dist, allclose, elementwise_equal; the random layers
(``nn_random.py``) and the model helpers (``nn_model.py``) are re-exported."""
from __future__ import annotations

import sys
from typing import Sequence

import numpy as np

from ..data_feeder import check_type
from ..framework.program import Variable
from .hints import Axes, DType
from .layer_helper import LayerHelper
from ._build import check_var, one_op
from .input_dtypes import DTYPES_ANY
from .nn_model import (continuous_value_model, fsp_matrix, get_tensor_from_selected_rows, hash,  # noqa: F401
                       mean_iou, merge_selected_rows, similarity_focus)
from .nn_random import (gaussian_random, gaussian_random_batch_size_like, randint, randn, randperm,  # noqa: F401
                        random_crop, sampling_id, uniform_random, uniform_random_batch_size_like)

__all__ = ["reduce_all", "reduce_any", "clip_by_norm", "log_softmax", "logsumexp", "clamp", "log1p", "sign", "sum",
           "shape", "rank", "size", "bmm", "addmm", "addcmul", "dot", "cross", "dist", "allclose",
           "elementwise_equal", "uniform_random", "gaussian_random", "uniform_random_batch_size_like",
           "gaussian_random_batch_size_like", "randint", "randn", "randperm", "sampling_id", "random_crop",
           "mean_iou", "fsp_matrix", "continuous_value_model", "merge_selected_rows", "get_tensor_from_selected_rows",
           "hash", "similarity_focus"]


def _bool_reduce(op_type: str, input: Variable, dim: Axes | None, keep_dim: bool, name: str | None) -> Variable:
    check_var(input, op_type, "input")
    dims: list | None = None if dim is None else list(dim) if isinstance(dim, (list, tuple)) else [dim]
    attrs = {"dim": dims if dims else [0], "keep_dim": bool(keep_dim), "reduce_all": not dims}
    return one_op(op_type, {"X": input}, attrs, name=name)


def reduce_all(input: Variable, dim: Axes | None = None, keep_dim: bool = False, name: str | None = None) -> Variable:
    """Logical AND of a bool ``input`` along ``dim``.

    Args:
        input: a bool tensor.
        dim: an axis or a list of axes; None or ``[]`` reduces over all.
        keep_dim: keep the reduced axes with size 1.
        name: the output's name (generated when None).

    Returns:
        A bool Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> all_positive = fluid.layers.reduce_all(fluid.layers.greater_than(x, fluid.layers.zeros_like(x)))
    """
    return _bool_reduce("reduce_all", input, dim, keep_dim, name)


def reduce_any(input: Variable, dim: Axes | None = None, keep_dim: bool = False, name: str | None = None) -> Variable:
    """Logical OR of a bool ``input`` along ``dim``.

    Args:
        input: a bool tensor.
        dim: an axis or a list of axes; None or ``[]`` reduces over all.
        keep_dim: keep the reduced axes with size 1.
        name: the output's name (generated when None).

    Returns:
        A bool Variable.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3], dtype="float32")
        >>> any_bigger = fluid.layers.reduce_any(fluid.layers.greater_than(x, y), dim=1)
    """
    return _bool_reduce("reduce_any", input, dim, keep_dim, name)


def clip_by_norm(x: Variable, max_norm: float, name: str | None = None) -> Variable:
    """``x`` scaled down to L2 norm ``max_norm`` when its norm is above it.

    The result is ``x * max_norm / max(norm(x), max_norm)``, the norm taken over all elements.

    Args:
        x: a float tensor.
        max_norm: the largest norm kept.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[4], dtype="float32", value=1.0)
        >>> y = fluid.layers.clip_by_norm(x, max_norm=1.0)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[y])[0].tolist()
        [0.5, 0.5, 0.5, 0.5]
    """
    check_var(x, "clip_by_norm", "X")
    return one_op("clip_by_norm", {"X": x}, {"max_norm": float(max_norm)}, name=name)


def log_softmax(input: Variable, axis: int | None = None, dtype: DType | None = None,
                name: str | None = None) -> Variable:
    """``log(softmax(input))`` over ``axis``.

    Built as Paddle 1.8 builds it: a softmax op then a log op (after a cast to ``dtype`` when given).

    Args:
        input: a float tensor.
        axis: the axis of the softmax; -1 when None.
        dtype: cast ``input`` to this dtype first.
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> logits = fluid.data(name="logits", shape=[None, 10], dtype="float32")
        >>> logp = fluid.layers.log_softmax(logits)
    """
    from .tensor import cast
    # Paddle checks the input's dtype only when it is not cast first; its softmax and log ops are
    # appended as they are (no checks of theirs)
    check_var(input, "log_softmax", "input", None if dtype is None else DTYPES_ANY)
    if dtype is not None:
        input = cast(input, dtype)
    probs = one_op("softmax", {"X": input}, {"axis": -1 if axis is None else int(axis)}, layer="log_softmax")
    return one_op("log", {"X": probs}, name=name, layer="log_softmax")


def logsumexp(x: Variable, dim: Axes | None = None, keepdim: bool = False, out: Variable | None = None,
              name: str | None = None) -> Variable:
    """``log(sum(exp(x)))`` over ``dim``.

    Paddle 1.8 difference: none in the result; as there it is exp, reduce_sum, log with no max
    shift, so large inputs overflow as they do in Paddle.

    Args:
        x: a float tensor.
        dim: an axis or a list of axes; None reduces over all.
        keepdim: keep the reduced axes with size 1.
        out: accepted for Paddle's signature (not written to).
        name: the output's name (generated when None).

    Returns:
        A Variable.

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[2, 3], dtype="float32", value=0.0)
        >>> y = fluid.layers.logsumexp(x, dim=1)
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[y])
        >>> [round(float(v), 4) for v in out]
        [1.0986, 1.0986]
    """
    from .nn import exp, log, reduce_sum
    check_var(x, "logsumexp", "x")
    return log(reduce_sum(exp(x), dim=dim, keep_dim=keepdim), name=name)


def clamp(input: Variable, min: float | Variable | None = None, max: float | Variable | None = None,
          output: Variable | None = None, name: str | None = None) -> Variable:
    """``input`` clipped to ``[min, max]`` (a ``clip`` op).

    As in Paddle 1.8, a bound left out is ``sys.float_info.min`` / ``.max``: without ``min``,
    negative values become (almost) 0.

    Args:
        input: a float tensor.
        min: the lower bound (a number or a ``[1]`` Variable).
        max: the upper bound (a number or a ``[1]`` Variable).
        output: accepted for Paddle's signature (not written to).
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> x = fluid.layers.assign(np.array([-2.0, 0.5, 3.0], "float32"))
        >>> y = fluid.layers.clamp(x, min=-1.0, max=1.0)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[y])[0].tolist()
        [-1.0, 0.5, 1.0]
    """
    check_var(input, "clamp", "input")
    inputs = {"X": input}
    attrs = {"min": sys.float_info.min, "max": sys.float_info.max}
    for key, slot, val in (("min", "Min", min), ("max", "Max", max)):
        if isinstance(val, Variable):
            val.stop_gradient = True
            inputs[slot] = val
        elif val is not None:
            attrs[key] = float(val)
    return one_op("clip", inputs, attrs, name=name, layer="clamp")


def log1p(x: Variable, out: Variable | None = None, name: str | None = None) -> Variable:
    """``log(1 + x)``, elementwise.

    Args:
        x: a float tensor (> -1).
        out: accepted for Paddle's signature (not written to).
        name: the output's name (generated when None).

    Returns:
        A Variable of ``x``'s shape.

    Examples:
        >>> x = fluid.layers.assign(np.array([0.0, 1.0], "float32"))
        >>> out, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.log1p(x)])
        >>> [round(float(v), 4) for v in out]
        [0.0, 0.6931]
    """
    return one_op("log1p", {"X": check_var(x, "log1p", "x")}, name=name)


def sign(x: Variable | np.ndarray) -> Variable:
    """-1, 0 or 1 by the sign of each element.

    Args:
        x: a float tensor, or a NumPy array (turned into a constant of its dtype first).

    Returns:
        A Variable of ``x``'s shape and dtype.

    Examples:
        >>> s = fluid.layers.sign(np.array([-3.0, 0.0, 2.0], "float32"))
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[s])[0].tolist()
        [-1.0, 0.0, 1.0]
    """
    check_type(x, "x", (Variable, np.ndarray), "sign")     # Paddle 1.8 takes no list or number
    if isinstance(x, np.ndarray):
        from .tensor import assign
        x = assign(x)
    check_var(x, "sign", "x")
    return one_op("sign", {"X": x})


def sum(x: Variable | Sequence[Variable]) -> Variable:
    """The elementwise sum of several tensors of one shape (a ``sum`` op).

    Args:
        x: a Variable or a list of them.

    Returns:
        A Variable of the inputs' shape.

    Examples:
        >>> a = fluid.layers.fill_constant(shape=[2], dtype="float32", value=1.0)
        >>> b = fluid.layers.fill_constant(shape=[2], dtype="float32", value=2.0)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.sum([a, b])])[0].tolist()
        [3.0, 3.0]
    """
    xs = [x] if isinstance(x, Variable) else list(x)
    for v in xs:
        check_var(v, "sum", "x")
    return one_op("sum", {"X": xs})


def shape(input: Variable) -> Variable:
    """The shape of ``input`` when the program runs (batch size included).

    Args:
        input: any tensor.

    Returns:
        An int32 Variable ``[rank]`` (no gradient).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> s = fluid.layers.shape(x)
        >>> fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.zeros((5, 3), "float32")}, fetch_list=[s])[0].tolist()
        [5, 3]
    """
    return one_op("shape", {"Input": check_var(input, "shape", "input")}, dtype="int32", stop_gradient=True)


def rank(input: Variable) -> Variable:
    """The rank (number of dimensions) of ``input``, known when the program is built.

    Args:
        input: any tensor.

    Returns:
        An int32 constant Variable (an ``assign_value`` op).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3, 4], dtype="float32")
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.rank(x)])[0].tolist()
        3
    """
    check_var(input, "rank", "input")
    helper = LayerHelper("rank")
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("assign_value", outputs={"Out": [out]},
                     attrs={"shape": [], "dtype": "int32", "int32_values": [len(input.shape)]})
    return out


def size(input: Variable) -> Variable:
    """The number of elements of ``input`` when the program runs.

    Args:
        input: any tensor.

    Returns:
        An int64 ``[1]`` Variable (no gradient).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> n = fluid.layers.size(x)
        >>> fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.zeros((5, 3), "float32")}, fetch_list=[n])[0].tolist()
        [15]
    """
    return one_op("size", {"Input": check_var(input, "size", "input")}, dtype="int64", stop_gradient=True)


def bmm(x: Variable, y: Variable, name: str | None = None) -> Variable:
    """Batched matrix product: ``out[b] = x[b] @ y[b]``.

    Args:
        x: a 3-D tensor ``[B, M, K]``.
        y: a 3-D tensor ``[B, K, N]``.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[B, M, N]``.

    Raises:
        ValueError: ``x`` or ``y`` not 3-D.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2, 3], dtype="float32")
        >>> y = fluid.data(name="y", shape=[None, 3, 4], dtype="float32")
        >>> fluid.layers.bmm(x, y).shape
        (-1, 2, 4)
    """
    check_var(x, "bmm", "x")
    check_var(y, "bmm", "y")
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise ValueError("bmm: x and y must be 3-D, got shapes %s and %s" % (list(x.shape), list(y.shape)))
    return one_op("bmm", {"X": x, "Y": y}, name=name)


def addmm(input: Variable, x: Variable, y: Variable, alpha: float = 1.0, beta: float = 1.0,
          name: str | None = None) -> Variable:
    """``beta * input + alpha * x @ y``.

    Args:
        input: a tensor broadcastable to ``[M, N]``.
        x: a matrix ``[M, K]``.
        y: a matrix ``[K, N]``.
        alpha: the product's factor.
        beta: ``input``'s factor.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[M, N]``.

    Examples:
        >>> bias = fluid.layers.fill_constant(shape=[2, 2], dtype="float32", value=1.0)
        >>> x = fluid.layers.fill_constant(shape=[2, 3], dtype="float32", value=1.0)
        >>> y = fluid.layers.fill_constant(shape=[3, 2], dtype="float32", value=2.0)
        >>> out = fluid.layers.addmm(bias, x, y, alpha=0.5)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[out])[0].tolist()
        [[4.0, 4.0], [4.0, 4.0]]
    """
    for v, a in ((input, "Input"), (x, "X"), (y, "Y")):
        check_var(v, "addmm", a)
    return one_op("addmm", {"Input": input, "X": x, "Y": y}, {"Alpha": float(alpha), "Beta": float(beta)}, name=name)


def addcmul(input: Variable, tensor1: Variable, tensor2: Variable, value: float = 1.0,
            out: Variable | None = None, name: str | None = None) -> Variable:
    """``input + value * tensor1 * tensor2``, elementwise (elementwise_mul, scale, elementwise_add).

    Args:
        input: a tensor.
        tensor1: a tensor of ``input``'s shape.
        tensor2: a tensor of ``input``'s shape.
        value: the product's factor.
        out: accepted for Paddle's signature (not written to).
        name: the output's name (generated when None).

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> a = fluid.layers.fill_constant(shape=[2], dtype="float32", value=1.0)
        >>> b = fluid.layers.fill_constant(shape=[2], dtype="float32", value=3.0)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.addcmul(a, b, b, value=0.5)])[0].tolist()
        [5.5, 5.5]
    """
    from .nn import elementwise_add, elementwise_mul, scale
    for v, a in ((input, "input"), (tensor1, "tensor1"), (tensor2, "tensor2")):
        check_var(v, "addcmul", a)
    # Paddle 1.8: a float value for a float input, an int one for an int input
    want = float if input.dtype in ("float32", "float64") else int
    if not isinstance(value, want):
        raise TypeError("addcmul: argument 'value' takes %s for input %r of dtype %s, got %s"
                        % (want, input.name, input.dtype, type(value).__name__))
    prod = elementwise_mul(tensor1, tensor2)
    return elementwise_add(input, scale(prod, scale=float(value)), name=name)


def dot(x: Variable, y: Variable, name: str | None = None) -> Variable:
    """Row-wise inner products: ``sum(x * y, -1)``, keeping the last dimension.

    Args:
        x: a 1-D or 2-D tensor.
        y: a tensor of ``x``'s shape.
        name: the output's name (generated when None).

    Returns:
        A Variable ``[..., 1]``.

    Examples:
        >>> x = fluid.layers.assign(np.array([[1.0, 2.0], [3.0, 4.0]], "float32"))
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.dot(x, x)])[0].tolist()
        [[5.0], [25.0]]
    """
    check_var(x, "dot", "x")
    check_var(y, "dot", "y")
    return one_op("dot", {"X": x, "Y": y}, name=name)


def cross(input: Variable, other: Variable, dim: int | None = None) -> Variable:
    """The cross product of 3-vectors along ``dim``.

    Args:
        input: a tensor with a dimension of size 3.
        other: a tensor of ``input``'s shape.
        dim: the axis of the vectors (of size 3); the first such axis when None.

    Returns:
        A Variable of ``input``'s shape.

    Examples:
        >>> x = fluid.layers.assign(np.array([[1.0, 0.0, 0.0]], "float32"))
        >>> y = fluid.layers.assign(np.array([[0.0, 1.0, 0.0]], "float32"))
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.cross(x, y, dim=1)])[0].tolist()
        [[0.0, 0.0, 1.0]]
    """
    check_var(input, "cross", "input")
    check_var(other, "cross", "other")
    return one_op("cross", {"X": input, "Y": other}, {"dim": 9 if dim is None else int(dim)})


def dist(x: Variable, y: Variable, p: float = 2) -> Variable:
    """The p-norm of ``x - y`` (broadcast), as a ``[1]`` tensor.

    Args:
        x: a float tensor.
        y: a float tensor broadcastable with ``x``.
        p: the norm's order (``0``: the number of non-zeros; ``inf`` / ``-inf``: the largest /
            smallest absolute difference).

    Returns:
        A Variable ``[1]``.

    Examples:
        >>> x = fluid.layers.assign(np.array([3.0, 4.0], "float32"))
        >>> y = fluid.layers.zeros(shape=[2], dtype="float32")
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.dist(x, y)])[0].tolist()
        [5.0]
    """
    check_var(x, "dist", "x")
    check_var(y, "dist", "y")
    return one_op("dist", {"X": x, "Y": y}, {"p": float(p)})


def allclose(input: Variable, other: Variable, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False,
             name: str | None = None) -> Variable:
    """Whether ``|input - other| <= atol + rtol * |other|`` holds everywhere.

    Args:
        input: a float tensor.
        other: a float tensor of ``input``'s shape.
        rtol: the relative tolerance.
        atol: the absolute tolerance.
        equal_nan: count two NaNs as equal.
        name: the output's name (generated when None).

    Returns:
        A bool ``[1]`` Variable (no gradient).

    Examples:
        >>> x = fluid.layers.assign(np.array([1.0, 2.0], "float32"))
        >>> y = fluid.layers.assign(np.array([1.0, 2.000001], "float32"))
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.allclose(x, y)])[0].tolist()
        [True]
    """
    check_var(input, "allclose", "input")
    check_var(other, "allclose", "other")
    return one_op("allclose", {"Input": input, "Other": other},
                  {"rtol": float(rtol), "atol": float(atol), "equal_nan": bool(equal_nan)}, dtype="bool",
                  name=name, stop_gradient=True)


def elementwise_equal(x: Variable, y: Variable, name: str | None = None) -> Variable:
    """``x == y``, elementwise (an ``equal`` op).

    Args:
        x: a tensor.
        y: a tensor of ``x``'s shape and dtype.
        name: the output's name (generated when None).

    Returns:
        A bool Variable of ``x``'s shape (no gradient).

    Examples:
        >>> x = fluid.layers.assign(np.array([1, 2, 3], "int64"))
        >>> y = fluid.layers.assign(np.array([1, 0, 3], "int64"))
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[fluid.layers.elementwise_equal(x, y)])[0].tolist()
        [True, False, True]
    """
    check_var(x, "elementwise_equal", "x")
    check_var(y, "elementwise_equal", "y")
    return one_op("equal", {"X": x, "Y": y}, {"axis": -1, "force_cpu": False}, dtype="bool", name=name,
                  stop_gradient=True)
