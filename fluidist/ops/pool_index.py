"""Pooling that records where each maximum came from, and the ops built on it:
``max_pool2d_with_index`` / ``max_pool3d_with_index`` (``layers.adaptive_pool2d/3d`` with max pooling,
``Mask`` holds the flat index of each maximum in its input plane / volume), ``unpool`` (puts values
back at such indices) and ``spp`` (spatial pyramid pooling: max or average pooling at 1, 2, 4, ...
bins per side, flattened and concatenated).

The windows are gathered at once: per spatial dimension an index table ``[out, K]`` of the input
positions each output cell covers (K the widest window; the rest point at one pad position past
the input, which holds -inf for max and 0 for average pooling), so a pooling is one gather and one
reduction over the window axis, whatever the window sizes (adaptive windows differ in size).
"""
import numpy as np

from ..core.tensor import scatter_add
from ..framework.registry import register_grad, register_op
from . import device_ids


def _pool_ranges(size, k, stride, pad, adaptive):
    """``(starts, ends)`` of the windows along one dimension (clipped to the input)."""
    if adaptive:
        out = np.arange(k)
        return (out * size) // k, -((-(out + 1) * size) // k)
    n_out = (size - k + 2 * pad) // stride + 1
    starts = np.arange(n_out) * stride - pad
    return np.maximum(starts, 0), np.minimum(starts + k, size)


class _Windows:
    """The windows of a pooling over the trailing ``len(ranges)`` dims of an input of ``spatial``
    shape: ``ranges[d] = (starts, ends)``."""

    def __init__(self, spatial, ranges):
        self.spatial = tuple(int(s) for s in spatial)
        self.out = tuple(len(s) for s, _ in ranges)
        tables = []
        for size, (starts, ends) in zip(self.spatial, ranges):
            width = int((ends - starts).max()) if len(starts) else 1
            idx = starts[:, None] + np.arange(max(width, 1))[None, :]
            tables.append(np.where(idx < ends[:, None], idx, size))   # past the end: the pad position
        nd = len(tables)
        # broadcast the per-dim tables to [out_0, ..., out_{nd-1}, K_0, ..., K_{nd-1}]
        self.index = []
        for d, t in enumerate(tables):
            shape = [1] * (2 * nd)
            shape[d], shape[nd + d] = t.shape
            self.index.append(t.reshape(shape))
        self.valid = np.ones((1,) * (2 * nd), dtype=bool)
        for d, t in enumerate(self.index):
            self.valid = self.valid & (t < self.spatial[d])
        flat = np.zeros((1,) * (2 * nd), dtype=np.int64)
        for d, t in enumerate(self.index):
            flat = flat * self.spatial[d] + np.minimum(t, self.spatial[d] - 1)
        self.k = int(np.prod([t.shape[1] for t in tables]))
        shape = self.out + (self.k,)
        self.flat = np.broadcast_to(flat, self.out + flat.shape[nd:]).reshape(shape)
        self.valid = np.broadcast_to(self.valid, self.out + self.valid.shape[nd:]).reshape(shape)

    def gather(self, xp, x, fill):
        """``x`` [..., *spatial] -> [..., *out, K], the positions outside a window set to ``fill``."""
        nd = len(self.spatial)
        pad = [(0, 0)] * (x.ndim - nd) + [(0, 1)] * nd
        padded = xp.pad(x, pad, mode="constant", constant_values=fill)
        lead = (slice(None),) * (x.ndim - nd)
        got = padded[lead + tuple(xp.asarray(t) for t in self.index)]
        return got.reshape(x.shape[:x.ndim - nd] + self.out + (self.k,))

    def scatter(self, xp, per_k, lead_shape, dtype):
        """The sum into [*lead, *spatial] of ``per_k`` [*lead, *out, K] at each window's positions."""
        n = int(np.prod(lead_shape, dtype=np.int64))
        size = int(np.prod(self.spatial, dtype=np.int64))
        vals = xp.where(xp.asarray(self.valid), per_k, 0).reshape(n, -1)
        out = xp.zeros((n, size), dtype=dtype)
        rows = xp.repeat(xp.arange(n), vals.shape[1])
        scatter_add(xp, out, (rows, xp.tile(xp.asarray(self.flat.reshape(-1)), n)), vals.reshape(-1))
        return out.reshape(tuple(lead_shape) + self.spatial)


