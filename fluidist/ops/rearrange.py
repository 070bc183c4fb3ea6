"""Layout ops: space_to_depth, shuffle_channel, temporal_shift, unfold (im2col), meshgrid, tril_triu,
diag, diag_embed, eye, kron, trace; each with its gradient where Paddle 1.8 has one."""
import numpy as np

from ..framework.registry import register_grad, register_op
from ..core.tensor import scatter_add
from .manipulation import _same


# ------------------------------------------------------------------ channel rearrangements
def _space_to_depth_infer(ctx):
    xs = ctx.input_shape("X")
    b = ctx.attr("blocksize")
    if xs is None:
        return
    ctx.set_output("Out", [xs[0], xs[1] * b * b if xs[1] >= 0 else -1, xs[2] // b if xs[2] >= 0 else -1,
                           xs[3] // b if xs[3] >= 0 else -1], ctx.input_dtype("X"))


def _s2d_index(shape, b):
    """For each element of X (N, C, H, W), its flat position in Out, in the layout of Paddle's
    kernel (which requires C divisible by b * b)."""
    n, c, h, w = shape
    k = np.arange(n * c * h * w)
    out_c = c // (b * b)
    bi = k // (c * h * w)
    kk = (k % (c * h * w)) // (h * w)
    j = (k % (h * w)) // w
    i = k % w
    c2, off = kk % out_c, kk // out_c
    return (i * b + off % b) + w * b * ((j * b + off // b) + h * b * (c2 + out_c * bi))


@register_op("space_to_depth", inputs=["X"], outputs=["Out"], attrs={"blocksize": 2}, infer=_space_to_depth_infer)
def space_to_depth(ctx, ins, attrs):
    """Each ``blocksize`` x ``blocksize`` spatial block moved into channels (Paddle's channel order)."""
    x = ins["X"]
    b = attrs["blocksize"]
    if x.ndim != 4 or x.shape[1] % (b * b) or x.shape[2] % b or x.shape[3] % b:
        raise ValueError("op 'space_to_depth': X %r of shape %s must be NCHW with C divisible by %d and H, W "
                         "by %d" % (ctx.op.inputs["X"][0], list(x.shape), b * b, b))
    dst = ctx.xp.asarray(_s2d_index(x.shape, b))
    out = ctx.xp.empty(x.size, dtype=x.dtype)
    out[dst] = x.reshape(-1)
    return {"Out": out.reshape(x.shape[0], x.shape[1] * b * b, x.shape[2] // b, x.shape[3] // b)}


@register_grad("space_to_depth", inputs=["X", "Out@GRAD"])
def space_to_depth_grad(ctx, ins, attrs):
    x, d = ins["X"], ins["Out@GRAD"]
    dst = ctx.xp.asarray(_s2d_index(x.shape, attrs["blocksize"]))
    return {"X@GRAD": d.reshape(-1)[dst].reshape(x.shape)}


def _shuffle(xp, x, g):
    n, c = x.shape[:2]
    return xp.ascontiguousarray(x.reshape((n, g, c // g) + x.shape[2:]).swapaxes(1, 2)).reshape(x.shape)


@register_op("shuffle_channel", inputs=["X"], outputs=["Out"], attrs={"group": 1}, infer=_same)
def shuffle_channel(ctx, ins, attrs):
    """Channels (axis 1) regrouped: viewed as [group, C / group], transposed."""
    x, g = ins["X"], attrs["group"]
    if x.shape[1] % g:
        raise ValueError("op 'shuffle_channel': %d channels of X %r are not divisible into %d groups"
                         % (x.shape[1], ctx.op.inputs["X"][0], g))
    return {"Out": _shuffle(ctx.xp, x, g)}


@register_grad("shuffle_channel", inputs=["Out@GRAD"])
def shuffle_channel_grad(ctx, ins, attrs):
    """Paddle 1.8's gradient applies the forward shuffle (``group``) to dOut; that is the inverse
    only when ``group`` squared divides out, and is kept so that training matches Paddle's."""
    return {"X@GRAD": _shuffle(ctx.xp, ins["Out@GRAD"], attrs["group"])}


def _temporal_shift(xp, x, seg, ratio, back):
    nt, c = x.shape[:2]
    v = x.reshape((nt // seg, seg, c) + x.shape[2:])
    c1, c2 = int(c * ratio), int(c * 2 * ratio)
    out = xp.zeros_like(v)
    # forward: channels [0, c1) take frame t-1, [c1, c2) frame t+1, the rest stay; backward moves gradients back
    a, b = (slice(1, None), slice(None, -1)) if not back else (slice(None, -1), slice(1, None))
    out[:, a, :c1] = v[:, b, :c1]
    out[:, b, c1:c2] = v[:, a, c1:c2]
    out[:, :, c2:] = v[:, :, c2:]
    return out.reshape(x.shape)


@register_op("temporal_shift", inputs=["X"], outputs=["Out"], attrs={"seg_num": 1, "shift_ratio": 0.25},
             infer=_same)
def temporal_shift(ctx, ins, attrs):
    """Shift part of the channels one frame along time (X is [N * seg_num, C, H, W])."""
    x = ins["X"]
    if x.shape[0] % attrs["seg_num"]:
        raise ValueError("op 'temporal_shift': %d rows of X %r are not a multiple of seg_num %d"
                         % (x.shape[0], ctx.op.inputs["X"][0], attrs["seg_num"]))
    return {"Out": _temporal_shift(ctx.xp, x, attrs["seg_num"], attrs["shift_ratio"], False)}


@register_grad("temporal_shift", inputs=["Out@GRAD"])
def temporal_shift_grad(ctx, ins, attrs):
    return {"X@GRAD": _temporal_shift(ctx.xp, ins["Out@GRAD"], attrs["seg_num"], attrs["shift_ratio"], True)}


# ------------------------------------------------------------------ unfold (im2col)
def _unfold_geometry(shape, attrs):
    n, c, h, w = shape
    kh, kw = attrs["kernel_sizes"]
    sh, sw = attrs["strides"]
    pt, pl, pb, pr = attrs["paddings"]
    dh, dw = attrs["dilations"]
    oh = (h + pt + pb - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w + pl + pr - (dw * (kw - 1) + 1)) // sw + 1
    return kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, oh, ow


def _unfold_index(shape, attrs):
    """Rows and columns into the padded input for every (C*kh*kw, L) entry of the output."""
    kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, oh, ow = _unfold_geometry(shape, attrs)
    ki, kj = np.meshgrid(np.arange(kh), np.arange(kw), indexing="ij")
    oi, oj = np.meshgrid(np.arange(oh), np.arange(ow), indexing="ij")
    rows = (ki.reshape(-1, 1) * dh + oi.reshape(1, -1) * sh)
    cols = (kj.reshape(-1, 1) * dw + oj.reshape(1, -1) * sw)
    return rows, cols, oh * ow


def _unfold_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None or any(d < 0 for d in xs[1:]):
        return
    g = _unfold_geometry(xs, ctx.op.attrs)
    ctx.set_output("Y", [xs[0], xs[1] * g[0] * g[1], g[10] * g[11]], ctx.input_dtype("X"))


_UNFOLD_ATTRS = {"kernel_sizes": [], "strides": [1, 1], "paddings": [0, 0, 0, 0], "dilations": [1, 1]}


@register_op("unfold", inputs=["X"], outputs=["Y"], attrs=_UNFOLD_ATTRS, infer=_unfold_infer)
def unfold(ctx, ins, attrs):
    """Sliding ``kernel_sizes`` blocks of X (NCHW) as columns: Y is [N, C * kh * kw, L]."""
    xp = ctx.xp
    x = ins["X"]
    g = _unfold_geometry(x.shape, attrs)
    if g[10] <= 0 or g[11] <= 0:
        raise ValueError("op 'unfold': kernel %s does not fit X %r of shape %s with paddings %s"
                         % (attrs["kernel_sizes"], ctx.op.inputs["X"][0], list(x.shape), attrs["paddings"]))
    padded = xp.pad(x, [(0, 0), (0, 0), (g[4], g[6]), (g[5], g[7])])
    rows, cols, length = _unfold_index(x.shape, attrs)
    y = padded[:, :, xp.asarray(rows), xp.asarray(cols)]     # N, C, kh*kw, L
    return {"Y": y.reshape(x.shape[0], -1, length)}


@register_grad("unfold", inputs=["X", "Y@GRAD"])
def unfold_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Y@GRAD"]
    g = _unfold_geometry(x.shape, attrs)
    n, c, h, w = x.shape
    rows, cols, length = _unfold_index(x.shape, attrs)
    hp, wp = h + g[4] + g[6], w + g[5] + g[7]
    acc = xp.zeros((n, c, hp * wp), dtype=d.dtype)
    flat_pos = xp.asarray((rows * wp + cols).reshape(-1))
    vals = d.reshape(n, c, -1)
    for i in range(n):     # scatter-add per sample keeps the index arrays 1-D
        for ch in range(c):
            scatter_add(xp, acc[i, ch], flat_pos, vals[i, ch])
    acc = acc.reshape(n, c, hp, wp)
    return {"X@GRAD": xp.ascontiguousarray(acc[:, :, g[4]:g[4] + h, g[5]:g[5] + w])}


# ------------------------------------------------------------------ meshgrid / triangles / diagonals
def _meshgrid_infer(ctx):
    shapes = [v.shape for v in ctx.input_vars("X")]
    if any(s is None for s in shapes):
        return
    out = [s[0] for s in shapes]
    for i in range(len(shapes)):
        ctx.set_output("Out", out, ctx.input_dtype("X"), i=i)


@register_op("meshgrid", inputs=["X*"], outputs=["Out*"], infer=_meshgrid_infer)
def meshgrid(ctx, ins, attrs):
    """For 1-D inputs x_0..x_k, k+1 grids of shape [len(x_0), ..., len(x_k)] (matrix indexing)."""
    xs = [x.reshape(-1) for x in ins["X"]]
    return {"Out": [g.copy() for g in ctx.xp.meshgrid(*xs, indexing="ij")]}


@register_grad("meshgrid", inputs=["X*", "Out@GRAD*"])
def meshgrid_grad(ctx, ins, attrs):
    ds = ins["Out@GRAD"]
    k = len(ds)
    return {"X@GRAD": [ds[i].sum(axis=tuple(a for a in range(k) if a != i)).reshape(ins["X"][i].shape)
                       for i in range(k)]}


def _tri_mask(xp, shape, diagonal, lower):
    r, c = shape[-2:]
    m = xp.tri(r, c, diagonal, dtype=bool) if lower else ~xp.tri(r, c, diagonal - 1, dtype=bool)
    return m


@register_op("tril_triu", inputs=["X"], outputs=["Out"], attrs={"diagonal": 0, "lower": True}, infer=_same)
def tril_triu(ctx, ins, attrs):
    """The lower (``lower``) or upper triangle of the last two axes from ``diagonal`` on; zeros elsewhere."""
    x = ins["X"]
    m = _tri_mask(ctx.xp, x.shape, attrs["diagonal"], attrs["lower"])
    return {"Out": ctx.xp.where(m, x, 0).astype(x.dtype, copy=False)}


@register_grad("tril_triu", inputs=["Out@GRAD"])
def tril_triu_grad(ctx, ins, attrs):
    d = ins["Out@GRAD"]
    m = _tri_mask(ctx.xp, d.shape, attrs["diagonal"], attrs["lower"])
    return {"X@GRAD": ctx.xp.where(m, d, 0).astype(d.dtype, copy=False)}


@register_op("diag", inputs=["Diagonal"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", [c.input_shape("Diagonal")[0]] * 2, c.input_dtype("Diagonal"))
             if c.input_shape("Diagonal") else None)
def diag(ctx, ins, attrs):
    """A square matrix with Diagonal (1-D) on its diagonal."""
    return {"Out": ctx.xp.diag(ins["Diagonal"].reshape(-1))}


def _diag_embed_infer(ctx):
    xs = ctx.input_shape("Input")
    if xs is None:
        return
    n = xs[-1] + abs(ctx.attr("offset")) if xs[-1] >= 0 else -1
    out = list(xs[:-1])
    d1, d2 = sorted([ctx.attr("dim1") % (len(xs) + 1), ctx.attr("dim2") % (len(xs) + 1)])
    out.insert(d1, n)
    out.insert(d2, n)
    ctx.set_output("Out", out, ctx.input_dtype("Input"))


@register_op("diag_embed", inputs=["Input"], outputs=["Out"], attrs={"offset": 0, "dim1": -2, "dim2": -1},
             infer=_diag_embed_infer)
def diag_embed(ctx, ins, attrs):
    """The last axis of Input placed on the (``offset``) diagonal of new axes ``dim1``, ``dim2``."""
    xp = ctx.xp
    x = ins["Input"]
    off = attrs["offset"]
    k = x.shape[-1]
    n = k + abs(off)
    out = xp.zeros(tuple(x.shape[:-1]) + (n, n), dtype=x.dtype)
    i = np.arange(k)
    r, c = (i, i + off) if off >= 0 else (i - off, i)
    out[..., xp.asarray(r), xp.asarray(c)] = x
    rank = x.ndim + 1
    d1, d2 = attrs["dim1"] % rank, attrs["dim2"] % rank
    if d1 == d2:
        raise ValueError("op 'diag_embed': dim1 and dim2 must differ, both are %d" % d1)
    # the two new axes sit last (row, column); move them to dim1 and dim2
    src = [rank - 2, rank - 1] if d1 < d2 else [rank - 1, rank - 2]
    return {"Out": xp.ascontiguousarray(xp.moveaxis(out, src, sorted([d1, d2])))}


@register_op("eye", outputs=["Out"], attrs={"num_rows": 0, "num_columns": -1, "dtype": "float32"},
             infer=lambda c: c.set_output("Out", [c.attr("num_rows"), c.attr("num_columns")
                                                  if c.attr("num_columns") >= 0 else c.attr("num_rows")],
                                          c.attr("dtype")))
def eye(ctx, ins, attrs):
    """An identity matrix of ``num_rows`` x ``num_columns`` (-1: square)."""
    cols = attrs["num_columns"] if attrs["num_columns"] >= 0 else attrs["num_rows"]
    return {"Out": ctx.xp.eye(attrs["num_rows"], cols, dtype=attrs["dtype"])}


def _kron_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    r = max(len(xs), len(ys))
    xs, ys = (1,) * (r - len(xs)) + tuple(xs), (1,) * (r - len(ys)) + tuple(ys)
    ctx.set_output("Out", [a * b if a >= 0 and b >= 0 else -1 for a, b in zip(xs, ys)], ctx.input_dtype("X"))


@register_op("kron", inputs=["X", "Y"], outputs=["Out"], infer=_kron_infer)
def kron(ctx, ins, attrs):
    """The Kronecker product of X and Y."""
    return {"Out": ctx.xp.kron(ins["X"], ins["Y"])}


@register_grad("kron", inputs=["X", "Y", "Out@GRAD"])
def kron_grad(ctx, ins, attrs):
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    r = max(x.ndim, y.ndim)
    xs, ys = (1,) * (r - x.ndim) + x.shape, (1,) * (r - y.ndim) + y.shape
    view = []
    for a, b in zip(xs, ys):
        view += [a, b]
    d4 = d.reshape(view)                         # axes interleaved: (x0, y0, x1, y1, ...)
    xe = x.reshape([s for a in xs for s in (a, 1)])
    ye = y.reshape([s for b in ys for s in (1, b)])
    dx = (d4 * ye).sum(axis=tuple(range(1, 2 * r, 2))).reshape(x.shape)
    dy = (d4 * xe).sum(axis=tuple(range(0, 2 * r, 2))).reshape(y.shape)
    return {"X@GRAD": dx, "Y@GRAD": dy}


def _trace_infer(ctx):
    xs = ctx.input_shape("Input")
    if xs is None:
        return
    d1, d2 = ctx.attr("dim1") % len(xs), ctx.attr("dim2") % len(xs)
    out = [d for i, d in enumerate(xs) if i not in (d1, d2)] or [1]
    ctx.set_output("Out", out, ctx.input_dtype("Input"))


@register_op("trace", inputs=["Input"], outputs=["Out"], attrs={"offset": 0, "dim1": 0, "dim2": 1},
             infer=_trace_infer)
def trace(ctx, ins, attrs):
    """Sum of the ``offset`` diagonal over axes ``dim1``, ``dim2``."""
    x = ins["Input"]
    out = ctx.xp.trace(x, offset=attrs["offset"], axis1=attrs["dim1"], axis2=attrs["dim2"])
    return {"Out": ctx.xp.asarray(out, dtype=x.dtype).reshape(_trace_shape(x.shape, attrs))}


def _trace_shape(shape, attrs):
    d1, d2 = attrs["dim1"] % len(shape), attrs["dim2"] % len(shape)
    return [d for i, d in enumerate(shape) if i not in (d1, d2)] or [1]


@register_grad("trace", inputs=["Input", "Out@GRAD"])
def trace_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["Input"], ins["Out@GRAD"]
    d1, d2 = attrs["dim1"] % x.ndim, attrs["dim2"] % x.ndim
    moved = xp.zeros(tuple(s for i, s in enumerate(x.shape) if i not in (d1, d2)) + (x.shape[d1], x.shape[d2]),
                     dtype=d.dtype)
    r, c = np.nonzero(np.eye(x.shape[d1], x.shape[d2], attrs["offset"], dtype=bool))
    moved[..., xp.asarray(r), xp.asarray(c)] = d.reshape(moved.shape[:-2] + (1,))
    return {"Input@GRAD": xp.ascontiguousarray(xp.moveaxis(moved, [-2, -1], [d1, d2]))}
