"""Ops of Paddle's text-matching and tree models (``fluid.contrib``'s ``match_matrix_tensor``,
``sequence_topk_avg_pooling``, ``var_conv_2d`` and ``layers.tree_conv``), each with its gradient.

The matching ops work on one "image" per sequence pair: ``match_matrix_tensor`` gives, for the i-th
sequences of X and Y, the ``[dim_t, len_x, len_y]`` matrix ``x W_t y^T``, flattened into one column
of Out (a LoD level of those sizes); ``var_conv_2d`` convolves such flattened
``[channels, rows, cols]`` images (rows and columns counted by the LoD of ROW and COLUMN);
``sequence_topk_avg_pooling`` averages the top-k values of each image row.
"""
import numpy as np

from ..core.tensor import lengths_to_offsets, scatter_add
from ..framework.registry import register_grad, register_op
from .lod_utils import seq_offsets


def _lengths(ctx, slot, value=None):
    return np.diff(np.asarray(seq_offsets(ctx, slot, value), dtype=np.int64))


# ------------------------------------------------------------------ match_matrix_tensor
def _mmt_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None:
        ctx.set_output("Out", (-1, 1), ctx.input_dtype("X"), 1)
        ctx.set_output("Tmp", (-1, 1), ctx.input_dtype("X"))


def _mmt_pairs(ctx, x, y):
    """(x rows, y rows) slices of each sequence pair; X and Y hold as many sequences."""
    ox, oy = seq_offsets(ctx, "X", x), seq_offsets(ctx, "Y", y)
    if len(ox) != len(oy):
        raise ValueError("op 'match_matrix_tensor': X %r holds %d sequences but Y %r holds %d"
                         % (ctx.op.inputs["X"][0], len(ox) - 1, ctx.op.inputs["Y"][0], len(oy) - 1))
    return [(slice(ox[i], ox[i + 1]), slice(oy[i], oy[i + 1])) for i in range(len(ox) - 1)]


@register_op("match_matrix_tensor", inputs=["X", "Y", "W"], outputs=["Out", "Tmp"], attrs={"dim_t": 1},
             infer=_mmt_infer)
def match_matrix_tensor(ctx, ins, attrs):
    """Per sequence pair, ``Out_t = x W[:, t, :] y^T`` for t < dim_t (W [H, dim_t, H]), the
    ``[dim_t, len_x, len_y]`` block flattened; Tmp holds ``x W`` ([len_x, dim_t, H]) flattened."""
    xp = ctx.xp
    x, y, w = ins["X"], ins["Y"], ins["W"]
    h = x.shape[1]
    if w.ndim != 3 or w.shape != (h, attrs["dim_t"], y.shape[1]) or y.shape[1] != h:
        raise ValueError("op 'match_matrix_tensor': W %r must be [H, dim_t, H] = %s for X and Y of width %d; got %s"
                         % (ctx.op.inputs["W"][0], [h, attrs["dim_t"], h], h, list(w.shape)))
    outs, tmps, sizes = [], [], []
    for sx, sy in _mmt_pairs(ctx, x, y):
        tmp = xp.einsum("ai,itj->atj", x[sx], w)
        out = xp.einsum("atj,bj->tab", tmp, y[sy])
        outs.append(out.reshape(-1))
        tmps.append(tmp.reshape(-1))
        sizes.append(out.size)
    ctx.set_lod("Out", [lengths_to_offsets(sizes)])
    empty = xp.zeros((0,), dtype=x.dtype)
    return {"Out": (xp.concatenate(outs) if outs else empty).reshape(-1, 1),
            "Tmp": (xp.concatenate(tmps) if tmps else empty).reshape(-1, 1)}


@register_grad("match_matrix_tensor", inputs=["X", "Y", "W", "Out@GRAD"])
def match_matrix_tensor_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, w, d = ins["X"], ins["Y"], ins["W"], ins["Out@GRAD"].reshape(-1)
    dx, dy, dw = xp.zeros_like(x), xp.zeros_like(y), xp.zeros_like(w)
    at = 0
    for sx, sy in _mmt_pairs(ctx, x, y):
        lx, ly = sx.stop - sx.start, sy.stop - sy.start
        block = d[at:at + attrs["dim_t"] * lx * ly].reshape(attrs["dim_t"], lx, ly)
        at += block.size
        dx[sx] = xp.einsum("tab,itj,bj->ai", block, w, y[sy])
        dy[sy] = xp.einsum("tab,ai,itj->bj", block, x[sx], w)
        dw += xp.einsum("tab,ai,bj->itj", block, x[sx], y[sy])
    return {"X@GRAD": dx, "Y@GRAD": dy, "W@GRAD": dw}


