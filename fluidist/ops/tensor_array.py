"""Tensor arrays and LoD rank tables: what ``While`` loops and ``DynamicRNN`` are built on.

- ``write_to_array`` / ``read_from_array`` / ``lod_array_length``: a ``LoDTensorArray`` indexed by an
  int64 ``[1]`` tensor ``I``;
- ``lod_rank_table`` (the sequences of one LoD level sorted longest first), ``max_sequence_len``;
- ``lod_tensor_to_array`` / ``array_to_lod_tensor``: a batch of sequences to one array item per time
  step (item ``t`` holds step ``t`` of every sequence still running, in rank order) and back;
- ``shrink_rnn_memory``: the first rows of a memory, one per sequence still running at step ``I``;
- ``reorder_lod_tensor_by_rank``: the sequences (or rows) of ``X`` in rank order.

Gradients of arrays are arrays. A gradient op that produces one adds into the array already held
under its name (several ops may each give some items), so ``backward`` never renames array gradients.
"""
import numpy as np

from ..core.tensor import LoDRankTable, LoDTensorArray, lengths_to_offsets
from ..framework.registry import register_grad, register_op
from .lod_utils import merge_lengths, sub_lod


def _index(ctx, i, slot="I"):
    """The host int held by the ``[1]`` index tensor of ``slot``."""
    if i is None or i.size != 1:
        raise ValueError("op %r: index %r must hold one integer" % (ctx.op.type, ctx.op.inputs[slot][0]))
    i = int(i.reshape(-1)[0])
    if i < 0:
        raise ValueError("op %r: index %r is %d; array indices must be >= 0"
                         % (ctx.op.type, ctx.op.inputs[slot][0], i))
    return i


def _array_in(ctx, value, slot="X"):
    if not isinstance(value, LoDTensorArray):
        raise TypeError("op %r: %s %r must be a LoDTensorArray (made by create_array / array_write), got %s"
                        % (ctx.op.type, slot, ctx.op.inputs[slot][0], type(value).__name__))
    return value


def _array_out(ctx, slot):
    """The array held under output ``slot``'s name (written into in place), or a new one."""
    cur = ctx.find_value(ctx.op.outputs[slot][0])
    return cur if isinstance(cur, LoDTensorArray) else LoDTensorArray()


def _accumulate(xp, arr, i, g, lod=None):
    """``arr[i] += g`` (a new array: items may be shared with other variables)."""
    old, old_lod = arr.item(i)
    arr.put(i, g if old is None else old + g, lod if lod is not None else old_lod)


def _array_infer(ctx):
    x = ctx.input_var("X")
    if x is not None:
        ctx.set_output("Out", x.shape, x.dtype, x.lod_level, type="LOD_TENSOR_ARRAY")


def _read_infer(ctx):
    x = ctx.input_var("X")
    if x is not None:
        ctx.set_output("Out", x.shape, x.dtype, x.lod_level, type="LOD_TENSOR")


# ------------------------------------------------------------------ write / read / length
@register_op("write_to_array", inputs=["X", "I"], outputs=["Out"], infer=_array_infer, no_grad=("I",))
def write_to_array(ctx, ins, attrs):
    """``Out[I] = X`` (Out grows as needed); the array is changed in place."""
    arr = _array_out(ctx, "Out")
    arr.put(_index(ctx, ins["I"]), ins["X"], ctx.lod("X"))
    return {"Out": arr}


@register_grad("write_to_array", inputs=["X", "I", "Out@GRAD"])
def write_to_array_grad(ctx, ins, attrs):
    """``X@GRAD = Out@GRAD[I]``; zeros where no gradient reached that item."""
    g, lod = _array_in(ctx, ins["Out@GRAD"], "Out@GRAD").item(_index(ctx, ins["I"]))
    if g is None:
        g, lod = ctx.xp.zeros_like(ins["X"]), ctx.lod("X")
    ctx.set_lod("X@GRAD", lod)
    return {"X@GRAD": g}


@register_op("read_from_array", inputs=["X", "I"], outputs=["Out"], infer=_read_infer, no_grad=("I",))
def read_from_array(ctx, ins, attrs):
    arr = _array_in(ctx, ins["X"])
    i = _index(ctx, ins["I"])
    value, lod = arr.item(i)
    if value is None:
        raise ValueError("op 'read_from_array': item %d of array %r was never written (the array has %d items)"
                         % (i, ctx.op.inputs["X"][0], len(arr)))
    ctx.set_lod("Out", lod)
    return {"Out": value}


