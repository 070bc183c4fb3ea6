"""Sequence ops over LoD tensors (Paddle 1.8's ``layers/sequence_lod.py`` and the LoD ops of ``nn.py``):
sequence_conv, sequence_softmax, sequence_concat, sequence_slice, sequence_expand(_as),
sequence_pad / sequence_unpad, sequence_reshape, sequence_scatter, sequence_enumerate, sequence_mask,
sequence_reverse, each with its gradient where Paddle has one (lod_reset / lod_append and im2sequence
are in ``sequence_build.py``). Sequences are those of the last LoD level unless an op says otherwise."""
import numpy as np

from ..core.tensor import lengths_to_offsets, scatter_add, scatter_max
from ..framework.registry import register_grad, register_op
from .lod_utils import segments, seq_offsets


def _rows(xp, idx):
    return xp.asarray(np.asarray(idx, dtype=np.int64))


def _host(x):
    """An input the op reads on the host (its registry entry's ``host_inputs``) as a NumPy array."""
    return np.asarray(x)


# ------------------------------------------------------------------ sequence_conv
_CONV_ATTRS = {"contextLength": 3, "contextStart": 0, "contextStride": 1, "paddingTrainable": False}


def _context_index(offsets, start, length):
    """For each row and each of the ``length`` context positions, the source row (or -1 outside the
    sequence) and, outside it, the row of PaddingData (up-padding rows first, then down-padding)."""
    seg, pos, lengths = segments(offsets)
    n = len(seg)
    j = np.arange(length)[None, :]
    src_pos = pos[:, None] + start + j                       # position inside the sequence
    seq_len = lengths[seg][:, None]
    inside = (src_pos >= 0) & (src_pos < seq_len)
    src = np.where(inside, np.asarray(offsets)[seg][:, None] + src_pos, -1)
    up = max(0, -start)
    pad_row = np.where(src_pos < 0, up + src_pos, up + src_pos - seq_len)
    return src.reshape(n, length), np.where(inside, -1, pad_row).reshape(n, length)


def _seq_conv_check(ctx, attrs):
    if attrs["contextStride"] != 1:
        raise ValueError("op 'sequence_conv': contextStride must be 1 (Paddle supports only 1), got %d"
                         % attrs["contextStride"])


def _seq_conv_infer(ctx):
    xs, fs = ctx.input_shape("X"), ctx.input_shape("Filter")
    if xs is not None and fs is not None:
        ctx.set_output("Out", (xs[0], fs[1]), ctx.input_dtype("X"), ctx.input_lod_level("X"))


def _columns(ctx, x, pad, attrs):
    xp = ctx.xp
    offsets = seq_offsets(ctx, "X", x)
    src, pad_row = _context_index(offsets, attrs["contextStart"], attrs["contextLength"])
    n, d = x.shape[0], x.shape[1]
    length = attrs["contextLength"]
    zero = xp.zeros((1, d), dtype=x.dtype)
    cols = xp.concatenate([x, zero])[_rows(xp, np.where(src >= 0, src, n))]      # [n, length, d]
    if attrs["paddingTrainable"] and pad is not None:
        use = pad_row >= 0
        if use.any():
            cols[_rows(xp, np.nonzero(use)[0]), _rows(xp, np.nonzero(use)[1])] = pad[_rows(xp, pad_row[use])]
    return cols.reshape(n, length * d), src, pad_row


@register_op("sequence_conv", inputs=["X", "Filter", "PaddingData?"], outputs=["Out"], attrs=_CONV_ATTRS,
             infer=_seq_conv_infer, share_lod=("X", "Out"))
