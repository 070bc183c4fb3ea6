"""Detection post-processing and SSD target ops: ``multiclass_nms`` / ``multiclass_nms2``,
``bipartite_match``, ``target_assign`` and ``mine_hard_examples``, with Paddle 1.8's orders and
corner cases. They are sequential algorithms over a few thousand boxes: host ops, without gradients.

``multiclass_nms`` per image: for each class but ``background_label``, the boxes scoring above
``score_threshold`` (the best ``nms_top_k``) are kept greedily in score order unless their IoU with a
kept box exceeds the threshold (which shrinks by ``nms_eta`` while above 0.5); then at most
``keep_top_k`` detections of all classes, by score. Rows ``[label, score, box]`` by class, then in
kept order; the LoD counts each image's rows.
"""
import numpy as np

from ..core.tensor import lengths_to_offsets
from ..framework.registry import register_op

_HOST = "greedy sequential box matching and suppression, on the host"


def _lod_offsets(ctx, slot, rows):
    lod = ctx.lod(slot)
    if not lod:
        return None
    offsets = [int(o) for o in lod[-1]]
    if offsets[0] != 0 or offsets[-1] != rows:
        raise ValueError("op %r: the LoD %s of %s %r does not match its %d rows"
                         % (ctx.op.type, offsets, slot, ctx.op.inputs[slot][0], rows))
    return offsets


# ------------------------------------------------------------------ multiclass_nms / multiclass_nms2
def overlaps(a, b, norm):
    """[len(a), len(b)] Paddle's JaccardOverlap of ``[xmin, ymin, xmax, ymax]`` boxes (``norm``: 0, or
    1 for pixel boxes): 0 for disjoint boxes, an inverted box has no area."""
    a, b = a[:, None, :].astype(np.float64), b[None, :, :].astype(np.float64)

    def area(x):
        ok = (x[..., 2] >= x[..., 0]) & (x[..., 3] >= x[..., 1])
        return np.where(ok, (x[..., 2] - x[..., 0] + norm) * (x[..., 3] - x[..., 1] + norm), 0.0)
    apart = (b[..., 0] > a[..., 2]) | (b[..., 2] < a[..., 0]) | (b[..., 1] > a[..., 3]) | (b[..., 3] < a[..., 1])
    inter = (np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + norm) * \
        (np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + norm)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area(a) + area(b) - inter)
    return np.where(apart, 0.0, iou)


def _nms(boxes, scores, attrs):
    """Indices of the boxes one class keeps, in score order."""
    norm = 0.0 if attrs["normalized"] else 1.0
    cand = np.nonzero(scores > attrs["score_threshold"])[0]
    cand = cand[np.argsort(-scores[cand], kind="mergesort")]
    if attrs["nms_top_k"] > -1:
        cand = cand[:attrs["nms_top_k"]]
    iou = overlaps(boxes[cand], boxes[cand], norm)
    kept, threshold = [], attrs["nms_threshold"]
    for k in range(len(cand)):
        if not kept or iou[k, kept].max() <= threshold:
            kept.append(k)
            if attrs["nms_eta"] < 1 and threshold > 0.5:
                threshold *= attrs["nms_eta"]
    return [int(cand[k]) for k in kept]


def _image_nms(boxes_of, scores, attrs, per_class_boxes, merge=None):
    """{class: kept indices} of one image; ``scores`` [C, M]; ``boxes_of(c)`` [M, 4]. ``merge(boxes,
    class scores)`` first changes them in place (locality-aware NMS), class by class."""
    kept = {}
    for c in range(scores.shape[0]):
        if c != attrs["background_label"]:
            if merge is not None:
                merge(boxes_of(c), scores[c])
            kept[c] = _nms(boxes_of(c), scores[c], attrs)
    total = sum(len(v) for v in kept.values())
    keep_top = attrs["keep_top_k"]
    if keep_top > -1 and total > keep_top:
        pairs = sorted(((scores[c, i], c, i) for c, idx in kept.items() for i in idx), key=lambda t: -t[0])[:keep_top]
        kept = {}
        for _, c, i in pairs:
            kept.setdefault(c, []).append(i)
        if per_class_boxes:         # Paddle sorts each class's indices for [M, C] scores
            kept = {c: sorted(v) for c, v in kept.items()}
    return {c: kept[c] for c in sorted(kept) if kept[c]}


