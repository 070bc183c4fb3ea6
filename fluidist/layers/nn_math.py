"""Math layers of Paddle 1.8's ``layers/nn.py`` beyond the basic ones in ``nn.py``: boolean
reductions, clip_by_norm, log_softmax / logsumexp, clamp, log1p, sign, sum, shape / rank / size,
bmm / addmm / addcmul / dot / cross / dist, allclose, elementwise_equal, the random layers, and the
model helpers mean_iou, fsp_matrix, continuous_value_model, merge_selected_rows,
get_tensor_from_selected_rows."""
from __future__ import annotations

import sys

import numpy as np

from ..framework.dtypes import convert_dtype
from ..framework.program import Variable
from ..hints import Axes
from .layer_helper import LayerHelper
from ._build import check_var, int_list, one_op

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


def clip_by_norm(x, max_norm, name=None):
    """``x * max_norm / max(norm(x), max_norm)``: ``x`` scaled down to L2 norm ``max_norm`` if above it."""
    check_var(x, "clip_by_norm", "x")
    return one_op("clip_by_norm", {"X": x}, {"max_norm": float(max_norm)}, name=name)


def log_softmax(input, axis=None, dtype=None, name=None):
    """``log(softmax(input))`` over ``axis`` (default -1), as Paddle 1.8 builds it (a softmax op then
    a log op), after a cast to ``dtype`` when given."""
    from .nn import log, softmax
    from .tensor import cast
    check_var(input, "log_softmax", "input")
    if dtype is not None:
        input = cast(input, dtype)
    return log(softmax(input, axis=-1 if axis is None else int(axis)), name=name)


def logsumexp(x, dim=None, keepdim=False, out=None, name=None):
    """``log(sum(exp(x)))`` over ``dim``, as Paddle 1.8 builds it (exp, reduce_sum, log: no max shift,
    so large inputs overflow as they do there)."""
    from .nn import exp, log, reduce_sum
    check_var(x, "logsumexp", "x")
    return log(reduce_sum(exp(x), dim=dim, keep_dim=keepdim), name=name)


def clamp(input, min=None, max=None, output=None, name=None):
    """``input`` clipped to ``[min, max]`` (a ``clip`` op). As in Paddle 1.8, a bound left out is
    ``sys.float_info.min`` / ``.max``: without ``min`` negative values become 0."""
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


def log1p(x, out=None, name=None):
    """``log(1 + x)``."""
    return one_op("log1p", {"X": check_var(x, "log1p", "x")}, name=name)


def sign(x):
    """-1, 0 or 1 by the sign of each element (a list or numpy array is turned into a constant first)."""
    if not isinstance(x, Variable):
        from .tensor import assign
        x = assign(np.asarray(x, dtype="float32"))
    return one_op("sign", {"X": x})


def sum(x):
    """The elementwise sum of a Variable or a list of Variables (a ``sum`` op)."""
    xs = [x] if isinstance(x, Variable) else list(x)
    for v in xs:
        check_var(v, "sum", "x")
    return one_op("sum", {"X": xs})


def shape(input):
    """The shape of ``input`` at run time, as an int32 tensor."""
    return one_op("shape", {"Input": check_var(input, "shape", "input")}, dtype="int32", stop_gradient=True)


def rank(input):
    """The rank of ``input``, an int32 constant (``assign_value``)."""
    check_var(input, "rank", "input")
    helper = LayerHelper("rank")
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("assign_value", outputs={"Out": [out]},
                     attrs={"shape": [], "dtype": "int32", "int32_values": [len(input.shape)]})
    return out


def size(input):
    """The number of elements of ``input`` at run time, an int64 tensor of shape [1]."""
    return one_op("size", {"Input": check_var(input, "size", "input")}, dtype="int64", stop_gradient=True)


