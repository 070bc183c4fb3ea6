"""Deformable convolution: ``deformable_conv`` (DCN v2, modulated by ``Mask``) and
``deformable_conv_v1`` (DCN v1), with their gradients (Input, Offset, Mask, Filter).

Kernel tap ``k = (kh, kw)`` of output cell ``(oh, ow)`` samples the input at
``(oh * stride - pad + kh * dilation + dy, ow * stride - pad + kw * dilation + dx)``, where
``(dy, dx)`` are Offset's channels ``2k`` and ``2k + 1`` of the tap's deformable group, by bilinear
interpolation (corners outside the input read 0; a point at or beyond -1 / the size reads 0); v2
multiplies the sample by Mask's channel ``k``. The samples form the im2col matrix a grouped
convolution multiplies with Filter.
"""
import numpy as np

from ..core.tensor import scatter_add
from ..framework.registry import register_grad, register_op

_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "dilations": [1, 1], "groups": 1, "deformable_groups": 1,
          "im2col_step": 64}


def _out_size(size, k, stride, pad, dil):
    return (size + 2 * pad - (dil * (k - 1) + 1)) // stride + 1


def _infer(ctx):
    xs, fs = ctx.input_shape("Input"), ctx.input_shape("Filter")
    if xs is None or fs is None:
        return
    s, p, d = ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("dilations")
    out = [-1 if xs[2 + i] < 0 else _out_size(xs[2 + i], fs[2 + i], s[i], p[i], d[i]) for i in range(2)]
    ctx.set_output("Output", (xs[0], fs[0]) + tuple(out), ctx.input_dtype("Input"))


