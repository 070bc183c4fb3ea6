"""Normalisation ops besides batch_norm: layer_norm, group_norm, instance_norm, norm (what
``l2_normalize`` builds), lrn, affine_channel, data_norm and spectral_norm, each with its gradient.

Statistics are computed in the input's dtype as Paddle's CPU kernels do; variances are biased
(divided by the element count). Where an op outputs a variance it is the variance itself
(layer_norm, group_norm); instance_norm's ``SavedVariance`` is the inverse standard deviation, as
batch_norm's is.
"""
import numpy as np

from ..framework.registry import register_grad, register_op


def _prod(dims):
    out = 1
    for d in dims:
        out *= int(d)
    return out


def _normalised_grad(xp, x_hat, inv_std, g, axis):
    """d(x_hat * s)/dx given dL/dx_hat = ``g`` over groups reduced on ``axis``: the gradient of
    standardisation, ``inv_std * (g - mean(g) - x_hat * mean(g * x_hat))``."""
    return inv_std * (g - g.mean(axis=axis, keepdims=True) - x_hat * (g * x_hat).mean(axis=axis, keepdims=True))


# ------------------------------------------------------------------ layer_norm
def _ln_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    axis = ctx.attr("begin_norm_axis")
    if not 0 < axis < len(xs):
        raise ValueError("begin_norm_axis %d is out of range for X %r of rank %d"
                         % (axis, ctx.op.inputs["X"][0], len(xs)))
    left = _prod(xs[:axis]) if all(d >= 0 for d in xs[:axis]) else -1
    ctx.share("Y", "X")
    ctx.set_output("Mean", (left,), ctx.input_dtype("X"))
    ctx.set_output("Variance", (left,), ctx.input_dtype("X"))


def _ln_rows(x, axis):
    left = _prod(x.shape[:axis])
    return x.reshape(left, -1)


@register_op("layer_norm", inputs=["X", "Scale?", "Bias?"], outputs=["Y", "Mean", "Variance"],
             attrs={"epsilon": 1e-5, "begin_norm_axis": 1}, infer=_ln_infer, share_lod=("X", "Y"))
def layer_norm(ctx, ins, attrs):
    """Each row (the dims from ``begin_norm_axis`` on, flattened) standardised, then scaled and
    shifted elementwise by Scale and Bias (of the row's size)."""
    xp = ctx.xp
    x = ins["X"]
    x2 = _ln_rows(x, attrs["begin_norm_axis"])
    mean = x2.mean(axis=1)
    var = ((x2 - mean[:, None]) ** 2).mean(axis=1)
    y = (x2 - mean[:, None]) / xp.sqrt(var[:, None] + attrs["epsilon"])
    if ins.get("Scale") is not None:
        y = y * ins["Scale"].reshape(1, -1)
    if ins.get("Bias") is not None:
        y = y + ins["Bias"].reshape(1, -1)
    return {"Y": y.reshape(x.shape).astype(x.dtype, copy=False), "Mean": mean, "Variance": var}


@register_grad("layer_norm", inputs=["X", "Scale?", "Bias?", "Mean", "Variance", "Y@GRAD"])
def layer_norm_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, dy = ins["X"], ins["Y@GRAD"]
    x2, dy2 = _ln_rows(x, attrs["begin_norm_axis"]), _ln_rows(dy, attrs["begin_norm_axis"])
    inv_std = 1.0 / xp.sqrt(ins["Variance"][:, None] + attrs["epsilon"])
    x_hat = (x2 - ins["Mean"][:, None]) * inv_std
    scale = ins.get("Scale")
    g = dy2 * scale.reshape(1, -1) if scale is not None else dy2
    res = {"X@GRAD": _normalised_grad(xp, x_hat, inv_std, g, 1).reshape(x.shape).astype(x.dtype, copy=False)}
    if scale is not None:
        res["Scale@GRAD"] = (dy2 * x_hat).sum(axis=0).reshape(scale.shape)
    if ins.get("Bias") is not None:
        res["Bias@GRAD"] = dy2.sum(axis=0).reshape(ins["Bias"].shape)
    return res


