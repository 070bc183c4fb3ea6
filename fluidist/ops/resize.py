"""Image resizing ops: ``bilinear_interp``, ``nearest_interp``, ``trilinear_interp`` and ``bicubic_interp``,
with Paddle 1.8's sampling rules and their gradients.

The output size comes from, in order: the ``OutSize`` input, the ``SizeTensor`` inputs, the
``Scale`` input or ``scale`` attr (``int(in * scale)``), else the ``out_d/out_h/out_w`` attrs. Per
spatial dim, with ``ratio = (in - 1) / (out - 1)`` when ``align_corners`` else ``in / out`` (0 for
an output of 1), output k samples:

- nearest: input ``int(ratio * k + 0.5)`` (align_corners) or ``int(ratio * k)``;
- linear: between inputs ``i0 = int(src)`` and ``min(i0 + 1, in - 1)`` at ``src = ratio * k``, or,
  with ``align_mode = 0`` and no align_corners, ``src = max(ratio * (k + 0.5) - 0.5, 0)`` (half-pixel).

- bicubic: Keys' cubic convolution (a = -0.75) over the four inputs around ``floor(src)``, ``src =
  ratio * k`` (align_corners) or ``ratio * (k + 0.5) - 0.5``.

Every method is separable: each output index reads a few input "taps" with weights, one spatial
axis at a time; the gradient is the adjoint (a scatter-add per tap) applied in reverse order. Ratios are float32, as Paddle's kernels compute them.
"""
import itertools

import numpy as np

from ..core.tensor import scatter_add
from ..framework.registry import register_grad, register_op

_INTERP_ATTRS = {"data_layout": "NCHW", "out_d": 0, "out_h": 0, "out_w": 0, "scale": 0.0, "interp_method": "bilinear",
                 "align_corners": True, "align_mode": 1}


def _spatial_rank(type):
    return 3 if type == "trilinear_interp" else 2


def _attr_sizes(attrs, nd):
    return [attrs["out_d"], attrs["out_h"], attrs["out_w"]][-nd:]


def _out_sizes(ctx, ins, attrs, in_sizes):
    nd = len(in_sizes)
    if ins.get("OutSize") is not None:
        sizes = [int(v) for v in np.asarray(ins["OutSize"]).reshape(-1)]
    elif ins.get("SizeTensor"):
        sizes = [int(np.asarray(t).reshape(-1)[0]) for t in ins["SizeTensor"]]
    else:
        scale = attrs["scale"]
        if ins.get("Scale") is not None:
            scale = float(np.asarray(ins["Scale"]).reshape(-1)[0])
        if scale and scale > 0:
            sizes = [int(s * scale) for s in in_sizes]
        else:
            sizes = [int(s) for s in _attr_sizes(attrs, nd)]
    if len(sizes) != nd or any(s <= 0 for s in sizes):
        raise ValueError("op %r: the output size %s must be %d positive ints (from OutSize, SizeTensor, scale or "
                         "out_%s)" % (ctx.op.type, sizes, nd, "/out_".join("dhw"[-nd:])))
    return sizes


def _ratio(in_size, out_size, align_corners):
    if out_size <= 1:
        return np.float32(0.0)
    if align_corners:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _nearest_taps(in_size, out_size, align_corners, align_mode):
    r = _ratio(in_size, out_size, align_corners)
    k = np.arange(out_size, dtype=np.float32)
    idx = (r * k + np.float32(0.5)) if align_corners else r * k
    return [(np.minimum(idx.astype(np.int64), in_size - 1), np.ones(out_size, np.float32))]


