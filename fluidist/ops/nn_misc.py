"""Feature ops of fluid's nn layers: cos_sim, label_smooth, maxout, pixel_shuffle,
add_position_encoding, bilinear_tensor_product and row_conv (over LoD sequences), with gradients."""
import numpy as np

from ..framework.registry import register_grad, register_op


# ------------------------------------------------------------------ cos_sim
def _cos_sim_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    if tuple(xs[1:]) != tuple(ys[1:]) or not (ys[0] == 1 or ys[0] == xs[0] or xs[0] < 0 or ys[0] < 0):
        raise ValueError("Y %r of shape %s must have the shape of X %r (%s) or a first dimension of 1"
                         % (ctx.op.inputs["Y"][0], list(ys), ctx.op.inputs["X"][0], list(xs)))
    dt = ctx.input_dtype("X")
    ctx.set_output("Out", (xs[0], 1), dt, ctx.input_lod_level("X"))
    ctx.set_output("XNorm", (xs[0], 1), dt)
    ctx.set_output("YNorm", (ys[0], 1), dt)


@register_op("cos_sim", inputs=["X", "Y"], outputs=["Out", "XNorm", "YNorm"], infer=_cos_sim_infer,
             share_lod=("X", "Out"))
def cos_sim(ctx, ins, attrs):
    """Cosine similarity of each row of X with the same row of Y (or with Y's only row): [N, 1]."""
    xp = ctx.xp
    x, y = ins["X"], ins["Y"]
    if x.shape[1:] != y.shape[1:] or y.shape[0] not in (1, x.shape[0]):
        raise ValueError("op 'cos_sim': Y %r of shape %s does not match X %r of shape %s"
                         % (ctx.op.inputs["Y"][0], list(y.shape), ctx.op.inputs["X"][0], list(x.shape)))
    x2, y2 = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    xn = xp.sqrt((x2 * x2).sum(axis=1, keepdims=True))
    yn = xp.sqrt((y2 * y2).sum(axis=1, keepdims=True))
    out = (x2 * y2).sum(axis=1, keepdims=True) / (xn * yn)
    return {"Out": out.astype(x.dtype, copy=False), "XNorm": xn, "YNorm": yn}


@register_grad("cos_sim", inputs=["X", "Y", "Out", "XNorm", "YNorm", "Out@GRAD"])
def cos_sim_grad(ctx, ins, attrs):
    x, y, out, xn, yn, d = (ins[s] for s in ("X", "Y", "Out", "XNorm", "YNorm", "Out@GRAD"))
    x2, y2 = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    dx = d * (y2 / (xn * yn) - out * x2 / (xn * xn))
    dy = d * (x2 / (xn * yn) - out * y2 / (yn * yn))
    if y.shape[0] == 1 and x.shape[0] != 1:
        dy = dy.sum(axis=0, keepdims=True)
    return {"X@GRAD": dx.reshape(x.shape).astype(x.dtype, copy=False),
            "Y@GRAD": dy.reshape(y.shape).astype(y.dtype, copy=False)}


# ------------------------------------------------------------------ label_smooth
@register_op("label_smooth", inputs=["X", "PriorDist?"], outputs=["Out"], attrs={"epsilon": 0.0},
             infer=lambda c: c.share("Out", "X"), no_grad=("PriorDist",), share_lod=("X", "Out"))
def label_smooth(ctx, ins, attrs):
    """``(1 - epsilon) * X + epsilon * PriorDist``, PriorDist defaulting to uniform (1 / classes)."""
    x, eps = ins["X"], attrs["epsilon"]
    prior = ins.get("PriorDist")
    if prior is None:
        out = (1.0 - eps) * x + eps / x.shape[-1]
    else:
        out = (1.0 - eps) * x + eps * prior.reshape((1,) * (x.ndim - 1) + (-1,))
    return {"Out": out.astype(x.dtype, copy=False)}