# ------------------------------------------------------------------ group_norm
def _channel_last(attrs):
    layout = attrs.get("data_layout") or "NCHW"
    if layout not in ("NCHW", "NHWC", "AnyLayout"):
        raise ValueError("data_layout must be NCHW or NHWC, got %r" % layout)
    return layout == "NHWC"


def _to_channel_first(x, last):
    return x.transpose((0, x.ndim - 1) + tuple(range(1, x.ndim - 1))) if last else x


def _from_channel_first(xp, x, last):
    return xp.ascontiguousarray(x.transpose((0,) + tuple(range(2, x.ndim)) + (1,))) if last else x


def _gn_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    groups = ctx.attr("groups")
    c = xs[-1] if _channel_last(ctx.attrs) else xs[1]
    if groups is None or groups <= 0 or (c >= 0 and c % groups):
        raise ValueError("groups=%s must be positive and divide the %d channels of X %r"
                         % (groups, c, ctx.op.inputs["X"][0]))
    ctx.share("Y", "X")
    ctx.set_output("Mean", (xs[0], groups), ctx.input_dtype("X"))
    ctx.set_output("Variance", (xs[0], groups), ctx.input_dtype("X"))


def _gn_view(x, groups):
    """(N, C, ...) -> (N, G, C/G * rest)."""
    return x.reshape(x.shape[0], groups, -1)


def _per_channel(v, x):
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


@register_op("group_norm", inputs=["X", "Scale?", "Bias?"], outputs=["Y", "Mean", "Variance"],
             attrs={"epsilon": 1e-5, "groups": 1, "data_layout": "NCHW"}, infer=_gn_infer)
def group_norm(ctx, ins, attrs):
    """The channels split in ``groups``; each (sample, group) standardised over its channels and
    positions, then a per-channel Scale and Bias."""
    xp = ctx.xp
    last = _channel_last(attrs)
    x = _to_channel_first(ins["X"], last)
    g = _gn_view(x, attrs["groups"])
    mean = g.mean(axis=2)
    var = ((g - mean[:, :, None]) ** 2).mean(axis=2)
    y = ((g - mean[:, :, None]) / xp.sqrt(var[:, :, None] + attrs["epsilon"])).reshape(x.shape)
    if ins.get("Scale") is not None:
        y = y * _per_channel(ins["Scale"], x)
    if ins.get("Bias") is not None:
        y = y + _per_channel(ins["Bias"], x)
    return {"Y": _from_channel_first(xp, y.astype(x.dtype, copy=False), last), "Mean": mean, "Variance": var}


@register_grad("group_norm", inputs=["X", "Scale?", "Bias?", "Mean", "Variance", "Y@GRAD"])
def group_norm_grad(ctx, ins, attrs):
    xp = ctx.xp
    last = _channel_last(attrs)
    x = _to_channel_first(ins["X"], last)
    dy = _to_channel_first(ins["Y@GRAD"], last)
    groups = attrs["groups"]
    inv_std = 1.0 / xp.sqrt(ins["Variance"][:, :, None] + attrs["epsilon"])
    x_hat = (_gn_view(x, groups) - ins["Mean"][:, :, None]) * inv_std
    scale = ins.get("Scale")
    gy = dy * _per_channel(scale, x) if scale is not None else dy
    dx = _normalised_grad(xp, x_hat, inv_std, _gn_view(gy, groups), 2).reshape(x.shape)
    reduce_axes = (0,) + tuple(range(2, x.ndim))
    res = {"X@GRAD": _from_channel_first(xp, dx.astype(x.dtype, copy=False), last)}
    if scale is not None:
        res["Scale@GRAD"] = (dy * x_hat.reshape(x.shape)).sum(axis=reduce_axes)
    if ins.get("Bias") is not None:
        res["Bias@GRAD"] = dy.sum(axis=reduce_axes)
    return res