# ------------------------------------------------------------------ sequence_topk_avg_pooling
def _images(ctx, x, channels):
    """Per sequence (image) of X: (offset into X, rows, cols), rows and cols from ROW and COLUMN."""
    rows, cols = _lengths(ctx, "ROW"), _lengths(ctx, "COLUMN")
    offsets = seq_offsets(ctx, "X", x)
    sizes = np.diff(offsets)
    if len(rows) != len(sizes) or len(cols) != len(sizes) or np.any(sizes != channels * rows * cols):
        raise ValueError("op %r: each sequence of X %r must hold channels x rows x cols values (channels %d, rows "
                         "%s from ROW, cols %s from COLUMN); it holds %s"
                         % (ctx.op.type, ctx.op.inputs["X"][0], channels, rows.tolist(), cols.tolist(),
                            sizes.tolist()))
    return [(int(o), int(r), int(c)) for o, r, c in zip(offsets[:-1], rows, cols)]


def _topk_positions(xp, img, k):
    """[..., k] column positions of each row's k largest values (ties: the later column first), -1
    past the row's width."""
    order = xp.argsort(img, axis=-1, kind="stable")[..., ::-1][..., :k]
    if order.shape[-1] < k:
        pad = xp.full(order.shape[:-1] + (k - order.shape[-1],), -1, dtype=order.dtype)
        order = xp.concatenate([order, pad], axis=-1)
    return order


def _topk_infer(ctx):
    ctx.set_output("Out", (-1, ctx.attr("channel_num") * len(ctx.attr("topks"))), ctx.input_dtype("X"),
                   ctx.input_lod_level("ROW"))
    ctx.set_output("pos", (-1,), "int32")


@register_op("sequence_topk_avg_pooling", inputs=["X", "ROW", "COLUMN"], outputs=["Out", "pos"],
             attrs={"topks": [], "channel_num": 0}, infer=_topk_infer, no_grad=("ROW", "COLUMN"))
def sequence_topk_avg_pooling(ctx, ins, attrs):
    """For each image row and channel, the mean of its k largest values for each k of ``topks``
    (fewer values than k: the sum is still divided by k): Out [rows, channels * len(topks)] with
    ROW's LoD; ``pos`` holds the top positions, [rows, channels, max k] per image, flattened."""
    xp = ctx.xp
    x = ins["X"].reshape(-1)
    topks, ch = [int(k) for k in attrs["topks"]], int(attrs["channel_num"])
    kmax = max(topks)
    outs, poss = [], []
    for off, r, c in _images(ctx, x, ch):
        img = x[off:off + ch * r * c].reshape(ch, r, c)
        pos = _topk_positions(xp, img, kmax)
        vals = xp.where(pos >= 0, xp.take_along_axis(img, xp.maximum(pos, 0), axis=-1), 0)
        csum = xp.cumsum(vals, axis=-1)
        means = xp.stack([csum[..., k - 1] / k for k in topks], axis=-1)      # [ch, r, K]
        outs.append(means.transpose(1, 0, 2).reshape(r, ch * len(topks)))
        poss.append(pos.transpose(1, 0, 2).reshape(-1))
    ctx.set_lod("Out", ctx.lod("ROW"))
    return {"Out": xp.concatenate(outs).astype(x.dtype, copy=False),
            "pos": xp.concatenate(poss).astype(np.int32)}


@register_grad("sequence_topk_avg_pooling", inputs=["X", "ROW", "COLUMN", "pos", "Out@GRAD"], outputs=["X@GRAD"])
def sequence_topk_avg_pooling_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    flat = x.reshape(-1)
    topks, ch = [int(k) for k in attrs["topks"]], int(attrs["channel_num"])
    kmax = max(topks)
    dx = xp.zeros(flat.shape, dtype=d.dtype)
    row_at, pos_at = 0, 0
    share = np.zeros((len(topks), kmax))
    for j, k in enumerate(topks):
        share[j, :k] = 1.0 / k
    for off, r, c in _images(ctx, flat, ch):
        pos = ins["pos"].reshape(-1)[pos_at:pos_at + r * ch * kmax].reshape(r, ch, kmax).astype(np.int64)
        pos_at += r * ch * kmax
        dr = d[row_at:row_at + r].reshape(r, ch, len(topks))
        row_at += r
        per_pos = dr @ xp.asarray(share, dtype=d.dtype)                          # [r, ch, kmax]
        base = off + (xp.arange(ch)[None, :, None] * r + xp.arange(r)[:, None, None]) * c
        live = pos >= 0
        scatter_add(xp, dx, (base + xp.maximum(pos, 0))[live], per_pos[live])
    return {"X@GRAD": dx.reshape(x.shape)}


