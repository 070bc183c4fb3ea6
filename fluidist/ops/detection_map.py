"""``detection_map``: the mean average precision of detections against ground truth, accumulated over
batches through its state inputs (what ``fluid.metrics.DetectionMAP`` wires up), as Paddle 1.8 computes
it: per image and class, detections in score order are true positives when they overlap an unmatched
ground truth box of their class by more than ``overlap_threshold``; AP is the area under the
precision / recall curve (``integral``) or its 11-point interpolation, averaged over the classes that
have ground truth and detections."""
import math
from collections import defaultdict

import numpy as np

from ..core.tensor import lengths_to_offsets
from ..framework.registry import register_op
from .detection_nms import overlaps


def _per_image(ctx, slot, value):
    lod = ctx.lod(slot)
    offsets = [int(o) for o in lod[-1]] if lod else [0, value.shape[0]]
    return [value[a:b] for a, b in zip(offsets, offsets[1:])]


def _ground_truth(rows, evaluate_difficult):
    """{label: [(box, difficult)]} of one image; a row is [label, (difficult,) x1, y1, x2, y2]."""
    out = defaultdict(list)
    for r in rows:
        difficult = bool(r[1]) if len(r) == 6 else False
        out[int(r[0])].append((np.asarray(r[-4:], dtype=np.float64), difficult))
    return out


def _state(ctx, ins, classes):
    """The accumulated (positives per class, {class: [(score, tp)]}, {class: [(score, fp)]})."""
    count, tps, fps = defaultdict(int), defaultdict(list), defaultdict(list)
    has = ins.get("HasState")
    if has is None or not int(np.asarray(has).reshape(-1)[0]):
        return count, tps, fps
    for k, v in enumerate(np.asarray(ins["PosCount"]).reshape(-1)):
        count[k] = int(v)
    for slot, into in (("TruePos", tps), ("FalsePos", fps)):
        rows = np.asarray(ins[slot]).reshape(-1, 2)
        for k, part in enumerate(_per_image(ctx, slot, rows)):
            into[k] += [(float(s), float(f)) for s, f in part]
    return count, tps, fps


def _match_image(gt, dets, attrs, count, tps, fps):
    """Add one image's positives and true / false positive marks."""
    for label, boxes in gt.items():
        n = len(boxes) if attrs["evaluate_difficult"] else sum(not d for _, d in boxes)
        if n:
            count[label] += n
    by_label = defaultdict(list)
    for r in dets:
        by_label[int(r[0])].append((float(r[1]), np.clip(np.asarray(r[2:6], dtype=np.float64), 0.0, 1.0)))
    for label, preds in by_label.items():
        preds.sort(key=lambda p: -p[0])
        if label not in gt:
            tps[label] += [(s, 0.0) for s, _ in preds]
            fps[label] += [(s, 1.0) for s, _ in preds]
            continue
        truth = gt[label]
        visited = [False] * len(truth)
        ious = overlaps(np.stack([b for _, b in preds]), np.stack([b for b, _ in truth]), 0.0)
        for (score, _), row in zip(preds, ious):
            best = int(np.argmax(row))
            if row[best] <= attrs["overlap_threshold"]:
                tps[label].append((score, 0.0))
                fps[label].append((score, 1.0))
            elif attrs["evaluate_difficult"] or not truth[best][1]:
                hit = not visited[best]
                visited[best] = True
                tps[label].append((score, 1.0 if hit else 0.0))
                fps[label].append((score, 0.0 if hit else 1.0))


def _average_precision(tp, fp, positives, kind):
    order = sorted(range(len(tp)), key=lambda i: -tp[i][0])
    tp_sum, fp_sum = np.cumsum([tp[i][1] for i in order]), np.cumsum([fp[i][1] for i in order])
    precision, recall = tp_sum / (tp_sum + fp_sum), tp_sum / positives
    if kind == "11point":
        best = [0.0] * 11
        start = len(tp_sum) - 1
        for j in range(10, -1, -1):
            for i in range(start, -1, -1):
                if recall[i] < j / 10.0:
                    start = i
                    if j > 0:
                        best[j - 1] = best[j]
                    break
                best[j] = max(best[j], precision[i])
        return sum(best) / 11
    ap, prev = 0.0, 0.0
    for p, r in zip(precision, recall):
        if math.fabs(r - prev) > 1e-6:
            ap += p * math.fabs(r - prev)
            prev = r
    return ap


def _map_infer(ctx):
    classes = ctx.attr("class_num")
    ctx.set_output("MAP", (1,), ctx.input_dtype("DetectRes"))
    ctx.set_output("AccumPosCount", (classes, 1), "int32")
    ctx.set_output("AccumTruePos", (-1, 2), ctx.input_dtype("DetectRes"), 1)
    ctx.set_output("AccumFalsePos", (-1, 2), ctx.input_dtype("DetectRes"), 1)


@register_op("detection_map", inputs=["DetectRes", "Label", "HasState?", "PosCount?", "TruePos?", "FalsePos?"],
             outputs=["AccumPosCount", "AccumTruePos", "AccumFalsePos", "MAP"],
             attrs={"overlap_threshold": 0.5, "evaluate_difficult": True, "ap_type": "integral", "class_num": 0,
                    "background_label": 0},
             infer=_map_infer, host="per-image matching of detections, on the host")
def detection_map(ctx, ins, attrs):
    """mAP of ``DetectRes`` rows ``[label, score, x1, y1, x2, y2]`` against ``Label`` rows
    ``[label, (difficult,) x1, y1, x2, y2]`` (normalised boxes, one LoD sequence per image), with the
    state (``HasState`` nonzero: PosCount, TruePos, FalsePos) accumulated into the Accum* outputs."""
    if attrs["ap_type"] not in ("integral", "11point"):
        raise ValueError("op 'detection_map': ap_type must be 'integral' or '11point', got %r" % (attrs["ap_type"],))
    det, label = np.asarray(ins["DetectRes"]), np.asarray(ins["Label"])
    dets, labels = _per_image(ctx, "DetectRes", det), _per_image(ctx, "Label", label)
    if len(dets) != len(labels):
        raise ValueError("op 'detection_map': DetectRes %r holds %d images but Label %r holds %d"
                         % (ctx.op.inputs["DetectRes"][0], len(dets), ctx.op.inputs["Label"][0], len(labels)))
    classes = int(attrs["class_num"])
    count, tps, fps = _state(ctx, ins, classes)
    for d, g in zip(dets, labels):
        _match_image(_ground_truth(g, attrs["evaluate_difficult"]), d, attrs, count, tps, fps)
    total, used = 0.0, 0
    for lab in sorted(count):
        if count[lab] == attrs["background_label"] or lab not in tps:   # Paddle's test of the count, as it is
            continue
        total += _average_precision(tps[lab], fps[lab], count[lab], attrs["ap_type"])
        used += 1
    dtype = det.dtype
    res = {"MAP": np.asarray([total / used if used else 0.0], dtype=dtype),
           "AccumPosCount": np.asarray([[count[k]] for k in range(classes)], dtype=np.int32)}
    for slot, table in (("AccumTruePos", tps), ("AccumFalsePos", fps)):
        rows = [pair for k in range(classes) for pair in table[k]]
        res[slot] = np.asarray(rows, dtype=dtype).reshape(-1, 2)
        ctx.set_lod(slot, [lengths_to_offsets([len(table[k]) for k in range(classes)])])
    return res