class _Samples:
    """The bilinear sampling of one deformable convolution: per image, deformable group, tap and output
    cell, the four corner positions (into the input padded by one zero pixel a side) and weights."""

    def __init__(self, xp, x, offset, w_shape, attrs):
        n, c, h, w = x.shape
        kh, kw = w_shape[2:]
        (sh, sw), (ph, pw), (dh, dw) = attrs["strides"], attrs["paddings"], attrs["dilations"]
        dg = attrs["deformable_groups"] or 1
        oh, ow = _out_size(h, kh, sh, ph, dh), _out_size(w, kw, sw, pw, dw)
        k = kh * kw
        if offset.shape != (n, 2 * dg * k, oh, ow) or c % dg:
            raise ValueError("Offset must be [N, 2 * deformable_groups * KH * KW, OH, OW] = %s and the input "
                             "channels (%d) a multiple of deformable_groups (%d); got Offset %s"
                             % ([n, 2 * dg * k, oh, ow], c, dg, list(offset.shape)))
        self.shape, self.dg, self.k, self.out = (n, c, h, w), dg, k, (oh, ow)
        off = offset.reshape(n, dg, k, 2, oh, ow)
        base_h = (xp.arange(oh) * sh - ph)[:, None] + (xp.arange(kh) * dh).repeat(kw)[:, None, None]   # [K, OH, 1]
        base_w = (xp.arange(ow) * sw - pw)[None, :] + xp.tile(xp.arange(kw) * dw, kh)[:, None, None]  # [K, 1, OW]
        y = base_h[None, None] + off[:, :, :, 0]           # [N, DG, K, OH, OW]
        x_ = base_w[None, None] + off[:, :, :, 1]
        self.inside = (y > -1) & (x_ > -1) & (y < h) & (x_ < w)
        y0, x0 = xp.floor(y), xp.floor(x_)
        ly, lx = y - y0, x_ - x0
        self.ly, self.lx = ly, lx
        y0i, x0i = xp.clip(y0, -1, h).astype(np.int64) + 1, xp.clip(x0, -1, w).astype(np.int64) + 1
        self.corners = [(y0i, x0i), (y0i, xp.minimum(x0i + 1, w + 1)), (xp.minimum(y0i + 1, h + 1), x0i),
                        (xp.minimum(y0i + 1, h + 1), xp.minimum(x0i + 1, w + 1))]
        self.weights = [(1 - ly) * (1 - lx), (1 - ly) * lx, ly * (1 - lx), ly * lx]

    def padded(self, xp, x):
        n, c, h, w = self.shape
        return xp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))).reshape(n, self.dg, c // self.dg, h + 2, w + 2)

    def corner_values(self, xp, xpad):
        """[4] of [N, DG, C/DG, K, OH, OW]: the input at each corner of each sample."""
        n = self.shape[0]
        img = xp.arange(n)[:, None, None, None, None, None]
        grp = xp.arange(self.dg)[None, :, None, None, None, None]
        chan = xp.arange(self.shape[1] // self.dg)[None, None, :, None, None, None]
        return [xpad[img, grp, chan, yi[:, :, None], xi[:, :, None]] for yi, xi in self.corners]

    def values(self, xp, xpad):
        """The bilinear samples [N, DG, C/DG, K, OH, OW] (0 outside)."""
        vals = sum(wt[:, :, None] * v for wt, v in zip(self.weights, self.corner_values(xp, xpad)))
        return xp.where(self.inside[:, :, None], vals, 0)


def _columns(xp, samples, x, mask):
    """The im2col matrix [N, C * K, OH * OW] (v2: the samples times the mask)."""
    vals = samples.values(xp, samples.padded(xp, x))
    if mask is not None:
        n, dg, k = samples.shape[0], samples.dg, samples.k
        vals = vals * mask.reshape(n, dg, 1, k, *samples.out)
    n, c = samples.shape[:2]
    return vals.reshape(n, c * samples.k, -1), vals


def _forward(ctx, ins, attrs, mask):
    xp = ctx.xp
    x, w = ins["Input"], ins["Filter"]
    g = attrs["groups"] or 1
    samples = _Samples(xp, x, ins["Offset"], w.shape, attrs)
    cols, _ = _columns(xp, samples, x, mask)
    n, oc = x.shape[0], w.shape[0]
    wg = w.reshape(g, oc // g, -1)
    cg = cols.reshape(n, g, -1, cols.shape[-1])
    out = xp.einsum("gok,ngkp->ngop", wg, cg)
    return out.reshape((n, oc) + samples.out).astype(x.dtype, copy=False)


def _backward(ctx, ins, attrs, mask):
    """Gradients of Input, Offset, Mask (v2) and Filter."""
    xp = ctx.xp
    x, w, d = ins["Input"], ins["Filter"], ins["Output@GRAD"]
    g = attrs["groups"] or 1
    s = _Samples(xp, x, ins["Offset"], w.shape, attrs)
    n, c, h, wd = s.shape
    xpad = s.padded(xp, x)
    corner_vals = s.corner_values(xp, xpad)
    raw = xp.where(s.inside[:, :, None], sum(wt[:, :, None] * v for wt, v in zip(s.weights, corner_vals)), 0)
    m = mask.reshape(n, s.dg, 1, s.k, *s.out) if mask is not None else 1.0
    cols = (raw * m).reshape(n, g, -1, s.out[0] * s.out[1])
    oc = w.shape[0]
    dout = d.reshape(n, g, oc // g, -1)
    res = {"Filter@GRAD": xp.einsum("ngop,ngkp->gok", dout, cols).reshape(w.shape)}
    dcol = xp.einsum("gok,ngop->ngkp", w.reshape(g, oc // g, -1), dout).reshape(raw.shape)
    dval = xp.where(s.inside[:, :, None], dcol * m, 0)
    # input: each sample's gradient spread over its four corners
    dpad = xp.zeros(xpad.shape, dtype=d.dtype)
    img = xp.broadcast_to(xp.arange(n)[:, None, None, None, None, None], dval.shape)
    grp = xp.broadcast_to(xp.arange(s.dg)[None, :, None, None, None, None], dval.shape)
    chan = xp.broadcast_to(xp.arange(c // s.dg)[None, None, :, None, None, None], dval.shape)
    for (yi, xi), wt in zip(s.corners, s.weights):
        scatter_add(xp, dpad, (img, grp, chan, xp.broadcast_to(yi[:, :, None], dval.shape),
                               xp.broadcast_to(xi[:, :, None], dval.shape)), dval * wt[:, :, None])
    res["Input@GRAD"] = dpad.reshape(n, c, h + 2, wd + 2)[:, :, 1:-1, 1:-1].astype(x.dtype, copy=False)
    # offsets: the derivative of the interpolation along y and x
    v1, v2, v3, v4 = corner_vals
    dy = (1 - s.lx)[:, :, None] * (v3 - v1) + s.lx[:, :, None] * (v4 - v2)
    dx = (1 - s.ly)[:, :, None] * (v2 - v1) + s.ly[:, :, None] * (v4 - v3)
    doff = xp.stack([(dval * dy).sum(axis=2), (dval * dx).sum(axis=2)], axis=3)       # [N, DG, K, 2, OH, OW]
    res["Offset@GRAD"] = doff.reshape(ins["Offset"].shape).astype(x.dtype, copy=False)
    if mask is not None:
        res["Mask@GRAD"] = xp.where(s.inside, (dcol * raw).sum(axis=2), 0).reshape(mask.shape).astype(x.dtype)
    return res


@register_op("deformable_conv", inputs=["Input", "Offset", "Mask", "Filter"], outputs=["Output"], attrs=_ATTRS,
             infer=_infer)
def deformable_conv(ctx, ins, attrs):
    """Modulated deformable convolution (DCN v2): each tap's bilinear sample times its Mask value."""
    return {"Output": _forward(ctx, ins, attrs, ins["Mask"])}


@register_grad("deformable_conv", inputs=["Input", "Offset", "Mask", "Filter", "Output@GRAD"])
def deformable_conv_grad(ctx, ins, attrs):
    return _backward(ctx, ins, attrs, ins["Mask"])


@register_op("deformable_conv_v1", inputs=["Input", "Offset", "Filter"], outputs=["Output"], attrs=_ATTRS,
             infer=_infer)
def deformable_conv_v1(ctx, ins, attrs):
    """Deformable convolution (DCN v1): the taps' bilinear samples, unmodulated."""
    return {"Output": _forward(ctx, ins, attrs, None)}


@register_grad("deformable_conv_v1", inputs=["Input", "Offset", "Filter", "Output@GRAD"])
def deformable_conv_v1_grad(ctx, ins, attrs):
    return _backward(ctx, ins, attrs, None)
