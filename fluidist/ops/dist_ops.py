"""Compute ops the transpiler inserts around communication: splitting gradients into the blocks
that go to each pserver, splitting ids over pservers and merging prefetched rows back."""
import numpy as np

from ..core.lazy_rows import LazyRows
from ..core.tensor import SelectedRows, distinct
from ..framework.op_role import OpRole
from ..framework.registry import register_op


def _split_byref_infer(ctx):
    xs = ctx.input_shape("X")
    sections = ctx.attr("sections") or []
    if xs is None:
        return
    for i, rows in enumerate(sections):
        ctx.set_output("Out", [rows] + list(xs[1:]), ctx.input_dtype("X"), i=i)


@register_op("split_byref", inputs=["X"], outputs=["Out*"], attrs={"sections": [], "num": 0, "axis": 0},
             infer=_split_byref_infer, role=OpRole.Dist)
def split_byref(ctx, ins, attrs):
    """Rows of X cut into ``sections`` (views, no copy: the blocks are only read by ``send``)."""
    x = ins["X"]
    sections = attrs["sections"]
    if sum(sections) != x.shape[0]:
        raise ValueError("split_byref: sections %s do not add up to the %d rows of %r"
                         % (sections, x.shape[0], ctx.op.inputs["X"][0]))
    out, begin = [], 0
    for rows in sections:
        out.append(x[begin:begin + rows])
        begin += rows
    return {"Out": out}


@register_op("split_selected_rows", inputs=["X"], outputs=["Out*"], attrs={"height_sections": []},
             role=OpRole.Dist)
def split_selected_rows(ctx, ins, attrs):
    """A row-sparse gradient split by row ranges; each part's rows are relative to its range."""
    x = ins["X"]
    if not isinstance(x, SelectedRows):
        raise TypeError("split_selected_rows: %r must be a SelectedRows (row-sparse) value"
                        % ctx.op.inputs["X"][0])
    xp = ctx.xp
    rows = x.rows
    out, begin = [], 0
    for h in attrs["height_sections"]:
        mask = (rows >= begin) & (rows < begin + h)
        idx = xp.nonzero(mask)[0]
        out.append(SelectedRows(rows[idx] - begin, x.value[idx], h))
        begin += h
    return {"Out": out}


@register_op("split_ids", inputs=["Ids*"], outputs=["Out*"], attrs={"shard_rows": False})
def split_ids(ctx, ins, attrs):
    """Ids split over N pservers by ``id % N`` (duplicates removed). A SelectedRows is split the same
    way as Paddle 1.8 splits it (``_split_rows_by_id``), or, with ``shard_rows`` (fluidist's transpiler
    sets it for the distributed table's gradient), merged and its rows turned into row indices of
    pserver ``id % N``'s shard (``id // N``)."""
    parts = len(ctx.op.outputs["Out"])
    xs = ins["Ids"]
    xp = ctx.xp
    if len(xs) == 1 and isinstance(xs[0], SelectedRows) and not attrs["shard_rows"]:
        return {"Out": _split_rows_by_id(xp, xs[0], parts)}
    if len(xs) == 1 and isinstance(xs[0], SelectedRows):
        g = xs[0].merged(xp)
        out = []
        for k in range(parts):
            idx = xp.flatnonzero(g.rows % parts == k)
            out.append(SelectedRows(xp.take(g.rows, idx) // parts, xp.take(g.value, idx, axis=0),
                                    len(range(k, g.height, parts))))
        return {"Out": out}
    flat = xs[0].reshape(-1) if len(xs) == 1 else xp.concatenate([x.reshape(-1) for x in xs])
    ids = distinct(xp, flat.astype(np.int64, copy=False))
    if parts == 1:
        return {"Out": [ids.reshape(-1, 1)]}
    part = ids % parts
    return {"Out": [ids[part == k].reshape(-1, 1) for k in range(parts)]}


