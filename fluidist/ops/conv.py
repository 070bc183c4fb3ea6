"""Image ops: conv2d (and depthwise_conv2d), pool2d, batch_norm and dropout, each with its gradient.

Convolution and pooling run on ``conv_nd``'s kernels of any spatial rank (im2col + one matrix product
per group; pooling by strided window slices); this module holds conv2d's and pool2d's checks and
shape rules. Layout: kernels work in NCHW; ``data_format="NHWC"`` is handled by transposing in and out.
"""
import numpy as np

from ..framework.registry import register_grad, register_op
from ..framework.variable import RECOMPUTE_INFIX
from .conv_gemm import conv2d_backward, conv2d_forward
from .math import sum_over_axes
from .shape_tensors import scalar_from_tensor
from .conv_nd import conv_backward, conv_forward, conv_geometry, pool_backward, pool_forward, pool_geometry


# ------------------------------------------------------------------ shared helpers
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


# ------------------------------------------------------------------ conv2d
_CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "use_cudnn": True,
               "use_mkldnn": False, "fuse_relu_before_depthwise_conv": False,
               "padding_algorithm": "EXPLICIT", "data_format": "NCHW"}


def _conv_infer(ctx):
    xs, fs = ctx.input_shape("Input"), ctx.input_shape("Filter")
    if xs is None or fs is None:
        return
    if len(xs) != 4 or len(fs) != 4:
        raise ValueError("conv2d expects a 4-D Input and Filter, got Input %s and Filter %s"
                         % (list(xs), list(fs)))
    last = _channel_last(ctx.attrs)
    nchw = _nchw_shape(xs, last)
    _, _, _, _, (ho, wo) = conv_geometry(nchw, fs, ctx.attrs)
    ctx.set_output("Output", _layout_shape((nchw[0], fs[0], ho, wo), last), ctx.input_dtype("Input"))


def _conv_setup(ins, attrs):
    last = _channel_last(attrs)
    x = _to_nchw(ins["Input"], last)
    f = ins["Filter"]
    geo = conv_geometry(x.shape, f.shape, attrs)
    return last, x, f, geo


def _conv2d_kernel(ctx, ins, attrs):
    """Output = conv(Input, Filter) (+ Bias per channel when given), cross-correlation as in Paddle."""
    xp = ctx.xp
    last, x, f, (pads, strides, dilations, groups, out_sizes) = _conv_setup(ins, attrs)
    if groups == 1:   # one GEMM over a strided view of the input (conv_gemm)
        out = conv2d_forward(xp, x, f, pads, strides, dilations, out_sizes, ins.get("Bias"))
        return {"Output": _from_nchw(out, last, xp)}
    out = conv_forward(xp, x, f, pads, strides, dilations, groups)
    if ins.get("Bias") is not None:
        out = out + ins["Bias"].reshape(1, -1, 1, 1)
    return {"Output": _from_nchw(out, last, xp)}


def _conv2d_grad_kernel(ctx, ins, attrs):
    xp = ctx.xp
    last, x, f, (pads, strides, dilations, groups, _) = _conv_setup(ins, attrs)
    dy = _to_nchw(ins["Output@GRAD"], last)
    want = ctx.op.outputs
    want_x, want_f = bool(want.get("Input@GRAD")), bool(want.get("Filter@GRAD"))
    if groups == 1:
        dx, df = conv2d_backward(xp, x, f, dy, pads, strides, dilations, want_x, want_f)
    else:
        dx, df = conv_backward(xp, x, f, dy, pads, strides, dilations, groups, want_x, want_f)
    res = {"Filter@GRAD": df}
    if dx is not None:
        res["Input@GRAD"] = _from_nchw(dx, last, xp)
    if want.get("Bias@GRAD"):
        res["Bias@GRAD"] = sum_over_axes(xp, dy, (0, 2, 3)).reshape(-1)
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


def _pool_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    if len(xs) != 4:
        raise ValueError("pool2d expects a 4-D X, got shape %s" % list(xs))
    last = _channel_last(ctx.attrs)
    n, c, h, w = _nchw_shape(xs, last)
    _, _, _, (ho, wo) = pool_geometry((n, c, h, w), ctx.attrs)
    ctx.set_output("Out", _layout_shape((n, c, ho, wo), last), ctx.input_dtype("X"))


def _pool2d_kernel(ctx, ins, attrs):
    last = _channel_last(attrs)
    return {"Out": _from_nchw(pool_forward(ctx.xp, _to_nchw(ins["X"], last), attrs), last, ctx.xp)}


def _pool2d_grad_kernel(ctx, ins, attrs):
    """Max pooling sends each output's gradient to the first maximum of its window (row-major), as
    Paddle does; average pooling spreads it over the window divided by the same divisor as forward."""
    last = _channel_last(attrs)
    x, out, d = (_to_nchw(ins[s], last) for s in ("X", "Out", "Out@GRAD"))
    return {"X@GRAD": _from_nchw(pool_backward(ctx.xp, x, out, d, attrs), last, ctx.xp)}


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


@register_op("batch_norm", inputs=["X", "Scale", "Bias", "Mean", "Variance", "MomentumTensor?"],
             outputs=["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"], attrs=_BN_ATTRS,
             infer=_bn_infer, no_grad=("Mean", "Variance", "MomentumTensor"), synced="sync_batch_norm")
