"""Beam search: ``beam_search`` (one step: the best ``beam_size`` candidates of each source over
all its prefixes), ``beam_search_decode`` (back from the last step's arrays to whole sentences) and
``gather_tree`` (the same backtrace on dense ``[time, batch, beam]`` tensors).

The LoD of a step is Paddle's: level 0 gives each source its prefixes, level 1 each prefix its
candidates (one row each). Ties break as in Paddle's kernel: among equal scores the candidate of the
later prefix ranks first; within one prefix the earlier candidate does."""
import numpy as np

from ..core.tensor import LoDTensorArray
from ..framework.registry import register_op

_HOST = 'selects and backtracks beams per sequence in Python, on the host'


def _host(x):
    return np.asarray(x)


def _abs_level(lod, level):
    """Level ``level`` of ``lod`` as row offsets (through the levels below it)."""
    offsets = list(lod[level])
    for k in range(level + 1, len(lod)):
        offsets = [lod[k][o] for o in offsets]
    return offsets


def _less(a, b):
    """Paddle's item order: by score, then by prefix (offset)."""
    return a[2] < b[2] or (a[2] == b[2] and a[0] < b[0])


def _insert(top, item, beam_size):
    """Insert ``item`` (offset, id, score) into ``top`` (best first), keeping at most ``beam_size``."""
    if len(top) < beam_size:
        top.append(None)
    elif _less(item, top[-1]):
        return
    k = len(top) - 2
    while k >= 0:
        if _less(top[k], item):
            top[k + 1] = top[k]
            k -= 1
        else:
            top[k + 1] = item
            return
    top[0] = item


def _beam_search_infer(ctx):
    for slot in ("selected_ids", "selected_scores"):
        ctx.set_output(slot, (-1, 1), "int64" if slot == "selected_ids" else ctx.input_dtype("scores"), 2)
    ctx.set_output("parent_idx", (-1,), "int32")


@register_op("beam_search", host=_HOST, inputs=["pre_ids", "pre_scores", "ids?", "scores"],
             outputs=["selected_ids", "selected_scores", "parent_idx?"],
             attrs={"level": 0, "beam_size": 1, "end_id": 0, "is_accumulated": True},
             infer=_beam_search_infer)
def beam_search(ctx, ins, attrs):
    """For each source, the ``beam_size`` best (prefix, candidate) pairs: a finished prefix (its
    ``pre_ids`` is ``end_id``) offers only ``end_id`` at its own score; the others offer their
    candidates (``ids``, or the column numbers when absent) with ``scores`` (accumulated, or
    ``pre_score + log(score)`` when ``is_accumulated`` is false). A source whose prefixes all ended
    and chose ``end_id`` again is dropped. ``parent_idx``: the prefix of each selected row."""
    lod = ctx.lod("scores")
    level = attrs["level"]
    if len(lod) < 2 or level >= len(lod):
        raise ValueError("op 'beam_search': scores %r must have a 2-level LoD (sources, then prefixes); got %s"
                         % (ctx.op.inputs["scores"][0], lod))
    high = _abs_level(lod, level)
    pre_ids = _host(ins["pre_ids"]).reshape(-1)
    pre_scores = _host(ins["pre_scores"]).reshape(-1)
    scores = _host(ins["scores"])
    ids = _host(ins["ids"]) if ins.get("ids") is not None else None
    width = int(np.prod(scores.shape[1:])) if scores.ndim > 1 else 1
    scores = scores.reshape(-1, width)
    if ids is not None:
        ids = ids.reshape(-1, width)
    beam_size, end_id = attrs["beam_size"], attrs["end_id"]
    n_prefix = high[-1]
    if pre_ids.size < n_prefix or scores.shape[0] < n_prefix:
        raise ValueError("op 'beam_search': the LoD %s has %d prefixes but pre_ids has %d rows and scores %d"
                         % (lod, n_prefix, pre_ids.size, scores.shape[0]))
    by_prefix = [[] for _ in range(n_prefix)]
    for src in range(len(high) - 1):
        top = []
        for off in range(high[src], high[src + 1]):
            if pre_ids[off] == end_id:
                _insert(top, (off, end_id, float(pre_scores[off])), beam_size)
                continue
            for d in range(width):
                cand = int(ids[off, d]) if ids is not None else d
                s = float(scores[off, d]) if attrs["is_accumulated"] else \
                    float(np.float32(pre_scores[off]) + np.log(np.float32(scores[off, d])))   # as Paddle: in float32
                _insert(top, (off, cand, s), beam_size)
        for item in top:
            by_prefix[item[0]].append(item)
    for src in range(len(high) - 1):   # prune sources whose every branch ended one step earlier
        offs = range(high[src], high[src + 1])
        if all(item[1] == end_id and pre_ids[off] == end_id for off in offs for item in by_prefix[off]):
            for off in offs:
                by_prefix[off] = []
    sel_ids, sel_scores, parents, low = [], [], [], [0]
    for off, items in enumerate(by_prefix):
        for item in items:
            sel_ids.append(item[1])
            sel_scores.append(item[2])
            parents.append(off)
        low.append(len(sel_ids))
    xp = ctx.xp
    out_lod = [list(high), low]
    ctx.set_lod("selected_ids", out_lod)
    ctx.set_lod("selected_scores", out_lod)
    res = {"selected_ids": xp.asarray(np.array(sel_ids, np.int64).reshape(-1, 1)),
           "selected_scores": xp.asarray(np.array(sel_scores, _host(ins["pre_scores"]).dtype).reshape(-1, 1))}
    if ctx.op.outputs.get("parent_idx"):
        res["parent_idx"] = xp.asarray(np.array(parents, np.int32))
    return res