def _linear_taps(in_size, out_size, align_corners, align_mode):
    """Two taps per output: out = in[i0] * (1 - d) + in[i1] * d."""
    r = _ratio(in_size, out_size, align_corners)
    k = np.arange(out_size, dtype=np.float32)
    half_pixel = align_mode == 0 and not align_corners
    if half_pixel:
        # Paddle evaluates ratio * (k + 0.5) - 0.5 in double (k + 0.5 is a double), then keeps a float
        wide = np.float64(r) * (k.astype(np.float64) + 0.5) - 0.5
        i0 = np.maximum(wide.astype(np.int64), 0)  # truncation toward zero, then clipped
        d = np.maximum(wide.astype(np.float32), np.float32(0.0)) - i0.astype(np.float32)
    else:
        src = r * k
        i0 = np.maximum(src.astype(np.int64), 0)
        d = src - i0
    i0 = np.minimum(i0, in_size - 1)
    i1 = np.minimum(i0 + 1, in_size - 1)
    return [(i0, (np.float32(1.0) - d).astype(np.float32)), (i1, d.astype(np.float32))]


_CUBIC_A = -0.75


def _cubic_taps(in_size, out_size, align_corners, align_mode):
    """Four taps per output (Keys' cubic convolution, a = -0.75) around ``floor(src)``, with
    ``src = ratio * k`` (align_corners) or ``ratio * (k + 0.5) - 0.5``; taps clamped to the input."""
    r = _ratio(in_size, out_size, align_corners)
    k = np.arange(out_size, dtype=np.float32)
    src = r * k if align_corners else r * (k + np.float32(0.5)) - np.float32(0.5)
    base = np.floor(src).astype(np.int64)
    t = (src - base).astype(np.float64)
    a = _CUBIC_A

    def near(x):   # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):    # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
    return [(np.clip(base - 1 + j, 0, in_size - 1), w.astype(np.float32)) for j, w in enumerate(weights)]


_TAPS = {"nearest": _nearest_taps, "bilinear": _linear_taps, "trilinear": _linear_taps, "bicubic": _cubic_taps}


def _bshape(ndim, axis, n):
    shape = [1] * ndim
    shape[axis] = n
    return shape


def _channel_last(attrs):
    layout = attrs.get("data_layout") or "NCHW"
    if layout not in ("NCHW", "NHWC", "NCDHW", "NDHWC", "AnyLayout"):
        raise ValueError("data_layout must be NCHW or NHWC, got %r" % layout)
    return layout in ("NHWC", "NDHWC")


def _spatial_axes(ndim, last):
    return list(range(1, ndim - 1)) if last else list(range(2, ndim))


def _interp_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    nd = _spatial_rank(ctx.op.type)
    if len(xs) != nd + 2:
        raise ValueError("X %r must be %d-D, got shape %s" % (ctx.op.inputs["X"][0], nd + 2, list(xs)))
    last = _channel_last(ctx.attrs)
    axes = _spatial_axes(len(xs), last)
    out = list(xs)
    dynamic = ctx.has_input("OutSize") or ctx.has_input("Scale")
    scale = ctx.attr("scale")
    for i, a in enumerate(axes):
        if dynamic:
            out[a] = -1
        elif ctx.has_input("SizeTensor"):   # the attr's size where an int stood, -1 where a tensor did
            size = _attr_sizes(ctx.attrs, nd)[i]
            out[a] = size if size > 0 else -1
        elif scale and scale > 0:
            out[a] = int(xs[a] * scale) if xs[a] >= 0 else -1
        else:
            out[a] = _attr_sizes(ctx.attrs, nd)[i]
    ctx.set_output("Out", out, ctx.input_dtype("X"))


def _check_method(ctx, attrs):
    want = ctx.op.type.replace("_grad", "").split("_")[0]
    method = attrs.get("interp_method") or want
    if method != want:
        raise ValueError("op %r: interp_method is %r, but this op resizes by %r" % (ctx.op.type, method, want))
    return method