def sequence_conv(ctx, ins, attrs):
    """Each row's context (``contextLength`` rows from ``contextStart`` relative to it, zeros — or
    the rows of ``PaddingData`` when ``paddingTrainable`` — outside its sequence) times ``Filter``."""
    _seq_conv_check(ctx, attrs)
    x, w = ins["X"], ins["Filter"]
    if w.shape[0] != attrs["contextLength"] * x.shape[1]:
        raise ValueError("op 'sequence_conv': Filter %r has %d rows but contextLength %d x width %d of X = %d"
                         % (ctx.op.inputs["Filter"][0], w.shape[0], attrs["contextLength"], x.shape[1],
                            attrs["contextLength"] * x.shape[1]))
    cols, _, _ = _columns(ctx, x, ins.get("PaddingData"), attrs)
    return {"Out": cols @ w}


@register_grad("sequence_conv", inputs=["X", "Filter", "PaddingData?", "Out@GRAD"])
def sequence_conv_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, w, pad, d_out = ins["X"], ins["Filter"], ins.get("PaddingData"), ins["Out@GRAD"]
    cols, src, pad_row = _columns(ctx, x, pad, attrs)
    res = {"Filter@GRAD": cols.T @ d_out}
    d_cols = (d_out @ w.T).reshape(src.shape + (x.shape[1],))
    inside = src >= 0
    dx = xp.zeros_like(x)
    scatter_add(xp, dx, _rows(xp, src[inside]), d_cols[_rows(xp, np.nonzero(inside)[0]),
                                                      _rows(xp, np.nonzero(inside)[1])])
    res["X@GRAD"] = dx
    if pad is not None:
        dpad = xp.zeros_like(pad)
        if attrs["paddingTrainable"]:
            use = pad_row >= 0
            scatter_add(xp, dpad, _rows(xp, pad_row[use]), d_cols[_rows(xp, np.nonzero(use)[0]),
                                                                   _rows(xp, np.nonzero(use)[1])])
        res["PaddingData@GRAD"] = dpad
    return res


# ------------------------------------------------------------------ sequence_softmax
def _softmax_segments(xp, x, offsets):
    flat = x.reshape(-1)
    seg, _, lengths = segments(offsets)
    if flat.shape[0] != len(seg):
        raise ValueError("sequence_softmax: X must have one value per row ([N] or [N, 1]), got shape %s"
                         % list(x.shape))
    seg_x = xp.asarray(seg)
    n = len(lengths)
    mx = xp.full((n,), -np.inf, dtype=x.dtype)
    scatter_max(xp, mx, seg_x, flat)
    e = xp.exp(flat - mx[seg_x])
    s = scatter_add(xp, xp.zeros((n,), dtype=x.dtype), seg_x, e)
    return (e / s[seg_x]).reshape(x.shape)


@register_op("sequence_softmax", inputs=["X"], outputs=["Out"], attrs={"use_cudnn": False, "data_format": "AnyLayout"},
             infer=lambda c: c.share("Out", "X"), share_lod=("X", "Out"))
def sequence_softmax(ctx, ins, attrs):
    """Softmax over the values of each sequence (X: one value per row)."""
    x = ins["X"]
    return {"Out": _softmax_segments(ctx.xp, x, seq_offsets(ctx, "X", x))}


@register_grad("sequence_softmax", inputs=["X", "Out", "Out@GRAD"])
def sequence_softmax_grad(ctx, ins, attrs):
    xp = ctx.xp
    out, d = ins["Out"], ins["Out@GRAD"]
    offsets = seq_offsets(ctx, "X", ins["X"])
    seg, _, lengths = segments(offsets)
    seg_x = xp.asarray(seg)
    od = (out * d).reshape(-1)
    s = scatter_add(xp, xp.zeros((len(lengths),), dtype=out.dtype), seg_x, od)
    return {"X@GRAD": (out.reshape(-1) * (d.reshape(-1) - s[seg_x])).reshape(out.shape)}


