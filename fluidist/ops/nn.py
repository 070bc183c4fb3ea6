"""Embedding and sequence ops: ``lookup_table`` (and ``lookup_table_v2``) with dense or row-sparse
gradients, and ``sequence_pool`` over the last LoD level of its input."""
import numpy as np

from ..framework.registry import register_grad, register_op
from ..core.tensor import SelectedRows, scatter_add
from . import device_fused, device_ids
from .device_tables import device_table, offsets_key
from .lod_utils import segments


# ------------------------------------------------------------------ lookup_table
_LOOKUP_ATTRS = {"is_sparse": False, "is_distributed": False, "padding_idx": -1, "remote_prefetch": False,
                 "height_sections": [], "epmap": [], "table_names": []}


def _lookup_out_shape(ids_shape, width, v2):
    """Paddle's rule: ``lookup_table`` drops the trailing 1 of Ids ([N, 1] -> [N, width]);
    ``lookup_table_v2`` appends the width to the whole Ids shape. A rank-1 Ids works for both."""
    ids_shape = tuple(ids_shape)
    if v2 or len(ids_shape) == 1:
        return ids_shape + (width,)
    if ids_shape[-1] != 1:
        raise ValueError("lookup_table: Ids must have a trailing dimension of 1 (shape [N, 1]), got shape %s; "
                         "use lookup_table_v2 for ids without it" % list(ids_shape))
    return ids_shape[:-1] + (width,)


def _lookup_infer(v2):
    def infer(ctx):
        ws, ids = ctx.input_shape("W"), ctx.input_shape("Ids")
        if ws is None or ids is None:
            return
        if len(ws) != 2:
            raise ValueError("W %r must be a 2-D table [rows, width], got shape %s"
                             % (ctx.op.inputs["W"][0], list(ws)))
        ctx.set_output("Out", _lookup_out_shape(ids, ws[1], v2), ctx.input_dtype("W"), ctx.input_lod_level("Ids"))
    return infer


def _flat_ids(ctx, ids, height):
    """Ids as a flat int64 vector, checked to lie in ``[0, height)`` (the padding id is in range too)."""
    if ids.dtype.kind not in "iu":
        raise ValueError("op %r: Ids %r must be an integer tensor (int64), got %s"
                         % (ctx.op.type, ctx.op.inputs["Ids"][0], ids.dtype))
    flat = ids.reshape(-1).astype(np.int64, copy=False)
    if flat.size:
        lo, hi = int(flat.min()), int(flat.max())
        if lo < 0 or hi >= height:
            bad = lo if lo < 0 else hi
            raise ValueError("op %r: id %d in Ids %r is out of range for table %r with %d rows"
                             % (ctx.op.type, bad, ctx.op.inputs["Ids"][0], ctx.op.inputs["W"][0], height))
    return flat


def _checked_ids(ctx, ids, height, dtype):
    """(flat int64 ids, the mask of those out of ``[0, height)`` or None) for a lookup into a table
    of ``dtype``: on the host an id out of range raises (``_flat_ids``); on a device it is clipped
    and masked without the host waiting for the device, for the lookup to give its row NaN
    (``device_ids``)."""
    return device_ids.ids_or_mask(ctx.xp, ids, height, lambda: _flat_ids(ctx, ids, height), dtype)


def _padding_idx(attrs, height):
    p = attrs["padding_idx"]
    if p is None or p == -1:
        return None
    return p + height if p < 0 else p


def _lookup_rows(ctx, w, ids, attrs):
    """The rows of a SelectedRows table ``W`` for ``Ids``, found by id among ``W``'s rows (Paddle's
    CPU lookup of a SelectedRows table: ids are row keys, not bounded by its height); an id that is
    not one of them is an error."""
    xp = ctx.xp
    flat = _flat_ids(ctx, ids, np.iinfo(np.int64).max)
    rows = xp.asarray(w.rows).reshape(-1)
    order = xp.argsort(rows, kind="stable")
    at = xp.searchsorted(rows[order], flat)
    at = xp.minimum(at, max(len(rows) - 1, 0))
    found = (rows[order][at] == flat) if len(rows) else xp.zeros(flat.shape, dtype=bool)
    pad = _padding_idx(attrs, w.height)
    missing = ~found if pad is None else ~found & (flat != pad)
    if bool(missing.any()):
        raise ValueError("op %r: id %d is not a row of the SelectedRows table W %r"
                         % (ctx.op.type, int(flat[missing][0]), ctx.op.inputs["W"][0]))
    if len(rows):
        out = xp.take(w.value, order[at], axis=0)
    else:
        out = xp.zeros((flat.size,) + tuple(w.value.shape[1:]), w.value.dtype)
    if pad is not None:
        out[flat == pad] = 0
    return out