_FLT_MAX = float(np.finfo(np.float32).max)


def _lowest(dtype):
    """The pad value of max pooling: below every value of ``dtype``."""
    return -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


def _max_with_index(xp, x, windows):
    """(max [..., *out], flat index of the first maximum in row-major window order). A window that
    holds no input position (padding wider than the kernel) gives Paddle's ``-FLT_MAX`` and index -1."""
    vals = windows.gather(xp, x, _lowest(x.dtype))
    arg = vals.argmax(axis=-1)
    out = xp.take_along_axis(vals, arg[..., None], axis=-1)[..., 0]
    flat = xp.broadcast_to(xp.asarray(windows.flat), vals.shape)
    where = xp.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    filled = xp.asarray(windows.valid.any(axis=-1))
    low = -_FLT_MAX if np.dtype(x.dtype).kind == "f" else np.iinfo(x.dtype).min
    return xp.where(filled, out, low).astype(x.dtype, copy=False), xp.where(filled, where, -1).astype(np.int32)


# ------------------------------------------------------------------ max_pool{2,3}d_with_index
def _with_index_windows(x_shape, attrs, nd):
    spatial = x_shape[-nd:]
    ksize, strides, pads = list(attrs["ksize"]), list(attrs["strides"]), list(attrs["paddings"])
    if attrs["global_pooling"]:
        ksize, pads = list(spatial), [0] * nd
    if len(ksize) != nd or len(strides) != nd or len(pads) != nd:
        raise ValueError("ksize %s, strides %s and paddings %s must each have %d values" % (ksize, strides, pads, nd))
    return [_pool_ranges(s, k, st, p, attrs["adaptive"]) for s, k, st, p in zip(spatial, ksize, strides, pads)]


def _with_index_out_shape(x_shape, attrs, nd):
    spatial = list(x_shape[-nd:])
    if attrs["adaptive"]:   # global pooling's windows are the whole input: as many cells as it has
        return list(x_shape[:-nd]) + (spatial if attrs["global_pooling"] else list(attrs["ksize"]))
    if attrs["global_pooling"]:
        return list(x_shape[:-nd]) + [1] * nd
    return list(x_shape[:-nd]) + [-1 if s < 0 else (s - k + 2 * p) // st + 1
                                  for s, k, st, p in zip(spatial, attrs["ksize"], attrs["strides"], attrs["paddings"])]


def _pool_with_index(nd):
    type = "max_pool%dd_with_index" % nd

    def infer(ctx):
        xs = ctx.input_shape("X")
        if xs is None:
            return
        if len(xs) != nd + 2:
            raise ValueError("X must be %d-D (N, C and %d spatial dims), got shape %s" % (nd + 2, nd, list(xs)))
        out = _with_index_out_shape(xs, ctx.op.attrs, nd)
        ctx.set_output("Out", out, ctx.input_dtype("X"))
        ctx.set_output("Mask", out, "int32")

    def kernel(ctx, ins, attrs):
        x = ins["X"]
        if x.ndim != nd + 2:
            raise ValueError("op %r: X %r must be %d-D, got shape %s" % (type, ctx.op.inputs["X"][0], nd + 2,
                                                                         list(x.shape)))
        windows = _Windows(x.shape[2:], _with_index_windows(x.shape, attrs, nd))
        out, mask = _max_with_index(ctx.xp, x, windows)
        return {"Out": out, "Mask": mask}
    kernel.__doc__ = ("Max pooling over the last %d dims (``adaptive``: ``ksize`` is the output size; "
                      "``global_pooling``: one window) with ``Mask``, the flat index of each maximum in its "
                      "input %s." % (nd, "plane" if nd == 2 else "volume"))

    register_op(type, inputs=["X"], outputs=["Out", "Mask"],
                attrs={"ksize": [], "strides": [1] * nd, "paddings": [0] * nd, "global_pooling": False,
                       "adaptive": False}, infer=infer)(kernel)

    @register_grad(type, inputs=["X", "Mask", "Out@GRAD"], outputs=["X@GRAD"])
    def grad(ctx, ins, attrs):
        x, mask, d = ins["X"], ins["Mask"], ins["Out@GRAD"]
        return {"X@GRAD": _scatter_at(ctx.xp, d, mask, x.shape, nd)}


