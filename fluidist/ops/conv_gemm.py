"""conv2d as one matrix product over a strided view (``groups == 1``), and its gradient.

The input is copied once into a zero-bordered channel-last buffer (N, H + pads, W + pads, C); a
strided view of it (``as_strided``: no copy) shows every output position's window as
(N, Ho, Wo, kh, kw, C), and one copy of that view makes the patch matrix A (N*Ho*Wo, kh*kw*C), whose
rows run over contiguous (kw, C) stretches of the buffer. Then

- forward: ``Y = A @ F^T`` with F the filter as (M, kh*kw*C): one GEMM, Y is the channel-last output;
- filter gradient: ``dF = dY^T @ A`` (A rebuilt from the input: one copy, cheaper than keeping it);
- input gradient, stride 1: the forward convolution of dY, padded by ``(k - 1) * dilation - pad``, with
  the filter flipped in space and its channels swapped (one patch copy, one GEMM);
- input gradient, other strides: ``dA = dY @ F``, added back window by window (kh*kw strided adds of
  (N, Ho, Wo, C) blocks) into a zeroed channel-last buffer, then cropped and moved to channel-first.

The buffers (the padded input, A, the input-gradient buffer) are workspaces kept per thread and
reused from step to step (``workspace``): a multi-MB array allocated afresh every step costs page
faults. Their contents never outlive a kernel call, but for the zero borders of the padded inputs:
those are zeroed once, when the buffer is made, and never written after (a call writes the
interior only), which saves a device the four launches of zeroing them at every call. Grouped
convolutions and other ranks use ``conv_nd``'s im2col.
"""
import threading

import numpy as np

_LOCAL = threading.local()
_MAX_WORKSPACES = 32


def workspace(xp, key, shape, dtype, zeroed=False):
    """A scratch array of ``shape`` / ``dtype`` kept for this thread under ``key`` and reused by the
    next call with the same key, shape and dtype on the same device (its contents are whatever the
    last user left; ``zeroed``: all zero when it is made). The device is part of the key: a thread of
    a data-parallel pool runs whichever place is next, and a GPU refuses a buffer of another device."""
    cache = getattr(_LOCAL, "buffers", None)
    if cache is None:
        cache = _LOCAL.buffers = {}
    device = None if xp is np else xp.cuda.runtime.getDevice()
    k = (key, xp, device, shape, dtype)          # (no str(dtype): slow, it is called several times a step)
    buf = cache.pop(k, None)
    if buf is None:
        if len(cache) >= _MAX_WORKSPACES:
            cache.pop(next(iter(cache)))
        buf = (xp.zeros if zeroed else xp.empty)(shape, dtype=dtype)
    cache[k] = buf       # most recently used last
    return buf


def _zero_bordered(xp, key, shape, pads, dtype):
    """The workspace of a padded input: zero when made, and keyed by its pads too, so that every call
    that gets it writes the same interior and the borders stay zero."""
    return workspace(xp, (key, tuple(tuple(side) for side in pads)), shape, dtype, zeroed=True)


def _padded_channel_last(xp, x, pads, key):
    """``x`` (N, C, H, W) copied into the interior of a zero-bordered (N, H + pads, W + pads, C)
    workspace (one copy: the borders are zero already)."""
    n, c, h, w = x.shape
    (t, b), (l, r) = pads
    buf = _zero_bordered(xp, key, (n, h + t + b, w + l + r, c), pads, x.dtype)
    buf[:, t:h + t, l:w + l] = x.transpose(0, 2, 3, 1)
    return buf


def _patches(xp, xh, ksize, strides, dilations, out_sizes, key):
    """The patch matrix A (N*Ho*Wo, kh*kw*C) of the channel-last padded input ``xh``."""
    n, _, _, c = xh.shape
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = ksize, strides, dilations, out_sizes
    s_n, s_h, s_w, s_c = xh.strides
    view = xp.lib.stride_tricks.as_strided(xh, shape=(n, ho, wo, kh, kw, c),
                                           strides=(s_n, s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c))
    a = workspace(xp, key, (n * ho * wo, kh * kw * c), xh.dtype)
    a.reshape(view.shape)[...] = view
    return a


