"""Indexing ops: gather / gather_nd / scatter / scatter_nd_add, index_select / index_sample, one_hot,
where / where_index, multiplex, unique, shard_index, argsort; with gradients where Paddle has them."""
import numpy as np

from ..core.enforce import InvalidArgumentError
from ..core.tensor import scatter_add, scatter_max
from ..framework.registry import register_grad, register_op
from . import device_ids


def _ids(ctx, slot, value, bound=None, what="index"):
    """An integer index tensor as flat int64, checked against ``bound`` rows (negatives refused)."""
    name = ctx.op.inputs[slot][0]
    if value.dtype.kind not in "iu":
        raise ValueError("op %r: %s %r must be an integer tensor, got %s" % (ctx.op.type, what, name, value.dtype))
    flat = value.reshape(-1).astype(np.int64, copy=False)
    if bound is not None and flat.size:
        lo, hi = int(flat.min()), int(flat.max())
        if lo < 0 or hi >= bound:
            raise ValueError("op %r: %s %d in %r is out of range [0, %d)"
                             % (ctx.op.type, what, lo if lo < 0 else hi, name, bound))
    return flat


def _checked(ctx, slot, value, bound, dtype, what="index"):
    """(flat int64 ids, the mask of those outside ``[0, bound)`` or None) for a kernel whose result
    has ``dtype``: ``_ids``'s check on the host (it raises); on a device clipped and masked without
    reading back, for the kernel to give the result NaN there (``device_ids``)."""
    return device_ids.ids_or_mask(ctx.xp, value, bound, lambda: _ids(ctx, slot, value, bound, what), dtype)


def _clipped(ctx, slot, value, bound, what="index"):
    """A gradient's flat int64 ids: ``_ids``'s check on the host; on a device clipped into range."""
    return device_ids.ids_or_clipped(ctx.xp, value, bound, lambda: _ids(ctx, slot, value, bound, what))


def _last_of_repeats(xp, idx, rows):
    """For each entry of ``idx`` (flat, on the kernel's place), the position of the last entry naming
    the same row. Written as ``out[idx] = values[_last_of_repeats(xp, idx, rows)]``, every repeat of a
    row writes the same value, so the order in which a GPU lands repeated writes (none promised) does
    not matter: the last wins, as on the CPU, in two launches and without reading anything back."""
    last = xp.full((rows,), -1, dtype=np.int64)
    scatter_max(xp, last, idx, xp.arange(idx.shape[0], dtype=np.int64))
    return last[idx]


def _infer(fn):
    """An infer function from ``fn(ctx) -> (slot, shape, dtype)`` items, skipped while inputs are unknown."""
    def infer(ctx):
        try:
            items = fn(ctx)
        except TypeError:   # an input shape not known yet
            return
        for slot, shape, dtype in items:
            ctx.set_output(slot, shape, dtype)
    return infer


# ------------------------------------------------------------------ gather
@register_op("gather", inputs=["X", "Index"], outputs=["Out"], attrs={"overwrite": True}, no_grad=("Index",),
             infer=_infer(lambda c: [("Out", (c.input_shape("Index")[0],) + tuple(c.input_shape("X")[1:]),
                                      c.input_dtype("X"))]))
def gather(ctx, ins, attrs):
    """Rows ``Index`` of X (along axis 0)."""
    x = ins["X"]
    idx, bad = _checked(ctx, "Index", ins["Index"], x.shape[0], x.dtype)
    return {"Out": device_ids.nan_where(ctx.xp, bad, x[ctx.xp.asarray(idx)])}


@register_grad("gather", inputs=["X", "Index", "Out@GRAD"])
def gather_grad(ctx, ins, attrs):
    """Rows of dOut added into a zero X; with ``overwrite`` a repeated index keeps only the last row's
    gradient, as Paddle's kernel does."""
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    idx = _clipped(ctx, "Index", ins["Index"], x.shape[0])
    dx = xp.zeros(x.shape, dtype=d.dtype)
    if attrs["overwrite"]:
        ids = xp.asarray(idx)
        dx[ids] = d if xp is np else d[_last_of_repeats(xp, ids, x.shape[0])]   # NumPy writes in order
    else:
        scatter_add(xp, dx, xp.asarray(idx), d)
    return {"X@GRAD": dx}