# ------------------------------------------------------------------ sequence_concat
def _concat_plan(ctx, xs):
    """Per input, its offsets; the output's row order (input, row) and LoD."""
    offs = []
    for i, x in enumerate(xs):
        lod = ctx.lod(ctx.op.inputs["X"][i])
        if not lod:
            raise ValueError("op 'sequence_concat': input %r has no LoD" % ctx.op.inputs["X"][i])
        offs.append([int(o) for o in lod[-1]])
    n = len(offs[0]) - 1
    for i, o in enumerate(offs):
        if len(o) - 1 != n:
            raise ValueError("op 'sequence_concat': input %r has %d sequences but %r has %d"
                             % (ctx.op.inputs["X"][i], len(o) - 1, ctx.op.inputs["X"][0], n))
    order, lengths = [], []
    for s in range(n):
        total = 0
        for i, o in enumerate(offs):
            order.extend((i, r) for r in range(o[s], o[s + 1]))
            total += o[s + 1] - o[s]
        lengths.append(total)
    return order, [lengths_to_offsets(lengths)]


@register_op("sequence_concat", inputs=["X*"], outputs=["Out"],
             infer=lambda c: c.share("Out", "X"))
def sequence_concat(ctx, ins, attrs):
    """Sequence ``i`` of Out is sequence ``i`` of each input, one after another."""
    xp = ctx.xp
    xs = ins["X"]
    order, lod = _concat_plan(ctx, xs)
    starts = np.cumsum([0] + [x.shape[0] for x in xs])
    flat = xp.concatenate(xs)
    ctx.set_lod("Out", lod)
    return {"Out": flat[_rows(xp, [starts[i] + r for i, r in order])]}


@register_grad("sequence_concat", inputs=["X*", "Out@GRAD"])
def sequence_concat_grad(ctx, ins, attrs):
    xp = ctx.xp
    xs, d = ins["X"], ins["Out@GRAD"]
    order, _ = _concat_plan(ctx, xs)
    grads = [xp.zeros_like(x) for x in xs]
    pos = {i: [] for i in range(len(xs))}
    for k, (i, r) in enumerate(order):
        pos[i].append((k, r))
    for i, pairs in pos.items():
        if pairs:
            ks, rs = zip(*pairs)
            grads[i][_rows(xp, rs)] = d[_rows(xp, ks)]
    for i in range(len(xs)):
        ctx.set_lod("X@GRAD", ctx.lod(ctx.op.inputs["X"][i]), i)
    return {"X@GRAD": grads}


# ------------------------------------------------------------------ sequence_slice
def _slice_rows(ctx, x, ins):
    offsets = seq_offsets(ctx, "X", x)
    off = _host(ins["Offset"]).reshape(-1).astype(np.int64)
    length = _host(ins["Length"]).reshape(-1).astype(np.int64)
    n = len(offsets) - 1
    if off.size != n or length.size != n:
        raise ValueError("op 'sequence_slice': Offset and Length need one value per sequence (%d), got %d and %d"
                         % (n, off.size, length.size))
    rows = []
    for i in range(n):
        b, e = offsets[i] + off[i], offsets[i] + off[i] + length[i]
        if off[i] < 0 or length[i] < 0 or e > offsets[i + 1]:
            raise ValueError("op 'sequence_slice': offset %d + length %d is out of sequence %d of length %d"
                             % (off[i], length[i], i, offsets[i + 1] - offsets[i]))
        rows.extend(range(b, e))
    return rows, [lengths_to_offsets(length.tolist())]


@register_op("sequence_slice", host_inputs=("Offset", "Length"), inputs=["X", "Offset", "Length"], outputs=["Out"],
             no_grad=("Offset", "Length"), infer=lambda c: c.share("Out", "X"))
def sequence_slice(ctx, ins, attrs):
    """Rows ``[Offset[i], Offset[i] + Length[i])`` of each sequence ``i``."""
    rows, lod = _slice_rows(ctx, ins["X"], ins)
    ctx.set_lod("Out", ctx.lod("X")[:-1] + lod if len(ctx.lod("X")) > 1 else lod)
    return {"Out": ins["X"][_rows(ctx.xp, rows)]}


