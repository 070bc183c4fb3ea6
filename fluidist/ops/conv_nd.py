"""Convolutions and pooling of any spatial rank: conv3d, the transposed convolutions
(conv2d_transpose, depthwise_conv2d_transpose, conv3d_transpose) and pool3d, each with its gradient.

One im2col / col2im pair for every rank: the column array is built with a loop over the kernel
offsets (prod(ksize) strided slices), as ``conv.py`` does for conv2d. A transposed convolution is
the input-gradient of a convolution: its forward pass scatters ``Filter^T @ Input`` columns back
with col2im, its input gradient is the plain convolution of the output gradient.
"""
import functools
import itertools

import numpy as np

from ..framework.registry import register_grad, register_op


# ------------------------------------------------------------------ geometry
def _ints(v, n, what):
    if isinstance(v, (int, np.integer)):
        return [int(v)] * n
    v = [int(x) for x in v]
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError("%s must be an int or a list of %d ints, got %s" % (what, n, v))
    return v


def _pads(in_sizes, ksize, strides, paddings, algorithm):
    """Per-dimension (before, after) pads: ``paddings`` is [p...] or [before, after, ...];
    SAME / VALID as Paddle computes them from the input size."""
    n = len(in_sizes)
    algorithm = (algorithm or "EXPLICIT").upper()
    if algorithm == "VALID":
        return [(0, 0)] * n
    if algorithm == "SAME":
        out = []
        for size, k, s in zip(in_sizes, ksize, strides):
            o = (size + s - 1) // s
            total = max((o - 1) * s + k - size, 0) if size >= 0 else 0
            out.append((total // 2, total - total // 2))
        return out
    if algorithm != "EXPLICIT":
        raise ValueError("padding_algorithm must be EXPLICIT, SAME or VALID, got %r" % algorithm)
    p = [int(x) for x in paddings]
    if len(p) == n:
        return [(x, x) for x in p]
    if len(p) == 2 * n:
        return [(p[2 * i], p[2 * i + 1]) for i in range(n)]
    raise ValueError("paddings must have %d or %d elements, got %s" % (n, 2 * n, p))


def _channel_last(fmt):
    if fmt in ("NCHW", "NCDHW", "AnyLayout", None, ""):
        return False
    if fmt in ("NHWC", "NDHWC"):
        return True
    raise ValueError("data_format must be channel-first (NCHW / NCDHW) or channel-last (NHWC / NDHWC), got %r"
                     % fmt)


def _to_cf(x, last):
    return x.transpose((0, x.ndim - 1) + tuple(range(1, x.ndim - 1))) if last else x


def _from_cf(xp, x, last):
    return xp.ascontiguousarray(x.transpose((0,) + tuple(range(2, x.ndim)) + (1,))) if last else x


def _cf_shape(shape, last):
    shape = tuple(shape)
    return (shape[0], shape[-1]) + shape[1:-1] if last else shape


def _layout(shape_cf, last):
    return (shape_cf[0],) + tuple(shape_cf[2:]) + (shape_cf[1],) if last else tuple(shape_cf)


def _pad(xp, x, pads, value=0.0):
    if not any(a or b for a, b in pads):
        return x
    spatial = x.shape[2:]
    out = xp.full(x.shape[:2] + tuple(s + a + b for s, (a, b) in zip(spatial, pads)), value, dtype=x.dtype)
    out[(slice(None), slice(None)) + tuple(slice(a, a + s) for s, (a, _) in zip(spatial, pads))] = x
    return out


def _crop(x, pads, sizes):
    return x[(slice(None), slice(None)) + tuple(slice(a, a + s) for (a, _), s in zip(pads, sizes))]


def _window(offsets, strides, dilations, out_sizes):
    """Slices picking, for kernel offset ``offsets``, the input position of every output position."""
    return tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, s, d, n in zip(offsets, strides, dilations, out_sizes))


def _im2col(xp, xpad, ksize, strides, dilations, out_sizes):
    """Columns (C, *ksize, N, *out): one row per (channel, kernel offset)."""
    n, c = xpad.shape[:2]
    nd = len(ksize)
    cols = xp.empty((c,) + tuple(ksize) + (n,) + tuple(out_sizes), dtype=xpad.dtype)
    perm = (1, 0) + tuple(range(2, 2 + nd))
    for off in itertools.product(*(range(k) for k in ksize)):
        cols[(slice(None),) + off] = xpad[(slice(None), slice(None)) + _window(off, strides, dilations, out_sizes)] \
            .transpose(perm)
    return cols


def _col2im(xp, cols, padded_shape, ksize, strides, dilations, out_sizes):
    """The adjoint of ``_im2col``: columns (C, *ksize, N, *out) added back into an array of
    ``padded_shape`` (N, C, *spatial)."""
    nd = len(ksize)
    img = xp.zeros(padded_shape, dtype=cols.dtype)
    perm = (1, 0) + tuple(range(2, 2 + nd))
    for off in itertools.product(*(range(k) for k in ksize)):
        img[(slice(None), slice(None)) + _window(off, strides, dilations, out_sizes)] += \
            cols[(slice(None),) + off].transpose(perm)
    return img


# ------------------------------------------------------------------ convolution (any rank)
def _conv_out(in_sizes, ksize, strides, dilations, pads):
    out = []
    for size, k, s, d, (a, b) in zip(in_sizes, ksize, strides, dilations, pads):
        if size < 0:
            out.append(-1)
            continue
        o = (size + a + b - (d * (k - 1) + 1)) // s + 1
        if o <= 0:
            raise ValueError("Input of spatial shape %s is too small for a filter of %s (dilations %s, paddings %s): "
                             "the output would be empty" % (list(in_sizes), list(ksize), list(dilations), pads))
        out.append(o)
    return out


def _strides_dilations_pads(in_cf, ksize, attrs, nd):
    """(strides, dilations, pads) of a (transposed) convolution over ``in_cf`` (channel-first shape)."""
    strides = _ints(attrs["strides"], nd, "strides")
    dilations = _ints(attrs["dilations"], nd, "dilations")
    algorithm = (attrs.get("padding_algorithm") or "EXPLICIT").upper()
    if algorithm == "SAME":
        dilations = [1] * nd  # as Paddle: SAME ignores the dilation
    return strides, dilations, _pads(in_cf[2:], ksize, strides, attrs["paddings"], algorithm)


def _frozen(v):
    return tuple(_frozen(x) for x in v) if isinstance(v, (list, tuple)) else v


def _attr_key(attrs, names):
    """The attrs' values as a key (lists as tuples: these attrs are ints, strings and int lists)."""
    return tuple(tuple(v) if type(v) is list else v for v in map(attrs.get, names))


def _memoised(cached, *args):
    """``cached(*args)``, or its uncached function where a value cannot be a key (an array)."""
    try:
        return cached(*args)
    except TypeError:
        return cached.__wrapped__(*args)


_CONV_GEOMETRY_ATTRS = ("strides", "dilations", "paddings", "padding_algorithm", "groups")
_POOL_GEOMETRY_ATTRS = ("pooling_type", "global_pooling", "ksize", "adaptive", "strides", "paddings",
                        "padding_algorithm", "ceil_mode")


def conv_geometry(in_cf, filter_shape, attrs):
    """(pads, strides, dilations, groups, out_sizes) of a convolution over ``in_cf`` (channel-first
    shape) with Filter [M, C / groups, *k]; checks channels, groups and sizes. Memoised (tuples):
    parsing the attrs cost more than a small convolution's copies."""
    return _memoised(_conv_geometry, tuple(in_cf), tuple(filter_shape), _attr_key(attrs, _CONV_GEOMETRY_ATTRS))


@functools.lru_cache(maxsize=512)
def _conv_geometry(in_cf, filter_shape, key):
    attrs = dict(zip(_CONV_GEOMETRY_ATTRS, key))
    nd = len(in_cf) - 2
    groups = int(attrs.get("groups") or 1)
    strides, dilations, pads = _strides_dilations_pads(in_cf, list(filter_shape[2:]), attrs, nd)
    c, m, cg = in_cf[1], filter_shape[0], filter_shape[1]
    if c >= 0 and c != cg * groups:
        raise ValueError("Input has %d channels but Filter of shape %s with groups=%d expects %d"
                         % (c, list(filter_shape), groups, cg * groups))
    if m % groups:
        raise ValueError("Filter of shape %s: %d output channels is not a multiple of groups=%d"
                         % (list(filter_shape), m, groups))
    return _frozen((pads, strides, dilations, groups, _conv_out(in_cf[2:], filter_shape[2:], strides, dilations, pads)))


def conv_forward(xp, x, f, pads, strides, dilations, groups):
    """Cross-correlation of channel-first ``x`` (N, C, *S) with ``f`` (M, C/g, *k)."""
    n, c = x.shape[:2]
    m, cg = f.shape[:2]
    ksize = f.shape[2:]
    out_sizes = _conv_out(x.shape[2:], ksize, strides, dilations, pads)
    kk = int(np.prod(ksize))
    cols = _im2col(xp, _pad(xp, x, pads), ksize, strides, dilations, out_sizes)
    cols = cols.reshape(groups, cg * kk, -1)
    out = xp.matmul(f.reshape(groups, m // groups, cg * kk), cols)
    out = out.reshape((m, n) + tuple(out_sizes))
    return xp.ascontiguousarray(xp.moveaxis(out, 1, 0))


def conv_backward(xp, x, f, dy, pads, strides, dilations, groups, want_x=True, want_f=True):
    """(dX, dF) of ``conv_forward``."""
    n, c = x.shape[:2]
    m, cg = f.shape[:2]
    ksize = f.shape[2:]
    out_sizes = dy.shape[2:]
    kk = int(np.prod(ksize))
    dy2 = xp.ascontiguousarray(xp.moveaxis(dy, 1, 0)).reshape(groups, m // groups, -1)
    dx = df = None
    if want_f:
        cols = _im2col(xp, _pad(xp, x, pads), ksize, strides, dilations, out_sizes).reshape(groups, cg * kk, -1)
        df = xp.matmul(dy2, cols.transpose(0, 2, 1)).reshape(f.shape)
    if want_x:
        dcols = xp.matmul(f.reshape(groups, m // groups, cg * kk).transpose(0, 2, 1), dy2)
        dcols = dcols.reshape((c,) + tuple(ksize) + (n,) + tuple(out_sizes))
        padded = (n, c) + tuple(s + a + b for s, (a, b) in zip(x.shape[2:], pads))
        dx = xp.ascontiguousarray(_crop(_col2im(xp, dcols, padded, ksize, strides, dilations, out_sizes), pads,
                                        x.shape[2:]))
    return dx, df


_CONV3D_ATTRS = {"strides": [1, 1, 1], "paddings": [0, 0, 0], "dilations": [1, 1, 1], "groups": 1, "use_cudnn": True,
                 "use_mkldnn": False, "padding_algorithm": "EXPLICIT", "data_format": "NCDHW", "is_test": False}


def _conv3d_infer(ctx):
    xs, fs = ctx.input_shape("Input"), ctx.input_shape("Filter")
    if xs is None or fs is None:
        return
    if len(xs) != 5 or len(fs) != 5:
        raise ValueError("conv3d expects a 5-D Input and Filter, got Input %s and Filter %s" % (list(xs), list(fs)))
    last = _channel_last(ctx.attr("data_format"))
    cf = _cf_shape(xs, last)
    out = conv_geometry(cf, fs, ctx.attrs)[4]
    ctx.set_output("Output", _layout((cf[0], fs[0]) + tuple(out), last), ctx.input_dtype("Input"))


@register_op("conv3d", inputs=["Input", "Filter", "ResidualData?"], outputs=["Output"], attrs=_CONV3D_ATTRS,
             infer=_conv3d_infer, no_grad=("ResidualData",))
def conv3d(ctx, ins, attrs):
    """3-D cross-correlation, NCDHW (or NDHWC) with Filter [M, C/groups, kd, kh, kw]."""
    xp = ctx.xp
    last = _channel_last(attrs["data_format"])
    x = _to_cf(ins["Input"], last)
    pads, strides, dilations, groups, _ = conv_geometry(x.shape, ins["Filter"].shape, attrs)
    return {"Output": _from_cf(xp, conv_forward(xp, x, ins["Filter"], pads, strides, dilations, groups), last)}


@register_grad("conv3d", inputs=["Input", "Filter", "Output@GRAD"], outputs=["Input@GRAD?", "Filter@GRAD?"])
def conv3d_grad(ctx, ins, attrs):
    xp = ctx.xp
    last = _channel_last(attrs["data_format"])
    x, f = _to_cf(ins["Input"], last), ins["Filter"]
    pads, strides, dilations, groups, _ = conv_geometry(x.shape, f.shape, attrs)
    want = ctx.op.outputs
    dx, df = conv_backward(xp, x, f, _to_cf(ins["Output@GRAD"], last), pads, strides, dilations, groups,
                           bool(want.get("Input@GRAD")), bool(want.get("Filter@GRAD")))
    return {"Input@GRAD": None if dx is None else _from_cf(xp, dx, last), "Filter@GRAD": df}


# ------------------------------------------------------------------ transposed convolution
def _transpose_out(in_sizes, ksize, strides, dilations, pads, output_size):
    """Paddle's size rule: ``(in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1``; an
    ``output_size`` may ask for up to ``stride - 1`` more."""
    out = []
    for i, (size, k, s, d, (a, b)) in enumerate(zip(in_sizes, ksize, strides, dilations, pads)):
        if size < 0:
            out.append(-1)
            continue
        o = (size - 1) * s - a - b + d * (k - 1) + 1
        if output_size:
            want = int(output_size[i])
            if not o <= want < o + s:
                raise ValueError("output_size %s: dimension %d must be in [%d, %d) for an input of spatial shape %s "
                                 "with this filter, stride and padding" % (list(output_size), i, o, o + s,
                                                                             list(in_sizes)))
            o = want
        if o <= 0:
            raise ValueError("the transposed convolution of spatial shape %s would be empty" % list(in_sizes))
        out.append(o)
    return out


def _transpose_geometry(in_cf, filter_shape, attrs, nd):
    ksize = list(filter_shape[2:])
    strides, dilations, pads = _strides_dilations_pads(in_cf, ksize, attrs, nd)
    out = _transpose_out(in_cf[2:], ksize, strides, dilations, pads, attrs.get("output_size") or [])
    return pads, strides, dilations, int(attrs.get("groups") or 1), out


def _transpose_infer(nd):
    def infer(ctx):
        xs, fs = ctx.input_shape("Input"), ctx.input_shape("Filter")
        if xs is None or fs is None:
            return
        if len(xs) != nd + 2 or len(fs) != nd + 2:
            raise ValueError("%s expects a %d-D Input and Filter, got Input %s and Filter %s"
                             % (ctx.op.type, nd + 2, list(xs), list(fs)))
        last = _channel_last(ctx.attr("data_format"))
        cf = _cf_shape(xs, last)
        if cf[1] >= 0 and cf[1] != fs[0]:
            raise ValueError("Input has %d channels but Filter of shape %s expects %d (Filter is [C_in, C_out / "
                             "groups, ...])" % (cf[1], list(fs), fs[0]))
        pads, strides, dilations, groups, out = _transpose_geometry(cf, fs, ctx.attrs, nd)
        ctx.set_output("Output", _layout((cf[0], fs[1] * groups) + tuple(out), last), ctx.input_dtype("Input"))
    return infer


def _transpose_setup(ins, attrs):
    """(channel_last, Input channel-first, Filter, geometry) of a transposed convolution op."""
    last = _channel_last(attrs["data_format"])
    x, f = _to_cf(ins["Input"], last), ins["Filter"]
    return last, x, f, _transpose_geometry(x.shape, f.shape, attrs, x.ndim - 2)


def _transpose_kernel(ctx, ins, attrs):
    """Output = the adjoint of a convolution applied to Input: each input pixel scatters
    ``Filter[c_in]`` over its window of the output. Filter is [C_in, C_out / groups, *k]."""
    xp = ctx.xp
    last, x, f, (pads, strides, dilations, groups, out_sizes) = _transpose_setup(ins, attrs)
    nd, (n, c), og, ksize = x.ndim - 2, x.shape[:2], f.shape[1], f.shape[2:]
    kk = int(np.prod(ksize))
    x2 = xp.ascontiguousarray(xp.moveaxis(x, 1, 0)).reshape(groups, c // groups, -1)
    cols = xp.matmul(f.reshape(groups, c // groups, og * kk).transpose(0, 2, 1), x2)
    cols = cols.reshape((og * groups,) + tuple(ksize) + (n,) + tuple(x.shape[2:]))
    # the output (with pads) a convolution of this geometry would read the input from
    padded = (n, og * groups) + tuple(o + a + b for o, (a, b) in zip(out_sizes, pads))
    img = _col2im(xp, cols, padded, ksize, strides, dilations, x.shape[2:])
    out = xp.ascontiguousarray(_crop(img, pads, out_sizes))
    if ins.get("Bias") is not None:
        out = out + ins["Bias"].reshape((1, -1) + (1,) * nd)
    return {"Output": _from_cf(xp, out, last)}


def _transpose_grad_kernel(ctx, ins, attrs):
    xp = ctx.xp
    last, x, f, (pads, strides, dilations, groups, _) = _transpose_setup(ins, attrs)
    dy = _to_cf(ins["Output@GRAD"], last)
    (n, c), og, ksize = x.shape[:2], f.shape[1], f.shape[2:]
    kk = int(np.prod(ksize))
    cols = _im2col(xp, _pad(xp, dy, pads), ksize, strides, dilations, x.shape[2:]).reshape(groups, og * kk, -1)
    res = {}
    want = ctx.op.outputs
    if want.get("Input@GRAD"):
        dx = xp.matmul(f.reshape(groups, c // groups, og * kk), cols).reshape((c, n) + tuple(x.shape[2:]))
        res["Input@GRAD"] = _from_cf(xp, xp.ascontiguousarray(xp.moveaxis(dx, 0, 1)), last)
    if want.get("Filter@GRAD"):
        x2 = xp.ascontiguousarray(xp.moveaxis(x, 1, 0)).reshape(groups, c // groups, -1)
        res["Filter@GRAD"] = xp.matmul(x2, cols.transpose(0, 2, 1)).reshape(f.shape)
    if want.get("Bias@GRAD"):
        res["Bias@GRAD"] = dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))
    return res


_TRANSPOSE_ATTRS = {"output_size": [], "strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1,
                    "use_cudnn": True, "use_mkldnn": False, "padding_algorithm": "EXPLICIT", "data_format": "NCHW",
                    "is_test": False, "fuse_relu": False, "fuse_activation": "", "fuse_alpha": 0.0, "fuse_beta": 0.0,
                    "workspace_size_MB": 512}
_TRANSPOSE3D_ATTRS = dict(_TRANSPOSE_ATTRS, strides=[1, 1, 1], paddings=[0, 0, 0], dilations=[1, 1, 1])

for _type, _nd, _attrs in (("conv2d_transpose", 2, _TRANSPOSE_ATTRS), ("depthwise_conv2d_transpose", 2, _TRANSPOSE_ATTRS),
                           ("conv3d_transpose", 3, _TRANSPOSE3D_ATTRS)):
    register_op(_type, inputs=["Input", "Filter", "Bias?"], outputs=["Output"], attrs=_attrs,
                infer=_transpose_infer(_nd))(_transpose_kernel)
    register_grad(_type, inputs=["Input", "Filter", "Output@GRAD"],
                  outputs=["Input@GRAD?", "Filter@GRAD?", "Bias@GRAD?"])(_transpose_grad_kernel)


# ------------------------------------------------------------------ pooling (any rank)
_POOL3D_ATTRS = {"pooling_type": "max", "ksize": [1, 1, 1], "global_pooling": False, "strides": [1, 1, 1],
                 "paddings": [0, 0, 0], "exclusive": True, "adaptive": False, "ceil_mode": False, "use_cudnn": True,
                 "use_mkldnn": False, "padding_algorithm": "EXPLICIT", "data_format": "NCDHW"}


def pool_geometry(in_cf, attrs):
    """(ksize, strides, pads, out_sizes); adaptive pools give ksize = the output sizes. Memoised
    (tuples), as ``conv_geometry``."""
    return _memoised(_pool_geometry, tuple(in_cf), _attr_key(attrs, _POOL_GEOMETRY_ATTRS))


@functools.lru_cache(maxsize=512)
def _pool_geometry(in_cf, key):
    attrs = dict(zip(_POOL_GEOMETRY_ATTRS, key))
    return _frozen(_pool_geometry_of(in_cf, attrs))


def _pool_geometry_of(in_cf, attrs):
    nd = len(in_cf) - 2
    spatial = list(in_cf[2:])
    if attrs["pooling_type"] not in ("max", "avg"):
        raise ValueError("pooling_type must be 'max' or 'avg', got %r" % attrs["pooling_type"])
    if attrs.get("global_pooling"):
        return spatial, [1] * nd, [(0, 0)] * nd, [1 if s >= 0 else -1 for s in spatial]
    ksize = _ints(attrs["ksize"], nd, "ksize")
    if attrs.get("adaptive"):
        return ksize, [1] * nd, [(0, 0)] * nd, ksize
    strides = _ints(attrs["strides"], nd, "strides")
    pads = _pads(spatial, ksize, strides, attrs["paddings"], attrs.get("padding_algorithm"))
    out = []
    for size, k, s, (a, b) in zip(spatial, ksize, strides, pads):
        if size < 0:
            out.append(-1)
            continue
        span = size + a + b - k
        o = (span + s - 1) // s + 1 if attrs.get("ceil_mode") else span // s + 1
        if o <= 0:
            raise ValueError("input of spatial shape %s is too small for ksize %s with paddings %s"
                             % (spatial, ksize, pads))
        out.append(o)
    return ksize, strides, pads, out


def _pool3d_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    if len(xs) != 5:
        raise ValueError("pool3d expects a 5-D X, got shape %s" % list(xs))
    last = _channel_last(ctx.attr("data_format"))
    cf = _cf_shape(xs, last)
    _, _, _, out = pool_geometry(cf, ctx.attrs)
    ctx.set_output("Out", _layout(cf[:2] + tuple(out), last), ctx.input_dtype("X"))


def _adaptive_windows(spatial, out_sizes):
    """For each output cell, the slice of every dimension it covers: floor(i*S/O) .. ceil((i+1)*S/O)."""
    per_dim = [[slice((i * s) // o, -((-(i + 1) * s) // o)) for i in range(o)] for s, o in zip(spatial, out_sizes)]
    return itertools.product(*(list(enumerate(d)) for d in per_dim))


def _pool_padded(xp, x, pads, ksize, strides, out_sizes, value):
    """Pad X so that every window of the (possibly ceil_mode) output lies inside it."""
    full = []
    for size, (a, b), k, s, o in zip(x.shape[2:], pads, ksize, strides, out_sizes):
        full.append((a, max(b, (o - 1) * s + k - (size + a))))
    return _pad(xp, x, full, value), full


def _avg_divisor(xp, x, pads, ksize, strides, out_sizes, exclusive):
    if not exclusive:
        return float(np.prod(ksize))
    ones = _pad(xp, xp.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype), pads)
    cnt = xp.zeros((1, 1) + tuple(out_sizes), dtype=x.dtype)
    for off in itertools.product(*(range(k) for k in ksize)):
        cnt += ones[(slice(None), slice(None)) + _window(off, strides, [1] * len(ksize), out_sizes)]
    return xp.maximum(cnt, 1)


def pool_forward(xp, x, attrs):
    """Pool channel-first ``x``. An exclusive average over a window lying wholly in the padding
    (possible with ceil_mode) gives 0, as pool2d does here; Paddle's kernel divides 0 by 0 there (NaN)."""
    ksize, strides, pads, out_sizes = pool_geometry(x.shape, attrs)
    is_max = attrs["pooling_type"] == "max"
    nd = x.ndim - 2
    if attrs.get("adaptive") and not attrs.get("global_pooling"):
        out = xp.empty(x.shape[:2] + tuple(out_sizes), dtype=x.dtype)
        axes = tuple(range(2, 2 + nd))
        for cell in _adaptive_windows(x.shape[2:], out_sizes):
            idx = tuple(i for i, _ in cell)
            win = x[(slice(None), slice(None)) + tuple(s for _, s in cell)]
            out[(slice(None), slice(None)) + idx] = win.max(axis=axes) if is_max else win.mean(axis=axes)
        return out
    if is_max and _tiles_exactly(x, attrs, ksize, strides, pads, out_sizes):
        return _tiled_max(xp, x, ksize)
    xpad, full = _pool_padded(xp, x, pads, ksize, strides, out_sizes, -np.inf if is_max else 0.0)
    out = None
    for off in itertools.product(*(range(k) for k in ksize)):
        win = xpad[(slice(None), slice(None)) + _window(off, strides, [1] * nd, out_sizes)]
        if out is None:
            out = win.copy()
        elif is_max:
            xp.maximum(out, win, out=out)
        else:
            out += win
    if not is_max:
        out = out / _avg_divisor(xp, x, full, ksize, strides, out_sizes, attrs.get("exclusive", True))
    return out.astype(x.dtype, copy=False)


def _tiles_exactly(x, attrs, ksize, strides, pads, out_sizes):
    """Whether the pooling windows tile X: stride = window, no padding, no partial window."""
    return not attrs.get("adaptive") and not attrs.get("global_pooling") and list(strides) == list(ksize) \
        and not any(a or b for a, b in pads) and all(o * k == n for o, k, n in zip(out_sizes, ksize, x.shape[2:]))


def _tiled_max(xp, x, ksize):
    """Max pooling over windows that tile X, one spatial axis at a time: k - 1 maxima of strided
    slices per axis (the first axis's slices keep the later axes contiguous)."""
    out = x
    for axis, k in enumerate(ksize):
        cut = lambda j: out[(slice(None),) * (2 + axis) + (slice(j, None, k),)]  # noqa: E731
        reduced = xp.maximum(cut(0), cut(1)) if k > 1 else cut(0).copy()
        for j in range(2, k):
            xp.maximum(reduced, cut(j), out=reduced)
        out = reduced
    return out if out is not x else x.copy()


def _tiled_max_grad(xp, x, out, d, ksize, out_sizes):
    """Max pooling's gradient when the windows tile X: every input position lies in one window, so
    each offset's slice of dX is written once (no zeroed buffer, no padding, no adds): the gradient
    goes to the first offset (row-major) holding the window's maximum among the windows not served
    yet (``todo``). Two strided passes per offset (the compare and the write); the bookkeeping is on
    contiguous masks the size of Out."""
    nd = len(ksize)
    dx = xp.empty(x.shape, dtype=d.dtype)
    hit = xp.empty(out.shape, dtype=bool)
    todo = None
    offsets = list(itertools.product(*(range(k) for k in ksize)))
    for i, off in enumerate(offsets):
        sl = (slice(None), slice(None)) + _window(off, ksize, [1] * nd, out_sizes)
        xp.equal(x[sl], out, out=hit)
        if todo is not None:
            hit &= todo
        xp.multiply(d, hit, out=dx[sl])
        if i + 1 < len(offsets):
            if todo is None:
                todo = ~hit
            else:
                xp.greater(todo, hit, out=todo)      # todo and not hit
    return dx


def pool_backward(xp, x, out, d, attrs):
    """Max: each output's gradient to the first maximum of its window (row-major); average: spread
    over the window with the forward divisor."""
    ksize, strides, pads, out_sizes = pool_geometry(x.shape, attrs)
    is_max = attrs["pooling_type"] == "max"
    nd = x.ndim - 2
    if attrs.get("adaptive") and not attrs.get("global_pooling"):
        dx = xp.zeros_like(x)
        for cell in _adaptive_windows(x.shape[2:], out_sizes):
            idx = (slice(None), slice(None)) + tuple(i for i, _ in cell)
            sl = (slice(None), slice(None)) + tuple(s for _, s in cell)
            win = x[sl]
            g = d[idx]
            if is_max:
                flat = win.reshape(win.shape[:2] + (-1,))
                hit = xp.arange(flat.shape[2]).reshape(1, 1, -1) == xp.argmax(flat, axis=2)[:, :, None]
                dx[sl] += (hit * g[:, :, None]).reshape(win.shape)
            else:
                dx[sl] += g.reshape(g.shape + (1,) * nd) / float(np.prod(win.shape[2:]))
        return dx
    if is_max and _tiles_exactly(x, attrs, ksize, strides, pads, out_sizes):
        return _tiled_max_grad(xp, x, out, d, ksize, out_sizes).astype(x.dtype, copy=False)
    xpad, full = _pool_padded(xp, x, pads, ksize, strides, out_sizes, -np.inf if is_max else 0.0)
    dxpad = xp.zeros(xpad.shape, dtype=x.dtype)
    if is_max:
        taken = xp.zeros(d.shape, dtype=bool)
        for off in itertools.product(*(range(k) for k in ksize)):
            sl = (slice(None), slice(None)) + _window(off, strides, [1] * nd, out_sizes)
            hit = (xpad[sl] == out) & ~taken
            dxpad[sl] += d * hit
            taken |= hit
    else:
        g = d / _avg_divisor(xp, x, full, ksize, strides, out_sizes, attrs.get("exclusive", True))
        for off in itertools.product(*(range(k) for k in ksize)):
            dxpad[(slice(None), slice(None)) + _window(off, strides, [1] * nd, out_sizes)] += g
    return xp.ascontiguousarray(_crop(dxpad, full, x.shape[2:]))


@register_op("pool3d", inputs=["X"], outputs=["Out"], attrs=_POOL3D_ATTRS, infer=_pool3d_infer)
def pool3d(ctx, ins, attrs):
    """Max or average pooling over D, H, W (exclusive average leaves padding out of the divisor)."""
    last = _channel_last(attrs["data_format"])
    return {"Out": _from_cf(ctx.xp, pool_forward(ctx.xp, _to_cf(ins["X"], last), attrs), last)}


@register_grad("pool3d", inputs=["X", "Out", "Out@GRAD"])
def pool3d_grad(ctx, ins, attrs):
    last = _channel_last(attrs["data_format"])
    x, out, d = (_to_cf(ins[s], last) for s in ("X", "Out", "Out@GRAD"))
    return {"X@GRAD": _from_cf(ctx.xp, pool_backward(ctx.xp, x, out, d, attrs), last)}

