"""Region-of-interest pooling: ``roi_pool`` (max), ``roi_align`` (bilinear samples averaged),
``psroi_pool`` (position-sensitive average) and ``prroi_pool`` (the exact integral of the bilinear
interpolation), each with its gradient. ROIs are ``[x1, y1, x2, y2]`` rows in input-image pixels
(times ``spatial_scale`` on the feature map); the image of each ROI is its LoD sequence (or the
``RoisLod`` / ``BatchRoINums`` input).

``roi_align``, ``psroi_pool`` and ``prroi_pool`` are separable: a bin's value is ``Ky X Kx^T`` for a
row weight vector ``Ky`` over the feature map's rows and ``Kx`` over its columns, so each ROI is two
small matrix products, and its gradient the transposed products.
"""
import math

import numpy as np

from ..framework.registry import register_grad, register_op

_POOL_ATTRS = {"pooled_height": 1, "pooled_width": 1, "spatial_scale": 1.0}


def _c_round(v):
    """C's ``round`` (halves away from zero)."""
    return math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)


def _roi_images(ctx, rois, batch, lod_in=None, nums_in=None):
    """The image index of each ROI, from ROIs' LoD or the RoisLod / BatchRoINums input (host inputs)."""
    if lod_in is not None:
        offsets = lod_in.reshape(-1).astype(np.int64)
    elif nums_in is not None:
        offsets = np.concatenate([[0], np.cumsum(nums_in.reshape(-1))]).astype(np.int64)
    else:
        lod = ctx.lod("ROIs")
        if not lod:
            raise ValueError("op %r: ROIs %r has no LoD saying which image each ROI is on; feed it as a LoDTensor"
                             % (ctx.op.type, ctx.op.inputs["ROIs"][0]))
        offsets = np.asarray(lod[-1], dtype=np.int64)
    if len(offsets) - 1 != batch or offsets[-1] != rois.shape[0]:
        raise ValueError("op %r: the ROIs %r are split %s over images, but X has %d images and ROIs %d rows"
                         % (ctx.op.type, ctx.op.inputs["ROIs"][0], offsets.tolist(), batch, rois.shape[0]))
    return np.repeat(np.arange(batch), np.diff(offsets))


def _pool_infer(channels=None):
    def infer(ctx):
        xs, rs = ctx.input_shape("X"), ctx.input_shape("ROIs")
        if xs is None or rs is None:
            return
        c = ctx.attr(channels) if channels else xs[1]
        shape = (rs[0], c, ctx.attr("pooled_height"), ctx.attr("pooled_width"))
        ctx.set_output("Out", shape, ctx.input_dtype("X"))
        ctx.set_output("Argmax", shape, "int64")
    return infer


# ------------------------------------------------------------------ roi_pool
def _roi_pool_bins(roi, scale, ph, pw, h, w):
    """Per bin (row range, column range) of one ROI, clipped to the feature map."""
    sw, sh, ew, eh = (_c_round(v * scale) for v in roi)
    rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
    rows = [(min(max(int(math.floor(i * rh / ph)) + sh, 0), h), min(max(int(math.ceil((i + 1) * rh / ph)) + sh, 0), h))
            for i in range(ph)]
    cols = [(min(max(int(math.floor(j * rw / pw)) + sw, 0), w), min(max(int(math.ceil((j + 1) * rw / pw)) + sw, 0), w))
            for j in range(pw)]
    return rows, cols


@register_op("roi_pool", inputs=["X", "ROIs", "RoisLod?"], outputs=["Out", "Argmax"], attrs=_POOL_ATTRS,
             infer=_pool_infer(), no_grad=("ROIs", "RoisLod"), host_inputs=("ROIs", "RoisLod"))