@register_grad("label_smooth", inputs=["Out@GRAD"])
def label_smooth_grad(ctx, ins, attrs):
    d = ins["Out@GRAD"]
    return {"X@GRAD": (d * (1.0 - attrs["epsilon"])).astype(d.dtype, copy=False)}


# ------------------------------------------------------------------ maxout
def _maxout_axis(attrs, ndim):
    axis = attrs["axis"]
    axis = axis + ndim if axis < 0 else axis
    if axis not in (1, 3):
        raise ValueError("maxout: axis must be 1 (NCHW) or 3 / -1 (NHWC), got %r" % attrs["axis"])
    return axis


def _maxout_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    if len(xs) != 4:
        raise ValueError("X %r must be 4-D, got shape %s" % (ctx.op.inputs["X"][0], list(xs)))
    axis, g = _maxout_axis(ctx.attrs, 4), ctx.attr("groups")
    if not g or g <= 0 or (xs[axis] >= 0 and xs[axis] % g):
        raise ValueError("groups=%r must divide the %d channels of X %r" % (g, xs[axis], ctx.op.inputs["X"][0]))
    out = list(xs)
    out[axis] = xs[axis] // g if xs[axis] >= 0 else -1
    ctx.set_output("Out", out, ctx.input_dtype("X"))