def _lookup_kernel(v2):
    def kernel(ctx, ins, attrs):
        w, ids = ins["W"], ins["Ids"]
        if isinstance(w, SelectedRows):
            out = _lookup_rows(ctx, w, ids, attrs)
            return {"Out": out.reshape(_lookup_out_shape(ids.shape, w.value.shape[1], v2))}
        xp = ctx.xp
        pad = _padding_idx(attrs, w.shape[0])
        out = device_fused.lookup_rows(xp, w, ids.reshape(-1), pad)    # (a device: one launch)
        if out is not None:
            return {"Out": out.reshape(_lookup_out_shape(ids.shape, w.shape[1], v2))}
        flat, bad = _checked_ids(ctx, ids, w.shape[0], w.dtype)
        out = xp.take(w, flat, axis=0)  # a gather copies: W is never aliased
        if pad is not None:       # (a mask assignment would read its count back on a device)
            out = xp.where((flat == pad)[:, None], out.dtype.type(0), out)
        out = device_ids.nan_where(xp, bad, out)
        return {"Out": out.reshape(_lookup_out_shape(ids.shape, w.shape[1], v2))}
    return kernel


def _lookup_grad_infer(ctx):
    w = ctx.input_var("W")
    if w is None:
        return
    ctx.set_output("W@GRAD", w.shape, w.dtype,
                   type="SELECTED_ROWS" if ctx.attr("is_sparse") else "LOD_TENSOR")


def _lookup_grad_kernel(ctx, ins, attrs):
    """Sparse: ``SelectedRows(rows=ids, value=dOut rows, height=rows of W)``, repeated ids kept;
    dense: ``dOut`` rows added into a zero table. Padding ids get no gradient in either form."""
    xp = ctx.xp
    w, ids, d = ins["W"], ins["Ids"], ins["Out@GRAD"]
    height, width = w.shape[0], w.shape[1]
    flat = device_ids.ids_or_clipped(xp, ids, height, lambda: _flat_ids(ctx, ids, height))
    d2 = d.reshape(flat.shape[0], width)
    pad = _padding_idx(attrs, height)
    if attrs["is_sparse"]:
        if pad is not None and xp is np:
            keep = flat != pad
            flat, d2 = flat[keep], d2[keep]
        elif pad is not None:         # (a mask selection would read its size back: zero the rows instead)
            zeroed = xp.where((flat == pad)[:, None], 0, d2).astype(d2.dtype, copy=False)
            return {"W@GRAD": SelectedRows(flat, zeroed, height)}
        # (the value is dOut's rows themselves: no kernel writes a gradient it reads)
        return {"W@GRAD": SelectedRows(flat.copy() if xp is np else flat, d2, height)}
    out = xp.zeros(w.shape, dtype=d.dtype)
    scatter_add(xp, out, flat, d2)
    if pad is not None:
        out[pad] = 0
    return {"W@GRAD": out}


for _type, _v2 in (("lookup_table", False), ("lookup_table_v2", True)):
    register_op(_type, inputs=["W", "Ids"], outputs=["Out"], attrs=_LOOKUP_ATTRS, infer=_lookup_infer(_v2),
                no_grad=("Ids",), share_lod=("Ids", "Out"), table_lookup=True)(_lookup_kernel(_v2))
    register_grad(_type, inputs=["W", "Ids", "Out@GRAD"], infer=_lookup_grad_infer)(_lookup_grad_kernel)


# ------------------------------------------------------------------ sequence_pool
_POOL_TYPES = ("AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST")
_SEQ_POOL_ATTRS = {"pooltype": "AVERAGE", "is_test": False, "pad_value": 0.0}