def roi_pool(ctx, ins, attrs):
    """Max pooling of each ROI (corners rounded on the feature map) into ``pooled_height x
    pooled_width`` bins; Argmax holds the flat position of each maximum (-1 for an empty bin, whose
    value is 0)."""
    xp = ctx.xp
    x, rois = ins["X"], np.asarray(ins["ROIs"], dtype=np.float64)
    n, c, h, w = x.shape
    ph, pw = attrs["pooled_height"], attrs["pooled_width"]
    images = _roi_images(ctx, rois, n, ins.get("RoisLod"))
    out = xp.zeros((rois.shape[0], c, ph, pw), dtype=x.dtype)
    arg = xp.full((rois.shape[0], c, ph, pw), -1, dtype=np.int64)
    for r, roi in enumerate(rois):
        rows, cols = _roi_pool_bins(roi, attrs["spatial_scale"], ph, pw, h, w)
        for i, (h0, h1) in enumerate(rows):
            for j, (w0, w1) in enumerate(cols):
                if h1 <= h0 or w1 <= w0:
                    continue
                window = x[images[r], :, h0:h1, w0:w1].reshape(c, -1)
                best = window.argmax(axis=1)
                out[r, :, i, j] = window[xp.arange(c), best]
                arg[r, :, i, j] = (h0 + best // (w1 - w0)) * w + w0 + best % (w1 - w0)
    return {"Out": out, "Argmax": arg}


@register_grad("roi_pool", inputs=["X", "ROIs", "RoisLod?", "Argmax", "Out@GRAD"], outputs=["X@GRAD"])
def roi_pool_grad(ctx, ins, attrs):
    from ..core.tensor import scatter_add
    xp = ctx.xp
    x, arg, d = ins["X"], ins["Argmax"], ins["Out@GRAD"]
    n, c, h, w = x.shape
    images = xp.asarray(_roi_images(ctx, np.asarray(ins["ROIs"]), n, ins.get("RoisLod")))
    dx = xp.zeros((n * c * h * w + 1,), dtype=d.dtype)
    img = xp.broadcast_to(images[:, None, None, None], arg.shape)
    chan = xp.broadcast_to(xp.arange(c)[None, :, None, None], arg.shape)
    # an empty bin (argmax -1) adds into an extra last element, dropped (a mask selection would read
    # its count back on a device)
    at = xp.where(arg >= 0, (img * c + chan) * (h * w) + arg, n * c * h * w)
    scatter_add(xp, dx, at, d)
    return {"X@GRAD": dx[:-1].reshape(x.shape)}


# ------------------------------------------------------------------ roi_align
def _align_axis(start, bin_size, pooled, grid, size):
    """[pooled, size]: the bilinear weight of each feature-map row (column) in each bin's samples,
    summed over the ``grid`` samples of the bin (Paddle's clamping at the borders)."""
    k = np.zeros((pooled, size))
    for p in range(pooled):
        for g in range(grid):
            v = start + p * bin_size + (g + 0.5) * bin_size / grid
            if v < -1.0 or v > size:
                continue
            v = max(v, 0.0)
            low = int(v)
            if low >= size - 1:
                k[p, size - 1] += 1.0
                continue
            k[p, low] += 1 - (v - low)
            k[p, low + 1] += v - low
    return k


def _align_weights(roi, attrs, h, w):
    """(Ky [ph, H], Kx [pw, W]) of one ROI, each divided by its sample count."""
    scale, ph, pw, ratio = attrs["spatial_scale"], attrs["pooled_height"], attrs["pooled_width"], attrs["sampling_ratio"]
    x0, y0, x1, y1 = (v * scale for v in roi)
    rw, rh = max(x1 - x0, 1.0), max(y1 - y0, 1.0)
    gy = ratio if ratio > 0 else int(math.ceil(rh / ph))
    gx = ratio if ratio > 0 else int(math.ceil(rw / pw))
    return _align_axis(y0, rh / ph, ph, gy, h) / gy, _align_axis(x0, rw / pw, pw, gx, w) / gx


@register_op("roi_align", inputs=["X", "ROIs", "RoisLod?"], outputs=["Out"],
             attrs=dict(_POOL_ATTRS, sampling_ratio=-1), infer=_pool_infer(),
             no_grad=("ROIs", "RoisLod"), host_inputs=("ROIs", "RoisLod"))
def roi_align(ctx, ins, attrs):
    """Each bin of each ROI is the mean of ``sampling_ratio^2`` (or ``ceil(bin size)`` per side)
    bilinearly interpolated samples of X."""
    images = _roi_images(ctx, np.asarray(ins["ROIs"]), ins["X"].shape[0], ins.get("RoisLod"))
    return {"Out": _separable_pool(ctx, ins, attrs, _align_weights, images)}


@register_grad("roi_align", inputs=["X", "ROIs", "RoisLod?", "Out@GRAD"], outputs=["X@GRAD"])
def roi_align_grad(ctx, ins, attrs):
    images = _roi_images(ctx, np.asarray(ins["ROIs"]), ins["X"].shape[0], ins.get("RoisLod"))
    return {"X@GRAD": _separable_pool_grad(ctx, ins, attrs, _align_weights, images)}


def _separable_pool(ctx, ins, attrs, weights, images):
    """Out [R, C, ph, pw] = Ky X[image] Kx^T per ROI (``images``: each ROI's)."""
    xp = ctx.xp
    x, rois = ins["X"], np.asarray(ins["ROIs"], dtype=np.float64)
    _, _, h, w = x.shape
    outs = []
    for r, roi in enumerate(rois):
        ky, kx = (xp.asarray(k.astype(x.dtype)) for k in weights(roi, attrs, h, w))
        outs.append(xp.einsum("ph,chw,qw->cpq", ky, x[images[r]], kx))
    shape = (0, x.shape[1], attrs["pooled_height"], attrs["pooled_width"])
    return xp.stack(outs) if outs else xp.zeros(shape, dtype=x.dtype)


def _separable_pool_grad(ctx, ins, attrs, weights, images):
    xp = ctx.xp
    x, rois, d = ins["X"], np.asarray(ins["ROIs"], dtype=np.float64), ins["Out@GRAD"]
    _, _, h, w = x.shape
    dx = xp.zeros(x.shape, dtype=d.dtype)
    for r, roi in enumerate(rois):
        ky, kx = (xp.asarray(k.astype(d.dtype)) for k in weights(roi, attrs, h, w))
        dx[images[r]] += xp.einsum("ph,cpq,qw->chw", ky, d[r], kx)
    return dx


# ------------------------------------------------------------------ psroi_pool
def _ps_weights(roi, attrs, h, w):
    """(Ky, Kx) of one ROI: each bin's 0/1 rows and columns (rounded corners, the end one past),
    Ky divided by the bin's area."""
    scale, ph, pw = attrs["spatial_scale"], attrs["pooled_height"], attrs["pooled_width"]
    sw, sh = _c_round(roi[0]) * scale, _c_round(roi[1]) * scale
    ew, eh = (_c_round(roi[2]) + 1.0) * scale, (_c_round(roi[3]) + 1.0) * scale
    bh, bw = max(eh - sh, 0.1) / ph, max(ew - sw, 0.1) / pw

    def axis(start, size_bin, pooled, size):
        k = np.zeros((pooled, size))
        for p in range(pooled):
            lo = min(max(int(math.floor(p * size_bin + start)), 0), size)
            hi = min(max(int(math.ceil((p + 1) * size_bin + start)), 0), size)
            k[p, lo:hi] = 1.0
        return k
    ky, kx = axis(sh, bh, ph, h), axis(sw, bw, pw, w)
    area = ky.sum(axis=1)[:, None] * kx.sum(axis=1)[None, :]
    return ky, kx, np.where(area > 0, 1.0 / np.where(area > 0, area, 1), 0.0)


def _ps_channels(attrs, channels):
    oc, ph, pw = attrs["output_channels"], attrs["pooled_height"], attrs["pooled_width"]
    if channels != oc * ph * pw:
        raise ValueError("op 'psroi_pool': X has %d channels, not output_channels x pooled_height x pooled_width = %d"
                         % (channels, oc * ph * pw))
    return np.arange(oc * ph * pw).reshape(oc, ph, pw)


def _psroi_infer(ctx):
    xs = ctx.input_shape("X")
    oc, ph, pw = ctx.attr("output_channels"), ctx.attr("pooled_height"), ctx.attr("pooled_width")
    if oc <= 1:     # Paddle 1.8 refuses it too
        raise ValueError("output_channels must be greater than 1, got %d" % oc)
    if xs is not None and xs[1] >= 0 and xs[1] != oc * ph * pw:
        raise ValueError("X has %d channels, not output_channels x pooled_height x pooled_width = %d"
                         % (xs[1], oc * ph * pw))
    _pool_infer("output_channels")(ctx)


@register_op("psroi_pool", inputs=["X", "ROIs"], outputs=["Out"], attrs=dict(_POOL_ATTRS, output_channels=1),
             infer=_psroi_infer, no_grad=("ROIs",), host_inputs=("ROIs",))
def psroi_pool(ctx, ins, attrs):
    """Position-sensitive average pooling (R-FCN): bin (i, j) of output channel c averages input channel
    ``(c * pooled_height + i) * pooled_width + j`` over the bin (0 for an empty bin)."""
    xp = ctx.xp
    x, rois = ins["X"], np.asarray(ins["ROIs"], dtype=np.float64)
    chans = _ps_channels(attrs, x.shape[1])
    images = _roi_images(ctx, rois, x.shape[0])
    outs = []
    for r, roi in enumerate(rois):
        ky, kx, inv = (xp.asarray(k.astype(x.dtype)) for k in _ps_weights(roi, attrs, x.shape[2], x.shape[3]))
        picked = x[images[r]][xp.asarray(chans)]
        outs.append(xp.einsum("ph,cpqhw,qw->cpq", ky, picked, kx) * inv)
    return {"Out": xp.stack(outs) if outs else xp.zeros((0,) + chans.shape, dtype=x.dtype)}


@register_grad("psroi_pool", inputs=["X", "ROIs", "Out@GRAD"], outputs=["X@GRAD"])
def psroi_pool_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, rois, d = ins["X"], np.asarray(ins["ROIs"], dtype=np.float64), ins["Out@GRAD"]
    chans = _ps_channels(attrs, x.shape[1])
    images = _roi_images(ctx, rois, x.shape[0])
    dx = xp.zeros(x.shape, dtype=d.dtype)
    for r, roi in enumerate(rois):
        ky, kx, inv = (xp.asarray(k.astype(d.dtype)) for k in _ps_weights(roi, attrs, x.shape[2], x.shape[3]))
        part = xp.einsum("ph,cpq,qw->cpqhw", ky, d[r] * inv, kx)
        dx[images[r]][xp.asarray(chans.reshape(-1))] += part.reshape((-1,) + x.shape[2:])
    return {"X@GRAD": dx}


# ------------------------------------------------------------------ prroi_pool
def _tent_integral(t):
    """``F(t)``: the integral of the tent ``max(0, 1 - |u|)`` from -inf to t."""
    t = np.clip(t, -1.0, 1.0)
    return np.where(t < 0, 0.5 * (t + 1) ** 2, 1 - 0.5 * (1 - t) ** 2)


def _tent(t):
    return np.maximum(0.0, 1 - np.abs(t))


def _prroi_windows(roi, attrs):
    """(window starts, ends along y and x, bin height, bin width) of one ROI on the feature map."""
    scale, ph, pw = attrs["spatial_scale"], attrs["pooled_height"], attrs["pooled_width"]
    x0, y0, x1, y1 = (v * scale for v in roi)
    bh, bw = max(y1 - y0, 0.0) / ph, max(x1 - x0, 0.0) / pw
    ys, xs = y0 + bh * np.arange(ph), x0 + bw * np.arange(pw)
    return (ys, ys + bh), (xs, xs + bw), bh, bw


def _prroi_weights(roi, attrs, h, w):
    """(Ky, Kx): the integral over each bin of the bilinear weight of each row / column; Ky also
    divided by the bin's area (0 for an empty bin)."""
    (y0, y1), (x0, x1), bh, bw = _prroi_windows(roi, attrs)
    grid_h, grid_w = np.arange(h)[None, :], np.arange(w)[None, :]
    ky = _tent_integral(y1[:, None] - grid_h) - _tent_integral(y0[:, None] - grid_h)
    kx = _tent_integral(x1[:, None] - grid_w) - _tent_integral(x0[:, None] - grid_w)
    area = bh * bw
    return (ky / area if area > 0 else ky * 0), kx


@register_op("prroi_pool", inputs=["X", "ROIs", "BatchRoINums?"], outputs=["Out"], attrs=dict(_POOL_ATTRS),
             infer=_pool_infer(), no_grad=("BatchRoINums",), host_inputs=("ROIs", "BatchRoINums"))
def prroi_pool(ctx, ins, attrs):
    """Precise ROI pooling: each bin is the integral over it of X's bilinear interpolation (0 outside
    the feature map), divided by its area."""
    images = _roi_images(ctx, np.asarray(ins["ROIs"]), ins["X"].shape[0], nums_in=ins.get("BatchRoINums"))
    return {"Out": _separable_pool(ctx, ins, attrs, _prroi_weights, images)}


def _prroi_roi_grad(x_img, roi, dout, attrs):
    """d loss / d ROI [x1, y1, x2, y2] of one ROI: the bins' edges move with the corners."""
    ph, pw = attrs["pooled_height"], attrs["pooled_width"]
    (y0, y1), (x0, x1), bh, bw = _prroi_windows(roi, attrs)
    area = bh * bw
    if area <= 0:
        return np.zeros(4)
    h, w = x_img.shape[1:]
    gh, gw = np.arange(h)[None, :], np.arange(w)[None, :]
    ky = _tent_integral(y1[:, None] - gh) - _tent_integral(y0[:, None] - gh)
    kx = _tent_integral(x1[:, None] - gw) - _tent_integral(x0[:, None] - gw)
    total = np.einsum("ph,chw,qw->cpq", ky, x_img, kx)
    dy0 = -np.einsum("ph,chw,qw->cpq", _tent(y0[:, None] - gh), x_img, kx)
    dy1 = np.einsum("ph,chw,qw->cpq", _tent(y1[:, None] - gh), x_img, kx)
    dx0 = -np.einsum("ph,chw,qw->cpq", ky, x_img, _tent(x0[:, None] - gw))
    dx1 = np.einsum("ph,chw,qw->cpq", ky, x_img, _tent(x1[:, None] - gw))
    fy, fx = (np.arange(ph) / ph)[None, :, None], (np.arange(pw) / pw)[None, None, :]
    gy, gx = fy + 1.0 / ph, fx + 1.0 / pw

    def corner(d_lo, d_hi, lo_w, hi_w, d_area):
        return float((dout * ((d_lo * lo_w + d_hi * hi_w) / area - total * d_area / area ** 2)).sum())
    return attrs["spatial_scale"] * np.array([
        corner(dx0, dx1, 1 - fx, 1 - gx, -bh / pw), corner(dy0, dy1, 1 - fy, 1 - gy, -bw / ph),
        corner(dx0, dx1, fx, gx, bh / pw), corner(dy0, dy1, fy, gy, bw / ph)])


@register_grad("prroi_pool", inputs=["X", "ROIs", "BatchRoINums?", "Out", "Out@GRAD"], outputs=["X@GRAD", "ROIs@GRAD"],
               host="the ROI gradient walks the ROIs one by one, on the host")
def prroi_pool_grad(ctx, ins, attrs):
    rois = np.asarray(ins["ROIs"], dtype=np.float64)
    images = _roi_images(ctx, rois, ins["X"].shape[0], nums_in=ins.get("BatchRoINums"))
    res = {"X@GRAD": _separable_pool_grad(ctx, ins, attrs, _prroi_weights, images)}
    if ctx.op.outputs.get("ROIs@GRAD"):
        x, d = np.asarray(ins["X"], dtype=np.float64), np.asarray(ins["Out@GRAD"], dtype=np.float64)
        grad = np.stack([_prroi_roi_grad(x[images[r]], roi, d[r], attrs) for r, roi in enumerate(rois)]) \
            if len(rois) else np.zeros((0, 4))
        res["ROIs@GRAD"] = ctx.xp.asarray(grad.astype(ins["ROIs"].dtype))
    return res