# ------------------------------------------------------------------ instance_norm
def _in_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    if len(xs) < 2:
        raise ValueError("X %r must have rank >= 2, got shape %s" % (ctx.op.inputs["X"][0], list(xs)))
    ctx.share("Y", "X")
    nc = xs[0] * xs[1] if xs[0] >= 0 and xs[1] >= 0 else -1
    ctx.set_output("SavedMean", (nc,), ctx.input_dtype("X"))
    ctx.set_output("SavedVariance", (nc,), ctx.input_dtype("X"))


@register_op("instance_norm", inputs=["X", "Scale?", "Bias?"], outputs=["Y", "SavedMean?", "SavedVariance?"],
             attrs={"epsilon": 1e-5}, infer=_in_infer)
def instance_norm(ctx, ins, attrs):
    """Each (sample, channel) standardised over its positions; ``SavedVariance`` holds the inverse
    standard deviation, [N * C]."""
    xp = ctx.xp
    x = ins["X"]
    g = x.reshape(x.shape[0] * x.shape[1], -1)
    mean = g.mean(axis=1)
    inv_std = 1.0 / xp.sqrt(((g - mean[:, None]) ** 2).mean(axis=1) + attrs["epsilon"])
    y = ((g - mean[:, None]) * inv_std[:, None]).reshape(x.shape)
    if ins.get("Scale") is not None:
        y = y * _per_channel(ins["Scale"], x)
    if ins.get("Bias") is not None:
        y = y + _per_channel(ins["Bias"], x)
    return {"Y": y.astype(x.dtype, copy=False), "SavedMean": mean, "SavedVariance": inv_std}