@register_grad("sequence_slice", inputs=["X", "Offset", "Length", "Out@GRAD"])
def sequence_slice_grad(ctx, ins, attrs):
    rows, _ = _slice_rows(ctx, ins["X"], ins)
    dx = ctx.xp.zeros_like(ins["X"])
    dx[_rows(ctx.xp, rows)] = ins["Out@GRAD"]
    return {"X@GRAD": dx}


# ------------------------------------------------------------------ sequence_expand / _as
def _expand_plan(ctx, x, ref_level):
    """Rows of X making Out, and Out's LoD: sequence ``i`` of X (a row without LoD) repeated as many
    times as sequence ``i`` of Y's level ``ref_level`` is long."""
    y_lod = ctx.lod("Y")
    if not y_lod:
        raise ValueError("op 'sequence_expand': Y %r has no LoD" % ctx.op.inputs["Y"][0])
    level = len(y_lod) - 1 if ref_level == -1 else ref_level
    if not 0 <= level < len(y_lod):
        raise ValueError("op 'sequence_expand': ref_level %d is not a level of Y's LoD (%d levels)"
                         % (ref_level, len(y_lod)))
    ref = y_lod[level]
    x_lod = ctx.lod("X")
    x_off = [int(o) for o in x_lod[0]] if len(x_lod) == 1 else list(range(x.shape[0] + 1))
    n = len(ref) - 1
    if len(x_off) - 1 != n:
        raise ValueError("op 'sequence_expand': X %r has %d sequences (rows) but level %d of Y's LoD has %d"
                         % (ctx.op.inputs["X"][0], len(x_off) - 1, level, n))
    rows, out_lengths = [], []
    for i in range(n):
        repeat = ref[i + 1] - ref[i]
        seq = list(range(x_off[i], x_off[i + 1]))
        for _ in range(repeat):
            rows.extend(seq)
            out_lengths.append(len(seq))
    lod = [lengths_to_offsets(out_lengths)] if len(x_lod) == 1 else []
    return rows, lod


@register_op("sequence_expand", inputs=["X", "Y"], outputs=["Out"], attrs={"ref_level": -1},
             no_grad=("Y",), infer=lambda c: c.set_output("Out", (-1,) + tuple((c.input_shape("X") or (0,))[1:]),
                                                           c.input_dtype("X")))
def sequence_expand(ctx, ins, attrs):
    x = ins["X"]
    rows, lod = _expand_plan(ctx, x, attrs["ref_level"])
    if lod:
        ctx.set_lod("Out", lod)
    else:
        ctx.set_lod("Out", [])
    return {"Out": x[_rows(ctx.xp, rows)]}


@register_grad("sequence_expand", inputs=["X", "Y", "Out@GRAD"])
def sequence_expand_grad(ctx, ins, attrs):
    x = ins["X"]
    rows, _ = _expand_plan(ctx, x, attrs["ref_level"])
    dx = scatter_add(ctx.xp, ctx.xp.zeros_like(x), _rows(ctx.xp, rows), ins["Out@GRAD"])
    return {"X@GRAD": dx}


def _expand_as_rows(ctx, x):
    y_lod = ctx.lod("Y")
    if not y_lod:
        raise ValueError("op 'sequence_expand_as': Y %r has no LoD" % ctx.op.inputs["Y"][0])
    ref = y_lod[0]
    if len(ref) - 1 != x.shape[0]:
        raise ValueError("op 'sequence_expand_as': X %r has %d rows but Y %r has %d sequences"
                         % (ctx.op.inputs["X"][0], x.shape[0], ctx.op.inputs["Y"][0], len(ref) - 1))
    return np.repeat(np.arange(x.shape[0]), np.diff(np.asarray(ref))), [list(ref)]


@register_op("sequence_expand_as", inputs=["X", "Y"], outputs=["Out"], no_grad=("Y",),
             infer=lambda c: c.set_output("Out", (-1,) + tuple((c.input_shape("X") or (0,))[1:]),
                                           c.input_dtype("X")))