def _split_rows_by_id(xp, g, parts):
    """Paddle 1.8's split of a SelectedRows: part ``k`` holds the rows ``id % parts == k`` in their
    order (ids kept, repeats too) with the whole height; a repeated id's rows all carry the value of
    its last occurrence, as Paddle's id-to-index map keeps the last."""
    rows = g.rows.reshape(-1)
    if rows.size == 0:
        return [SelectedRows(rows, g.value[:0] if g.value is not None else None, g.height) for _ in range(parts)]
    uniq, first_from_end = xp.unique(rows[::-1], return_index=True)
    last = rows.size - 1 - first_from_end
    source = xp.take(last, xp.searchsorted(uniq, rows))
    out = []
    for k in range(parts):
        idx = xp.flatnonzero(rows % parts == k)
        out.append(SelectedRows(xp.take(rows, idx), xp.take(g.value, xp.take(source, idx), axis=0), g.height))
    return out


@register_op("merge_ids", inputs=["Ids*", "Rows*", "X*"], outputs=["Out*"])
def merge_ids(ctx, ins, attrs):
    """For each Ids input, the rows of X (prefetched per pserver, in the order of Rows) it asks for;
    each Out carries the LoD of its Ids, as the lookup it replaces did (a sequence_pool can follow)."""
    xp = ctx.xp
    rows = xp.concatenate([r.reshape(-1) for r in ins["Rows"]])
    values = xp.concatenate(ins["X"])
    if values.shape[0] != rows.shape[0]:
        raise ValueError("merge_ids: the Rows inputs hold %d ids but the X inputs %d rows"
                         % (rows.shape[0], values.shape[0]))
    all_ids = ins["Ids"]
    flat = xp.concatenate([ids.reshape(-1) for ids in all_ids]).astype(np.int64, copy=False)
    # one lookup and one gather for every Ids input at once; each Out is a block of the result
    at = _positions(xp, rows.astype(np.int64, copy=False), flat)
    if flat.size and (rows.size == 0 or bool((xp.take(rows, at) != flat).any())):
        raise ValueError("merge_ids: some ids of %s were not prefetched (not in the Rows inputs %s)"
                         % (ctx.op.inputs["Ids"], ctx.op.inputs["Rows"]))
    gathered = xp.take(values, at, axis=0)
    out, at = [], 0
    for i, ids in enumerate(all_ids):
        n = ids.size
        out.append(gathered[at:at + n])
        at += n
        ctx.set_lod("Out", ctx.lod("Ids", i) or [], i)
    return {"Out": out}


def _positions(xp, rows, ids):
    """For each of ``ids``, its position in ``rows`` (distinct ids); an id not in ``rows`` gets some
    position whose row differs from it (the caller checks). Ids below a few times the rows' count
    plus 2^20 go through a position map indexed by id (a 1M-row table: 8x faster than a binary
    search of 26K unsorted ids); larger ones through a sort and a binary search."""
    if rows.size == 0:
        return xp.zeros(ids.shape, dtype=np.int64)
    top = int(rows.max()) + 1
    if int(rows.min()) >= 0 and top <= 64 * rows.size + (1 << 20):
        where = xp.empty(top, dtype=np.int64)     # entries no row writes are never trusted
        where[rows] = xp.arange(rows.size)
        return xp.take(where, xp.clip(ids, 0, top - 1)).clip(0, rows.size - 1)
    order = xp.argsort(rows)
    pos = xp.minimum(xp.searchsorted(xp.take(rows, order), ids), rows.size - 1)
    return xp.take(order, pos)


@register_op("fake_init", outputs=["Out"], attrs={"shape": []}, init="placeholder")
def fake_init(ctx, ins, attrs):
    """Stands in for a table's initialiser on trainers: the table lives on the pservers. The value has
    the table's shape (gradient ops read it) but no memory: a read-only broadcast of one zero."""
    return {"Out": ctx.xp.broadcast_to(ctx.xp.zeros((), dtype=np.float32), tuple(attrs["shape"]))}


@register_op("lazy_rows", outputs=["Out"], attrs={"shape": [], "value": 0.0, "dtype": "float32"}, init="fill")
def lazy_rows(ctx, ins, attrs):
    """An accumulator of a distributed table on its pserver (the transpiler's, for row-wise updates):
    a ``shape`` tensor whose rows read as ``value`` until first written, each then costing its own
    memory only (``core.lazy_rows.LazyRows``)."""
    shape = list(attrs["shape"])
    if len(shape) != 2 or min(shape) < 0:
        raise ValueError("lazy_rows: shape must be [rows, width], got %s" % shape)
    return {"Out": LazyRows(shape[0], shape[1], attrs["dtype"], attrs["value"], ctx.xp)}


