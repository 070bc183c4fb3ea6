"""``ctc_align`` (greedy CTC decoding: merge repeats, drop blanks) over LoD sequences or padded
rows, and ``hash`` (XXH64 of each row of ids, Paddle's feature hashing)."""
import numpy as np

from ..framework.registry import register_grad, register_op

_HOST = 'per-sequence bookkeeping in Python, on the host'


def _ctc_collapse(seq, blank, merge):
    out, prev = [], None
    for t in seq:
        if t != blank and not (merge and t == prev):
            out.append(t)
        prev = t
    return out


def _ctc_infer(ctx):
    """As Paddle declares them: Output shaped like Input (its true length is known at run time)."""
    ctx.set_output("Output", ctx.input_shape("Input"), ctx.input_dtype("Input"), ctx.input_lod_level("Input"))
    if ctx.has_input("InputLength"):
        ctx.set_output("OutputLength", ctx.input_shape("InputLength"), "int64")


@register_op("ctc_align", host=_HOST, inputs=["Input", "InputLength?"], outputs=["Output", "OutputLength?"],
             attrs={"blank": 0, "merge_repeated": True, "padding_value": 0}, infer=_ctc_infer)
def ctc_align(ctx, ins, attrs):
    """Each sequence of token ids with repeats merged (``merge_repeated``) and ``blank`` removed.
    LoD Input ([T, 1]): Output is [T', 1] with the new sequence lengths (all empty: one -1 row, as
    Paddle gives). Padded Input ([N, T] with InputLength): Output [N, T] padded with
    ``padding_value``, and OutputLength."""
    x = np.asarray(ins["Input"])
    blank, merge = attrs["blank"], attrs["merge_repeated"]
    if ins.get("InputLength") is not None:
        lengths = np.asarray(ins["InputLength"]).reshape(-1)
        out = np.full(x.shape, attrs["padding_value"], dtype=x.dtype)
        out_len = np.zeros((x.shape[0], 1), dtype=np.int64)
        for i in range(x.shape[0]):
            seq = _ctc_collapse(x[i, :int(lengths[i])].tolist(), blank, merge)
            out[i, :len(seq)] = seq
            out_len[i, 0] = len(seq)
        return {"Output": ctx.xp.asarray(out), "OutputLength": ctx.xp.asarray(out_len)}
    lod = ctx.lod("Input")
    if not lod:
        raise ValueError("op 'ctc_align': Input %r needs a LoD (sequences) or an InputLength"
                         % ctx.op.inputs["Input"][0])
    offsets = [int(o) for o in lod[-1]]
    flat = x.reshape(-1).tolist()
    seqs = [_ctc_collapse(flat[a:b], blank, merge) for a, b in zip(offsets, offsets[1:])]
    new = [0]
    for s in seqs:
        new.append(new[-1] + len(s))
    values = [t for s in seqs for t in s]
    if not values:
        values, new = [-1], [0, 1]
    ctx.set_lod("Output", [list(lv) for lv in lod[:-1]] + [new])
    return {"Output": ctx.xp.asarray(np.array(values, dtype=x.dtype).reshape(-1, 1))}


# ------------------------------------------------------------------ XXH64
_P1, _P2, _P3 = np.uint64(11400714785074694791), np.uint64(14029467366897019727), np.uint64(1609587929392839161)
_P4, _P5 = np.uint64(9650029242287828579), np.uint64(2870177450012600261)


def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc, lane):
    return _rotl(acc + lane * _P2, 31) * _P1