def bmm(x, y, name=None):
    """Batched matrix product of [B, M, K] and [B, K, N]."""
    check_var(x, "bmm", "x")
    check_var(y, "bmm", "y")
    if len(x.shape) != 3 or len(y.shape) != 3:
        raise ValueError("bmm: x and y must be 3-D, got shapes %s and %s" % (list(x.shape), list(y.shape)))
    return one_op("bmm", {"X": x, "Y": y}, name=name)


def addmm(input, x, y, alpha=1.0, beta=1.0, name=None):
    """``beta * input + alpha * x @ y``."""
    for v, a in ((input, "input"), (x, "x"), (y, "y")):
        check_var(v, "addmm", a)
    return one_op("addmm", {"Input": input, "X": x, "Y": y}, {"Alpha": float(alpha), "Beta": float(beta)}, name=name)


def addcmul(input, tensor1, tensor2, value=1.0, out=None, name=None):
    """``input + value * tensor1 * tensor2`` (elementwise_mul, scale, elementwise_add)."""
    from .nn import elementwise_add, elementwise_mul, scale
    prod = elementwise_mul(tensor1, tensor2)
    return elementwise_add(input, scale(prod, scale=float(value)), name=name)


def dot(x, y, name=None):
    """Row-wise inner products: ``sum(x * y, -1)`` keeping the last dimension."""
    check_var(x, "dot", "x")
    check_var(y, "dot", "y")
    return one_op("dot", {"X": x, "Y": y}, name=name)


def cross(input, other, dim=None):
    """The cross product along ``dim`` (of size 3; by default the first such dimension)."""
    check_var(input, "cross", "input")
    check_var(other, "cross", "other")
    return one_op("cross", {"X": input, "Y": other}, {"dim": 9 if dim is None else int(dim)})


def dist(x, y, p=2):
    """The p-norm of ``x - y`` (broadcast), shape [1]."""
    check_var(x, "dist", "x")
    check_var(y, "dist", "y")
    return one_op("dist", {"X": x, "Y": y}, {"p": float(p)})


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    """Whether ``|input - other| <= atol + rtol * |other|`` everywhere: a bool tensor of shape [1]."""
    check_var(input, "allclose", "input")
    check_var(other, "allclose", "other")
    return one_op("allclose", {"Input": input, "Other": other},
                  {"rtol": float(rtol), "atol": float(atol), "equal_nan": bool(equal_nan)}, dtype="bool",
                  name=name, stop_gradient=True)


def elementwise_equal(x, y, name=None):
    """``x == y`` elementwise (an ``equal`` op), bool."""
    check_var(x, "elementwise_equal", "x")
    check_var(y, "elementwise_equal", "y")
    return one_op("equal", {"X": x, "Y": y}, {"axis": -1, "force_cpu": False}, dtype="bool", name=name,
                  stop_gradient=True)


# ------------------------------------------------------------------ random
def _random(op_type, shape, dtype, attrs, inputs=None, layer=None):
    helper = LayerHelper(layer or op_type)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(op_type, inputs=inputs or {}, outputs={"Out": [out]}, attrs=dict(attrs, dtype=convert_dtype(dtype)))
    out.stop_gradient = True
    return out


def _shape(shape, layer):
    if isinstance(shape, Variable):
        raise TypeError("%s: a Variable shape is not supported; give a list of ints" % layer)
    return int_list(list(shape) if not isinstance(shape, int) else [shape], layer, "shape")


def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0):
    """Uniform values in ``[min, max)``; ``seed`` 0 draws fresh values each run."""
    return _random("uniform_random", None, dtype, {"shape": _shape(shape, "uniform_random"), "min": float(min),
                                                   "max": float(max), "seed": int(seed)})


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32"):
    """Normal values with ``mean`` and ``std``."""
    return _random("gaussian_random", None, dtype, {"shape": _shape(shape, "gaussian_random"), "mean": float(mean),
                                                    "std": float(std), "seed": int(seed)})


