"""Numeric ops: reduce_all / reduce_any, cumsum, isinf / isnan / isfinite, range, linspace, allclose,
dist, cross, bmm, addmm, dot, size, fill_any_like, mean_iou, fsp, cvm, the SelectedRows helpers
merge_selected_rows / get_tensor_from_selected_rows; and the random ops of the batch-size-like,
randint, randperm, sampling_id and random_crop kinds."""
import numpy as np

from ..core.enforce import InvalidArgumentError
from ..core.tensor import SelectedRows
from ..framework.registry import register_grad, register_op, same_shape

_HOST_GREEDY = 'greedy selection in Python, on the host'
_HOST_RNG = "draws with NumPy's generator, on the host"
from .math import _RED_ATTRS, _reduce_axes, _reduce_infer, _reduce_out
from .shape_tensors import SHAPE_INPUTS, SHAPE_SLOTS, creation_infer, with_tensor_shape
from .tensor import _bsl_infer, _rng


# ------------------------------------------------------------------ boolean reductions, checks
def _bool_reduce(type, fn):
    def infer(ctx):
        _reduce_infer(ctx)
        ctx.set_output("Out", None, "bool")
    register_op(type, inputs=["X"], outputs=["Out"], attrs=dict(_RED_ATTRS, in_dtype=-1, out_dtype=-1),
                infer=infer)(lambda ctx, ins, a: {"Out": _reduce_out(
                    fn(ins["X"].astype(bool), axis=_reduce_axes(a, ins["X"].ndim), keepdims=a["keep_dim"]), a)})


_bool_reduce("reduce_all", lambda x, axis, keepdims: x.all(axis=axis, keepdims=keepdims))
_bool_reduce("reduce_any", lambda x, axis, keepdims: x.any(axis=axis, keepdims=keepdims))


def _check(type, fn):
    register_op(type, inputs=["X"], outputs=["Out"], infer=lambda c: c.set_output("Out", [1], "bool"))(
        lambda ctx, ins, a: {"Out": ctx.xp.asarray(fn(ctx.xp, ins["X"])).reshape(1)})


_check("isinf", lambda xp, x: xp.isinf(x).any())
_check("isnan", lambda xp, x: xp.isnan(x).any())
_check("isfinite", lambda xp, x: xp.isfinite(x).all())


# ------------------------------------------------------------------ cumsum
def _cumsum(xp, x, axis, exclusive, reverse):
    if reverse:
        x = xp.flip(x, axis=axis)
    out = xp.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = out - x
    if reverse:
        out = xp.flip(out, axis=axis)
    return xp.ascontiguousarray(out)


@register_op("cumsum", inputs=["X"], outputs=["Out"], attrs={"axis": -1, "exclusive": False, "reverse": False},
             infer=same_shape())
def cumsum(ctx, ins, attrs):
    """Running sums along ``axis`` (``exclusive``: without the element itself; ``reverse``: from the end)."""
    x = ins["X"]
    return {"Out": _cumsum(ctx.xp, x, attrs["axis"] % x.ndim, attrs["exclusive"], attrs["reverse"])}


@register_grad("cumsum", inputs=["Out@GRAD"])
def cumsum_grad(ctx, ins, attrs):
    d = ins["Out@GRAD"]
    return {"X@GRAD": _cumsum(ctx.xp, d, attrs["axis"] % d.ndim, attrs["exclusive"], not attrs["reverse"])}


# ------------------------------------------------------------------ range / linspace / size
def _scalar(ctx, slot, value):
    if value.size != 1:
        raise ValueError("op %r: %s %r must hold one value, got shape %s"
                         % (ctx.op.type, slot, ctx.op.inputs[slot][0], list(value.shape)))
    return value.reshape(-1)[0].item()