def sequence_expand_as(ctx, ins, attrs):
    """Row ``i`` of X repeated as many times as sequence ``i`` of Y is long; Out takes Y's LoD."""
    rows, lod = _expand_as_rows(ctx, ins["X"])
    ctx.set_lod("Out", lod)
    return {"Out": ins["X"][_rows(ctx.xp, rows)]}


@register_grad("sequence_expand_as", inputs=["X", "Y", "Out@GRAD"])
def sequence_expand_as_grad(ctx, ins, attrs):
    x = ins["X"]
    rows, _ = _expand_as_rows(ctx, x)
    return {"X@GRAD": scatter_add(ctx.xp, ctx.xp.zeros_like(x), _rows(ctx.xp, rows), ins["Out@GRAD"])}


# ------------------------------------------------------------------ sequence_pad / unpad
def _pad_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None:
        n = ctx.attr("padded_length")
        ctx.set_output("Out", (-1, n if n > 0 else -1) + tuple(xs[1:]), ctx.input_dtype("X"), 0)
        ctx.set_output("Length", (-1,), "int64", 0)


@register_op("sequence_pad", inputs=["X", "PadValue"], outputs=["Out", "Length"], attrs={"padded_length": -1},
             no_grad=("PadValue",), infer=_pad_infer)
def sequence_pad(ctx, ins, attrs):
    """``[sequences, padded_length, ...]``: each sequence then ``PadValue`` (one value, or one
    row); ``Length`` holds the lengths. ``padded_length`` -1: the longest sequence."""
    xp = ctx.xp
    x, pad = ins["X"], ins["PadValue"]
    offsets = seq_offsets(ctx, "X", x)
    seg, pos, lengths = segments(offsets)
    longest = int(lengths.max()) if len(lengths) else 0
    width = attrs["padded_length"] if attrs["padded_length"] > 0 else longest
    if width < longest:
        raise ValueError("op 'sequence_pad': padded_length %d is shorter than the longest sequence (%d)"
                         % (width, longest))
    step = tuple(x.shape[1:])
    if pad.size not in (1, int(np.prod(step)) if step else 1):
        raise ValueError("op 'sequence_pad': PadValue %r must hold one value or one row of shape %s, got shape %s"
                         % (ctx.op.inputs["PadValue"][0], list(step), list(pad.shape)))
    out = xp.empty((len(lengths), width) + step, dtype=x.dtype)
    out[...] = pad.reshape(step if pad.size > 1 else ()).astype(x.dtype)
    out[xp.asarray(seg), xp.asarray(pos)] = x
    ctx.set_lod("Out", [])
    return {"Out": out, "Length": xp.asarray(lengths.astype(np.int64))}


@register_grad("sequence_pad", inputs=["X", "Out@GRAD"])
def sequence_pad_grad(ctx, ins, attrs):
    seg, pos, _ = segments(seq_offsets(ctx, "X", ins["X"]))
    return {"X@GRAD": ins["Out@GRAD"][ctx.xp.asarray(seg), ctx.xp.asarray(pos)]}


def _unpad_index(ctx, x, length):
    lengths = _host(length).reshape(-1).astype(np.int64)
    if lengths.size != x.shape[0] or (lengths.size and lengths.max() > x.shape[1]):
        raise ValueError("op 'sequence_unpad': Length %r must give one length <= %d per row of X (%d rows), got %s"
                         % (ctx.op.inputs["Length"][0], x.shape[1], x.shape[0], lengths.tolist()))
    offsets = lengths_to_offsets(lengths.tolist())
    seg, pos, _ = segments(offsets)
    return seg, pos, offsets


def _unpad_step_shape(x_shape):
    """The shape of one step of sequence_unpad's Out: X's trailing dims, or [1] for a 2-D X (Paddle 1.8)."""
    return tuple(x_shape[2:]) or (1,)


@register_op("sequence_unpad", host_inputs=("Length",), inputs=["X", "Length"], outputs=["Out"], no_grad=("Length",),
             infer=lambda c: c.set_output("Out", (-1,) + _unpad_step_shape(c.input_shape("X") or (0, 0)),
                                           c.input_dtype("X"), 1))