def uniform_random_batch_size_like(input, shape, dtype="float32", input_dim_idx=0, output_dim_idx=0, min=-1.0,
                                   max=1.0, seed=0):
    """Like ``uniform_random``, with dimension ``output_dim_idx`` taken at run time from dimension
    ``input_dim_idx`` of ``input``."""
    check_var(input, "uniform_random_batch_size_like", "input")
    return _random("uniform_random_batch_size_like", None, dtype,
                   {"shape": _shape(shape, "uniform_random_batch_size_like"), "input_dim_idx": int(input_dim_idx),
                    "output_dim_idx": int(output_dim_idx), "min": float(min), "max": float(max), "seed": int(seed)},
                   inputs={"Input": [input]})


def gaussian_random_batch_size_like(input, shape, input_dim_idx=0, output_dim_idx=0, mean=0.0, std=1.0, seed=0,
                                    dtype="float32"):
    """Like ``gaussian_random``, with the batch size taken at run time from ``input``."""
    check_var(input, "gaussian_random_batch_size_like", "input")
    return _random("gaussian_random_batch_size_like", None, dtype,
                   {"shape": _shape(shape, "gaussian_random_batch_size_like"), "input_dim_idx": int(input_dim_idx),
                    "output_dim_idx": int(output_dim_idx), "mean": float(mean), "std": float(std), "seed": int(seed)},
                   inputs={"Input": [input]})