@register_op("range", inputs=["Start", "End", "Step"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", [-1], c.input_dtype("Start")))
def range_(ctx, ins, attrs):
    """``[Start, End)`` in steps of Step (one-element tensors), of Start's dtype."""
    start, end, step = (_scalar(ctx, s, ins[s]) for s in ("Start", "End", "Step"))
    if step == 0:
        raise ValueError("op 'range': Step %r is 0" % ctx.op.inputs["Step"][0])
    n = int(np.ceil((end - start) / step))
    dt = ins["Start"].dtype
    return {"Out": (ctx.xp.arange(max(n, 0), dtype=np.float64) * step + start).astype(dt)}


@register_op("linspace", inputs=["Start", "Stop", "Num"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", [-1], c.input_dtype("Start")))
def linspace(ctx, ins, attrs):
    """Num evenly spaced values from Start to Stop, both included."""
    start, stop, num = (_scalar(ctx, s, ins[s]) for s in ("Start", "Stop", "Num"))
    if int(num) < 1:
        raise ValueError("op 'linspace': Num must be >= 1, got %s" % num)
    return {"Out": ctx.xp.linspace(start, stop, int(num)).astype(ins["Start"].dtype)}


@register_op("size", inputs=["Input"], outputs=["Out"], infer=lambda c: c.set_output("Out", [1], "int64"))
def size(ctx, ins, attrs):
    """The number of elements of Input, as a one-element int64 tensor."""
    return {"Out": ctx.xp.asarray([ins["Input"].size], dtype=np.int64)}


def _like_dtype(dtype, x_dtype):
    """fill_any_like's ``dtype``: empty or -1 (Paddle's default, in its programs) is X's dtype."""
    return x_dtype if dtype in ("", -1, None) else dtype


def _fill_any_like_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), _like_dtype(ctx.attr("dtype"), ctx.input_dtype("X")))


@register_op("fill_any_like", inputs=["X"], outputs=["Out"], attrs={"value": 0.0, "dtype": ""},
             infer=_fill_any_like_infer)
def fill_any_like(ctx, ins, attrs):
    """A tensor shaped like X filled with ``value`` (``dtype`` empty or -1: X's dtype). As in Paddle 1.8 the
    value is a float32 attr, and one outside the dtype's range (or NaN, or beyond float32's range)
    is refused."""
    x = ins["X"]
    dtype = np.dtype(_like_dtype(attrs["dtype"], x.dtype))
    with np.errstate(over="ignore"):
        value = np.float32(attrs["value"])
    info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype) if dtype.kind == "f" else None
    low, high = (info.min, info.max) if info is not None else (0, 1)
    common = np.float64 if dtype == np.float64 else np.float32   # compared as C++ compares them
    if not common(low) <= value <= common(high):   # (NaN fails too)
        raise InvalidArgumentError("op 'fill_any_like': value %r is out of range for %s (Out %r)"
                                   % (attrs["value"], dtype.name, ctx.op.outputs["Out"][0]))
    return {"Out": ctx.xp.full(x.shape, value, dtype=dtype)}


# ------------------------------------------------------------------ comparisons and distances
@register_op("allclose", inputs=["Input", "Other"], outputs=["Out"],
             attrs={"rtol": 1e-5, "atol": 1e-8, "equal_nan": False},
             infer=lambda c: c.set_output("Out", [1], "bool"))
def allclose(ctx, ins, attrs):
    """Whether ``|Input - Other| <= atol + rtol * |Other|`` everywhere."""
    return {"Out": ctx.xp.asarray(ctx.xp.allclose(ins["Input"], ins["Other"], rtol=attrs["rtol"], atol=attrs["atol"],
                                                  equal_nan=attrs["equal_nan"])).reshape(1)}


def _dist(xp, z, p):
    a = xp.abs(z)
    if p == 0:
        return (a != 0).sum().astype(z.dtype)
    if p == float("inf"):
        return a.max()
    if p == float("-inf"):
        return a.min()
    return (a ** p).sum() ** (1.0 / p)


@register_op("dist", inputs=["X", "Y"], outputs=["Out"], attrs={"p": 2.0},
             infer=lambda c: c.set_output("Out", [1], c.input_dtype("X")))
def dist(ctx, ins, attrs):
    """The p-norm of ``X - Y`` (broadcast): p=0 counts non-zeros, +-inf take the max / min magnitude."""
    z = ins["X"] - ins["Y"]
    return {"Out": ctx.xp.asarray(_dist(ctx.xp, z, attrs["p"]), dtype=z.dtype).reshape(1)}


def _unbroadcast(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return (g.sum(axis=axes, keepdims=True) if axes else g).reshape(shape)


@register_grad("dist", inputs=["X", "Y", "Out", "Out@GRAD"])
def dist_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, out, d = ins["X"], ins["Y"], ins["Out"], ins["Out@GRAD"]
    z = x - y
    p = attrs["p"]
    n = out.reshape(())
    if p == 0:
        g = xp.zeros_like(z)
    elif p in (float("inf"), float("-inf")):
        g = (xp.abs(z) == n) * xp.sign(z)
    else:
        safe = xp.where(n == 0, 1, n)
        g = xp.where(n == 0, 0, xp.sign(z) * xp.abs(z) ** (p - 1) / safe ** (p - 1))
    g = (g * d.reshape(())).astype(z.dtype)
    return {"X@GRAD": _unbroadcast(g, x.shape), "Y@GRAD": _unbroadcast(-g, y.shape)}


def _cross_dim(shape, dim):
    if dim == 9 or dim is None:    # Paddle's "no dim given": the first axis of size 3
        for i, s in enumerate(shape):
            if s == 3:
                return i
        raise ValueError("cross: no dimension of size 3 in shape %s" % list(shape))
    return dim % len(shape)


@register_op("cross", inputs=["X", "Y"], outputs=["Out"], attrs={"dim": 9}, infer=lambda c: c.share("Out", "X"))
def cross(ctx, ins, attrs):
    """The cross product of X and Y along ``dim`` (size 3; by default the first such axis)."""
    x = ins["X"]
    dim = _cross_dim(x.shape, attrs["dim"])
    return {"Out": ctx.xp.cross(x, ins["Y"], axis=dim)}


@register_grad("cross", inputs=["X", "Y", "Out@GRAD"])
def cross_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    dim = _cross_dim(x.shape, attrs["dim"])
    return {"X@GRAD": xp.cross(y, d, axis=dim), "Y@GRAD": xp.cross(d, x, axis=dim)}


def _bmm_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    ctx.set_output("Out", [xs[0], xs[1], ys[2]], ctx.input_dtype("X"))


@register_op("bmm", inputs=["X", "Y"], outputs=["Out"], infer=_bmm_infer)
def bmm(ctx, ins, attrs):
    """Batched matrix product of [B, M, K] and [B, K, N]."""
    x, y = ins["X"], ins["Y"]
    if x.ndim != 3 or y.ndim != 3 or x.shape[0] != y.shape[0] or x.shape[2] != y.shape[1]:
        raise ValueError("op 'bmm': X %r %s and Y %r %s must be [B, M, K] and [B, K, N]"
                         % (ctx.op.inputs["X"][0], list(x.shape), ctx.op.inputs["Y"][0], list(y.shape)))
    return {"Out": ctx.xp.matmul(x, y)}


@register_grad("bmm", inputs=["X", "Y", "Out@GRAD"])
def bmm_grad(ctx, ins, attrs):
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    return {"X@GRAD": ctx.xp.matmul(d, y.swapaxes(1, 2)), "Y@GRAD": ctx.xp.matmul(x.swapaxes(1, 2), d)}


def _addmm_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    ctx.set_output("Out", [xs[0], ys[1]], ctx.input_dtype("X"))


@register_op("addmm", inputs=["Input", "X", "Y"], outputs=["Out"], attrs={"Alpha": 1.0, "Beta": 1.0},
             infer=_addmm_infer)
def addmm(ctx, ins, attrs):
    """``Beta * Input + Alpha * X @ Y`` (Input broadcast to the product's shape)."""
    x, y = ins["X"], ins["Y"]
    out = x.dtype.type(attrs["Alpha"]) * (x @ y) + x.dtype.type(attrs["Beta"]) * ins["Input"]
    return {"Out": out.astype(x.dtype, copy=False)}


@register_grad("addmm", inputs=["Input", "X", "Y", "Out@GRAD"])
def addmm_grad(ctx, ins, attrs):
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    a, b = d.dtype.type(attrs["Alpha"]), d.dtype.type(attrs["Beta"])
    return {"Input@GRAD": _unbroadcast(d * b, ins["Input"].shape), "X@GRAD": a * (d @ y.T),
            "Y@GRAD": a * (x.T @ d)}


@register_op("dot", inputs=["X", "Y"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", tuple(c.input_shape("X")[:-1]) + (1,), c.input_dtype("X"))
             if c.input_shape("X") else None)
def dot(ctx, ins, attrs):
    """Row-wise inner products of X and Y (same shape): ``sum(X * Y, -1)``, keeping the last axis."""
    x, y = ins["X"], ins["Y"]
    if x.shape != y.shape:
        raise ValueError("op 'dot': X %r %s and Y %r %s must have one shape"
                         % (ctx.op.inputs["X"][0], list(x.shape), ctx.op.inputs["Y"][0], list(y.shape)))
    return {"Out": (x * y).sum(axis=-1, keepdims=True)}


@register_grad("dot", inputs=["X", "Y", "Out@GRAD"])
def dot_grad(ctx, ins, attrs):
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    return {"X@GRAD": d * y, "Y@GRAD": d * x}


# ------------------------------------------------------------------ models' helpers
def _mean_iou_infer(ctx):
    n = ctx.attr("num_classes")
    ctx.set_output("OutMeanIou", [1], "float32")
    ctx.set_output("OutWrong", [n], "int32")
    ctx.set_output("OutCorrect", [n], "int32")


@register_op("mean_iou", inputs=["Predictions", "Labels", "InWrongs*?", "InCorrects*?", "InMeanIou*?"],
             outputs=["OutMeanIou", "OutWrong", "OutCorrect"], attrs={"num_classes": 2}, infer=_mean_iou_infer)
def mean_iou(ctx, ins, attrs):
    """Mean intersection-over-union of class ids: per class the wrong (in either map but not both)
    and correct counts, added to the In* accumulators; the mean over classes that occur."""
    xp = ctx.xp
    n = attrs["num_classes"]
    pred = ins["Predictions"].reshape(-1).astype(np.int64)
    lab = ins["Labels"].reshape(-1).astype(np.int64)
    if pred.size != lab.size:
        raise ValueError("op 'mean_iou': Predictions and Labels have %d and %d entries" % (pred.size, lab.size))
    hit = pred == lab
    correct = xp.bincount(pred[hit], minlength=n)[:n]
    wrong = xp.bincount(pred[~hit], minlength=n)[:n] + xp.bincount(lab[~hit], minlength=n)[:n]
    for w in ins.get("InWrongs") or []:
        wrong = wrong + w.reshape(-1).astype(np.int64)
    for c in ins.get("InCorrects") or []:
        correct = correct + c.reshape(-1).astype(np.int64)
    denom = wrong + correct
    valid = denom > 0
    iou = xp.where(valid, correct / xp.where(valid, denom, 1), 0).astype(np.float32)
    mean = iou.sum() / max(int(valid.sum()), 1)
    for m in ins.get("InMeanIou") or []:
        mean = mean + m.reshape(())
    return {"OutMeanIou": xp.asarray(mean, dtype=np.float32).reshape(1), "OutWrong": wrong.astype(np.int32),
            "OutCorrect": correct.astype(np.int32)}


@register_op("fsp", inputs=["X", "Y"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", [c.input_shape("X")[0], c.input_shape("X")[1],
                                                  c.input_shape("Y")[1]], c.input_dtype("X"))
             if c.input_shape("X") and c.input_shape("Y") else None)
def fsp(ctx, ins, attrs):
    """The flow-of-solution-procedure matrix: ``X Y^T / (H * W)`` over the spatial axes, per sample."""
    x, y = ins["X"], ins["Y"]
    n, c1, h, w = x.shape
    hw = h * w
    out = ctx.xp.matmul(x.reshape(n, c1, hw), y.reshape(n, y.shape[1], hw).swapaxes(1, 2)) / x.dtype.type(hw)
    return {"Out": out.astype(x.dtype, copy=False)}


@register_grad("fsp", inputs=["X", "Y", "Out@GRAD"])
def fsp_grad(ctx, ins, attrs):
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    n, c1, h, w = x.shape
    hw = x.dtype.type(h * w)
    xf, yf = x.reshape(n, c1, -1), y.reshape(n, y.shape[1], -1)
    return {"X@GRAD": (ctx.xp.matmul(d, yf) / hw).reshape(x.shape),
            "Y@GRAD": (ctx.xp.matmul(d.swapaxes(1, 2), xf) / hw).reshape(y.shape)}


def _cvm_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    ctx.set_output("Y", [xs[0], xs[1] if ctx.attr("use_cvm") or xs[1] < 0 else xs[1] - 2], ctx.input_dtype("X"),
                   ctx.input_lod_level("X"))


@register_op("cvm", inputs=["X", "CVM"], outputs=["Y"], attrs={"use_cvm": True}, infer=_cvm_infer,
             no_grad=("CVM",), share_lod=("X", "Y"))
def cvm(ctx, ins, attrs):
    """The continuous-value model of CTR features: X's first two columns are show and click counts;
    with ``use_cvm`` they become ``log(show + 1)`` and ``log(click + 1) - log(show + 1)``, else they
    are dropped."""
    xp = ctx.xp
    x = ins["X"]
    if not attrs["use_cvm"]:
        return {"Y": x[:, 2:].copy()}
    y = x.copy()
    y[:, 0] = xp.log(x[:, 0] + 1)
    y[:, 1] = xp.log(x[:, 1] + 1) - y[:, 0]
    return {"Y": y}


@register_grad("cvm", inputs=["X", "CVM", "Y@GRAD"])
def cvm_grad(ctx, ins, attrs):
    """Paddle passes the gradient of the embedding columns through and puts the CVM values (show,
    click) in the first two columns of dX."""
    xp = ctx.xp
    x, c, d = ins["X"], ins["CVM"], ins["Y@GRAD"]
    dx = xp.zeros(x.shape, dtype=d.dtype)
    dx[:, 2:] = d[:, 2:] if attrs["use_cvm"] else d
    dx[:, :2] = c.reshape(x.shape[0], -1)[:, :2]
    return {"X@GRAD": dx}


# ------------------------------------------------------------------ SelectedRows helpers
@register_op("merge_selected_rows", inputs=["X"], outputs=["Out"], keeps_rows=True,
             infer=lambda c: c.set_output("Out", c.input_shape("X"), c.input_dtype("X"), type="SELECTED_ROWS"))
def merge_selected_rows(ctx, ins, attrs):
    """A row-sparse X with its repeated rows summed (rows sorted)."""
    x = ins["X"]
    if not isinstance(x, SelectedRows):
        raise TypeError("op 'merge_selected_rows': X %r must be a SelectedRows (row-sparse) value, got a dense "
                        "tensor" % ctx.op.inputs["X"][0])
    return {"Out": x.merged(ctx.xp)}


@register_op("get_tensor_from_selected_rows", inputs=["X"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", c.input_shape("X"), c.input_dtype("X"), type="LOD_TENSOR"))
def get_tensor_from_selected_rows(ctx, ins, attrs):
    """The value rows of a row-sparse X (one per entry of its rows), as a dense tensor."""
    x = ins["X"]
    if not isinstance(x, SelectedRows):
        raise TypeError("op 'get_tensor_from_selected_rows': X %r must be a SelectedRows value"
                        % ctx.op.inputs["X"][0])
    return {"Out": x.value.copy()}


# ------------------------------------------------------------------ random
_RAND_BSL = {"shape": [], "input_dim_idx": 0, "output_dim_idx": 0, "seed": 0, "dtype": "float32"}


def _bsl_shape(ins, attrs):
    shape = list(attrs["shape"])
    shape[attrs["output_dim_idx"]] = ins["Input"].shape[attrs["input_dim_idx"]]
    return tuple(shape)


@register_op("uniform_random_batch_size_like", inputs=["Input"], outputs=["Out"],
             attrs=dict(_RAND_BSL, min=-1.0, max=1.0, diag_num=0, diag_step=0, diag_val=1.0), infer=_bsl_infer)
def uniform_random_batch_size_like(ctx, ins, attrs):
    """Uniform values in ``[min, max)``, ``shape`` with Input's batch size at ``output_dim_idx``."""
    r = _rng(ctx, attrs)
    host = r.uniform(attrs["min"], attrs["max"], _bsl_shape(ins, attrs))
    return {"Out": ctx.xp.asarray(host.astype(attrs["dtype"]))}


@register_op("gaussian_random_batch_size_like", inputs=["Input"], outputs=["Out"],
             attrs=dict(_RAND_BSL, mean=0.0, std=1.0), infer=_bsl_infer)
def gaussian_random_batch_size_like(ctx, ins, attrs):
    """Normal values (``mean``, ``std``), ``shape`` with Input's batch size at ``output_dim_idx``."""
    r = _rng(ctx, attrs)
    host = r.normal(attrs["mean"], attrs["std"], _bsl_shape(ins, attrs))
    return {"Out": ctx.xp.asarray(host.astype(attrs["dtype"]))}


@register_op("randint", host=_HOST_RNG, inputs=SHAPE_INPUTS, outputs=["Out"],
             attrs={"shape": [], "low": 0, "high": 0, "dtype": "int64", "seed": 0},
             infer=creation_infer(all_unknown_with_list=True), no_grad=SHAPE_SLOTS)
def randint(ctx, ins, attrs):
    """Integers drawn uniformly from ``[low, high)``, of ``shape`` (or the ShapeTensor inputs')."""
    attrs = with_tensor_shape(ins, attrs)
    if attrs["high"] <= attrs["low"]:
        raise ValueError("op 'randint': high %d must be greater than low %d" % (attrs["high"], attrs["low"]))
    host = _rng(ctx, attrs).randint(attrs["low"], attrs["high"], tuple(attrs["shape"]))
    return {"Out": ctx.xp.asarray(host.astype(attrs["dtype"]))}


@register_op("randperm", host=_HOST_RNG, outputs=["Out"], attrs={"n": 1, "dtype": "int64", "seed": 0},
             infer=lambda c: c.set_output("Out", [c.attr("n")], c.attr("dtype")))
def randperm(ctx, ins, attrs):
    """A random permutation of ``0 .. n-1``."""
    return {"Out": ctx.xp.asarray(_rng(ctx, attrs).permutation(attrs["n"]).astype(attrs["dtype"]))}


@register_op("sampling_id", host=_HOST_RNG, inputs=["X"], outputs=["Out"], attrs={"min": 0.0, "max": 1.0, "seed": 0},
             infer=lambda c: c.set_output("Out", [c.input_shape("X")[0]], "int64") if c.input_shape("X") else None)
def sampling_id(ctx, ins, attrs):
    """For each row of probabilities, a column drawn with those probabilities (a uniform draw in
    ``[min, max)`` against the running sum)."""
    host = np.asarray(ins["X"], dtype=np.float64)
    u = _rng(ctx, attrs).uniform(attrs["min"], attrs["max"], host.shape[0])
    cum = np.cumsum(host, axis=1)
    ids = np.minimum((cum < u[:, None]).sum(axis=1), host.shape[1] - 1)
    return {"Out": ctx.xp.asarray(ids.astype(np.int64))}


def _random_crop_infer(ctx):
    xs = ctx.input_shape("X")
    shape = ctx.attr("shape")
    if xs is None:
        return
    ctx.set_output("Out", list(xs[:len(xs) - len(shape)]) + list(shape), ctx.input_dtype("X"))
    ctx.set_output("SeedOut", [1], "int64")


@register_op("random_crop", inputs=["X", "Seed"], outputs=["Out", "SeedOut"], attrs={"shape": [], "startup_seed": 0},
             infer=_random_crop_infer)
def random_crop(ctx, ins, attrs):
    """Each instance's trailing axes cropped to ``shape`` at a random offset; the seed tensor is
    advanced (SeedOut) so the next run crops elsewhere."""
    x = ins["X"]
    shape = list(attrs["shape"])
    k = len(shape)
    lead = x.shape[:x.ndim - k]
    seed = int(ins["Seed"].reshape(-1)[0])
    r = np.random.RandomState(seed & 0x7FFFFFFF)
    inst = x.reshape((-1,) + tuple(x.shape[x.ndim - k:]))
    outs = []
    for i in range(inst.shape[0]):
        offs = [r.randint(0, s - t + 1) for s, t in zip(inst.shape[1:], shape)]
        outs.append(inst[i][tuple(slice(o, o + t) for o, t in zip(offs, shape))])
    out = ctx.xp.stack(outs).reshape(tuple(lead) + tuple(shape))
    return {"Out": out, "SeedOut": ctx.xp.asarray([r.randint(1, 2 ** 31 - 1)], dtype=np.int64)}


# ------------------------------------------------------------------ similarity_focus
def _focus_mask(m):
    """A 0/1 mask of a 2-D matrix: repeatedly the largest remaining entry, its row and column then
    left out, until every row or every column is used."""
    a, b = m.shape
    mask = np.zeros((a, b), dtype=bool)
    order = np.argsort(-m, axis=None, kind="stable")
    rows, cols = set(), set()
    for flat in order:
        r, c = divmod(int(flat), b)
        if r in rows or c in cols:
            continue
        mask[r, c] = True
        rows.add(r)
        cols.add(c)
        if len(rows) == a or len(cols) == b:
            break
    return mask


@register_op("similarity_focus", host=_HOST_GREEDY, inputs=["X"], outputs=["Out"], attrs={"axis": 1, "indexes": []},
             infer=lambda c: c.share("Out", "X"))
def similarity_focus(ctx, ins, attrs):
    """For a 4-D X and each of ``indexes`` along ``axis``, the focus mask of that 2-D slice (one
    largest entry per row and column, greedily); the masks are OR-ed and repeated along ``axis``."""
    x = np.asarray(ins["X"])
    axis = attrs["axis"]
    if x.ndim != 4 or axis not in (1, 2, 3):
        raise ValueError("op 'similarity_focus': X %r must be 4-D and axis 1, 2 or 3, got shape %s, axis %d"
                         % (ctx.op.inputs["X"][0], list(x.shape), axis))
    if not attrs["indexes"] or any(not 0 <= i < x.shape[axis] for i in attrs["indexes"]):
        raise ValueError("op 'similarity_focus': indexes %s must be non-empty and within [0, %d)"
                         % (attrs["indexes"], x.shape[axis]))
    moved = np.moveaxis(x, axis, 1)
    out = np.zeros(moved.shape, dtype=x.dtype)
    for n in range(moved.shape[0]):
        mask = np.zeros(moved.shape[2:], dtype=bool)
        for i in attrs["indexes"]:
            mask |= _focus_mask(moved[n, i])
        out[n] = mask[None]
    return {"Out": ctx.xp.asarray(np.ascontiguousarray(np.moveaxis(out, 1, axis)))}