# ------------------------------------------------------------------ var_conv_2d
_VAR_CONV_ATTRS = {"InputChannel": 1, "OutputChannel": 1, "KernelH": 1, "KernelW": 1, "StrideH": 1, "StrideW": 1}


def _var_conv_index(r, c, attrs):
    """(im2col source index into one [in_ch, r, c] image or -1 outside it: [in_ch * kh * kw, out cells],
    out rows, out cols); the kernel is centred (offset ``-k // 2``)."""
    kh, kw, sh, sw, ic = (attrs[k] for k in ("KernelH", "KernelW", "StrideH", "StrideW", "InputChannel"))
    oy, ox = (r - 1) // sh + 1 if r else 0, (c - 1) // sw + 1 if c else 0
    ys = (np.arange(oy) * sh)[None, :, None] + (np.arange(kh) - kh // 2)[:, None, None]     # [kh, oy, 1]
    xs = (np.arange(ox) * sw)[None, None, :] + (np.arange(kw) - kw // 2)[:, None, None]     # [kw, 1, ox]
    inside = ((ys >= 0) & (ys < r))[:, None] & ((xs >= 0) & (xs < c))[None, :]              # [kh, kw, oy, ox]
    src = ys[:, None] * c + xs[None, :]
    src = np.where(inside, src, -1).reshape(1, kh * kw, oy * ox)
    chan = (np.arange(ic) * r * c)[:, None, None]
    return np.where(src >= 0, src + chan, -1).reshape(ic * kh * kw, oy * ox), oy, ox


def _var_conv_cols(ctx, x, attrs):
    """Per image: (its offset in X, im2col index, the column matrix)."""
    xp = ctx.xp
    flat = x.reshape(-1)
    out = []
    for off, r, c in _images(ctx, flat, attrs["InputChannel"]):
        idx, _, _ = _var_conv_index(r, c, attrs)
        cols = xp.where(xp.asarray(idx >= 0), flat[xp.asarray(np.maximum(idx, 0) + off)], 0)
        out.append((off, idx, cols))
    return out


def _var_conv_infer(ctx):
    ctx.set_output("Out", (-1, 1), ctx.input_dtype("X"), 1)
    ctx.set_output("Col", (-1, 1), ctx.input_dtype("X"), 1)


@register_op("var_conv_2d", inputs=["X", "ROW", "COLUMN", "W"], outputs=["Out", "Col"], attrs=_VAR_CONV_ATTRS,
             infer=_var_conv_infer, no_grad=("ROW", "COLUMN"))
def var_conv_2d(ctx, ins, attrs):
    """A 2-D convolution (``W`` [out_ch, in_ch * KernelH * KernelW], centred kernel, zero padding,
    strides) of each image of X, its rows and columns counted by the LoD of ROW and COLUMN; Out and
    Col (the im2col matrix) are flattened per image, one LoD level of their sizes."""
    xp = ctx.xp
    x, w = ins["X"], ins["W"]
    if w.shape[1] != attrs["InputChannel"] * attrs["KernelH"] * attrs["KernelW"]:
        raise ValueError("op 'var_conv_2d': W %r must have InputChannel x KernelH x KernelW = %d columns, got %s"
                         % (ctx.op.inputs["W"][0], attrs["InputChannel"] * attrs["KernelH"] * attrs["KernelW"],
                            list(w.shape)))
    outs, cols_all = [], []
    for _, _, cols in _var_conv_cols(ctx, x, attrs):
        outs.append((w @ cols).reshape(-1))
        cols_all.append(cols.reshape(-1))
    ctx.set_lod("Out", [lengths_to_offsets([o.size for o in outs])])
    ctx.set_lod("Col", [lengths_to_offsets([c.size for c in cols_all])])
    empty = xp.zeros((0,), dtype=x.dtype)
    return {"Out": (xp.concatenate(outs) if outs else empty).reshape(-1, 1).astype(x.dtype, copy=False),
            "Col": (xp.concatenate(cols_all) if cols_all else empty).reshape(-1, 1)}


@register_grad("var_conv_2d", inputs=["X", "ROW", "COLUMN", "W", "Col", "Out@GRAD"])
def var_conv_2d_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, w, d = ins["X"], ins["W"], ins["Out@GRAD"].reshape(-1)
    dx = xp.zeros((x.size,), dtype=d.dtype)
    dw = xp.zeros_like(w)
    at = 0
    for off, idx, cols in _var_conv_cols(ctx, x, attrs):
        dout = d[at:at + w.shape[0] * cols.shape[1]].reshape(w.shape[0], cols.shape[1])
        at += dout.size
        dw += dout @ cols.T
        dcols = w.T @ dout
        live = idx >= 0
        scatter_add(xp, dx, xp.asarray(idx[live] + off), dcols[xp.asarray(live)])
    return {"X@GRAD": dx.reshape(x.shape), "W@GRAD": dw}


# ------------------------------------------------------------------ tree_conv
def _tree_patches(edges, n, depth):
    """[n, n, 3]: for each node u's patch (u and its descendants less than ``depth`` levels below),
    the (left, right, top) weights of each node v in it (the continuous binary tree of TBCNN)."""
    children = {}
    count = 0
    for p, c in np.asarray(edges).reshape(-1, 2).tolist():
        if p == 0 or c == 0:
            break
        children.setdefault(p, []).append(c)
        count = max(count, p, c)
    weights = np.zeros((n, n, 3))
    for u in range(1, min(count, n) + 1):
        stack = [(u, 1, 1, 0)]
        while stack:
            v, idx, siblings, level = stack.pop()
            eta_t = (depth - level) / depth
            eta_l = (1 - eta_t) * (0.5 if siblings == 1 else (idx - 1) / (siblings - 1))
            weights[u - 1, v - 1] += (eta_l, (1 - eta_t) * (1 - eta_l), eta_t)
            kids = children.get(v, [])
            if level + 1 < depth:
                stack.extend((c, i, len(kids), level + 1) for i, c in enumerate(kids, 1))
    return weights


def _tree_conv_infer(ctx):
    ns, fs = ctx.input_shape("NodesVector"), ctx.input_shape("Filter")
    if ns is not None and fs is not None:
        ctx.set_output("Out", (ns[0], ns[1], fs[2], fs[3]), ctx.input_dtype("NodesVector"))


def _tree_weights(ctx, ins, attrs):
    nodes = ins["NodesVector"]
    edges = np.asarray(ins["EdgeSet"])
    return ctx.xp.asarray(np.stack([_tree_patches(edges[b], nodes.shape[1], attrs["max_depth"])
                                    for b in range(nodes.shape[0])]).astype(nodes.dtype))


@register_op("tree_conv", inputs=["NodesVector", "EdgeSet", "Filter"], outputs=["Out"], attrs={"max_depth": 2},
             infer=_tree_conv_infer, no_grad=("EdgeSet",), host_inputs=("EdgeSet",))
def tree_conv(ctx, ins, attrs):
    """Tree-based convolution (TBCNN): node u's output is the sum over its patch of
    ``x_v (eta_l W_l + eta_r W_r + eta_t W_t)`` (Filter [F, 3, out, filters]); EdgeSet [B, E, 2]
    holds 1-based (parent, child) pairs, a 0 pair ends the list. Nodes past the tree give zeros."""
    p = _tree_weights(ctx, ins, attrs)
    return {"Out": ctx.xp.einsum("buvk,bvf,fkoc->buoc", p, ins["NodesVector"], ins["Filter"])}


@register_grad("tree_conv", inputs=["NodesVector", "EdgeSet", "Filter", "Out@GRAD"])
def tree_conv_grad(ctx, ins, attrs):
    xp = ctx.xp
    p = _tree_weights(ctx, ins, attrs)
    x, w, d = ins["NodesVector"], ins["Filter"], ins["Out@GRAD"]
    return {"NodesVector@GRAD": xp.einsum("buvk,buoc,fkoc->bvf", p, d, w),
            "Filter@GRAD": xp.einsum("buvk,bvf,buoc->fkoc", p, x, d)}
