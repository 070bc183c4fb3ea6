"""Image ops: conv2d (and depthwise_conv2d), pool2d, batch_norm and dropout, each with its gradient.

Convolution is im2col + one matrix product per group. The column matrix is built with a loop over
the kernel offsets (kh * kw strided slices), which is the same code for NumPy and CuPy and cheap for
the small kernels these ops see. Layout: kernels work in NCHW; ``data_format="NHWC"`` is handled by
transposing in and out.
"""
import numpy as np

from ..framework.registry import register_grad, register_op


# ------------------------------------------------------------------ shared helpers
def _pair(v, what):
    if isinstance(v, (int, np.integer)):
        return [int(v), int(v)]
    v = [int(x) for x in v]
    if len(v) == 1:
        return v * 2
    if len(v) != 2:
        raise ValueError("%s must be an int or a list of 2 ints, got %s" % (what, v))
    return v


def _explicit_pads(paddings):
    """Paddle's ``paddings`` attr, [ph, pw] or [top, bottom, left, right], as (top, bottom, left, right)."""
    p = [int(x) for x in paddings]
    if len(p) == 2:
        return p[0], p[0], p[1], p[1]
    if len(p) == 4:
        return p[0], p[1], p[2], p[3]
    raise ValueError("paddings must have 2 or 4 elements, got %s" % p)