def _step(arr, t, what, ctx):
    value, lod = arr.item(t)
    if value is None or len(lod) < 2:
        raise ValueError("op 'beam_search_decode': step %d of %s %r has no value or no 2-level LoD"
                         % (t, what, ctx.op.inputs[what][0]))
    return _host(value).reshape(-1), lod


@register_op("beam_search_decode", host=_HOST, inputs=["Ids", "Scores"], outputs=["SentenceIds", "SentenceScores"],
             attrs={"beam_size": 1, "end_id": 0},
             infer=lambda c: (c.set_output("SentenceIds", (-1,), "int64", 2),
                              c.set_output("SentenceScores", (-1,), c.input_dtype("Scores"), 2)))
def beam_search_decode(ctx, ins, attrs):
    """Whole sentences from the arrays of ``beam_search`` steps: back from the last step through each
    step's LoD to the first; per source the sentences best (final score) first. Result LoD: sources,
    then sentences."""
    ids_arr, scores_arr = ins["Ids"], ins["Scores"]
    for what, arr in (("Ids", ids_arr), ("Scores", scores_arr)):
        if not isinstance(arr, LoDTensorArray):
            raise TypeError("op 'beam_search_decode': %s %r must be a LoDTensorArray" % (what, ctx.op.inputs[what][0]))
    steps = len(ids_arr)
    if steps == 0 or len(scores_arr) != steps:
        raise ValueError("op 'beam_search_decode': Ids has %d steps and Scores %d; both need the same, at least one"
                         % (steps, len(scores_arr)))
    end_id = attrs["end_id"]
    src_num = len(_step(ids_arr, 0, "Ids", ctx)[1][0]) - 1
    sentences = [[] for _ in range(src_num)]      # per source: [ids, scores] built backwards
    prefix_of = [[] for _ in range(src_num)]       # per source: the row each sentence continues from
    for t in range(steps - 1, -1, -1):
        ids, lod = _step(ids_arr, t, "Ids", ctx)
        scores, _ = _step(scores_arr, t, "Scores", ctx)
        src_lod, sent_lod = lod[0], lod[1]
        for src in range(src_num):
            sents, prefixes = sentences[src], prefix_of[src]
            start, end = src_lod[src], src_lod[src + 1]
            if not prefixes:        # ends here (pruned at this step, or the last step): every candidate
                for p in range(start, end):
                    for cand in range(sent_lod[p], sent_lod[p + 1]):
                        prefixes.append(p)
                        sents.append(([int(ids[cand])], [float(scores[cand])]))
                continue
            cand_start = sent_lod[start]
            p = start
            count = sent_lod[p + 1] - sent_lod[p]
            for k, row in enumerate(prefixes):
                word, score = int(ids[row]), float(scores[row])
                if word != end_id or not sents[k][0]:      # repeated end tokens are skipped
                    sents[k][0].append(word)
                    sents[k][1].append(score)
                while cand_start + count <= row:
                    p += 1
                    count += sent_lod[p + 1] - sent_lod[p]
                prefixes[k] = p
    out_ids, out_scores, src_lod, sent_lod = [], [], [0], [0]
    for src in range(src_num):
        ranked = sorted(sentences[src], key=lambda s: -s[1][0])
        for word_ids, word_scores in ranked:
            out_ids.extend(reversed(word_ids))
            out_scores.extend(reversed(word_scores))
            sent_lod.append(sent_lod[-1] + len(word_ids))
        src_lod.append(src_lod[-1] + len(ranked))
    xp = ctx.xp
    lod = [src_lod, sent_lod]
    ctx.set_lod("SentenceIds", lod)
    ctx.set_lod("SentenceScores", lod)
    score_dtype = _host(scores_arr.item(0)[0]).dtype
    return {"SentenceIds": xp.asarray(np.array(out_ids, np.int64)),
            "SentenceScores": xp.asarray(np.array(out_scores, score_dtype))}


@register_op("gather_tree", inputs=["Ids", "Parents"], outputs=["Out"], infer=lambda c: c.share("Out", "Ids"))
def gather_tree(ctx, ins, attrs):
    """Back through ``Parents`` from the last step: ``Out[t, b, k]`` is the id at step ``t`` on the
    path that ends in beam ``k`` of batch ``b`` (``[max_time, batch, beam]``)."""
    xp = ctx.xp
    ids, parents = ins["Ids"], ins["Parents"]
    if ids.shape != parents.shape or ids.ndim != 3:
        raise ValueError("op 'gather_tree': Ids and Parents must both be [max_time, batch, beam], got %s and %s"
                         % (list(ids.shape), list(parents.shape)))
    steps, batch, beam = ids.shape
    out = xp.empty_like(ids)
    if steps == 0:
        return {"Out": out}
    rows = xp.arange(batch)[:, None]
    out[-1] = ids[-1]
    parent = parents[-1].astype(np.int64)
    for t in range(steps - 2, -1, -1):
        out[t] = ids[t][rows, parent]
        parent = parents[t][rows, parent].astype(np.int64)
    return {"Out": out}