def _maxout_view(x, axis, g):
    """X with its channel axis split as (C / groups, groups)."""
    shape = list(x.shape)
    return x.reshape(shape[:axis] + [shape[axis] // g, g] + shape[axis + 1:])


@register_op("maxout", inputs=["X"], outputs=["Out"], attrs={"groups": 1, "axis": 1}, infer=_maxout_infer)
def maxout(ctx, ins, attrs):
    """Output channel i is the max of input channels ``i * groups .. (i + 1) * groups - 1``."""
    x = ins["X"]
    axis = _maxout_axis(attrs, x.ndim)
    return {"Out": _maxout_view(x, axis, attrs["groups"]).max(axis=axis + 1)}


@register_grad("maxout", inputs=["X", "Out", "Out@GRAD"])
def maxout_grad(ctx, ins, attrs):
    """The gradient goes to the first maximum of each group."""
    xp = ctx.xp
    x, out, d = ins["X"], ins["Out"], ins["Out@GRAD"]
    axis, g = _maxout_axis(attrs, x.ndim), attrs["groups"]
    v = _maxout_view(x, axis, g)
    hit = v == xp.expand_dims(out, axis + 1)
    first = hit & (xp.cumsum(hit, axis=axis + 1) == 1)
    return {"X@GRAD": (first * xp.expand_dims(d, axis + 1)).reshape(x.shape).astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ pixel_shuffle
def _ps_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    r = ctx.attr("upscale_factor")
    if len(xs) != 4 or (xs[1] >= 0 and xs[1] % (r * r)):
        raise ValueError("X %r of shape %s must be 4-D with channels divisible by upscale_factor^2 = %d"
                         % (ctx.op.inputs["X"][0], list(xs), r * r))
    ctx.set_output("Out", (xs[0], xs[1] // (r * r), xs[2] * r if xs[2] >= 0 else -1, xs[3] * r if xs[3] >= 0 else -1),
                   ctx.input_dtype("X"))


@register_op("pixel_shuffle", inputs=["X"], outputs=["Out"], attrs={"upscale_factor": 1}, infer=_ps_infer)
def pixel_shuffle(ctx, ins, attrs):
    """[N, C*r*r, H, W] -> [N, C, H*r, W*r]: ``Out[n, c, h*r + i, w*r + j] = X[n, c*r*r + i*r + j, h, w]``."""
    x, r = ins["X"], attrs["upscale_factor"]
    n, c, h, w = x.shape
    out = x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3)
    return {"Out": ctx.xp.ascontiguousarray(out).reshape(n, c // (r * r), h * r, w * r)}


@register_grad("pixel_shuffle", inputs=["Out@GRAD"])
def pixel_shuffle_grad(ctx, ins, attrs):
    d, r = ins["Out@GRAD"], attrs["upscale_factor"]
    n, c, hr, wr = d.shape
    dx = d.reshape(n, c, hr // r, r, wr // r, r).transpose(0, 1, 3, 5, 2, 4)
    return {"X@GRAD": ctx.xp.ascontiguousarray(dx).reshape(n, c * r * r, hr // r, wr // r)}


# ------------------------------------------------------------------ add_position_encoding
def _position_table(xp, positions, width, dtype):
    """Sinusoid encodings: for k < width/2, ``sin(pos / 10000^(k / (width/2 - 1)))`` in column k and
    the cosine in column width/2 + k (Paddle's layout: all sines, then all cosines)."""
    half = width // 2
    k = np.arange(half, dtype=np.float64)
    denom = np.power(10000.0, k / (half - 1)) if half > 1 else np.ones(1)
    angle = positions[:, None].astype(np.float64) / denom[None, :]
    return xp.asarray(np.concatenate([np.sin(angle), np.cos(angle)], axis=1).astype(dtype))


def _ape_positions(ctx, x):
    """Position of every row: along axis 1 for [N, T, D], inside each sequence for a LoD [rows, D]."""
    lod = ctx.lod("X")
    if lod:
        offsets = np.asarray(lod[-1], dtype=np.int64)
        lengths = np.diff(offsets)
        seg = np.repeat(np.arange(len(lengths)), lengths)
        return np.arange(int(offsets[-1])) - offsets[seg], None
    if x.ndim != 3:
        raise ValueError("op 'add_position_encoding': X %r must be [batch, time, width] or a LoD tensor, got "
                         "shape %s" % (ctx.op.inputs["X"][0], list(x.shape)))
    return np.arange(x.shape[1]), x.shape[1]


def _ape_check_width(ctx, width):
    if width % 2:
        raise ValueError("op 'add_position_encoding': the width %d of X %r must be even"
                         % (width, ctx.op.inputs["X"][0]))


@register_op("add_position_encoding", inputs=["X"], outputs=["Out"], attrs={"alpha": 1.0, "beta": 1.0},
             infer=lambda c: c.share("Out", "X"), share_lod=("X", "Out"))
def add_position_encoding(ctx, ins, attrs):
    """``Out = alpha * X + beta * PE(position)``, positions counted per sequence."""
    x = ins["X"]
    width = x.shape[-1]
    _ape_check_width(ctx, width)
    positions, _ = _ape_positions(ctx, x)
    table = _position_table(ctx.xp, positions, width, x.dtype)
    return {"Out": (attrs["alpha"] * x + attrs["beta"] * table).astype(x.dtype, copy=False)}


@register_grad("add_position_encoding", inputs=["Out@GRAD"])
def add_position_encoding_grad(ctx, ins, attrs):
    d = ins["Out@GRAD"]
    return {"X@GRAD": (d * attrs["alpha"]).astype(d.dtype, copy=False)}


# ------------------------------------------------------------------ bilinear_tensor_product
def _btp_infer(ctx):
    xs, ys, ws = ctx.input_shape("X"), ctx.input_shape("Y"), ctx.input_shape("Weight")
    if xs is None or ys is None or ws is None:
        return
    if len(ws) != 3 or ws[1] != xs[1] or ws[2] != ys[1]:
        raise ValueError("Weight %r of shape %s must be [size, %d, %d] for X %s and Y %s"
                         % (ctx.op.inputs["Weight"][0], list(ws), xs[1], ys[1], list(xs), list(ys)))
    ctx.set_output("Out", (xs[0], ws[0]), ctx.input_dtype("X"))


@register_op("bilinear_tensor_product", inputs=["X", "Y", "Weight", "Bias?"], outputs=["Out"], infer=_btp_infer)
def bilinear_tensor_product(ctx, ins, attrs):
    """``Out[n, i] = X[n] @ Weight[i] @ Y[n] + Bias[i]``."""
    xp = ctx.xp
    x, y, w = ins["X"], ins["Y"], ins["Weight"]
    out = xp.einsum("nj,ijk,nk->ni", x, w, y)
    if ins.get("Bias") is not None:
        out = out + ins["Bias"].reshape(1, -1)
    return {"Out": out.astype(x.dtype, copy=False)}


@register_grad("bilinear_tensor_product", inputs=["X", "Y", "Weight", "Out@GRAD"],
               outputs=["X@GRAD?", "Y@GRAD?", "Weight@GRAD?", "Bias@GRAD?"])
def bilinear_tensor_product_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, w, d = ins["X"], ins["Y"], ins["Weight"], ins["Out@GRAD"]
    return {"X@GRAD": xp.einsum("ni,ijk,nk->nj", d, w, y), "Y@GRAD": xp.einsum("ni,ijk,nj->nk", d, w, x),
            "Weight@GRAD": xp.einsum("ni,nj,nk->ijk", d, x, y), "Bias@GRAD": d.sum(axis=0, keepdims=True)}


# ------------------------------------------------------------------ row_conv
def _row_conv_infer(ctx):
    xs, fs = ctx.input_shape("X"), ctx.input_shape("Filter")
    if xs is None or fs is None:
        return
    if len(fs) != 2 or (xs[-1] >= 0 and fs[1] != xs[-1]):
        raise ValueError("Filter %r of shape %s must be [future_context_size + 1, %d]"
                         % (ctx.op.inputs["Filter"][0], list(fs), xs[-1]))
    ctx.share("Out", "X")


def _row_conv_offsets(ctx, x):
    """Sequence bounds: the last LoD level of X, or each of the N rows of a [N, T, D] X."""
    lod = ctx.lod("X")
    if lod:
        return [int(o) for o in lod[-1]], x
    if x.ndim != 3:
        raise ValueError("op 'row_conv': X %r has no LoD; feed it as a LoDTensor (or as [batch, time, width])"
                         % ctx.op.inputs["X"][0])
    n, t = x.shape[:2]
    return list(range(0, n * t + 1, t)), x.reshape(n * t, -1)


def _shifted(xp, x, offsets, j):
    """Rows ``t + j`` of each sequence for every row t (zero past the sequence end)."""
    if j == 0:
        return x
    out = xp.zeros_like(x)
    for a, b in zip(offsets, offsets[1:]):
        if b - a > j:
            out[a:b - j] = x[a + j:b]
    return out


@register_op("row_conv", inputs=["X", "Filter"], outputs=["Out"], infer=_row_conv_infer, share_lod=("X", "Out"))
def row_conv(ctx, ins, attrs):
    """Lookahead convolution: ``Out[t] = sum_j Filter[j] * X[t + j]`` (elementwise per feature), j
    over the future context, inside each sequence."""
    xp = ctx.xp
    x, f = ins["X"], ins["Filter"]
    offsets, x2 = _row_conv_offsets(ctx, x)
    out = xp.zeros_like(x2)
    for j in range(f.shape[0]):
        out += _shifted(xp, x2, offsets, j) * f[j]
    return {"Out": out.reshape(x.shape)}


@register_grad("row_conv", inputs=["X", "Filter", "Out@GRAD"])
def row_conv_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, f, d = ins["X"], ins["Filter"], ins["Out@GRAD"]
    offsets, x2 = _row_conv_offsets(ctx, x)
    d2 = d.reshape(x2.shape)
    df = xp.stack([(_shifted(xp, x2, offsets, j) * d2).sum(axis=0) for j in range(f.shape[0])])
    # X[s] feeds Out[s - j] with weight Filter[j]: shift the output gradient the other way
    dx = xp.zeros_like(x2)
    for j in range(f.shape[0]):
        moved = xp.zeros_like(x2)
        for a, b in zip(offsets, offsets[1:]):
            if b - a > j:
                moved[a + j:b] = d2[a:b - j]
        dx += moved * f[j]
    return {"X@GRAD": dx.reshape(x.shape), "Filter@GRAD": df}