def _nd_index(ctx, x, index, result_dtype=None):
    """The k-tuple of index arrays an ``[..., k]`` Index picks from X's first k axes, k, and the mask
    of the entries with a coordinate out of range (None: checked on the host, or not asked for). An
    Index with no coordinates (k = 0) picks all of X for each of its entries: the tuple then indexes
    ``X[None]`` (see ``_nd_view``). On a device the coordinates are clipped into range without
    reading back; with ``result_dtype`` (a forward op) the mask comes too (``device_ids``)."""
    k = index.shape[-1]
    if k > x.ndim:
        raise ValueError("op %r: Index %r has %d coordinates per entry but X has rank %d"
                         % (ctx.op.type, ctx.op.inputs["Index"][0], k, x.ndim))
    entries = int(np.prod(index.shape[:-1]))
    if k == 0:
        return (np.zeros(entries, dtype=np.int64),), 0, None
    flat = index.reshape(entries, k).astype(np.int64, copy=False)
    xp = ctx.xp
    on_device = xp is not np and all(x.shape[:k]) and \
        (result_dtype is None or np.dtype(result_dtype).kind in "fc")
    if not on_device:
        for a in range(k):
            col = flat[:, a]
            if col.size and (int(col.min()) < 0 or int(col.max()) >= x.shape[a]):
                raise ValueError("op %r: Index %r has a coordinate out of range for axis %d of size %d"
                                 % (ctx.op.type, ctx.op.inputs["Index"][0], a, x.shape[a]))
        return tuple(flat[:, a] for a in range(k)), k, None
    coords = tuple(device_ids.clip_ids(xp, flat[:, a], x.shape[a]) for a in range(k))
    if result_dtype is None:
        return coords, k, None
    bad = device_ids.out_of_range(xp, flat[:, 0], x.shape[0])
    for a in range(1, k):
        bad |= device_ids.out_of_range(xp, flat[:, a], x.shape[a])
    return coords, k, bad


def _nd_view(a, k):
    """``a`` as ``_nd_index``'s coordinates index it: with a new leading axis when k is 0."""
    return a[None] if k == 0 else a


def _nd_infer(ctx):
    """Index's last axis may not be longer than X's rank; Updates (scatter_nd_add) have X's dtype
    and the shape ``Index.shape[:-1] + X.shape[k:]``."""
    xs, ids = ctx.input_shape("X"), ctx.input_shape("Index")
    if xs is None or ids is None:
        return
    k = ids[-1]
    if k > len(xs):
        raise ValueError("op %r: Index %r has %d coordinates per entry (its last axis) but X %r has rank %d"
                         % (ctx.op.type, ctx.op.inputs["Index"][0], k, ctx.op.inputs["X"][0], len(xs)))
    if ctx.op.type == "gather_nd":
        ctx.set_output("Out", tuple(ids[:-1]) + tuple(xs[max(k, 0):]) if k >= 0 else None, ctx.input_dtype("X"))
        return
    if ctx.input_dtype("Updates") is not None and ctx.input_dtype("Updates") != ctx.input_dtype("X"):
        raise ValueError("op %r: Updates %r is %s but X %r is %s: they must have one dtype"
                         % (ctx.op.type, ctx.op.inputs["Updates"][0], ctx.input_dtype("Updates"),
                            ctx.op.inputs["X"][0], ctx.input_dtype("X")))
    ups = ctx.input_shape("Updates")
    want = tuple(ids[:-1]) + tuple(xs[k:]) if k >= 0 else None
    if ups is not None and want is not None and (len(ups) != len(want) or any(
            u >= 0 and w >= 0 and u != w for u, w in zip(ups, want))):
        raise ValueError("op %r: Updates %r has shape %s; Index of shape %s into X of shape %s needs %s"
                         % (ctx.op.type, ctx.op.inputs["Updates"][0], list(ups), list(ids), list(xs), list(want)))
    ctx.share("Out", "X")