def _nms_infer(ctx):
    bs = ctx.input_shape("BBoxes")
    if bs is None:
        return
    dtype = ctx.input_dtype("BBoxes")
    rows = bs[1] if len(bs) == 3 and ctx.input_lod_level("BBoxes") == 0 else -1
    ctx.set_output("Out", (rows, bs[-1] + 2), dtype, 1)
    ctx.set_output("Index", (rows, 1), "int32", 1)


def _locality_merge(attrs):
    """EAST's merge before NMS: walking the boxes in order, one overlapping the last unmerged box by more
    than ``nms_threshold`` is merged into it (coordinates weighted by the scores, scores added) and
    drops out (its score set under ``score_threshold``)."""
    norm = 0.0 if attrs["normalized"] else 1.0

    def merge(boxes, scores):
        last = -1
        for i in range(len(scores)):
            if last > -1 and overlaps(boxes[i:i + 1], boxes[last:last + 1], norm)[0, 0] > attrs["nms_threshold"]:
                boxes[last] = (boxes[i] * scores[i] + boxes[last] * scores[last]) / (scores[i] + scores[last])
                scores[last] += scores[i]
                scores[i] = attrs["score_threshold"] - 1
            else:
                last = i
    return merge


def _run_nms(ctx, ins, attrs, locality=False):
    """(rows [label, score, box...], indices into the input boxes, rows per image)."""
    boxes, scores = np.array(ins["BBoxes"]), np.array(ins["Scores"])      # copies: locality NMS merges in place
    if boxes.shape[-1] != 4:
        raise NotImplementedError("op %r over polygon boxes (%d coordinates) is not implemented in fluidist: it "
                                  "takes [x1, y1, x2, y2] boxes; use their bounding boxes"
                                  % (ctx.op.type, boxes.shape[-1]))
    if locality and scores.ndim != 3:
        raise ValueError("op 'locality_aware_nms': Scores must be [N, C, M] and BBoxes [N, M, 4], got %s and %s"
                         % (list(scores.shape), list(boxes.shape)))
    merge = _locality_merge(attrs) if locality else None
    rows, index, counts = [], [], []
    if scores.ndim == 3:            # [N, C, M] scores, [N, M, 4] boxes shared by the classes
        images = [(boxes[n], scores[n], n * scores.shape[2], False) for n in range(scores.shape[0])]
    else:                           # [M, C] scores and [M, C, 4] boxes, one LoD sequence per image
        offsets = _lod_offsets(ctx, "Scores", scores.shape[0]) or [0, scores.shape[0]]
        images = [(boxes[a:b], scores[a:b].T, a, True) for a, b in zip(offsets, offsets[1:])]
    for box, score, base, per_class in images:
        boxes_of = (lambda c, box=box: box[:, c]) if per_class else (lambda c, box=box: box)
        kept = _image_nms(boxes_of, score, attrs, per_class, merge)
        for c, idx in kept.items():
            for i in idx:
                rows.append([c, score[c, i]] + list(boxes_of(c)[i]))
                index.append((base + i) * score.shape[0] + c if per_class else base + i)
        counts.append(sum(len(v) for v in kept.values()))
    width = boxes.shape[-1] + 2
    return np.asarray(rows, dtype=boxes.dtype).reshape(-1, width), np.asarray(index, dtype=np.int32).reshape(-1, 1), counts


_NMS_ATTRS = {"background_label": 0, "score_threshold": 0.0, "nms_top_k": -1, "nms_threshold": 0.3, "nms_eta": 1.0,
              "keep_top_k": -1, "normalized": True}


@register_op("multiclass_nms", inputs=["BBoxes", "Scores"], outputs=["Out"], attrs=_NMS_ATTRS, infer=_nms_infer,
             host=_HOST)
def multiclass_nms(ctx, ins, attrs):
    """Per-class greedy NMS and keep_top_k (see the module docstring); no detection in the whole
    batch gives the single row ``[-1]``."""
    rows, _, counts = _run_nms(ctx, ins, attrs)
    if not rows.shape[0]:
        ctx.set_lod("Out", [[0, 1]])
        return {"Out": np.full((1, 1), -1, dtype=rows.dtype)}
    ctx.set_lod("Out", [lengths_to_offsets(counts)])
    return {"Out": rows}


@register_op("locality_aware_nms", inputs=["BBoxes", "Scores"], outputs=["Out"], attrs=dict(_NMS_ATTRS, background_label=-1),
             infer=_nms_infer, host=_HOST)