def _pooltype(ctx, attrs):
    t = str(attrs["pooltype"]).upper()
    if t not in _POOL_TYPES:
        raise ValueError("op %r: pooltype %r is not one of %s" % (ctx.op.type, attrs["pooltype"], list(_POOL_TYPES)))
    return t


def _seq_offsets(ctx, x):
    """The last LoD level of X as an offsets vector (host ints), checked against X's rows."""
    lod = ctx.lod("X")
    name = ctx.op.inputs["X"][0]
    if not lod:
        raise ValueError("op %r: input X %r has no LoD%s" % (ctx.op.type, name, _lod_hint(ctx.op, name)))
    offsets = [int(o) for o in lod[-1]]
    if offsets[0] != 0 or offsets[-1] != x.shape[0] or any(b < a for a, b in zip(offsets, offsets[1:])):
        raise ValueError("op %r: the LoD %s of X %r does not match its %d rows"
                         % (ctx.op.type, offsets, name, x.shape[0]))
    return lod, np.asarray(offsets, dtype=np.int64)


def _lod_hint(op, name):
    """Where a missing LoD comes from: the feed, or the op that wrote ``name`` without passing one on."""
    block = op.block
    ops = block.ops
    upto = next((i for i, o in enumerate(ops) if o is op), len(ops))
    for o in reversed(ops[:upto]):
        if name in o.output_arg_names:
            return ("; op %r wrote it without passing on the LoD of its input (an op of that type keeps no "
                    "LoD)" % o.type)
    return "; feed it as a LoDTensor with sequence lengths (fluid.create_lod_tensor)"


def _segments(xp, offsets):
    """(sequence id of each row, position of each row inside its sequence, on ``xp``; lengths, on
    the host): the tables are kept on a device per LoD (``device_table``)."""
    seg, pos = device_table(xp, ("segments", offsets_key(offsets)), lambda: segments(offsets)[:2])
    return seg, pos, np.diff(offsets)


def _pool_tables(xp, offsets, kind, dtype):
    """The per-sequence tables sequence_pool reads, on ``xp``, kept per LoD on a device: the mask of
    empty sequences and, by pool type, the divisors (AVERAGE / SQRT), the pooled rows (FIRST /
    LAST) or the first row of each sequence (MAX)."""
    def make():
        lengths = np.diff(offsets)
        if kind in ("AVERAGE", "SQRT"):
            denom = np.maximum(lengths, 1).astype(np.float64)
            extra = (denom if kind == "AVERAGE" else np.sqrt(denom)).astype(dtype)
        elif kind in ("FIRST", "LAST"):
            rows = offsets[:-1] if kind == "FIRST" else offsets[1:] - 1
            extra = np.clip(rows, 0, max(int(offsets[-1]) - 1, 0))
        else:
            extra = offsets[:-1]
        return lengths == 0, extra
    return device_table(xp, ("pool", kind, np.dtype(dtype).str, offsets_key(offsets)), make)


def _seq_pool_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    out = (-1,) + tuple(xs[1:])
    level = max(ctx.input_lod_level("X") - 1, 0)
    ctx.set_output("Out", out, ctx.input_dtype("X"), level)
    ctx.set_output("MaxIndex", out, "int32", level)


def _seq_pool_grad_maker(op):
    """X (for its shape and LoD) and Out@GRAD; MaxIndex too when max-pooling."""
    inputs = {"X": list(op.inputs["X"]), "Out@GRAD": [n + "@GRAD" for n in op.outputs["Out"]]}
    if str(op.attrs.get("pooltype", "AVERAGE")).upper() == "MAX":
        if not op.outputs.get("MaxIndex"):
            raise ValueError("sequence_pool with pooltype MAX needs its MaxIndex output for the gradient")
        inputs["MaxIndex"] = list(op.outputs["MaxIndex"])
    attrs = {k: v for k, v in op.attrs.items() if k not in ("op_role", "op_role_var", "op_namescope")}
    return [{"type": "sequence_pool_grad", "inputs": inputs,
             "outputs": {"X@GRAD": [n + "@GRAD" for n in op.inputs["X"]]}, "attrs": attrs}]