def _scatter_at(xp, values, index, shape, nd):
    """Zeros of ``shape`` with ``values`` [N, C, ...] added at the flat spatial ``index`` of each."""
    n = int(np.prod(shape[:-nd], dtype=np.int64))
    size = int(np.prod(shape[-nd:], dtype=np.int64))
    out = xp.zeros((n * size + 1,), dtype=values.dtype)
    idx = index.reshape(n, -1).astype(np.int64)
    rows = xp.repeat(xp.arange(n), idx.shape[1])
    # -1: an empty window, which takes no gradient: its value goes to an extra last element, dropped
    # (a mask selection would read its count back on a device)
    at = xp.where(idx.reshape(-1) >= 0, rows * size + idx.reshape(-1), n * size)
    scatter_add(xp, out, at, values.reshape(-1))
    return out[:-1].reshape(shape)


_pool_with_index(2)
_pool_with_index(3)


# ------------------------------------------------------------------ unpool
def _unpool_out(hw, attrs):
    return [-1 if s < 0 else (s - 1) * st - 2 * p + k
            for s, k, st, p in zip(hw, attrs["ksize"], attrs["strides"], attrs["paddings"])]


def _unpool_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None:
        ctx.set_output("Out", list(xs[:2]) + _unpool_out(xs[2:], ctx.op.attrs), ctx.input_dtype("X"))


@register_op("unpool", inputs=["X", "Indices"], outputs=["Out"],
             attrs={"ksize": [], "strides": [1, 1], "paddings": [0, 0], "unpooling_type": "max"},
             infer=_unpool_infer, no_grad=("Indices",))
def unpool(ctx, ins, attrs):
    """Max unpooling: each value of X [N, C, H, W] put at its flat index (``Indices``, as
    max_pool2d_with_index's Mask gives) of an output plane of ``(H - 1) * stride - 2 * pad + ksize``
    per side; the other positions are 0."""
    x, idx = ins["X"], ins["Indices"]
    if attrs["unpooling_type"] != "max":
        raise ValueError("op 'unpool': unpooling_type must be 'max', got %r" % (attrs["unpooling_type"],))
    shape = tuple(x.shape[:2]) + tuple(_unpool_out(x.shape[2:], attrs))
    size = int(np.prod(shape[2:]))
    n = x.shape[0] * x.shape[1]
    flat, bad = device_ids.ids_or_mask(ctx.xp, idx, size, lambda: _unpool_indices(ctx, idx, size), x.dtype)
    out = ctx.xp.zeros((n, size), dtype=x.dtype)
    # (a repeated index keeps the last value, as Paddle)
    out[ctx.xp.arange(n)[:, None], flat.reshape(n, -1)] = x.reshape(n, -1)
    # (on a device an index out of range is clipped, and the whole plane of its value made NaN)
    bad = None if bad is None else bad.reshape(n, -1).any(axis=1)
    return {"Out": device_ids.nan_where(ctx.xp, bad, out).reshape(shape)}


def _unpool_indices(ctx, idx, size):
    """Indices as flat int64, checked to lie in the output plane of ``size`` values (on the host)."""
    flat = idx.reshape(-1).astype(np.int64)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= size):
        raise ValueError("op 'unpool': Indices %r holds %d, outside the output plane of %d values"
                         % (ctx.op.inputs["Indices"][0], int(flat.min()) if int(flat.min()) < 0 else int(flat.max()),
                            size))
    return flat