def locality_aware_nms(ctx, ins, attrs):
    """EAST's locality-aware NMS: per class, consecutive overlapping boxes merged (see
    ``_locality_merge``; the merges change the boxes the later classes see, as in Paddle), then
    ``multiclass_nms``. No detection gives the single row ``[-1]``."""
    rows, _, counts = _run_nms(ctx, ins, attrs, locality=True)
    if not rows.shape[0]:
        ctx.set_lod("Out", [[0, 1]])
        return {"Out": np.full((1, 1), -1, dtype=rows.dtype)}
    ctx.set_lod("Out", [lengths_to_offsets(counts)])
    return {"Out": rows}


@register_op("multiclass_nms2", inputs=["BBoxes", "Scores"], outputs=["Out", "Index"], attrs=_NMS_ATTRS,
             infer=_nms_infer, host=_HOST)
def multiclass_nms2(ctx, ins, attrs):
    """``multiclass_nms`` that also gives, per row, the index of its box in the input (image offset
    plus box, times the classes plus the class for [M, C, 4] boxes); no detection gives empty
    outputs (of shape [0], as Paddle's)."""
    rows, index, counts = _run_nms(ctx, ins, attrs)
    if not rows.shape[0]:
        rows, index = rows.reshape(0), index.reshape(0)
    lod = [lengths_to_offsets(counts)]
    ctx.set_lod("Out", lod)
    ctx.set_lod("Index", lod)
    return {"Out": rows, "Index": index}


# ------------------------------------------------------------------ bipartite_match
def _match_one(dist, match_type, threshold):
    """(column -> row match [N], its distance) of one [M, N] distance matrix."""
    m, n = dist.shape
    cols, col_dist = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=dist.dtype)
    row_used = np.zeros(m, dtype=bool)
    flat = np.argsort(-dist.reshape(-1), kind="mergesort")
    matched = 0
    for k in flat:
        if matched >= m:
            break
        i, j = divmod(int(k), n)
        if cols[j] == -1 and not row_used[i] and dist[i, j] > 0:
            cols[j], col_dist[j], row_used[i] = i, dist[i, j], True
            matched += 1
    if match_type == "per_prediction":
        for j in np.nonzero(cols == -1)[0]:
            best = int(np.argmax(dist[:, j])) if m else 0
            if m and dist[best, j] >= threshold:
                cols[j], col_dist[j] = best, dist[best, j]
    return cols, col_dist


def _bipartite_infer(ctx):
    ds = ctx.input_shape("DistMat")
    if ds is not None:
        ctx.set_output("ColToRowMatchIndices", (-1, ds[1]), "int32")
        ctx.set_output("ColToRowMatchDist", (-1, ds[1]), ctx.input_dtype("DistMat"))


@register_op("bipartite_match", inputs=["DistMat"], outputs=["ColToRowMatchIndices", "ColToRowMatchDist"],
             attrs={"match_type": "bipartite", "dist_threshold": 0.5}, infer=_bipartite_infer,
             host=_HOST)
def bipartite_match(ctx, ins, attrs):
    """Per instance (LoD sequence of DistMat's rows), greedy bipartite matching of rows (ground truth)
    to columns (priors) by largest distance; ``per_prediction`` then matches each unmatched column
    to its best row when that distance reaches ``dist_threshold``. -1: unmatched."""
    dist = np.asarray(ins["DistMat"])
    offsets = _lod_offsets(ctx, "DistMat", dist.shape[0]) or [0, dist.shape[0]]
    res = [_match_one(dist[a:b], attrs["match_type"], attrs["dist_threshold"]) for a, b in zip(offsets, offsets[1:])]
    return {"ColToRowMatchIndices": np.stack([r[0] for r in res]).astype(np.int32),
            "ColToRowMatchDist": np.stack([r[1] for r in res]).astype(dist.dtype)}


# ------------------------------------------------------------------ target_assign
def _target_assign_infer(ctx):
    xs, ms = ctx.input_shape("X"), ctx.input_shape("MatchIndices")
    if xs is not None and ms is not None:
        ctx.set_output("Out", (ms[0], ms[1], xs[2]), ctx.input_dtype("X"))
        ctx.set_output("OutWeight", (ms[0], ms[1], 1), "float32")


@register_op("target_assign", inputs=["X", "MatchIndices", "NegIndices?"], outputs=["Out", "OutWeight"],
             attrs={"mismatch_value": 0}, infer=_target_assign_infer, host=_HOST)