@register_op("gather_nd", inputs=["X", "Index"], outputs=["Out"], no_grad=("Index",), infer=_nd_infer)
def gather_nd(ctx, ins, attrs):
    """``Out[i...] = X[Index[i..., :]]``: Index's last axis holds coordinates into X's first axes."""
    x, index = ins["X"], ins["Index"]
    coords, k, bad = _nd_index(ctx, x, index, x.dtype)
    out = _nd_view(x, k)[coords]
    lead = tuple(index.shape[:-1])
    bad = None if bad is None else bad.reshape(lead)      # (one per coordinate tuple, in Index's shape)
    return {"Out": device_ids.nan_where(ctx.xp, bad, out.reshape(lead + tuple(x.shape[k:])))}


@register_grad("gather_nd", inputs=["X", "Index", "Out@GRAD"])
def gather_nd_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, index, d = ins["X"], ins["Index"], ins["Out@GRAD"]
    coords, k, _ = _nd_index(ctx, x, index)
    dx = xp.zeros(x.shape, dtype=d.dtype)
    scatter_add(xp, _nd_view(dx, k), coords, d.reshape((-1,) + tuple(x.shape[k:])))
    return {"X@GRAD": dx}


# ------------------------------------------------------------------ scatter
@register_op("scatter", inputs=["X", "Ids", "Updates"], outputs=["Out"], attrs={"overwrite": True},
             no_grad=("Ids",), infer=lambda c: c.share("Out", "X"))
def scatter(ctx, ins, attrs):
    """X with rows ``Ids`` replaced by Updates: the last of repeated ids wins (``overwrite``), or the
    rows of repeated ids are summed (the old row dropped)."""
    xp = ctx.xp
    x, upd = ins["X"], ins["Updates"]
    idx, bad = _checked(ctx, "Ids", ins["Ids"], x.shape[0], x.dtype, "id")
    idx = xp.asarray(idx)
    out = x.copy()
    if attrs["overwrite"]:
        out[idx] = upd if xp is np else upd[_last_of_repeats(xp, idx, x.shape[0])]   # NumPy writes in order
    else:
        out[idx] = 0
        scatter_add(xp, out, idx, upd)
    return {"Out": device_ids.nan_if_any(xp, bad, out)}     # (an id out of range: its row has no place)


@register_grad("scatter", inputs=["Ids", "Updates", "Out@GRAD"])
def scatter_grad(ctx, ins, attrs):
    """As Paddle 1.8: dX is all of dOut (the overwritten rows included), dUpdates the rows of dOut
    at Ids."""
    xp = ctx.xp
    d = ins["Out@GRAD"]
    idx = xp.asarray(_clipped(ctx, "Ids", ins["Ids"], d.shape[0], "id"))
    return {"X@GRAD": d.copy(), "Updates@GRAD": d[idx].reshape(ins["Updates"].shape)}


@register_op("scatter_nd_add", inputs=["X", "Index", "Updates"], outputs=["Out"], no_grad=("Index",),
             infer=_nd_infer)
def scatter_nd_add(ctx, ins, attrs):
    """X with Updates added at the coordinates in Index (repeats add up)."""
    xp = ctx.xp
    x, index, upd = ins["X"], ins["Index"], ins["Updates"]
    coords, k, bad = _nd_index(ctx, x, index, x.dtype)
    out = x.copy()
    scatter_add(xp, _nd_view(out, k), coords, upd.reshape((-1,) + tuple(x.shape[k:])))
    return {"Out": device_ids.nan_if_any(xp, bad, out)}


@register_grad("scatter_nd_add", inputs=["X", "Index", "Updates", "Out@GRAD"])
def scatter_nd_add_grad(ctx, ins, attrs):
    x, index, d = ins["X"], ins["Index"], ins["Out@GRAD"]
    coords, k, _ = _nd_index(ctx, x, index)
    return {"X@GRAD": d.copy(), "Updates@GRAD": _nd_view(d, k)[coords].reshape(ins["Updates"].shape)}


# ------------------------------------------------------------------ index_select / index_sample
def _index_select_infer(ctx):
    xs, ids = ctx.input_shape("X"), ctx.input_shape("Index")
    if xs is None or ids is None:
        return
    out = list(xs)
    out[ctx.attr("dim") % len(xs)] = ids[0]
    ctx.set_output("Out", out, ctx.input_dtype("X"))


@register_op("index_select", inputs=["X", "Index"], outputs=["Out"], attrs={"dim": 0}, no_grad=("Index",),
             infer=_index_select_infer)