def batch_norm(ctx, ins, attrs):
    """Training: normalise with the batch statistics and update the running ones
    (``MeanOut = momentum * Mean + (1 - momentum) * batch_mean``, biased batch variance).
    ``is_test`` / ``use_global_stats``: normalise with the running statistics, left unchanged.
    ``SavedMean`` / ``SavedVariance`` hold the mean and the *inverse* std actually used; a
    ``MomentumTensor`` input, when given, holds the momentum."""
    xp = ctx.xp
    x = ins["X"]
    axes, ch = _bn_axes(x.ndim, attrs)
    view = [1] * x.ndim
    view[ch] = x.shape[ch]
    eps, mom = attrs["epsilon"], float(scalar_from_tensor(ins, "MomentumTensor", attrs["momentum"]))
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


def bn_grad_parts(ctx, ins, attrs):
    """What batch norm's gradient and sync_batch_norm's share: ``(axes, ch, view, inv_std, x_hat,
    dbias, dscale, res)``, ``res`` holding Scale's and Bias's gradients of this device's batch."""
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
    return axes, ch, view, inv_std, x_hat, dbias, dscale, res


@register_grad("batch_norm", inputs=["X", "Scale", "Bias", "Y", "SavedMean", "SavedVariance", "Y@GRAD"],
               synced="sync_batch_norm_grad")
def batch_norm_grad(ctx, ins, attrs):
    x, scale, dy = ins["X"], ins["Scale"], ins["Y@GRAD"]
    axes, ch, view, inv_std, x_hat, dbias, dscale, res = bn_grad_parts(ctx, ins, attrs)
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


@register_op("dropout", inputs=["X", "Seed?"], outputs=["Out", "Mask?"], attrs=_DROPOUT_ATTRS, infer=_dropout_infer,
             share_lod=("X", "Out"), no_grad=("Seed",), host_inputs=("Seed",))
def dropout(ctx, ins, attrs):
    """Training: Mask is 1 with probability 1 - p (uint8); Out = X * Mask, divided by 1 - p for
    ``upscale_in_train``. Test: Out = X * (1 - p) (``downgrade_in_infer``) or X, and no Mask.
    With ``fix_seed`` the mask is drawn from ``seed`` and is the same at every run, as in Paddle.
    A ``Seed`` input (a one-element int32 tensor, a ``seed`` op's: recomputation gives one to each
    dropout) decides the mask instead: two dropouts given the same seed value draw the same mask."""
    xp = ctx.xp
    x = ins["X"]
    impl, p = _dropout_impl(attrs)
    if attrs.get("is_test"):
        if impl == "upscale_in_train":
            return {"Out": x.copy()}
        return {"Out": (x * (1.0 - p)).astype(x.dtype, copy=False)}
    seed_in = ins.get("Seed")
    if seed_in is not None:
        attrs = dict(attrs, fix_seed=True, seed=int(np.asarray(seed_in).reshape(-1)[0]) or 1)
    # (a recomputed dropout, writing <out>@RECOMPUTE@<k>, draws its forward op's mask)
    mask = _dropout_mask(ctx, x.shape, p, attrs, salt=ctx.op.outputs["Out"][0].split(RECOMPUTE_INFIX)[0])
    if impl == "upscale_in_train":
        out = x * mask * (1.0 / (1.0 - p)) if p < 1.0 else xp.zeros_like(x)
    else:
        out = x * mask
    return {"Out": out.astype(x.dtype, copy=False), "Mask": mask}


_DEVICE_RNGS: dict = {}      # (array module, device) -> the generator of unseeded masks drawn there


def _dropout_mask(ctx, shape, p, attrs, salt):
    """The uint8 keep-mask (1 with probability 1 - p). On the host it is drawn by NumPy; on a device
    it is drawn there (``xp.random.RandomState``: cuRAND on a GPU), never uploaded: a GPU's masks
    differ from the CPU's for the same seed, as Paddle's GPU dropout's do from its CPU one's. With
    ``fix_seed`` the generator is seeded from ``seed`` and the op's output name at every call (the
    same mask every run; ``salt``: the output name of the op, or of the op it recomputes); otherwise one generator per device, seeded once from fresh entropy, goes on."""
    xp = ctx.xp
    seed = attrs["seed"] if attrs.get("fix_seed") else 0
    if xp is np:
        return (ctx.rng(seed, salt=salt).random_sample(shape) >= p).astype(np.uint8)
    if seed:
        gen = xp.random.RandomState(int(ctx.rng(seed, salt=salt).randint(2 ** 31 - 1)))
    else:
        key = (xp, xp.cuda.runtime.getDevice())
        gen = _DEVICE_RNGS.get(key)
        if gen is None:
            gen = _DEVICE_RNGS[key] = xp.random.RandomState(int(np.random.SeedSequence().generate_state(1)[0]))
    return (gen.random_sample(shape) >= p).astype(np.uint8)


@register_grad("dropout", inputs=["Mask", "Out@GRAD"])
def dropout_grad(ctx, ins, attrs):
    if attrs.get("is_test"):
        raise ValueError("dropout_grad cannot run with is_test=True: in test mode dropout has no Mask")
    impl, p = _dropout_impl(attrs)
    d = ins["Out@GRAD"]
    mask = ins["Mask"]      # (uint8 times a float array gives that float type: no cast needed)
    if impl == "upscale_in_train":
        return {"X@GRAD": d * mask * (1.0 / (1.0 - p)) if p < 1.0 else ctx.xp.zeros_like(d)}
    return {"X@GRAD": d * mask}