@register_grad("unpool", inputs=["X", "Indices", "Out", "Out@GRAD"], outputs=["X@GRAD"])
def unpool_grad(ctx, ins, attrs):
    x, idx, d = ins["X"], ins["Indices"], ins["Out@GRAD"]
    n = x.shape[0] * x.shape[1]
    flat = d.reshape(n, -1)
    at = device_ids.ids_or_clipped(ctx.xp, idx, flat.shape[1], lambda: _unpool_indices(ctx, idx, flat.shape[1]))
    return {"X@GRAD": ctx.xp.take_along_axis(flat, at.reshape(n, -1), axis=1).reshape(x.shape)}


# ------------------------------------------------------------------ spp
def _spp_levels(h, w, height):
    """Per pyramid level: the window ranges along H and W (``2^i`` bins a side)."""
    levels = []
    for i in range(height):
        bins = 2 ** i
        kh, kw = -(-h // bins), -(-w // bins)
        ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
        levels.append([_pool_ranges(h, kh, kh, ph, False), _pool_ranges(w, kw, kw, pw, False)])
    return levels


def _spp_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    cells = sum(4 ** i for i in range(ctx.attr("pyramid_height")))
    ctx.set_output("Out", (xs[0], -1 if xs[1] < 0 else xs[1] * cells), ctx.input_dtype("X"))


@register_op("spp", inputs=["X"], outputs=["Out"], attrs={"pyramid_height": 0, "pooling_type": "max"},
             infer=_spp_infer)
def spp(ctx, ins, attrs):
    """Spatial pyramid pooling of X [N, C, H, W]: at level i, ``2^i x 2^i`` max (or average, over the
    cells inside the input) pooling cells, flattened per sample as [C, 2^i, 2^i]; the levels
    concatenated: [N, C * (1 + 4 + 16 + ...)]."""
    xp = ctx.xp
    x = ins["X"]
    if attrs["pooling_type"] not in ("max", "avg"):
        raise ValueError("op 'spp': pooling_type must be 'max' or 'avg', got %r" % (attrs["pooling_type"],))
    outs = []
    for ranges in _spp_levels(x.shape[2], x.shape[3], attrs["pyramid_height"]):
        win = _Windows(x.shape[2:], ranges)
        if attrs["pooling_type"] == "max":
            pooled = _max_with_index(xp, x, win)[0]
        else:                       # an empty window divides 0 by 0, as Paddle's exclusive average does
            pooled = win.gather(xp, x, 0).sum(axis=-1) / xp.asarray(win.valid.sum(axis=-1), dtype=x.dtype)
        outs.append(pooled.reshape(x.shape[0], -1))
    return {"Out": xp.concatenate(outs, axis=1).astype(x.dtype, copy=False)}


@register_grad("spp", inputs=["X", "Out", "Out@GRAD"], outputs=["X@GRAD"])
def spp_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    n, c = x.shape[:2]
    dx = xp.zeros(x.shape, dtype=x.dtype)
    at = 0
    for ranges in _spp_levels(x.shape[2], x.shape[3], attrs["pyramid_height"]):
        win = _Windows(x.shape[2:], ranges)
        cells = int(np.prod(win.out))
        dl = d[:, at:at + c * cells].reshape((n, c) + win.out)
        at += c * cells
        if attrs["pooling_type"] == "max":
            _, where = _max_with_index(xp, x, win)
            dx += _scatter_at(xp, dl, where, x.shape, 2)
        else:
            share = dl / xp.asarray(win.valid.sum(axis=-1), dtype=x.dtype)
            dx += win.scatter(xp, xp.broadcast_to(share[..., None], (n, c) + win.out + (win.k,)), (n, c), x.dtype)
    return {"X@GRAD": dx}