def randint(low, high=None, shape=None, out=None, dtype=None, device=None, stop_gradient=False, seed=0, name=None):
    """Integers drawn from ``[low, high)`` (``randint(n)``: from ``[0, n)``), int64 unless ``dtype``."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("randint: high %r must be greater than low %r" % (high, low))
    return _random("randint", None, dtype or "int64", {"shape": _shape(shape or [1], "randint"), "low": int(low),
                                                       "high": int(high), "seed": int(seed)})


def randn(shape, out=None, dtype=None, device=None, stop_gradient=True, name=None):
    """Standard normal values (a ``gaussian_random`` op)."""
    return _random("gaussian_random", None, dtype or "float32",
                   {"shape": _shape(shape, "randn"), "mean": 0.0, "std": 1.0, "seed": 0}, layer="randn")


def randperm(n, out=None, dtype="int64", device=None, stop_gradient=True, seed=0):
    """A random permutation of ``0 .. n-1``."""
    if int(n) < 1:
        raise ValueError("randperm: n must be >= 1, got %r" % (n,))
    return _random("randperm", None, dtype, {"n": int(n), "seed": int(seed)})


def sampling_id(x, min=0.0, max=1.0, seed=0, dtype="float32"):
    """For each row of probabilities ``x``, a column index drawn with those probabilities (int64)."""
    check_var(x, "sampling_id", "x")
    helper = LayerHelper("sampling_id")
    out = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("sampling_id", inputs={"X": [x]}, outputs={"Out": [out]},
                     attrs={"min": float(min), "max": float(max), "seed": int(seed)})
    return out


def random_crop(x, shape, seed=None):
    """Each instance of ``x`` cropped to ``shape`` (its trailing dimensions) at a random place; the
    seed lives in a persistable int64 variable that each run advances."""
    check_var(x, "random_crop", "x")
    shape = int_list(list(shape), "random_crop", "shape")
    helper = LayerHelper("random_crop")
    out = helper.create_variable_for_type_inference(x.dtype)
    attrs = {"shape": shape}
    if seed is None:
        seed = int(np.random.randint(1, 65536))
    if isinstance(seed, int):
        from ..initializer import ConstantInitializer
        attrs["startup_seed"] = seed
        seed_var = helper.create_global_variable(name=helper.name + ".seed", dtype="int64", shape=[1],
                                                 persistable=True)
        helper.set_variable_initializer(seed_var, ConstantInitializer(float(seed)))
        seed = seed_var
    check_var(seed, "random_crop", "seed")
    helper.append_op("random_crop", inputs={"X": [x], "Seed": [seed]}, outputs={"Out": [out], "SeedOut": [seed]},
                     attrs=attrs)
    return out


# ------------------------------------------------------------------ model helpers
def mean_iou(input, label, num_classes):
    """Mean IoU of predicted class ids against labels: (mean IoU [1], wrong counts, correct counts)."""
    check_var(input, "mean_iou", "input")
    check_var(label, "mean_iou", "label")
    helper = LayerHelper("mean_iou")
    outs = [helper.create_variable_for_type_inference(dt, stop_gradient=True)
            for dt in ("float32", "int32", "int32")]
    helper.append_op("mean_iou", inputs={"Predictions": [input], "Labels": [label]},
                     outputs={"OutMeanIou": [outs[0]], "OutWrong": [outs[1]], "OutCorrect": [outs[2]]},
                     attrs={"num_classes": int(num_classes)})
    return tuple(outs)


def fsp_matrix(x, y):
    """The FSP matrix of two NCHW feature maps: ``x y^T / (H * W)`` per sample, [N, C_x, C_y]."""
    check_var(x, "fsp_matrix", "x")
    check_var(y, "fsp_matrix", "y")
    return one_op("fsp", {"X": x, "Y": y}, layer="fsp_matrix")


def continuous_value_model(input, cvm, use_cvm=True):
    """CTR show/click features: ``input``'s first two columns turned into log(show + 1) and
    log(click + 1) - log(show + 1) (``use_cvm``), or dropped."""
    check_var(input, "continuous_value_model", "input")
    check_var(cvm, "continuous_value_model", "cvm")
    return one_op("cvm", {"X": input, "CVM": cvm}, {"use_cvm": bool(use_cvm)}, out_slot="Y", layer="cvm")


def merge_selected_rows(x, name=None):
    """A row-sparse ``x`` with its repeated rows summed."""
    check_var(x, "merge_selected_rows", "x")
    helper = LayerHelper("merge_selected_rows", name=name)
    out = helper.create_variable_for_type_inference(x.dtype, type="SELECTED_ROWS")
    helper.append_op("merge_selected_rows", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def get_tensor_from_selected_rows(x, name=None):
    """The value rows of a row-sparse ``x`` as a dense tensor."""
    check_var(x, "get_tensor_from_selected_rows", "x")
    return one_op("get_tensor_from_selected_rows", {"X": x}, name=name)


def hash(input, hash_size, num_hash=1, name=None):
    """``num_hash`` hashes of each row of int ids: XXH64 of the row (seeds 0, 1, ...) modulo
    ``hash_size``; the result is [N, num_hash, 1], of the ids' dtype."""
    check_var(input, "hash", "input")
    if input.dtype not in ("int32", "int64"):
        raise TypeError("hash: input %r must hold int32 or int64 ids, got %s" % (input.name, input.dtype))
    return one_op("hash", {"X": input}, {"num_hash": int(num_hash), "mod_by": int(hash_size)}, name=name,
                  stop_gradient=True)


def similarity_focus(input, axis, indexes, name=None):
    """A 0/1 focus mask of a 4-D similarity tensor: for each of ``indexes`` along ``axis`` (1, 2 or 3),
    the largest entries of that 2-D slice taken greedily one per row and column; OR-ed over the
    indexes and repeated along ``axis``."""
    check_var(input, "similarity_focus", "input")
    if axis not in (1, 2, 3):
        raise ValueError("similarity_focus: axis must be 1, 2 or 3, got %r" % (axis,))
    if not isinstance(indexes, list) or not indexes:
        raise ValueError("similarity_focus: indexes must be a non-empty list, got %r" % (indexes,))
    return one_op("similarity_focus", {"X": input}, {"axis": axis, "indexes": [int(i) for i in indexes]}, name=name,
                  stop_gradient=True)