def index_select(ctx, ins, attrs):
    """Entries ``Index`` of X along ``dim``."""
    x = ins["X"]
    dim = attrs["dim"] % x.ndim
    idx, bad = _checked(ctx, "Index", ins["Index"], x.shape[dim], x.dtype)
    return {"Out": device_ids.nan_where(ctx.xp, bad, ctx.xp.take(x, ctx.xp.asarray(idx), axis=dim), dim)}


@register_grad("index_select", inputs=["X", "Index", "Out@GRAD"])
def index_select_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    dim = attrs["dim"] % x.ndim
    idx = xp.asarray(_clipped(ctx, "Index", ins["Index"], x.shape[dim]))
    dx = xp.zeros(x.shape, dtype=d.dtype)
    scatter_add(xp, xp.moveaxis(dx, dim, 0), (idx,), xp.moveaxis(d, dim, 0))
    return {"X@GRAD": dx}


def _index_sample_check(ctx, x, index, dtype=None):
    """Index's entries as Index's shape, and the mask of those out of range (see ``_checked``), or,
    without ``dtype`` (a gradient), clipped into range on a device."""
    if x.ndim != 2 or index.ndim != 2 or index.shape[0] != x.shape[0]:
        raise ValueError("op 'index_sample': X %r %s and Index %r %s must both be 2-D with the same rows"
                         % (ctx.op.inputs["X"][0], list(x.shape), ctx.op.inputs["Index"][0], list(index.shape)))
    if dtype is None:
        return _clipped(ctx, "Index", index, x.shape[1]).reshape(index.shape), None
    flat, bad = _checked(ctx, "Index", index, x.shape[1], dtype)
    return flat.reshape(index.shape), (None if bad is None else bad.reshape(index.shape))


@register_op("index_sample", inputs=["X", "Index"], outputs=["Out"], no_grad=("Index",),
             infer=_infer(lambda c: [("Out", c.input_shape("Index"), c.input_dtype("X"))]))
def index_sample(ctx, ins, attrs):
    """``Out[i, j] = X[i, Index[i, j]]``."""
    x, index = ins["X"], ins["Index"]
    idx, bad = _index_sample_check(ctx, x, index, x.dtype)
    return {"Out": device_ids.nan_where(ctx.xp, bad, ctx.xp.take_along_axis(x, idx, axis=1))}


@register_grad("index_sample", inputs=["X", "Index", "Out@GRAD"])
def index_sample_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, index, d = ins["X"], ins["Index"], ins["Out@GRAD"]
    idx, _ = _index_sample_check(ctx, x, index)
    rows = xp.broadcast_to(xp.arange(x.shape[0])[:, None], index.shape)
    dx = xp.zeros(x.shape, dtype=d.dtype)
    scatter_add(xp, dx, (rows.reshape(-1), idx.reshape(-1)), d.reshape(-1))
    return {"X@GRAD": dx}


# ------------------------------------------------------------------ one_hot
_ONE_HOT_ATTRS = {"depth": -1, "dtype": "float32", "allow_out_of_range": False}


def _one_hot_infer(v2):
    def infer(ctx):
        xs = ctx.input_shape("X")
        if xs is None:
            return
        if not v2 and len(xs) < 2:
            raise InvalidArgumentError("X %r must have rank 2 or more (ids of shape [N, 1]), got shape %s"
                                       % (ctx.op.inputs["X"][0], list(xs)))
        depth = ctx.attr("depth") if not ctx.has_input("depth_tensor") else -1
        out = tuple(xs) + (depth,) if v2 else tuple(xs[:-1]) + (depth,)
        ctx.set_output("Out", out, ctx.attr("dtype"), ctx.input_lod_level("X"))
    return infer


def _one_hot_check(ctx, flat, depth):
    inside = (flat >= 0) & (flat < depth)
    if not bool(inside.all()):
        bad = int(flat[~inside][0])
        raise ValueError("op %r: id %d in X %r is out of range for depth %d (set allow_out_of_range=True "
                         "to give it a zero row)" % (ctx.op.type, bad, ctx.op.inputs["X"][0], depth))
    return flat