def _resolve_pads(in_hw, ksize, strides, paddings, algorithm):
    """Effective (top, bottom, left, right) pads for ``padding_algorithm`` EXPLICIT, SAME or VALID.

    SAME pads so that out = ceil(in / stride), the extra pixel going to the bottom/right."""
    algorithm = (algorithm or "EXPLICIT").upper()
    if algorithm == "EXPLICIT":
        return _explicit_pads(paddings)
    if algorithm == "VALID":
        return 0, 0, 0, 0
    if algorithm == "SAME":
        pads = []
        for size, k, s in zip(in_hw, ksize, strides):
            if size < 0:
                pads += [0, 0]
                continue
            out = (size + s - 1) // s
            total = max((out - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        return tuple(pads)
    raise ValueError("padding_algorithm must be EXPLICIT, SAME or VALID, got %r" % algorithm)


def _channel_last(attrs, key="data_format"):
    fmt = attrs.get(key) or "NCHW"
    if fmt in ("NCHW", "AnyLayout"):
        return False
    if fmt == "NHWC":
        return True
    raise ValueError("%s must be NCHW or NHWC, got %r" % (key, fmt))


def _to_nchw(x, channel_last):
    return x.transpose(0, 3, 1, 2) if channel_last else x


def _from_nchw(x, channel_last, xp):
    return xp.ascontiguousarray(x.transpose(0, 2, 3, 1)) if channel_last else x


def _nchw_shape(shape, channel_last):
    return (shape[0], shape[3], shape[1], shape[2]) if channel_last else tuple(shape)


def _layout_shape(nchw, channel_last):
    n, c, h, w = nchw
    return (n, h, w, c) if channel_last else (n, c, h, w)


def _window_slices(i0, j0, s, out_hw):
    """Slices picking, for kernel offset (i0, j0), the input pixel of every output position."""
    (sh, sw), (ho, wo) = s, out_hw
    return slice(i0, i0 + sh * (ho - 1) + 1, sh), slice(j0, j0 + sw * (wo - 1) + 1, sw)


def _pad(xp, x, pads, value=0.0):
    t, b, l, r = pads
    if not (t or b or l or r):
        return x
    n, c, h, w = x.shape
    out = xp.full((n, c, h + t + b, w + l + r), value, dtype=x.dtype)
    out[:, :, t:t + h, l:l + w] = x
    return out


# ------------------------------------------------------------------ conv2d
_CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "use_cudnn": True,
               "use_mkldnn": False, "fuse_relu_before_depthwise_conv": False,
               "padding_algorithm": "EXPLICIT", "data_format": "NCHW"}


def _conv_geometry(in_nchw, filter_shape, attrs):
    """(pads, strides, dilations, groups, (Ho, Wo)) for an NCHW input; checks channels and sizes."""
    n, c, h, w = in_nchw
    m, cg, kh, kw = filter_shape
    groups = int(attrs.get("groups") or 1)
    strides = _pair(attrs["strides"], "strides")
    dilations = _pair(attrs["dilations"], "dilations")
    algorithm = (attrs.get("padding_algorithm") or "EXPLICIT").upper()
    if algorithm == "SAME":
        dilations = [1, 1]  # as Paddle: SAME padding ignores the dilation
    pads = _resolve_pads((h, w), (kh, kw), strides, attrs["paddings"], algorithm)
    if c >= 0 and c != cg * groups:
        raise ValueError("Input has %d channels but Filter of shape %s with groups=%d expects %d"
                         % (c, list(filter_shape), groups, cg * groups))
    if m % groups:
        raise ValueError("Filter of shape %s: %d output channels is not a multiple of groups=%d"
                         % (list(filter_shape), m, groups))
    out = []
    for size, k, s, d, p in ((h, kh, strides[0], dilations[0], pads[0] + pads[1]),
                             (w, kw, strides[1], dilations[1], pads[2] + pads[3])):
        if size < 0:
            out.append(-1)
            continue
        o = (size + p - (d * (k - 1) + 1)) // s + 1
        if o <= 0:
            raise ValueError("Input of spatial shape %s is too small for a %dx%d filter (dilations %s, "
                             "paddings %s): the output would be empty"
                             % ([h, w], kh, kw, dilations, list(pads)))
        out.append(o)
    return pads, strides, dilations, groups, tuple(out)


def _conv_infer(ctx):
    xs, fs = ctx.input_shape("Input"), ctx.input_shape("Filter")
    if xs is None or fs is None:
        return
    if len(xs) != 4 or len(fs) != 4:
        raise ValueError("conv2d expects a 4-D Input and Filter, got Input %s and Filter %s"
                         % (list(xs), list(fs)))
    last = _channel_last(ctx.attrs)
    nchw = _nchw_shape(xs, last)
    _, _, _, _, (ho, wo) = _conv_geometry(nchw, fs, ctx.attrs)
    ctx.set_output("Output", _layout_shape((nchw[0], fs[0], ho, wo), last), ctx.input_dtype("Input"))


def _im2col(xp, xpad, kh, kw, strides, dilations, out_hw):
    """Columns shaped (C, kh, kw, N, Ho, Wo): one row per (channel, kernel offset)."""
    n, c = xpad.shape[:2]
    ho, wo = out_hw
    cols = xp.empty((c, kh, kw, n, ho, wo), dtype=xpad.dtype)
    for i in range(kh):
        for j in range(kw):
            si, sj = _window_slices(i * dilations[0], j * dilations[1], strides, out_hw)
            cols[:, i, j] = xpad[:, :, si, sj].transpose(1, 0, 2, 3)
    return cols


def _conv_setup(ins, attrs):
    last = _channel_last(attrs)
    x = _to_nchw(ins["Input"], last)
    f = ins["Filter"]
    geo = _conv_geometry(x.shape, f.shape, attrs)
    return last, x, f, geo


def _conv2d_kernel(ctx, ins, attrs):
    """Output = conv(Input, Filter) (+ Bias per channel when given), cross-correlation as in Paddle."""
    xp = ctx.xp
    last, x, f, (pads, strides, dilations, groups, (ho, wo)) = _conv_setup(ins, attrs)
    n, c = x.shape[:2]
    m, cg, kh, kw = f.shape
    cols = _im2col(xp, _pad(xp, x, pads), kh, kw, strides, dilations, (ho, wo))
    cols = cols.reshape(groups, cg * kh * kw, n * ho * wo)
    out = xp.matmul(f.reshape(groups, m // groups, cg * kh * kw), cols)     # (g, M/g, N*Ho*Wo)
    out = xp.ascontiguousarray(out.reshape(m, n, ho, wo).transpose(1, 0, 2, 3))
    if ins.get("Bias") is not None:
        out = out + ins["Bias"].reshape(1, m, 1, 1)
    return {"Output": _from_nchw(out, last, xp)}


def _conv2d_grad_kernel(ctx, ins, attrs):
    xp = ctx.xp
    last, x, f, (pads, strides, dilations, groups, (ho, wo)) = _conv_setup(ins, attrs)
    n, c, h, w = x.shape
    m, cg, kh, kw = f.shape
    dy = _to_nchw(ins["Output@GRAD"], last)
    dy2 = xp.ascontiguousarray(dy.transpose(1, 0, 2, 3)).reshape(groups, m // groups, n * ho * wo)
    want = ctx.op.outputs
    res = {}
    if want.get("Filter@GRAD"):
        cols = _im2col(xp, _pad(xp, x, pads), kh, kw, strides, dilations, (ho, wo))
        cols = cols.reshape(groups, cg * kh * kw, n * ho * wo)
        res["Filter@GRAD"] = xp.matmul(dy2, cols.transpose(0, 2, 1)).reshape(f.shape)
    if want.get("Input@GRAD"):
        f2 = f.reshape(groups, m // groups, cg * kh * kw)
        dcols = xp.matmul(f2.transpose(0, 2, 1), dy2).reshape(c, kh, kw, n, ho, wo)
        t, b, l, r = pads
        dxpad = xp.zeros((n, c, h + t + b, w + l + r), dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                si, sj = _window_slices(i * dilations[0], j * dilations[1], strides, (ho, wo))
                dxpad[:, :, si, sj] += dcols[:, i, j].transpose(1, 0, 2, 3)
        dx = dxpad[:, :, t:t + h, l:l + w]
        res["Input@GRAD"] = _from_nchw(xp.ascontiguousarray(dx), last, xp)
    if want.get("Bias@GRAD"):
        res["Bias@GRAD"] = dy.sum(axis=(0, 2, 3))
    return res


for _type in ("conv2d", "depthwise_conv2d"):
    register_op(_type, inputs=["Input", "Filter", "Bias?"], outputs=["Output"], attrs=_CONV_ATTRS,
                infer=_conv_infer)(_conv2d_kernel)
    register_grad(_type, inputs=["Input", "Filter", "Output@GRAD"],
                  outputs=["Input@GRAD?", "Filter@GRAD?", "Bias@GRAD?"])(_conv2d_grad_kernel)


# ------------------------------------------------------------------ pool2d
_POOL_ATTRS = {"pooling_type": "max", "ksize": [1, 1], "global_pooling": False, "strides": [1, 1],
               "paddings": [0, 0], "exclusive": True, "adaptive": False, "ceil_mode": False,
               "use_cudnn": True, "use_mkldnn": False, "padding_algorithm": "EXPLICIT", "data_format": "NCHW"}


def _pool_geometry(in_nchw, attrs):
    """(ksize, strides, pads, (Ho, Wo)) for an NCHW input; adaptive pools return ksize as output."""
    h, w = in_nchw[2], in_nchw[3]
    ptype = attrs["pooling_type"]
    if ptype not in ("max", "avg"):
        raise ValueError("pooling_type must be 'max' or 'avg', got %r" % ptype)
    if attrs.get("global_pooling"):
        return (h, w), (1, 1), (0, 0, 0, 0), (1 if h >= 0 else -1, 1 if w >= 0 else -1)
    ksize = _pair(attrs["ksize"], "ksize")
    if attrs.get("adaptive"):
        return ksize, (1, 1), (0, 0, 0, 0), tuple(ksize)
    strides = _pair(attrs["strides"], "strides")
    pads = _resolve_pads((h, w), ksize, strides, attrs["paddings"], attrs.get("padding_algorithm"))
    out = []
    for size, k, s, p in ((h, ksize[0], strides[0], pads[0] + pads[1]), (w, ksize[1], strides[1], pads[2] + pads[3])):
        if size < 0:
            out.append(-1)
            continue
        span = size + p - k
        o = (span + s - 1) // s + 1 if attrs.get("ceil_mode") else span // s + 1
        if o <= 0:
            raise ValueError("pool2d: input of spatial shape %s is too small for ksize %s with paddings %s"
                             % ([h, w], ksize, list(pads)))
        out.append(o)
    return tuple(ksize), tuple(strides), pads, tuple(out)


def _pool_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    if len(xs) != 4:
        raise ValueError("pool2d expects a 4-D X, got shape %s" % list(xs))
    last = _channel_last(ctx.attrs)
    n, c, h, w = _nchw_shape(xs, last)
    _, _, _, (ho, wo) = _pool_geometry((n, c, h, w), ctx.attrs)
    ctx.set_output("Out", _layout_shape((n, c, ho, wo), last), ctx.input_dtype("X"))


def _pool_padded(xp, x, pads, ksize, strides, out_hw, value):
    """Pad X so that every window of the (possibly ceil_mode) output lies inside it."""
    t, b, l, r = pads
    h, w = x.shape[2:]
    b = max(b, (out_hw[0] - 1) * strides[0] + ksize[0] - (h + t))
    r = max(r, (out_hw[1] - 1) * strides[1] + ksize[1] - (w + l))
    return _pad(xp, x, (t, b, l, r), value), (t, b, l, r)


def _avg_divisor(xp, x, pads, ksize, strides, out_hw, exclusive):
    """Per-output divisor: the number of real (unpadded) pixels in the window when ``exclusive``,
    else the window size (Paddle's rule)."""
    if not exclusive:
        return float(ksize[0] * ksize[1])
    h, w = x.shape[2:]
    t, b, l, r = pads
    ones = xp.zeros((1, 1, h + t + b, w + l + r), dtype=x.dtype)
    ones[:, :, t:t + h, l:l + w] = 1
    cnt = xp.zeros((1, 1) + tuple(out_hw), dtype=x.dtype)
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            si, sj = _window_slices(i, j, strides, out_hw)
            cnt += ones[:, :, si, sj]
    return xp.maximum(cnt, 1)


def _adaptive_bounds(i, size, out):
    return (i * size) // out, -((-(i + 1) * size) // out)


def _pool2d_kernel(ctx, ins, attrs):
    xp = ctx.xp
    last = _channel_last(attrs)
    x = _to_nchw(ins["X"], last)
    n, c, h, w = x.shape
    ksize, strides, pads, out_hw = _pool_geometry(x.shape, attrs)
    is_max = attrs["pooling_type"] == "max"
    if attrs.get("adaptive") and not attrs.get("global_pooling"):
        out = xp.empty((n, c) + out_hw, dtype=x.dtype)
        for oi in range(out_hw[0]):
            h0, h1 = _adaptive_bounds(oi, h, out_hw[0])
            for oj in range(out_hw[1]):
                w0, w1 = _adaptive_bounds(oj, w, out_hw[1])
                win = x[:, :, h0:h1, w0:w1]
                out[:, :, oi, oj] = win.max(axis=(2, 3)) if is_max else win.mean(axis=(2, 3))
        return {"Out": _from_nchw(out, last, xp)}
    xpad, pads = _pool_padded(xp, x, pads, ksize, strides, out_hw, -np.inf if is_max else 0.0)
    out = None
    for i in range(ksize[0]):
        for j in range(ksize[1]):
            si, sj = _window_slices(i, j, strides, out_hw)
            win = xpad[:, :, si, sj]
            if out is None:
                out = win.copy()
            elif is_max:
                xp.maximum(out, win, out=out)
            else:
                out += win
    if not is_max:
        out = out / _avg_divisor(xp, x, pads, ksize, strides, out_hw, attrs.get("exclusive", True))
    return {"Out": _from_nchw(out.astype(x.dtype, copy=False), last, xp)}


def _pool2d_grad_kernel(ctx, ins, attrs):
    """Max pooling sends each output's gradient to the first maximum of its window (row-major), as
    Paddle does; average pooling spreads it over the window divided by the same divisor as forward."""
    xp = ctx.xp
    last = _channel_last(attrs)
    x = _to_nchw(ins["X"], last)
    o = _to_nchw(ins["Out"], last)
    d = _to_nchw(ins["Out@GRAD"], last)
    n, c, h, w = x.shape
    ksize, strides, pads, out_hw = _pool_geometry(x.shape, attrs)
    is_max = attrs["pooling_type"] == "max"
    if attrs.get("adaptive") and not attrs.get("global_pooling"):
        dx = xp.zeros_like(x)
        for oi in range(out_hw[0]):
            h0, h1 = _adaptive_bounds(oi, h, out_hw[0])
            for oj in range(out_hw[1]):
                w0, w1 = _adaptive_bounds(oj, w, out_hw[1])
                g = d[:, :, oi, oj]
                if is_max:
                    win = x[:, :, h0:h1, w0:w1].reshape(n, c, -1)
                    first = xp.argmax(win, axis=2)
                    hit = (xp.arange(win.shape[2]).reshape(1, 1, -1) == first[:, :, None])
                    dx[:, :, h0:h1, w0:w1] += (hit * g[:, :, None]).reshape(n, c, h1 - h0, w1 - w0)
                else:
                    dx[:, :, h0:h1, w0:w1] += g[:, :, None, None] / float((h1 - h0) * (w1 - w0))
        return {"X@GRAD": _from_nchw(dx, last, xp)}
    xpad, pads = _pool_padded(xp, x, pads, ksize, strides, out_hw, -np.inf if is_max else 0.0)
    dxpad = xp.zeros(xpad.shape, dtype=x.dtype)
    if is_max:
        taken = xp.zeros(d.shape, dtype=bool)
        for i in range(ksize[0]):
            for j in range(ksize[1]):
                si, sj = _window_slices(i, j, strides, out_hw)
                hit = (xpad[:, :, si, sj] == o) & ~taken
                dxpad[:, :, si, sj] += d * hit
                taken |= hit
    else:
        g = d / _avg_divisor(xp, x, pads, ksize, strides, out_hw, attrs.get("exclusive", True))
        for i in range(ksize[0]):
            for j in range(ksize[1]):
                si, sj = _window_slices(i, j, strides, out_hw)
                dxpad[:, :, si, sj] += g
    t, _, l, _ = pads
    dx = xp.ascontiguousarray(dxpad[:, :, t:t + h, l:l + w])
    return {"X@GRAD": _from_nchw(dx, last, xp)}


register_op("pool2d", inputs=["X"], outputs=["Out"], attrs=_POOL_ATTRS, infer=_pool_infer)(_pool2d_kernel)
register_grad("pool2d", inputs=["X", "Out", "Out@GRAD"])(_pool2d_grad_kernel)


# ------------------------------------------------------------------ batch_norm
_BN_ATTRS = {"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "data_layout": "NCHW",
             "use_global_stats": False, "use_mkldnn": False, "fuse_with_relu": False}


def _bn_axes(ndim, attrs):
    """(reduction axes, channel axis) for X of rank ``ndim``."""
    if ndim < 2:
        raise ValueError("batch_norm expects X of rank >= 2, got rank %d" % ndim)
    ch = ndim - 1 if _channel_last(attrs, "data_layout") else 1
    return tuple(a for a in range(ndim) if a != ch), ch


def _bn_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    _, ch = _bn_axes(len(xs), ctx.attrs)
    c = xs[ch]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        s = ctx.input_shape(slot)
        if s is not None and c >= 0 and tuple(s) != (c,):
            raise ValueError("batch_norm: %s has shape %s but X of shape %s has %d channels"
                             % (slot, list(s), list(xs), c))
    ctx.share("Y", "X")
    dt = ctx.input_dtype("Scale") or ctx.input_dtype("X")
    for slot in ("MeanOut", "VarianceOut", "SavedMean", "SavedVariance"):
        ctx.set_output(slot, (c,), dt)


def _bn_uses_running_stats(attrs):
    return bool(attrs.get("is_test") or attrs.get("use_global_stats"))


@register_op("batch_norm", inputs=["X", "Scale", "Bias", "Mean", "Variance"],
             outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"], attrs=_BN_ATTRS,
             infer=_bn_infer, no_grad=("Mean", "Variance"))
def batch_norm(ctx, ins, attrs):
    """Training: normalise with the batch statistics and update the running ones
    (``MeanOut = momentum * Mean + (1 - momentum) * batch_mean``, biased batch variance).
    ``is_test`` / ``use_global_stats``: normalise with the running statistics, left unchanged.
    ``SavedMean`` / ``SavedVariance`` hold the mean and the *inverse* std actually used."""
    xp = ctx.xp
    x = ins["X"]
    axes, ch = _bn_axes(x.ndim, attrs)
    view = [1] * x.ndim
    view[ch] = x.shape[ch]
    eps, mom = attrs["epsilon"], attrs["momentum"]
    run_mean, run_var = ins["Mean"], ins["Variance"]
    if _bn_uses_running_stats(attrs):
        mean, var = run_mean, run_var
        mean_out, var_out = run_mean, run_var
    else:
        mean = x.mean(axis=axes)
        var = ((x - mean.reshape(view)) ** 2).mean(axis=axes)
        mean_out = (mom * run_mean + (1.0 - mom) * mean).astype(run_mean.dtype, copy=False)
        var_out = (mom * run_var + (1.0 - mom) * var).astype(run_var.dtype, copy=False)
    inv_std = 1.0 / xp.sqrt(var + eps)
    scale = (ins["Scale"] * inv_std).reshape(view)
    shift = (ins["Bias"] - mean * ins["Scale"] * inv_std).reshape(view)
    y = (x * scale + shift).astype(x.dtype, copy=False)
    return {"Y": y, "MeanOut": mean_out, "VarianceOut": var_out,
            "SavedMean": mean.astype(run_mean.dtype, copy=False),
            "SavedVariance": inv_std.astype(run_var.dtype, copy=False)}


@register_grad("batch_norm", inputs=["X", "Scale", "Bias", "Y", "SavedMean", "SavedVariance", "Y@GRAD"])
def batch_norm_grad(ctx, ins, attrs):
    x, scale, dy = ins["X"], ins["Scale"], ins["Y@GRAD"]
    axes, ch = _bn_axes(x.ndim, attrs)
    view = [1] * x.ndim
    view[ch] = x.shape[ch]
    mean, inv_std = ins["SavedMean"].reshape(view), ins["SavedVariance"].reshape(view)
    if ctx.op.inputs["X"] == ctx.op.inputs.get("Y"):
        # in_place: X was overwritten by Y, recover the normalised input from Y
        x_hat = (ins["Y"] - ins["Bias"].reshape(view)) / scale.reshape(view)
    else:
        x_hat = (x - mean) * inv_std
    dbias = dy.sum(axis=axes)
    dscale = (dy * x_hat).sum(axis=axes)
    res = {"Scale@GRAD": dscale.astype(scale.dtype, copy=False), "Bias@GRAD": dbias.astype(scale.dtype, copy=False)}
    if ctx.op.outputs.get("X@GRAD"):
        k = scale.reshape(view) * inv_std
        if _bn_uses_running_stats(attrs):
            dx = dy * k
        else:
            m = x.size // x.shape[ch]
            dx = k * (dy - dbias.reshape(view) / m - x_hat * (dscale.reshape(view) / m))
        res["X@GRAD"] = dx.astype(x.dtype, copy=False)
    return res


# ------------------------------------------------------------------ dropout
_DROPOUT_ATTRS = {"dropout_prob": 0.5, "is_test": False, "fix_seed": False, "seed": 0,
                  "dropout_implementation": "downgrade_in_infer"}


def _dropout_impl(attrs):
    impl = attrs.get("dropout_implementation") or "downgrade_in_infer"
    if impl not in ("downgrade_in_infer", "upscale_in_train"):
        raise ValueError("dropout_implementation must be 'downgrade_in_infer' or 'upscale_in_train', got %r"
                         % impl)
    p = float(attrs["dropout_prob"])
    if not 0.0 <= p <= 1.0:
        raise ValueError("dropout_prob must be in [0, 1], got %s" % p)
    return impl, p


def _dropout_infer(ctx):
    ctx.share("Out", "X")
    xs = ctx.input_shape("X")
    ctx.set_output("Mask", xs, "uint8")


@register_op("dropout", inputs=["X"], outputs=["Out", "Mask?"], attrs=_DROPOUT_ATTRS, infer=_dropout_infer, share_lod=("X", "Out"))
def dropout(ctx, ins, attrs):
    """Training: Mask is 1 with probability 1 - p (uint8); Out = X * Mask, divided by 1 - p for
    ``upscale_in_train``. Test: Out = X * (1 - p) (``downgrade_in_infer``) or X, and no Mask.
    With ``fix_seed`` the mask is drawn from ``seed`` and is the same at every run, as in Paddle."""
    xp = ctx.xp
    x = ins["X"]
    impl, p = _dropout_impl(attrs)
    if attrs.get("is_test"):
        if impl == "upscale_in_train":
            return {"Out": x.copy()}
        return {"Out": (x * (1.0 - p)).astype(x.dtype, copy=False)}
    rng = ctx.rng(attrs["seed"] if attrs.get("fix_seed") else 0, salt=ctx.op.outputs["Out"][0])
    mask = xp.asarray((rng.random_sample(x.shape) >= p).astype(np.uint8))
    if impl == "upscale_in_train":
        out = x * mask * (1.0 / (1.0 - p)) if p < 1.0 else xp.zeros_like(x)
    else:
        out = x * mask
    return {"Out": out.astype(x.dtype, copy=False), "Mask": mask}


@register_grad("dropout", inputs=["Mask", "Out@GRAD"])
def dropout_grad(ctx, ins, attrs):
    if attrs.get("is_test"):
        raise ValueError("dropout_grad cannot run with is_test=True: in test mode dropout has no Mask")
    impl, p = _dropout_impl(attrs)
    d = ins["Out@GRAD"]
    mask = ins["Mask"].astype(d.dtype)
    if impl == "upscale_in_train":
        return {"X@GRAD": d * mask * (1.0 / (1.0 - p)) if p < 1.0 else ctx.xp.zeros_like(d)}
    return {"X@GRAD": d * mask}