def _columns(xp, x, pads, ksize, strides, dilations, out_sizes, key):
    """The column matrix (C*kh*kw, N*Ho*Wo) of channel-first ``x``, from a strided view of its padded
    copy; its rows run over output rows (Wo values, contiguous at stride 1)."""
    n, c, h, w = x.shape
    (t, b), (l, r) = pads
    if t or b or l or r:
        xpad = _zero_bordered(xp, key + ".padded", (n, c, h + t + b, w + l + r), pads, x.dtype)
        xpad[:, :, t:h + t, l:w + l] = x
    else:
        xpad = x
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = ksize, strides, dilations, out_sizes
    s_n, s_c, s_h, s_w = xpad.strides
    view = xp.lib.stride_tricks.as_strided(xpad, shape=(c, kh, kw, n, ho, wo),
                                           strides=(s_c, s_h * dh, s_w * dw, s_n, s_h * sh, s_w * sw))
    cols = workspace(xp, key, (c * kh * kw, n * ho * wo), x.dtype)
    cols.reshape(view.shape)[...] = view
    return cols


def channel_last_is_better(c, kw, wo):
    """Which copy moves longer contiguous runs: channel-last patches copy runs of kw*C values,
    channel-first columns runs of Wo values (the first layer of a CNN has C = 1 or 3)."""
    return kw * c >= wo


def _filter_matrix(f):
    """Filter (M, C, kh, kw) as (M, kh*kw*C), the column order of the patch matrix."""
    return f.transpose(0, 2, 3, 1).reshape(f.shape[0], -1)


def conv2d_forward(xp, x, f, pads, strides, dilations, out_sizes, bias=None):
    """Cross-correlation of ``x`` (N, C, H, W) with ``f`` (M, C, kh, kw), plus ``bias`` (M,) when
    given; the output is channel-first (N, M, Ho, Wo)."""
    n, c = x.shape[:2]
    m = f.shape[0]
    ho, wo = out_sizes
    out = xp.empty((n, m, ho, wo), dtype=x.dtype)
    if not channel_last_is_better(c, f.shape[3], wo):
        cols = _columns(xp, x, pads, f.shape[2:], strides, dilations, out_sizes, "conv2d.columns")
        y = f.reshape(m, -1) @ cols                  # (M, N*Ho*Wo)
        out[...] = y.reshape(m, n, ho, wo).transpose(1, 0, 2, 3)
        if bias is not None:
            out += bias.reshape(1, -1, 1, 1)
        return out
    xh = _padded_channel_last(xp, x, pads, "conv2d.input")
    a = _patches(xp, xh, f.shape[2:], strides, dilations, out_sizes, "conv2d.patches")
    y = a @ _filter_matrix(f).T                      # (N*Ho*Wo, M): channel-last
    out[...] = y.reshape(n, ho, wo, m).transpose(0, 3, 1, 2)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)
    return out


def _full_pads(ksize, pads, dilations):
    """The padding of dY that makes dX a stride-1 correlation of it with the flipped filter:
    ``(k - 1) * d - pad`` on each side; None when a side would be negative (padding wider than the
    dilated window)."""
    full = tuple(tuple((k - 1) * d - p for p in side) for k, side, d in zip(ksize, pads, dilations))
    return None if any(v < 0 for side in full for v in side) else full


def conv2d_input_grad(xp, f, dy, pads, dilations):
    """dX of a stride-1 convolution, as the forward convolution of dY (padded by ``_full_pads``) with
    the filter flipped in space and with its in / out channels swapped: one patch copy and one GEMM
    (instead of a GEMM to per-window gradients and kh*kw strided adds of them). None when the padding
    does not allow it."""
    full = _full_pads(f.shape[2:], pads, dilations)
    if full is None:
        return None
    g = xp.ascontiguousarray(f[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))     # (C, M, kh, kw)
    h = dy.shape[2] + full[0][0] + full[0][1] - dilations[0] * (f.shape[2] - 1)
    w = dy.shape[3] + full[1][0] + full[1][1] - dilations[1] * (f.shape[3] - 1)
    return conv2d_forward(xp, dy, g, full, (1, 1), dilations, (h, w))