@register_op("lookup_sparse_table", inputs=["W", "Ids"], outputs=["Out"],
             attrs={"is_sparse": True, "is_distributed": True, "padding_idx": -1, "shard_num": 1,
                    "auto_grown_table": True, "is_test": False})
def lookup_sparse_table(ctx, ins, attrs):
    """Rows of this pserver's shard of a distributed table: id ``i`` is row ``i // shard_num``. A
    SelectedRows ``W`` is Paddle's auto-growing table instead (see ``_grown_table_rows``)."""
    if isinstance(ins["W"], SelectedRows):
        return {"Out": _grown_table_rows(ctx, ins["W"], ins["Ids"].reshape(-1), attrs)}
    w, ids = ins["W"], ins["Ids"].reshape(-1).astype(np.int64)
    local = ids // int(attrs["shard_num"])
    if local.size and (local.min() < 0 or local.max() >= w.shape[0]):
        raise ValueError("lookup_sparse_table: ids %s are outside table %r's shard of %d rows"
                         % (ids[(local < 0) | (local >= w.shape[0])][:5].tolist(), ctx.op.inputs["W"][0],
                            w.shape[0]))
    out = ctx.xp.take(w, local, axis=0)     # a gather: faster than w[local], and a copy all the same
    pad = attrs["padding_idx"]
    if pad is not None and pad >= 0:
        out[ids == pad] = 0
    return {"Out": out}


def _grown_table_rows(ctx, table, ids, attrs):
    """Paddle 1.8's auto-growing table: a SelectedRows whose value has room for a number of rows and
    whose ``rows`` lists the ids given a value row so far, in the order they came. Each id reads the
    value row it was given; an id not in the table takes the next free row (``auto_grown_table``,
    outside ``is_test``: the table's rows grow, in place) or, under ``is_test``, reads zeros."""
    held = [] if table.rows is None else table.rows.reshape(-1).tolist()
    index = {int(r): i for i, r in enumerate(held)}
    grow = attrs["auto_grown_table"] and not attrs["is_test"]
    capacity = 0 if table.value is None else table.value.shape[0]
    positions = []
    for key in ids.tolist():
        at = index.get(int(key), -1)
        if at < 0 and not attrs["is_test"]:
            if not grow:
                raise ValueError("op 'lookup_sparse_table': id %d is not in table %r (auto_grown_table is off)"
                                 % (key, ctx.op.inputs["W"][0]))
            if len(held) == capacity:
                raise ValueError("op 'lookup_sparse_table': table %r is full: its value holds %d rows"
                                 % (ctx.op.inputs["W"][0], capacity))
            at = index[int(key)] = len(held)
            held.append(int(key))
        positions.append(at)
    if len(held) != (0 if table.rows is None else table.rows.size):
        table.rows = np.asarray(held, dtype=np.int64)
    xp = ctx.xp
    pos = xp.asarray(np.asarray(positions, dtype=np.int64))
    out = xp.take(table.value, xp.maximum(pos, 0), axis=0)
    out[pos < 0] = 0
    pad = attrs["padding_idx"]
    if pad is not None and pad >= 0:
        out[ids == pad] = 0
    return out


@register_op("ref_by_trainer_id", inputs=["X*", "TrainerId"], outputs=["Out"], host_inputs=("TrainerId",),
             infer=lambda ctx: ctx.share("Out", "X"))
def ref_by_trainer_id(ctx, ins, attrs):
    """The X tensor of this trainer: ``X[TrainerId]`` (a pserver keeps one copy per trainer)."""
    xs, tid = ins["X"], int(np.asarray(ins["TrainerId"]).reshape(-1)[0])
    if not 0 <= tid < len(xs):
        raise ValueError("op 'ref_by_trainer_id': TrainerId %d is out of range for the %d tensors of X %s"
                         % (tid, len(xs), ctx.op.inputs["X"]))
    return {"Out": xs[tid]}