def target_assign(ctx, ins, attrs):
    """For image i and prior j matched to ground truth k (MatchIndices [N, P]), ``Out[i, j] =
    X[offset_i + k, j % X.shape[1]]`` with weight 1; unmatched priors get ``mismatch_value`` and weight
    0, except the NegIndices of the image, which get weight 1."""
    x, match = np.asarray(ins["X"]), np.asarray(ins["MatchIndices"])
    n, p = match.shape
    gt = _lod_offsets(ctx, "X", x.shape[0])
    if gt is None or len(gt) - 1 != n:
        raise ValueError("op 'target_assign': X %r needs one LoD sequence of ground truth per row of MatchIndices "
                         "(%d)" % (ctx.op.inputs["X"][0], n))
    out = np.full((n, p, x.shape[2]), attrs["mismatch_value"], dtype=x.dtype)
    weight = np.zeros((n, p, 1), dtype=np.float32)
    for i in range(n):
        cols = np.nonzero(match[i] > -1)[0]
        out[i, cols] = x[gt[i] + match[i, cols], cols % x.shape[1]]
        weight[i, cols] = 1
    if ins.get("NegIndices") is not None:
        neg = np.asarray(ins["NegIndices"]).reshape(-1).astype(np.int64)
        neg_off = _lod_offsets(ctx, "NegIndices", neg.shape[0]) or [0, neg.shape[0]]
        for i, (a, b) in enumerate(zip(neg_off, neg_off[1:])):
            weight[i, neg[a:b]] = 1
    return {"Out": out, "OutWeight": weight}


# ------------------------------------------------------------------ mine_hard_examples
def _mine_infer(ctx):
    ms = ctx.input_shape("MatchIndices")
    ctx.set_output("NegIndices", (-1, 1), "int32", 1)
    if ms is not None:
        ctx.set_output("UpdatedMatchIndices", ms, "int32")


@register_op("mine_hard_examples", inputs=["ClsLoss", "LocLoss?", "MatchIndices", "MatchDist"],
             outputs=["NegIndices", "UpdatedMatchIndices"],
             attrs={"neg_pos_ratio": 1.0, "neg_dist_threshold": 0.5, "sample_size": 0, "mining_type": "max_negative"},
             infer=_mine_infer, host=_HOST)
def mine_hard_examples(ctx, ins, attrs):
    """SSD hard negative mining. ``max_negative``: of the unmatched priors closer than
    ``neg_dist_threshold``, the ``neg_pos_ratio * positives`` of highest ClsLoss are the negatives.
    ``hard_example``: the ``sample_size`` priors of highest ClsLoss + LocLoss are kept; matched ones
    outside them are unmatched, unmatched ones inside them are the negatives."""
    cls = np.asarray(ins["ClsLoss"])
    loc = np.asarray(ins["LocLoss"]) if ins.get("LocLoss") is not None else None
    match = np.asarray(ins["MatchIndices"]).copy()
    dist = np.asarray(ins["MatchDist"])
    kind = attrs["mining_type"]
    if kind not in ("max_negative", "hard_example"):
        raise ValueError("op 'mine_hard_examples': mining_type must be 'max_negative' or 'hard_example', got %r" % kind)
    negs, counts = [], []
    for i in range(match.shape[0]):
        if kind == "max_negative":
            pool = np.nonzero((match[i] == -1) & (dist[i] < attrs["neg_dist_threshold"]))[0]
            loss = cls[i, pool]
            limit = min(int((match[i] != -1).sum() * attrs["neg_pos_ratio"]), len(pool))
        else:
            pool = np.arange(match.shape[1])
            loss = cls[i] + (loc[i] if loc is not None else 0)
            limit = min(int(attrs["sample_size"]), len(pool))
        chosen = set(pool[np.argsort(-loss, kind="mergesort")[:limit]].tolist())
        if kind == "hard_example":
            unmatched = [m for m in range(match.shape[1]) if match[i, m] > -1 and m not in chosen]
            match[i, unmatched] = -1
            neg = [m for m in sorted(chosen) if np.asarray(ins["MatchIndices"])[i, m] == -1]
        else:
            neg = sorted(chosen)
        negs += neg
        counts.append(len(neg))
    ctx.set_lod("NegIndices", [lengths_to_offsets(counts)])
    return {"NegIndices": np.asarray(negs, dtype=np.int32).reshape(-1, 1), "UpdatedMatchIndices": match}