@register_grad("instance_norm", inputs=["X", "Scale?", "SavedMean", "SavedVariance", "Y@GRAD"],
               outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"])
def instance_norm_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, dy = ins["X"], ins["Y@GRAD"]
    nc = x.shape[0] * x.shape[1]
    inv_std = ins["SavedVariance"][:, None]
    x_hat = (x.reshape(nc, -1) - ins["SavedMean"][:, None]) * inv_std
    scale = ins.get("Scale")
    gy = dy * _per_channel(scale, x) if scale is not None else dy
    dx = _normalised_grad(xp, x_hat, inv_std, gy.reshape(nc, -1), 1).reshape(x.shape)
    axes = (0,) + tuple(range(2, x.ndim))
    return {"X@GRAD": dx.astype(x.dtype, copy=False),
            "Scale@GRAD": (dy * x_hat.reshape(x.shape)).sum(axis=axes), "Bias@GRAD": dy.sum(axis=axes)}


# ------------------------------------------------------------------ norm (l2_normalize)
def _norm_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    axis = ctx.attr("axis")
    if not -len(xs) <= axis < len(xs):
        raise ValueError("axis %d is out of range for X %r of rank %d" % (axis, ctx.op.inputs["X"][0], len(xs)))
    ctx.share("Out", "X")
    ctx.set_output("Norm", tuple(1 if i == axis % len(xs) else d for i, d in enumerate(xs)), ctx.input_dtype("X"))


@register_op("norm", inputs=["X"], outputs=["Norm", "Out"], attrs={"axis": 1, "epsilon": 1e-10, "is_test": False},
             infer=_norm_infer, share_lod=("X", "Out"))
def norm(ctx, ins, attrs):
    """``Out = X / Norm``, ``Norm = sqrt(sum(X^2 over axis) + epsilon)`` (kept as a size-1 axis)."""
    x = ins["X"]
    n = ctx.xp.sqrt((x * x).sum(axis=attrs["axis"], keepdims=True) + attrs["epsilon"])
    return {"Out": (x / n).astype(x.dtype, copy=False), "Norm": n.astype(x.dtype, copy=False)}


@register_grad("norm", inputs=["X", "Norm", "Out@GRAD"])
def norm_grad(ctx, ins, attrs):
    x, n, d = ins["X"], ins["Norm"], ins["Out@GRAD"]
    dx = (d - x * (d * x).sum(axis=attrs["axis"], keepdims=True) / (n * n)) / n
    return {"X@GRAD": dx.astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ lrn
def _lrn_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None and len(xs) != 4:
        raise ValueError("X %r must be 4-D, got shape %s" % (ctx.op.inputs["X"][0], list(xs)))
    ctx.share("Out", "X")
    ctx.share("MidOut", "X")


def _window_sum(xp, sq, n):
    """Sum over the channel window [c - (n-1)/2, c + n/2] (clipped) of an NCHW array."""
    c = sq.shape[1]
    before = (n - 1) // 2
    pad = xp.zeros((sq.shape[0], c + n - 1) + tuple(sq.shape[2:]), dtype=sq.dtype)
    pad[:, before:before + c] = sq
    csum = xp.concatenate([xp.zeros_like(pad[:, :1]), xp.cumsum(pad, axis=1)], axis=1)
    return csum[:, n:n + c] - csum[:, :c]


def _lrn_layout(attrs):
    fmt = attrs.get("data_format") or "AnyLayout"
    if fmt not in ("NCHW", "NHWC", "AnyLayout"):
        raise ValueError("data_format must be NCHW or NHWC, got %r" % fmt)
    return fmt == "NHWC"


@register_op("lrn", inputs=["X"], outputs=["Out", "MidOut"],
             attrs={"n": 5, "k": 2.0, "alpha": 1e-4, "beta": 0.75, "data_format": "AnyLayout", "is_test": False},
             infer=_lrn_infer)
def lrn(ctx, ins, attrs):
    """Local response normalisation across channels: ``MidOut = k + alpha * sum(X^2 over the n
    channels centred on c)``, ``Out = X * MidOut^-beta``."""
    xp = ctx.xp
    last = _lrn_layout(attrs)
    x = _to_channel_first(ins["X"], last)
    mid = attrs["k"] + attrs["alpha"] * _window_sum(xp, x * x, int(attrs["n"]))
    out = x * mid ** (-attrs["beta"])
    return {"Out": _from_channel_first(xp, out.astype(x.dtype, copy=False), last),
            "MidOut": _from_channel_first(xp, mid.astype(x.dtype, copy=False), last)}


@register_grad("lrn", inputs=["X", "Out", "MidOut", "Out@GRAD"])
def lrn_grad(ctx, ins, attrs):
    xp = ctx.xp
    last = _lrn_layout(attrs)
    x, out, mid, d = (_to_channel_first(ins[s], last) for s in ("X", "Out", "MidOut", "Out@GRAD"))
    n, beta = int(attrs["n"]), attrs["beta"]
    # dOut_j/dX_i = delta_ij mid_j^-b - 2 alpha b x_i x_j mid_j^(-b-1) for every j whose window
    # holds i: the channels j in [i - after, i + before], the window mirrored (summed on the
    # channel-reversed array)
    s = d * out / mid
    mirrored = _window_sum(xp, s[:, ::-1], n)[:, ::-1]
    dx = d * mid ** (-beta) - 2.0 * attrs["alpha"] * beta * x * mirrored
    return {"X@GRAD": _from_channel_first(xp, dx.astype(x.dtype, copy=False), last)}


# ------------------------------------------------------------------ affine_channel
def _affine_view(x, attrs):
    last = (attrs.get("data_layout") or "AnyLayout") == "NHWC"
    return (1,) * (x.ndim - 1) + (-1,) if last else (1, -1) + (1,) * (x.ndim - 2)


@register_op("affine_channel", inputs=["X", "Scale", "Bias"], outputs=["Out"], attrs={"data_layout": "AnyLayout"},
             infer=lambda c: c.share("Out", "X"))
def affine_channel(ctx, ins, attrs):
    """``Out = X * Scale + Bias`` per channel (axis 1, or the last axis for NHWC)."""
    x = ins["X"]
    v = _affine_view(x, attrs)
    return {"Out": (x * ins["Scale"].reshape(v) + ins["Bias"].reshape(v)).astype(x.dtype, copy=False)}


@register_grad("affine_channel", inputs=["X", "Scale", "Out@GRAD"], outputs=["X@GRAD?", "Scale@GRAD?", "Bias@GRAD?"])
def affine_channel_grad(ctx, ins, attrs):
    x, d = ins["X"], ins["Out@GRAD"]
    v = _affine_view(x, attrs)
    ch = x.ndim - 1 if v[-1] == -1 else 1
    axes = tuple(a for a in range(x.ndim) if a != ch)
    return {"X@GRAD": d * ins["Scale"].reshape(v), "Scale@GRAD": (d * x).sum(axis=axes), "Bias@GRAD": d.sum(axis=axes)}


# ------------------------------------------------------------------ data_norm
_DATA_NORM_ATTRS = {"epsilon": 1e-4, "slot_dim": -1, "summary_decay_rate": 0.9999999, "enable_scale_and_shift": False,
                    "data_layout": "NCHW", "sync_stats": False}


def _dn_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    ctx.share("Y", "X")
    c = xs[-1] if ctx.attr("data_layout") == "NHWC" else xs[1]
    ctx.set_output("Means", (c,), ctx.input_dtype("X"))
    ctx.set_output("Scales", (c,), ctx.input_dtype("X"))


@register_op("data_norm", inputs=["scale_w?", "bias?", "X", "BatchSize", "BatchSum", "BatchSquareSum"],
             outputs=["Y", "Means", "Scales", "BatchSize?", "BatchSum?", "BatchSquareSum?"], attrs=_DATA_NORM_ATTRS,
             infer=_dn_infer)
def data_norm(ctx, ins, attrs):
    """Normalise with accumulated statistics: ``Means = BatchSum / BatchSize``,
    ``Scales = sqrt(BatchSize / BatchSquareSum)``, ``Y = (X - Means) * Scales`` (then ``* scale_w +
    bias`` with ``enable_scale_and_shift``). The statistics are left as they are: their "gradients"
    are this batch's count, sum and squared deviation, which the optimizer folds in.

    ``slot_dim`` > 0 (CTR features: each row is slots of ``slot_dim`` values, the first the show
    count): a slot whose show is 0 (|show| < 1e-7) gives zeros, as in Paddle 1.8."""
    x = ins["X"]
    means = ins["BatchSum"] / ins["BatchSize"]
    scales = ctx.xp.sqrt(ins["BatchSize"] / ins["BatchSquareSum"])
    y = (x - means) * scales
    if attrs["enable_scale_and_shift"]:
        y = y * ins["scale_w"] + ins["bias"]
    shown = _shown_slots(ctx.xp, x, attrs)
    if shown is not None:
        y = ctx.xp.where(shown, y, 0)
    return {"Y": y.astype(x.dtype, copy=False), "Means": means, "Scales": scales}


def _shown_slots(xp, x, attrs):
    """With ``slot_dim`` > 0: per element of X, whether its slot's show value is not 0."""
    slot = int(attrs["slot_dim"])
    if slot <= 0 or x.shape[0] == 0:
        return None
    shows = x[:, ::slot]
    return xp.repeat((shows <= -1e-7) | (shows >= 1e-7), slot, axis=1)[:, :x.shape[1]]


@register_grad("data_norm", inputs=["X", "Means", "Scales", "scale_w?", "bias?", "Y@GRAD"],
               outputs=["X@GRAD?", "BatchSize@GRAD?", "BatchSum@GRAD?", "BatchSquareSum@GRAD?", "scale_w@GRAD?",
                        "bias@GRAD?"])
def data_norm_grad(ctx, ins, attrs):
    """The statistics' "gradients": this batch's count, sum and summed squared deviation (+ count *
    epsilon). With ``slot_dim`` > 0, as Paddle 1.8: only shown slots count, and per column the sum
    and squared deviation are divided by that count, the count given as 1 (0 for a column never
    shown); with ``enable_scale_and_shift`` unshown slots get no gradient at all."""
    xp = ctx.xp
    x, d, means, scales = ins["X"], ins["Y@GRAD"], ins["Means"], ins["Scales"]
    shown = _shown_slots(xp, x, attrs)
    shift = attrs["enable_scale_and_shift"]
    if shown is not None and shift:
        d = xp.where(shown, d, 0)
    res = {}
    if shift:
        res["X@GRAD"] = d * scales * ins["scale_w"]
        res["scale_w@GRAD"] = (d * (x - means) * scales).sum(axis=0)
        res["bias@GRAD"] = d.sum(axis=0)
    else:
        res["X@GRAD"] = d * scales
    if shown is None:
        n = x.shape[0]
        res["BatchSize@GRAD"] = xp.full(means.shape, n, dtype=x.dtype)
        res["BatchSum@GRAD"] = x.sum(axis=0)
        res["BatchSquareSum@GRAD"] = ((x - means) ** 2).sum(axis=0) + n * attrs["epsilon"]
        return res
    count = shown.sum(axis=0).astype(x.dtype)
    per = xp.maximum(count, 1)
    res["BatchSize@GRAD"] = (count > 0).astype(x.dtype)
    res["BatchSum@GRAD"] = xp.where(shown, x, 0).sum(axis=0) / per
    res["BatchSquareSum@GRAD"] = xp.where(shown, (x - means) ** 2, 0).sum(axis=0) / per + count * attrs["epsilon"]
    return res


# ------------------------------------------------------------------ spectral_norm
def _sn_matrix(xp, w, dim):
    """Weight as a matrix with ``dim`` first: (h, w)."""
    perm = (dim,) + tuple(i for i in range(w.ndim) if i != dim)
    return w.transpose(perm).reshape(w.shape[dim], -1), perm


def _sn_power(xp, mat, u, v, iters, eps):
    for _ in range(int(iters)):
        v = mat.T @ u
        v = v / (xp.sqrt((v * v).sum()) + eps)
        u = mat @ v
        u = u / (xp.sqrt((u * u).sum()) + eps)
    return u, v


@register_op("spectral_norm", inputs=["Weight", "U", "V"], outputs=["Out"],
             attrs={"dim": 0, "power_iters": 1, "eps": 1e-12}, infer=lambda c: c.share("Out", "Weight"),
             no_grad=("U", "V"))
def spectral_norm(ctx, ins, attrs):
    """``Weight / sigma``, sigma the largest singular value of Weight (``dim`` first, the rest
    flattened) estimated by ``power_iters`` rounds of power iteration from U and V (not written back)."""
    xp = ctx.xp
    w = ins["Weight"]
    mat, _ = _sn_matrix(xp, w, attrs["dim"])
    u, v = _sn_power(xp, mat, ins["U"].reshape(-1), ins["V"].reshape(-1), attrs["power_iters"], attrs["eps"])
    sigma = u @ mat @ v
    return {"Out": (w / sigma).astype(w.dtype, copy=False)}


@register_grad("spectral_norm", inputs=["Weight", "U", "V", "Out@GRAD"])
def spectral_norm_grad(ctx, ins, attrs):
    """Paddle 1.8's formula, kept for its numbers: ``dW = dOut * (1 - u v^T * sum(W / sigma)) / sigma``
    elementwise (u, v after the power iterations). It is not the exact gradient of ``W / sigma``
    (that is ``(dOut - u v^T * sum(dOut * W) / sigma) / sigma``), but it is what Paddle trains with."""
    xp = ctx.xp
    w, d = ins["Weight"], ins["Out@GRAD"]
    dim = attrs["dim"]
    mat, perm = _sn_matrix(xp, w, dim)
    u, v = _sn_power(xp, mat, ins["U"].reshape(-1), ins["V"].reshape(-1), attrs["power_iters"], attrs["eps"])
    sigma = u @ mat @ v
    dmat, _ = _sn_matrix(xp, d, dim)
    g = dmat * (1.0 - xp.outer(u, v) * (mat / sigma).sum()) / sigma
    inv = np.argsort(perm)
    shaped = g.reshape(tuple(w.shape[p] for p in perm)).transpose(tuple(int(i) for i in inv))
    return {"Weight@GRAD": shaped.astype(w.dtype, copy=False)}