def _one_hot_kernel(v2):
    def kernel(ctx, ins, attrs):
        """Rows of zeros with a 1 at each id; an id outside ``[0, depth)`` is an error unless
        ``allow_out_of_range`` (then its row stays zero)."""
        xp = ctx.xp
        x = ins["X"]
        depth = attrs["depth"]
        if ins.get("depth_tensor") is not None:
            depth = int(ins["depth_tensor"].reshape(-1)[0])
        if not v2 and x.shape[-1] != 1:
            raise ValueError("op 'one_hot': X %r must have a last dimension of 1 (shape [N, 1]), got %s; "
                             "fluid.one_hot (one_hot_v2) takes ids of any shape"
                             % (ctx.op.inputs["X"][0], list(x.shape)))
        flat = _ids(ctx, "X", x, None, "id")
        bad = None
        if not attrs["allow_out_of_range"]:
            bad = device_ids.ids_or_mask(xp, flat, depth, lambda: _one_hot_check(ctx, flat, depth), attrs["dtype"])[1]
        # (a comparison with each class: an id outside [0, depth) matches none, its row stays zero)
        out = (flat[:, None] == xp.arange(depth)).astype(attrs["dtype"])
        out = device_ids.nan_where(xp, bad, out)
        shape = tuple(x.shape) + (depth,) if v2 else tuple(x.shape[:-1]) + (depth,)
        return {"Out": out.reshape(shape)}
    return kernel


for _type, _v2 in (("one_hot", False), ("one_hot_v2", True)):
    register_op(_type, inputs=["X", "depth_tensor?"], outputs=["Out"], attrs=_ONE_HOT_ATTRS,
                infer=_one_hot_infer(_v2), share_lod=("X", "Out"))(_one_hot_kernel(_v2))


# ------------------------------------------------------------------ where / where_index / multiplex
@register_op("where_index", inputs=["Condition"], outputs=["Out"],
             infer=_infer(lambda c: [("Out", (-1, len(c.input_shape("Condition"))), "int64")]))
def where_index(ctx, ins, attrs):
    """The coordinates of the true (non-zero) entries of Condition, one row each, in row-major order."""
    cond = ins["Condition"]
    return {"Out": ctx.xp.stack(ctx.xp.nonzero(cond), axis=1).astype(np.int64).reshape(-1, cond.ndim)}


@register_op("where", inputs=["Condition", "X", "Y"], outputs=["Out"], no_grad=("Condition",),
             infer=lambda c: c.share("Out", "X"))
def where(ctx, ins, attrs):
    """X where Condition holds, else Y."""
    return {"Out": ctx.xp.where(ins["Condition"], ins["X"], ins["Y"])}


@register_grad("where", inputs=["Condition", "X", "Y", "Out@GRAD"])
def where_grad(ctx, ins, attrs):
    c, d = ins["Condition"], ins["Out@GRAD"]
    zero = ctx.xp.zeros((), dtype=d.dtype)
    return {"X@GRAD": ctx.xp.where(c, d, zero), "Y@GRAD": ctx.xp.where(c, zero, d)}


@register_op("multiplex", inputs=["Ids", "X*"], outputs=["Out"], no_grad=("Ids",),
             infer=_infer(lambda c: [("Out", c.input_shape("X"), c.input_dtype("X"))]))
def multiplex(ctx, ins, attrs):
    """Row i of ``X[Ids[i]]``."""
    xs = ins["X"]
    ids, bad = _checked(ctx, "Ids", ins["Ids"], len(xs), xs[0].dtype, "id")
    if ids.size != xs[0].shape[0]:
        raise ValueError("op 'multiplex': Ids %r has %d entries but the inputs have %d rows"
                         % (ctx.op.inputs["Ids"][0], ids.size, xs[0].shape[0]))
    stacked = ctx.xp.stack(xs)
    return {"Out": device_ids.nan_where(ctx.xp, bad, stacked[ctx.xp.asarray(ids), ctx.xp.arange(ids.size)])}


@register_grad("multiplex", inputs=["Ids", "X*", "Out@GRAD"])
def multiplex_grad(ctx, ins, attrs):
    xp = ctx.xp
    d = ins["Out@GRAD"]
    # (an id out of range matches no input: no gradient, and no index to clip; its forward made Out NaN)
    ids = xp.asarray(_ids(ctx, "Ids", ins["Ids"], len(ins["X"]) if xp is np else None, "id"))
    shape = (-1,) + (1,) * (d.ndim - 1)
    return {"X@GRAD": [xp.where((ids == k).reshape(shape), d, 0).astype(d.dtype) for k in range(len(ins["X"]))]}