def conv2d_backward(xp, x, f, dy, pads, strides, dilations, want_x=True, want_f=True):
    """(dX, dF) of ``conv2d_forward`` (None for the one not wanted)."""
    if want_x and tuple(strides) == (1, 1):
        dx = conv2d_input_grad(xp, f, dy, pads, dilations)
        if dx is not None:
            _, df = conv2d_backward(xp, x, f, dy, pads, strides, dilations, False, want_f) if want_f else (None, None)
            return dx.astype(x.dtype, copy=False), df
    if not channel_last_is_better(x.shape[1], f.shape[3], dy.shape[3]):
        return _backward_channel_first(xp, x, f, dy, pads, strides, dilations, want_x, want_f)
    n, c, h, w = x.shape
    m, _, kh, kw = f.shape
    ho, wo = dy.shape[2:]
    dyh = workspace(xp, "conv2d.dy", (n, ho, wo, m), dy.dtype)
    dyh[...] = dy.transpose(0, 2, 3, 1)
    dy2 = dyh.reshape(n * ho * wo, m)
    dx = df = None
    if want_f:
        xh = _padded_channel_last(xp, x, pads, "conv2d.input")
        a = _patches(xp, xh, (kh, kw), strides, dilations, (ho, wo), "conv2d.patches")
        df = xp.ascontiguousarray((dy2.T @ a).reshape(m, kh, kw, c).transpose(0, 3, 1, 2))
    if want_x:
        da = (dy2 @ _filter_matrix(f)).reshape(n, ho, wo, kh, kw, c)
        (t, b), (l, r) = pads
        dxh = _scatter_windows(xp, (n, h + t + b, w + l + r, c), (kh, kw), (ho, wo), strides, dilations,
                               "conv2d.dx", lambda i, j: da[:, :, :, i, j], dy.dtype, channel_last=True)
        dx = xp.empty((n, c, h, w), dtype=x.dtype)
        dx[...] = dxh[:, t:t + h, l:l + w].transpose(0, 3, 1, 2)
    return dx, df


def _scatter_windows(xp, padded_shape, ksize, out_sizes, strides, dilations, key, block, dtype, channel_last):
    """The adjoint of the window view: ``block(i, j)`` (the gradient of kernel offset (i, j) at
    every output position) added into a zeroed padded buffer at the positions it was read from."""
    (kh, kw), (ho, wo), (sh, sw), (dh, dw) = ksize, out_sizes, strides, dilations
    buf = workspace(xp, key, padded_shape, dtype)
    buf[...] = 0
    for i in range(kh):
        rows = slice(i * dh, i * dh + sh * (ho - 1) + 1, sh)
        for j in range(kw):
            cols = slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)
            if channel_last:
                buf[:, rows, cols] += block(i, j)
            else:
                buf[:, :, rows, cols] += block(i, j)
    return buf


def _backward_channel_first(xp, x, f, dy, pads, strides, dilations, want_x, want_f):
    n, c, h, w = x.shape
    m, _, kh, kw = f.shape
    ho, wo = dy.shape[2:]
    dyc = workspace(xp, "conv2d.dy.cf", (m, n, ho, wo), dy.dtype)
    dyc[...] = dy.transpose(1, 0, 2, 3)
    dy2 = dyc.reshape(m, n * ho * wo)
    dx = df = None
    if want_f:
        cols = _columns(xp, x, pads, (kh, kw), strides, dilations, (ho, wo), "conv2d.columns")
        df = (dy2 @ cols.T).reshape(f.shape).astype(f.dtype, copy=False)
    if want_x:
        dcols = (f.reshape(m, -1).T @ dy2).reshape(c, kh, kw, n, ho, wo)
        (t, b), (l, r) = pads
        dxp = _scatter_windows(xp, (n, c, h + t + b, w + l + r), (kh, kw), (ho, wo), strides, dilations,
                               "conv2d.dx.cf", lambda i, j: dcols[:, i, j].transpose(1, 0, 2, 3), dy.dtype,
                               channel_last=False)
        dx = xp.ascontiguousarray(dxp[:, :, t:t + h, l:l + w])
    return dx, df