def _interp_kernel(ctx, ins, attrs):
    xp = ctx.xp
    x = ins["X"]
    taps_of = _TAPS[_check_method(ctx, attrs)]
    axes = _spatial_axes(x.ndim, _channel_last(attrs))
    sizes = _out_sizes(ctx, ins, attrs, [x.shape[a] for a in axes])
    if x.dtype.kind in "iub" and taps_of is _linear_taps:
        taps = [_linear_taps(x.shape[a], o, attrs["align_corners"], attrs["align_mode"]) for a, o in zip(axes, sizes)]
        return {"Out": _integer_linear(xp, x, axes, taps)}
    out = x
    for a, o in zip(axes, sizes):
        shape = _bshape(out.ndim, a, o)
        acc = None
        for index, weight in taps_of(out.shape[a], o, attrs["align_corners"], attrs["align_mode"]):
            term = xp.take(out, xp.asarray(index), axis=a) * xp.asarray(weight.astype(out.dtype)).reshape(shape)
            acc = term if acc is None else acc + term
        out = acc
    return {"Out": out.astype(x.dtype, copy=False)}


def _integer_linear(xp, x, axes, taps):
    """Bi/trilinear resizing of an integer (uint8) image as Paddle 1.8's kernels do it, so that its
    truncation lands where theirs does: per output, the float32 sum over the corners around it of
    value * weight of each axis (in axis order), the corners in Paddle's order (bilinear: the last
    axis's taps outermost; trilinear: the first axis's), truncated to X's dtype."""
    values = x.astype(np.float32)
    outer = [1, 0] if len(axes) == 2 else list(range(len(axes)))   # which axis's taps nest outermost
    acc = None
    for combo in itertools.product(range(2), repeat=len(axes)):
        tap = dict(zip(outer, combo))
        term = values
        for pos, a in enumerate(axes):
            term = xp.take(term, xp.asarray(taps[pos][tap[pos]][0]), axis=a)
        for pos, a in enumerate(axes):
            weight = taps[pos][tap[pos]][1]
            term = term * xp.asarray(weight).reshape(_bshape(term.ndim, a, len(weight)))
        acc = term if acc is None else acc + term
    return acc.astype(x.dtype)


def _scatter_axis(xp, g, index, weight, axis, size):
    """Adjoint of ``take(., index, axis) * weight`` into an axis of ``size``."""
    moved = xp.moveaxis(g, axis, 0)
    w = xp.asarray(weight.astype(g.dtype)).reshape((-1,) + (1,) * (moved.ndim - 1))
    acc = xp.zeros((size,) + tuple(moved.shape[1:]), dtype=g.dtype)
    scatter_add(xp, acc, xp.asarray(index), moved * w)
    return xp.moveaxis(acc, 0, axis)


def _interp_grad_kernel(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    taps_of = _TAPS[_check_method(ctx, attrs)]
    axes = _spatial_axes(x.ndim, _channel_last(attrs))
    in_sizes = [x.shape[a] for a in axes]
    out_sizes = [d.shape[a] for a in axes]
    g = d
    # undo the axes in reverse: the forward resized axes[0] first, on the original sizes
    for i in range(len(axes) - 1, -1, -1):
        a, n, o = axes[i], in_sizes[i], out_sizes[i]
        parts = [_scatter_axis(xp, g, index, weight, a, n)
                 for index, weight in taps_of(n, o, attrs["align_corners"], attrs["align_mode"])]
        g = parts[0]
        for part in parts[1:]:
            g = g + part
    return {"X@GRAD": g.astype(x.dtype, copy=False)}


for _type in ("bilinear_interp", "nearest_interp", "trilinear_interp", "bicubic_interp"):
    register_op(_type, host_inputs=("OutSize", "SizeTensor", "Scale"), inputs=["X", "OutSize?", "SizeTensor*?",
                                                                            "Scale?"], outputs=["Out"],
                attrs=dict(_INTERP_ATTRS, interp_method=_type.split("_")[0]), infer=_interp_infer,
                no_grad=("OutSize", "SizeTensor", "Scale"))(_interp_kernel)
    register_grad(_type, inputs=["X", "Out@GRAD"], outputs=["X@GRAD?"])(_interp_grad_kernel)