# ------------------------------------------------------------------ unique / shard_index / argsort
def _unique(xp, x):
    """Unique values in order of first appearance, the index of each element into them, and counts."""
    flat = x.reshape(-1)
    vals, first, inverse, counts = xp.unique(flat, return_index=True, return_inverse=True, return_counts=True)
    order = xp.argsort(first)          # first appearances are distinct: any sort is stable here
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.size)
    return vals[order], rank[inverse.reshape(-1)], counts[order]


def _unique_kernel(with_counts):
    def kernel(ctx, ins, attrs):
        """The distinct values of X in order of first appearance, and for each element of X the
        position of its value among them (``dtype``)."""
        xp = ctx.xp
        x = ins["X"]
        vals, index, counts = _unique(xp, x)
        res = {"Out": xp.asarray(vals.astype(x.dtype)), "Index": xp.asarray(index.astype(attrs["dtype"]))}
        if with_counts:
            res["Count"] = xp.asarray(counts.astype(attrs["dtype"]))
        return res
    return kernel


def _unique_infer(ctx):
    xs = ctx.input_shape("X")
    ctx.set_output("Out", (-1,), ctx.input_dtype("X"))
    ctx.set_output("Index", xs, ctx.attr("dtype"))
    ctx.set_output("Count", (-1,), ctx.attr("dtype"))


register_op("unique", inputs=["X"], outputs=["Out", "Index"], attrs={"dtype": "int32"},
            infer=_unique_infer)(_unique_kernel(False))
register_op("unique_with_counts", inputs=["X"], outputs=["Out", "Index", "Count"], attrs={"dtype": "int32"},
            infer=_unique_infer)(_unique_kernel(True))


@register_op("shard_index", inputs=["X"], outputs=["Out"],
             attrs={"index_num": 0, "nshards": 1, "shard_id": 0, "ignore_value": -1},
             infer=lambda c: c.share("Out", "X"), share_lod=("X", "Out"))
def shard_index(ctx, ins, attrs):
    """Ids of shard ``shard_id`` (``index_num`` ids cut into ``nshards`` ranges of ceil(index_num / nshards))
    made local to it; other ids become ``ignore_value``."""
    x = ins["X"]
    n, shards, sid = attrs["index_num"], attrs["nshards"], attrs["shard_id"]
    if shards < 1 or not 0 <= sid < shards:
        raise ValueError("op 'shard_index': shard_id %d must be in [0, nshards=%d)" % (sid, shards))
    size = (n + shards - 1) // shards
    flat = _ids(ctx, "X", x, n, "id")
    ours = flat // size == sid
    out = ctx.xp.where(ctx.xp.asarray(ours), ctx.xp.asarray(flat % size), attrs["ignore_value"])
    return {"Out": out.astype(x.dtype).reshape(x.shape)}


def _argsort_infer(ctx):
    xs = ctx.input_shape("X")
    ctx.set_output("Out", xs, ctx.input_dtype("X"))
    ctx.set_output("Indices", xs, "int64")


@register_op("argsort", inputs=["X"], outputs=["Out", "Indices"], attrs={"axis": -1, "descending": False},
             infer=_argsort_infer)
def argsort(ctx, ins, attrs):
    """X sorted along ``axis`` and the int64 positions the sorted values came from (ties keep their order)."""
    xp = ctx.xp
    x = ins["X"]
    axis = attrs["axis"] % x.ndim
    idx = xp.argsort(-x if attrs["descending"] else x, axis=axis, kind="stable")
    return {"Out": xp.take_along_axis(x, idx, axis=axis), "Indices": idx.astype(np.int64)}


@register_grad("argsort", inputs=["Indices", "Out@GRAD"])
def argsort_grad(ctx, ins, attrs):
    xp = ctx.xp
    idx, d = ins["Indices"], ins["Out@GRAD"]
    axis = attrs["axis"] % d.ndim
    inverse = xp.argsort(idx, axis=axis)   # where each element of X went
    return {"X@GRAD": xp.take_along_axis(d, inverse, axis=axis)}