@register_op("sequence_pool", inputs=["X"], outputs=["Out", "MaxIndex?"], attrs=_SEQ_POOL_ATTRS,
             infer=_seq_pool_infer, grad=_seq_pool_grad_maker)
def sequence_pool(ctx, ins, attrs):
    """Pool each sequence of the last LoD level to one row; an empty sequence gives ``pad_value``
    (and MaxIndex -1). Out keeps the LoD levels above the pooled one."""
    xp = ctx.xp
    x = ins["X"]
    kind = _pooltype(ctx, attrs)
    lod, offsets = _seq_offsets(ctx, x)
    n = len(offsets) - 1
    seg, pos, lengths = _segments(xp, offsets)
    rest = tuple(x.shape[1:])
    empty, table = _pool_tables(xp, offsets, kind, x.dtype)
    bshape = (n,) + (1,) * len(rest)
    res = {}
    if kind in ("AVERAGE", "SUM", "SQRT"):
        out = scatter_add(xp, xp.zeros((n,) + rest, dtype=x.dtype), seg, x)
        if kind != "SUM":
            out = out / table.reshape(bshape)
    elif kind in ("FIRST", "LAST"):
        out = x[table] if x.shape[0] else xp.zeros((n,) + rest, dtype=x.dtype)
    else:  # MAX: lay sequences out padded with -inf, argmax over the time axis
        lmax = int(lengths.max()) if n else 0
        low = -xp.inf if x.dtype.kind == "f" else xp.iinfo(x.dtype).min
        padded = xp.full((n, max(lmax, 1)) + rest, low, dtype=x.dtype)
        padded[seg, pos] = x
        arg = padded.argmax(axis=1)
        out = xp.take_along_axis(padded, arg[:, None], axis=1)[:, 0]
        index = (arg + table.reshape(bshape)).astype(np.int32)
        res["MaxIndex"] = xp.where(empty.reshape(bshape), -1, index).astype(np.int32)
    if lengths.all():
        res["Out"] = out.astype(x.dtype, copy=False)
    else:
        res["Out"] = xp.where(empty.reshape(bshape), x.dtype.type(attrs["pad_value"]), out).astype(x.dtype)
    ctx.set_lod("Out", lod[:-1])  # an empty LoD clears one left from an earlier run
    if "MaxIndex" in res:
        ctx.set_lod("MaxIndex", lod[:-1])
    return res


@register_grad("sequence_pool", inputs=["X", "MaxIndex?", "Out@GRAD"])
def sequence_pool_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    kind = _pooltype(ctx, attrs)
    lod, offsets = _seq_offsets(ctx, x)
    n = len(offsets) - 1
    seg, pos, lengths = _segments(xp, offsets)
    rest = tuple(x.shape[1:])
    if kind in ("AVERAGE", "SUM", "SQRT"):
        if kind == "SUM":
            dx = d[seg]
        else:
            dx = (d / _pool_tables(xp, offsets, kind, d.dtype)[1].reshape((n,) + (1,) * len(rest)))[seg]
    elif kind in ("FIRST", "LAST"):
        def make():
            nonempty = np.nonzero(lengths)[0]
            return (offsets[:-1] if kind == "FIRST" else offsets[1:] - 1)[nonempty], nonempty
        rows, nonempty = device_table(xp, ("pool grad", kind, offsets_key(offsets)), make)
        dx = xp.zeros(x.shape, dtype=d.dtype)
        dx[rows] = d[nonempty]
    else:
        index = ins.get("MaxIndex")
        if index is None:
            raise ValueError("op %r: pooltype MAX needs the MaxIndex input" % ctx.op.type)
        width = int(np.prod(rest)) if rest else 1
        idx = index.reshape(n, width).astype(np.int64)
        cols = xp.broadcast_to(xp.arange(width)[None, :], idx.shape)
        # an empty sequence (index -1) writes into an extra last row, dropped: a mask selection would
        # read its count back on a device
        flat = xp.zeros((x.shape[0] + 1, width), dtype=d.dtype)
        flat[xp.where(idx >= 0, idx, x.shape[0]), cols] = d.reshape(n, width)
        dx = flat[:-1].reshape(x.shape)
    ctx.set_lod("X@GRAD", lod)
    return {"X@GRAD": dx}
