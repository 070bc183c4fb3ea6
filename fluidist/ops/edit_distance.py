"""Sequence comparison ops: ``edit_distance`` (Levenshtein distance of each hypothesis to its
reference) and ``sequence_erase`` (drop given tokens from LoD sequences, which ``layers.edit_distance``
uses for its ``ignored_tokens``). Both run on the host and have no gradient."""
import numpy as np

from ..framework.registry import register_op

_HOST = 'per-sequence bookkeeping in Python, on the host'


def _spans(ctx, slot, value, lengths):
    if lengths is not None:
        lens = np.asarray(lengths).reshape(-1).astype(np.int64)
        t = value.shape[1] if value.ndim > 1 else 1
        return [(i * t, i * t + int(n)) for i, n in enumerate(lens)]
    lod = ctx.lod(slot)
    if not lod:
        raise ValueError("op %r: input %s %r has no LoD; feed it as a LoDTensor, or give the lengths input for "
                         "padded data" % (ctx.op.type, slot, ctx.op.inputs[slot][0]))
    offsets = [int(o) for o in lod[-1]]
    return list(zip(offsets, offsets[1:]))


def levenshtein(a, b):
    """Edit distance (insertions, deletions, substitutions all cost 1) of two int sequences."""
    m, n = len(a), len(b)
    if m == 0:
        return n
    if n == 0:
        return m
    prev = np.arange(n + 1)
    for i in range(1, m + 1):
        cur = np.empty(n + 1, dtype=np.int64)
        cur[0] = i
        sub = prev[:-1] + (np.asarray(b) != a[i - 1])
        dele = prev[1:] + 1
        best = np.minimum(sub, dele)
        for j in range(1, n + 1):  # insertions chain along the row
            cur[j] = min(best[j - 1], cur[j - 1] + 1)
        prev = cur
    return int(prev[n])


def _ed_infer(ctx):
    hs = ctx.input_shape("Hyps")
    n = hs[0] if hs is not None and ctx.has_input("HypsLength") else -1
    ctx.set_output("Out", (n, 1), "float32")
    ctx.set_output("SequenceNum", (1,), "int64")


@register_op("edit_distance", host=_HOST, inputs=["Hyps", "Refs", "HypsLength?", "RefsLength?"], outputs=["SequenceNum", "Out"],
             attrs={"normalized": False}, infer=_ed_infer)
def edit_distance(ctx, ins, attrs):
    """Out[i] = Levenshtein distance of hypothesis i to reference i (divided by the reference length
    when ``normalized``); SequenceNum = the number of pairs."""
    xp = ctx.xp
    hyps = np.asarray(ins["Hyps"]).reshape(-1)
    refs = np.asarray(ins["Refs"]).reshape(-1)
    hs = _spans(ctx, "Hyps", ins["Hyps"], ins.get("HypsLength"))
    rs = _spans(ctx, "Refs", ins["Refs"], ins.get("RefsLength"))
    if len(hs) != len(rs):
        raise ValueError("op 'edit_distance': Hyps %r has %d sequences but Refs %r has %d"
                         % (ctx.op.inputs["Hyps"][0], len(hs), ctx.op.inputs["Refs"][0], len(rs)))
    out = np.zeros((len(hs), 1), dtype=np.float32)
    for i, ((a, b), (c, d)) in enumerate(zip(hs, rs)):
        dist = float(levenshtein(hyps[a:b].tolist(), refs[c:d].tolist()))
        if attrs["normalized"]:
            if d == c:
                raise ValueError("op 'edit_distance': reference %d of Refs %r is empty, which normalized=True "
                                 "cannot divide by" % (i, ctx.op.inputs["Refs"][0]))
            dist /= d - c
        out[i, 0] = dist
    return {"Out": xp.asarray(out), "SequenceNum": xp.asarray(np.array([len(hs)], dtype=np.int64))}


@register_op("sequence_erase", host=_HOST, inputs=["X"], outputs=["Out"], attrs={"tokens": []},
             infer=lambda c: c.set_output("Out", (-1,) + tuple((c.input_shape("X") or (0, 1))[1:]),
                                          c.input_dtype("X"), c.input_lod_level("X")))
def sequence_erase(ctx, ins, attrs):
    """X [rows, 1] (int, LoD) with every row holding one of ``tokens`` removed; the LoD shrinks with it."""
    xp = ctx.xp
    x = np.asarray(ins["X"])
    lod = ctx.lod("X")
    if not lod:
        raise ValueError("op 'sequence_erase': X %r has no LoD; feed it as a LoDTensor" % ctx.op.inputs["X"][0])
    keep = ~np.isin(x.reshape(-1), np.asarray(attrs["tokens"], dtype=x.dtype))
    offsets = np.asarray(lod[-1], dtype=np.int64)
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    new_last = [int(kept_before[o]) for o in offsets]
    ctx.set_lod("Out", list(lod[:-1]) + [new_last])
    return {"Out": xp.asarray(x[keep].reshape((-1,) + x.shape[1:]))}