def xxh64_rows(data, seed):
    """XXH64 of each row of ``data`` (a 2-D uint8 array; every row one message), as uint64."""
    n, length = data.shape
    with np.errstate(over="ignore"):
        seed = np.uint64(seed)
        lanes8 = data[:, :length // 8 * 8].view("<u8") if length >= 8 else np.zeros((n, 0), np.uint64)
        pos = 0
        if length >= 32:
            v = [np.full(n, seed + _P1 + _P2, np.uint64), np.full(n, seed + _P2, np.uint64),
                 np.full(n, seed, np.uint64), np.full(n, seed - _P1, np.uint64)]
            stripes = length // 32
            for s in range(stripes):
                for k in range(4):
                    v[k] = _round(v[k], lanes8[:, 4 * s + k])
            h = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
            for k in range(4):
                h = (h ^ _round(np.zeros(n, np.uint64), v[k])) * _P1 + _P4
            pos = stripes * 32
        else:
            h = np.full(n, seed + _P5, np.uint64)
        h = h + np.uint64(length)
        while pos + 8 <= length:
            h = _rotl(h ^ _round(np.zeros(n, np.uint64), lanes8[:, pos // 8]), 27) * _P1 + _P4
            pos += 8
        if pos + 4 <= length:
            lane4 = data[:, pos:pos + 4].copy().view("<u4").reshape(n).astype(np.uint64)
            h = _rotl(h ^ (lane4 * _P1), 23) * _P2 + _P3
            pos += 4
        while pos < length:
            h = _rotl(h ^ (data[:, pos].astype(np.uint64) * _P5), 11) * _P1
            pos += 1
        h = (h ^ (h >> np.uint64(33))) * _P2
        h = (h ^ (h >> np.uint64(29))) * _P3
        return h ^ (h >> np.uint64(32))


def _hash_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None:
        ctx.set_output("Out", [xs[0], ctx.attr("num_hash"), 1], ctx.input_dtype("X"), ctx.input_lod_level("X"))


@register_op("hash", host=_HOST, inputs=["X"], outputs=["Out"], attrs={"num_hash": 1, "mod_by": 100000}, infer=_hash_infer,
             share_lod=("X", "Out"))
def hash_op(ctx, ins, attrs):
    """For each row of integer ids, ``num_hash`` hashes: XXH64 of the row's bytes with seeds
    0 .. num_hash-1, modulo ``mod_by``; Out is [N, num_hash, 1]."""
    x = np.ascontiguousarray(np.asarray(ins["X"]))
    if x.dtype.kind not in "iu":
        raise ValueError("op 'hash': X %r must hold integer ids, got %s" % (ctx.op.inputs["X"][0], x.dtype))
    rows = x.reshape(x.shape[0], -1).view(np.uint8)
    out = np.stack([xxh64_rows(rows, j) % np.uint64(attrs["mod_by"]) for j in range(attrs["num_hash"])], axis=1)
    return {"Out": ctx.xp.asarray(out.astype(x.dtype).reshape(x.shape[0], attrs["num_hash"], 1))}


# ------------------------------------------------------------------ filter_by_instag
def _instances(ctx, ins, is_lod):
    """Row ranges [(start, length)] of the instances of Ins: its last LoD level, or one row each."""
    if is_lod:
        lod = ctx.lod("Ins")
        if not lod:
            raise ValueError("op 'filter_by_instag': Ins %r has no LoD but is_lod is True" % ctx.op.inputs["Ins"][0])
        off = [int(o) for o in lod[-1]]
        return [(a, b - a) for a, b in zip(off, off[1:])]
    return [(i, 1) for i in range(ins.shape[0])]


@register_op("filter_by_instag", host=_HOST, inputs=["Ins", "Ins_tag", "Filter_tag"], outputs=["Out", "LossWeight", "IndexMap"],
             attrs={"is_lod": True, "out_val_if_empty": 0}, no_grad=("Ins_tag", "Filter_tag"),
             infer=lambda c: (c.set_output("Out", c.input_shape("Ins"), c.input_dtype("Ins"), 1),
                              c.set_output("LossWeight", [-1, 1], "float32", 1),
                              c.set_output("IndexMap", [-1, 3], c.input_dtype("Ins_tag"), 1)))
def filter_by_instag(ctx, ins, attrs):
    """The instances of Ins with a tag (their Ins_tag sequence) among Filter_tag: Out holds their rows
    (one sequence each), LossWeight a 1 per kept instance, IndexMap (out row, in row, rows) per kept
    instance. Nothing kept: one row of ``out_val_if_empty`` with weight 0."""
    xp = ctx.xp
    x = ins["Ins"]
    tags = np.asarray(ins["Ins_tag"]).reshape(-1)
    tag_lod = ctx.lod("Ins_tag")
    if not tag_lod:
        raise ValueError("op 'filter_by_instag': Ins_tag %r needs a LoD (the tags of each instance)"
                         % ctx.op.inputs["Ins_tag"][0])
    toff = [int(o) for o in tag_lod[-1]]
    wanted = set(np.asarray(ins["Filter_tag"]).reshape(-1).tolist())
    spans = _instances(ctx, x, attrs["is_lod"])
    if len(spans) != len(toff) - 1:
        raise ValueError("op 'filter_by_instag': Ins has %d instances but Ins_tag has tags for %d"
                         % (len(spans), len(toff) - 1))
    kept = [(s, n) for k, (s, n) in enumerate(spans) if wanted & set(tags[toff[k]:toff[k + 1]].tolist())]
    map_dtype = ins["Ins_tag"].dtype
    if not kept:
        ctx.set_lod("Out", [[0, 1]])
        ctx.set_lod("LossWeight", [[0, 1]])
        ctx.set_lod("IndexMap", [[0, 1]])
        return {"Out": xp.full((1,) + tuple(x.shape[1:]), attrs["out_val_if_empty"], dtype=x.dtype),
                "LossWeight": xp.zeros((1, 1), dtype=np.float32),
                "IndexMap": xp.asarray(np.array([[0, 1, 1]], dtype=map_dtype))}
    rows, index_map, out_off = [], [], [0]
    for s, n in kept:
        index_map.append((out_off[-1], s, n))
        rows.extend(range(s, s + n))
        out_off.append(out_off[-1] + n)
    counts = list(range(len(kept) + 1))
    ctx.set_lod("Out", [out_off])
    ctx.set_lod("LossWeight", [counts])
    ctx.set_lod("IndexMap", [counts])
    return {"Out": x[xp.asarray(np.array(rows, dtype=np.int64))],
            "LossWeight": xp.ones((len(kept), 1), dtype=np.float32),
            "IndexMap": xp.asarray(np.array(index_map, dtype=map_dtype))}


@register_grad("filter_by_instag", inputs=["Ins", "IndexMap", "LossWeight", "Out@GRAD"])
def filter_by_instag_grad(ctx, ins, attrs):
    """dOut rows back to the rows of Ins they came from (zeros elsewhere; nothing when nothing was kept)."""
    xp = ctx.xp
    x, d = ins["Ins"], ins["Out@GRAD"]
    dx = xp.zeros(x.shape, dtype=d.dtype)
    if float(xp.asarray(ins["LossWeight"]).sum()) > 0:
        for out_start, in_start, n in np.asarray(ins["IndexMap"]).tolist():
            dx[in_start:in_start + n] = d[out_start:out_start + n]
    lod = ctx.lod("Ins")
    if lod:
        ctx.set_lod("Ins@GRAD", lod)
    return {"Ins@GRAD": dx}