@register_grad("read_from_array", inputs=["I", "Out@GRAD"])
def read_from_array_grad(ctx, ins, attrs):
    """Adds ``Out@GRAD`` into item ``I`` of the gradient array."""
    arr = _array_out(ctx, "X@GRAD")
    _accumulate(ctx.xp, arr, _index(ctx, ins["I"]), ins["Out@GRAD"], ctx.lod("Out@GRAD"))
    return {"X@GRAD": arr}


@register_op("lod_array_length", inputs=["X"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", [1], "int64"))
def lod_array_length(ctx, ins, attrs):
    return {"Out": ctx.xp.asarray(np.array([len(_array_in(ctx, ins["X"]))], np.int64))}


# ------------------------------------------------------------------ rank tables
def _table(ctx, value, slot="RankTable"):
    if not isinstance(value, LoDRankTable):
        raise TypeError("op %r: %s %r must be a LoD rank table (made by lod_rank_table), got %s"
                        % (ctx.op.type, slot, ctx.op.inputs[slot][0], type(value).__name__))
    return value


@register_op("lod_rank_table", inputs=["X"], outputs=["Out"], attrs={"level": 0},
             infer=lambda c: c.set_output("Out", None, type="LOD_RANK_TABLE"))
def lod_rank_table(ctx, ins, attrs):
    lod = ctx.lod("X")
    level = attrs["level"]
    if len(lod) <= level:
        raise ValueError("op 'lod_rank_table': X %r has %d LoD levels, no level %d; feed it as a LoDTensor "
                         "with sequence lengths" % (ctx.op.inputs["X"][0], len(lod), level))
    return {"Out": LoDRankTable.from_lod(lod, level)}


@register_op("max_sequence_len", inputs=["RankTable"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", [1], "int64"))
def max_sequence_len(ctx, ins, attrs):
    items = _table(ctx, ins["RankTable"]).ranked
    return {"Out": ctx.xp.asarray(np.array([items[0][1] if items else 0], np.int64))}


# ------------------------------------------------------------------ LoD helpers
def _check_table(ctx, table, count, what):
    if len(table.ranked) != count:
        raise ValueError("op %r: the rank table has %d sequences but %s %r has %d"
                         % (ctx.op.type, len(table.ranked), what, ctx.op.inputs["X"][0], count))


def _to_array(ctx, x, lod, table):
    """Item ``t``: step ``t`` of each sequence still running, in rank order."""
    xp = ctx.xp
    level = len(table.coarse_lod)
    if len(lod) <= level:
        raise ValueError("op %r: X %r has no LoD level %d to split by" % (ctx.op.type, ctx.op.inputs["X"][0], level))
    _check_table(ctx, table, len(lod[level]) - 1, "X")
    out = LoDTensorArray()
    max_len = table.ranked[0][1] if table.ranked else 0
    for t in range(max_len):
        rows, parts = [], []
        for idx, n in table.ranked:
            if n <= t:
                break
            unit = lod[level][idx] + t
            b, e, lengths = sub_lod(lod, level + 1, unit, unit + 1)
            rows.append(np.arange(b, e))
            parts.append(lengths)
        out.put(t, x[xp.asarray(np.concatenate(rows))], merge_lengths(parts))
    return out


def _from_array(ctx, arr, table, like=None, lod_only=False):
    """The inverse of ``_to_array``: rows back in sequence order, with the LoD they had.
    Items missing from ``arr`` (gradients never given) read as zeros shaped like rows of ``like``.
    With ``lod_only`` the rows are not gathered: (None, lod)."""
    xp = ctx.xp
    pieces, parts = {}, {}
    width, dtype = None, None
    for t in range(len(arr)):
        v, vlod = arr.item(t)
        if v is not None:
            width, dtype = v.shape[1:], v.dtype
    if width is None and like is not None:
        width, dtype = like.shape[1:], like.dtype
    for t in range(table.ranked[0][1] if table.ranked else 0):
        v, vlod = arr.item(t)
        pos = 0
        for idx, n in table.ranked:
            if n <= t:
                break
            if v is None:
                piece, lengths = None if lod_only else xp.zeros((1,) + tuple(width), dtype=dtype), []
            elif vlod:
                b, e, lengths = sub_lod(vlod, 0, pos, pos + 1)
                piece = v[b:e]
            else:
                piece, lengths = v[pos:pos + 1], []
            pieces.setdefault(idx, []).append(piece)
            parts.setdefault(idx, []).append(lengths)
            pos += 1
    seq_lens = {idx: n for idx, n in table.ranked}
    order = sorted(seq_lens)
    flat = [p for idx in order for p in pieces.get(idx, [])]
    if lod_only:
        out = None
    elif flat:
        out = xp.concatenate(flat)
    else:
        out = xp.zeros((0,) + tuple(width or ()), dtype=dtype or "float32")
    lod = [list(l) for l in table.coarse_lod] + [lengths_to_offsets([seq_lens[i] for i in order])]
    deeper = [l for idx in order for l in parts.get(idx, [])]
    if deeper and deeper[0]:
        lod += merge_lengths(deeper)
    return out, lod


def _to_array_infer(ctx):
    x = ctx.input_var("X")
    if x is not None:
        ctx.set_output("Out", x.shape, x.dtype, max(x.lod_level - 1, 0), type="LOD_TENSOR_ARRAY")


@register_op("lod_tensor_to_array", inputs=["X", "RankTable"], outputs=["Out"], no_grad=("RankTable",),
             infer=_to_array_infer)
def lod_tensor_to_array(ctx, ins, attrs):
    return {"Out": _to_array(ctx, ins["X"], ctx.lod("X"), _table(ctx, ins["RankTable"]))}


@register_grad("lod_tensor_to_array", inputs=["X", "RankTable", "Out@GRAD"])
def lod_tensor_to_array_grad(ctx, ins, attrs):
    g, lod = _from_array(ctx, _array_in(ctx, ins["Out@GRAD"], "Out@GRAD"), _table(ctx, ins["RankTable"]),
                         like=ins["X"])
    ctx.set_lod("X@GRAD", ctx.lod("X"))
    return {"X@GRAD": g.astype(ins["X"].dtype, copy=False)}


def _to_lod_tensor_infer(ctx):
    x = ctx.input_var("X")
    if x is not None:   # the items' LoD levels, under the level the rank table was made on
        ctx.set_output("Out", x.shape, x.dtype, x.lod_level + 1, type="LOD_TENSOR")


@register_op("array_to_lod_tensor", inputs=["X", "RankTable"], outputs=["Out"], no_grad=("RankTable",),
             infer=_to_lod_tensor_infer)
def array_to_lod_tensor(ctx, ins, attrs):
    out, lod = _from_array(ctx, _array_in(ctx, ins["X"]), _table(ctx, ins["RankTable"]))
    ctx.set_lod("Out", lod)
    return {"Out": out}


@register_grad("array_to_lod_tensor", inputs=["X", "RankTable", "Out@GRAD"])
def array_to_lod_tensor_grad(ctx, ins, attrs):
    table = _table(ctx, ins["RankTable"])
    _, lod = _from_array(ctx, _array_in(ctx, ins["X"]), table, lod_only=True)   # the forward Out's LoD
    pieces = _to_array(ctx, ins["Out@GRAD"], lod, table)
    arr = _array_out(ctx, "X@GRAD")
    for t in range(len(pieces)):
        v, lod = pieces.item(t)
        _accumulate(ctx.xp, arr, t, v, lod)
    return {"X@GRAD": arr}


# ------------------------------------------------------------------ shrink / reorder
def _active(table, i):
    """How many sequences are longer than ``i`` (the rank table is sorted longest first)."""
    return sum(1 for _, n in table.ranked if n > i)


@register_op("shrink_rnn_memory", inputs=["X", "RankTable", "I"], outputs=["Out"],
             no_grad=("RankTable", "I"),
             infer=lambda c: c.share("Out", "X"))
def shrink_rnn_memory(ctx, ins, attrs):
    """The rows of ``X`` for the sequences still running at step ``I``: its first ``k`` rows (or
    first ``k`` sequences of its top LoD level)."""
    x = ins["X"]
    k = _active(_table(ctx, ins["RankTable"]), _index(ctx, ins["I"]))
    lod = ctx.lod("X")
    if lod and len(lod[0]) > k:
        b, e, lengths = sub_lod(lod, 0, 0, k)
        ctx.set_lod("Out", [lengths_to_offsets(l) for l in lengths])
        return {"Out": x[b:e]}
    ctx.set_lod("Out", lod)
    return {"Out": x[:k]}


@register_grad("shrink_rnn_memory", inputs=["X", "Out@GRAD"])
def shrink_rnn_memory_grad(ctx, ins, attrs):
    x, g = ins["X"], ins["Out@GRAD"]
    dx = ctx.xp.zeros_like(x)
    dx[:g.shape[0]] = g
    ctx.set_lod("X@GRAD", ctx.lod("X"))
    return {"X@GRAD": dx}


def _rank_rows(ctx, x, lod, table):
    """Row indices of ``X`` in rank order, and the LoD of the result."""
    if lod:
        _check_table(ctx, table, len(lod[0]) - 1, "X")
        rows, parts = [], []
        for idx, _ in table.ranked:
            b, e, lengths = sub_lod(lod, 0, idx, idx + 1)
            rows.append(np.arange(b, e))
            parts.append(lengths)
        return (np.concatenate(rows) if rows else np.zeros(0, np.int64)), merge_lengths(parts)
    _check_table(ctx, table, x.shape[0], "X")
    return np.array([idx for idx, _ in table.ranked], dtype=np.int64), []


@register_op("reorder_lod_tensor_by_rank", inputs=["X", "RankTable"], outputs=["Out"],
             no_grad=("RankTable",), infer=lambda c: c.share("Out", "X"))
def reorder_lod_tensor_by_rank(ctx, ins, attrs):
    rows, lod = _rank_rows(ctx, ins["X"], ctx.lod("X"), _table(ctx, ins["RankTable"]))
    ctx.set_lod("Out", lod)
    return {"Out": ins["X"][ctx.xp.asarray(rows)]}


@register_grad("reorder_lod_tensor_by_rank", inputs=["X", "RankTable", "Out@GRAD"])
def reorder_lod_tensor_by_rank_grad(ctx, ins, attrs):
    rows, _ = _rank_rows(ctx, ins["X"], ctx.lod("X"), _table(ctx, ins["RankTable"]))
    dx = ctx.xp.zeros_like(ins["X"])
    dx[ctx.xp.asarray(rows)] = ins["Out@GRAD"]
    ctx.set_lod("X@GRAD", ctx.lod("X"))
    return {"X@GRAD": dx}


# ------------------------------------------------------------------ tensor_array_to_tensor
def _items(ctx, arr):
    values = []
    for t in range(len(arr)):
        v, _ = arr.item(t)
        if v is None:
            raise ValueError("op 'tensor_array_to_tensor': item %d of array %r was never written"
                             % (t, ctx.op.inputs["X"][0]))
        values.append(v)
    if not values:
        raise ValueError("op 'tensor_array_to_tensor': array %r is empty" % ctx.op.inputs["X"][0])
    return values


def _array_to_tensor_infer(ctx):
    """An item's shape (the array's), with -1 along ``axis`` (a new dimension with ``use_stack``)."""
    ctx.set_output("OutIndex", (-1,), "int32")
    shape = ctx.input_shape("X")
    if not shape:
        ctx.set_output("Out", None, ctx.input_dtype("X"), type="LOD_TENSOR")
        return
    shape, axis = list(shape), ctx.attr("axis")
    if ctx.attr("use_stack"):
        shape.insert(axis if axis >= 0 else axis + len(shape) + 1, -1)
    else:
        shape[axis] = -1
    ctx.set_output("Out", shape, ctx.input_dtype("X"), type="LOD_TENSOR")


@register_op("tensor_array_to_tensor", inputs=["X"], outputs=["Out", "OutIndex"],
             attrs={"axis": 0, "use_stack": False}, infer=_array_to_tensor_infer)
def tensor_array_to_tensor(ctx, ins, attrs):
    """The array's items concatenated (or stacked, ``use_stack``) along ``axis``; ``OutIndex``: each
    item's size along it."""
    xp = ctx.xp
    values = _items(ctx, _array_in(ctx, ins["X"]))
    axis = attrs["axis"]
    if attrs["use_stack"]:
        out = xp.stack(values, axis=axis)
        sizes = [1] * len(values)
    else:
        out = xp.concatenate(values, axis=axis)
        sizes = [v.shape[axis] for v in values]
    return {"Out": out, "OutIndex": xp.asarray(np.array(sizes, np.int32))}


@register_grad("tensor_array_to_tensor", inputs=["X", "Out@GRAD"])
def tensor_array_to_tensor_grad(ctx, ins, attrs):
    xp = ctx.xp
    values = _items(ctx, _array_in(ctx, ins["X"]))
    g = ins["Out@GRAD"]
    axis = attrs["axis"] % g.ndim
    arr = _array_out(ctx, "X@GRAD")
    at = 0
    for t, v in enumerate(values):
        if attrs["use_stack"]:
            piece = xp.take(g, t, axis=axis)
        else:
            n = v.shape[axis]
            piece = g[(slice(None),) * axis + (slice(at, at + n),)]
            at += n
        _accumulate(xp, arr, t, piece)
    return {"X@GRAD": arr}