def sequence_unpad(ctx, ins, attrs):
    """The inverse of ``sequence_pad``: the first ``Length[i]`` steps of row ``i``, as LoD sequences
    (of ``[1]`` steps when X is ``[N, T]``)."""
    x = ins["X"]
    seg, pos, offsets = _unpad_index(ctx, x, ins["Length"])
    ctx.set_lod("Out", [offsets])
    return {"Out": x[ctx.xp.asarray(seg), ctx.xp.asarray(pos)].reshape((-1,) + _unpad_step_shape(x.shape))}


@register_grad("sequence_unpad", inputs=["X", "Length", "Out@GRAD"])
def sequence_unpad_grad(ctx, ins, attrs):
    seg, pos, _ = _unpad_index(ctx, ins["X"], ins["Length"])
    dx = ctx.xp.zeros_like(ins["X"])
    dx[ctx.xp.asarray(seg), ctx.xp.asarray(pos)] = ins["Out@GRAD"].reshape((-1,) + tuple(dx.shape[2:]))
    return {"X@GRAD": dx}


# ------------------------------------------------------------------ sequence_reshape
def _reshape_lod(ctx, x, new_dim):
    offsets = seq_offsets(ctx, "X", x)
    width = x.shape[1]
    out = [0]
    for a, b in zip(offsets, offsets[1:]):
        size = (b - a) * width
        if size % new_dim:
            raise ValueError("op 'sequence_reshape': a sequence of %d rows of width %d cannot be cut into rows of %d"
                             % (b - a, width, new_dim))
        out.append(out[-1] + size // new_dim)
    return [out]


@register_op("sequence_reshape", inputs=["X"], outputs=["Out"], attrs={"new_dim": 1},
             infer=lambda c: c.set_output("Out", (-1, c.attr("new_dim")), c.input_dtype("X"), 1))
def sequence_reshape(ctx, ins, attrs):
    """Each sequence's values laid out again in rows of ``new_dim``."""
    x = ins["X"]
    ctx.set_lod("Out", _reshape_lod(ctx, x, attrs["new_dim"]))
    return {"Out": x.reshape(-1, attrs["new_dim"])}


@register_grad("sequence_reshape", inputs=["X", "Out@GRAD"])
def sequence_reshape_grad(ctx, ins, attrs):
    return {"X@GRAD": ins["Out@GRAD"].reshape(ins["X"].shape)}


# ------------------------------------------------------------------ sequence_scatter
def _scatter_index(ctx, x, ids):
    offsets = seq_offsets(ctx, "Ids", ids)
    if len(offsets) - 1 != x.shape[0]:
        raise ValueError("op 'sequence_scatter': Ids %r has %d sequences but X has %d rows"
                         % (ctx.op.inputs["Ids"][0], len(offsets) - 1, x.shape[0]))
    seg, _, _ = segments(offsets)
    cols = _host(ids).reshape(-1).astype(np.int64)
    if cols.size and (cols.min() < 0 or cols.max() >= x.shape[1]):
        raise ValueError("op 'sequence_scatter': an id of Ids %r is outside [0, %d)" % (ctx.op.inputs["Ids"][0], x.shape[1]))
    return seg, cols


@register_op("sequence_scatter", host_inputs=("Ids",), inputs=["X", "Ids", "Updates"], outputs=["Out"],
             no_grad=("Ids",), infer=lambda c: c.share("Out", "X"))
def sequence_scatter(ctx, ins, attrs):
    """``Out = X``, then ``Out[i, Ids[j]] += Updates[j]`` for each item ``j`` of sequence ``i`` of Ids."""
    xp = ctx.xp
    x = ins["X"]
    seg, cols = _scatter_index(ctx, x, ins["Ids"])
    out = x.copy()
    scatter_add(xp, out, (xp.asarray(seg), xp.asarray(cols)), ins["Updates"].reshape(-1).astype(x.dtype))
    return {"Out": out}


@register_grad("sequence_scatter", inputs=["X", "Ids", "Updates", "Out@GRAD"])
def sequence_scatter_grad(ctx, ins, attrs):
    xp = ctx.xp
    seg, cols = _scatter_index(ctx, ins["X"], ins["Ids"])
    d = ins["Out@GRAD"]
    return {"X@GRAD": d, "Updates@GRAD": d[xp.asarray(seg), xp.asarray(cols)].reshape(ins["Updates"].shape)}


# ------------------------------------------------------------------ sequence_enumerate / mask / reverse
@register_op("sequence_enumerate", inputs=["X"], outputs=["Out"], attrs={"win_size": 2, "pad_value": 0},
             share_lod=("X", "Out"),
             infer=lambda c: c.set_output("Out", ((c.input_shape("X") or (-1,))[0], c.attr("win_size")),
                                           c.input_dtype("X"), c.input_lod_level("X")))
def sequence_enumerate(ctx, ins, attrs):
    """Row ``t``: the ``win_size`` ids from ``t`` on within its sequence, ``pad_value`` past its end."""
    xp = ctx.xp
    x = ins["X"]
    offsets = seq_offsets(ctx, "X", x)
    seg, pos, lengths = segments(offsets)
    win = attrs["win_size"]
    k = np.arange(win)[None, :]
    inside = pos[:, None] + k < lengths[seg][:, None]
    src = np.where(inside, np.arange(len(seg))[:, None] + k, 0)
    flat = x.reshape(-1)
    out = xp.where(xp.asarray(inside), flat[_rows(xp, src)], xp.asarray(attrs["pad_value"], dtype=x.dtype))
    return {"Out": out.astype(x.dtype)}


_DTYPE_CODES = {0: "bool", 1: "int16", 2: "int32", 3: "int64", 4: "float16", 5: "float32", 6: "float64",
                20: "uint8", 21: "int8"}


def _mask_dtype(value):
    return _DTYPE_CODES.get(value, value) if isinstance(value, int) else value


@register_op("sequence_mask", host_inputs=("MaxLenTensor",), inputs=["X", "MaxLenTensor?"], outputs=["Y"], attrs={"maxlen": -1, "out_dtype": "int64"},
             infer=lambda c: c.set_output("Y", tuple(c.input_shape("X") or ()) + (c.attr("maxlen"),),
                                          _mask_dtype(c.attr("out_dtype"))))
def sequence_mask(ctx, ins, attrs):
    """``Y[..., j] = j < X[...]`` for ``j < maxlen`` (-1: the largest value of X)."""
    xp = ctx.xp
    x = ins["X"]
    maxlen = attrs["maxlen"]
    if ins.get("MaxLenTensor") is not None:
        maxlen = int(_host(ins["MaxLenTensor"]).reshape(-1)[0])
    if maxlen < 0:
        maxlen = int(x.max()) if x.size else 0
    y = xp.arange(maxlen).reshape((1,) * x.ndim + (maxlen,)) < x[..., None]
    return {"Y": y.astype(_mask_dtype(attrs["out_dtype"]))}


def _reverse_rows(ctx, x):
    offsets = seq_offsets(ctx, "X", x)
    seg, pos, lengths = segments(offsets)
    return np.asarray(offsets)[seg] + lengths[seg] - 1 - pos


@register_op("sequence_reverse", inputs=["X"], outputs=["Y"], share_lod=("X", "Y"),
             infer=lambda c: c.share("Y", "X"))
def sequence_reverse(ctx, ins, attrs):
    """Each sequence's rows in reverse order."""
    return {"Y": ins["X"][_rows(ctx.xp, _reverse_rows(ctx, ins["X"]))]}


@register_grad("sequence_reverse", inputs=["X", "Y@GRAD"])
def sequence_reverse_grad(ctx, ins, attrs):
    return {"X@GRAD": ins["Y@GRAD"][_rows(ctx.xp, _reverse_rows(ctx, ins["X"]))]}
