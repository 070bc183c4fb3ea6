"""``multiclass_nms`` / ``multiclass_nms2``, ``bipartite_match``, ``target_assign`` and
``mine_hard_examples`` against straightforward NumPy references of Paddle 1.8's algorithms."""
import numpy as np
import pytest

from op_test import run_op

rng = np.random.RandomState(29)


def iou(a, b, norm):
    if b[0] > a[2] or b[2] < a[0] or b[1] > a[3] or b[3] < a[1]:
        return 0.0
    one = 0 if norm else 1
    inter = (min(a[2], b[2]) - max(a[0], b[0]) + one) * (min(a[3], b[3]) - max(a[1], b[1]) + one)
    area = lambda r: (r[2] - r[0] + one) * (r[3] - r[1] + one)  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def nms_reference(boxes, scores, a):
    order = sorted((i for i in range(len(scores)) if scores[i] > a["score_threshold"]), key=lambda i: -scores[i])
    order = order[:a["nms_top_k"]] if a["nms_top_k"] > -1 else order
    kept, thr = [], a["nms_threshold"]
    for i in order:
        if all(iou(boxes[i], boxes[k], a["normalized"]) <= thr for k in kept):
            kept.append(i)
            if a["nms_eta"] < 1 and thr > 0.5:
                thr *= a["nms_eta"]
    return kept


def image_reference(box_of, scores, a, per_class):
    kept = {c: nms_reference(box_of(c), scores[c], a) for c in range(len(scores)) if c != a["background_label"]}
    if a["keep_top_k"] > -1 and sum(map(len, kept.values())) > a["keep_top_k"]:
        top = sorted(((scores[c][i], c, i) for c in kept for i in kept[c]), key=lambda t: -t[0])[:a["keep_top_k"]]
        kept = {}
        for _, c, i in top:
            kept.setdefault(c, []).append(i)
        kept = {c: sorted(v) for c, v in kept.items()} if per_class else kept
    return [(c, i) for c in sorted(kept) for i in kept[c]]


ATTRS = {"background_label": 0, "score_threshold": 0.05, "nms_top_k": 30, "nms_threshold": 0.4, "nms_eta": 1.0,
         "keep_top_k": 12, "normalized": True}


@pytest.mark.parametrize("attrs", [ATTRS, dict(ATTRS, nms_eta=0.9, nms_threshold=0.8, keep_top_k=-1)])
def test_multiclass_nms2_batched(attrs):
    n, m, c = 2, 40, 3
    boxes = np.concatenate([rng.uniform(0, 0.5, (n, m, 2)), rng.uniform(0.5, 1, (n, m, 2))], axis=2)
    scores = rng.uniform(0, 1, (n, c, m))
    got = run_op("multiclass_nms2", {"BBoxes": boxes, "Scores": scores}, attrs, outputs=("Out", "Index"))
    rows, index = [], []
    for b in range(n):
        for cls, i in image_reference(lambda k: boxes[b], scores[b], attrs, False):
            rows.append([cls, scores[b, cls, i]] + list(boxes[b, i]))
            index.append([b * m + i])
    np.testing.assert_allclose(got["Out"][0], rows)
    np.testing.assert_array_equal(got["Index"][0], index)
    v1 = run_op("multiclass_nms", {"BBoxes": boxes, "Scores": scores}, attrs)["Out"][0]
    np.testing.assert_allclose(v1, rows)


def test_multiclass_nms_per_class_boxes_with_lod():
    m, c = 30, 3
    boxes = np.concatenate([rng.uniform(0, 10, (m, c, 2)), rng.uniform(10, 20, (m, c, 2))], axis=2)
    scores = rng.uniform(0, 1, (m, c))
    lods = {"bboxes_in": [[0, 12, 30]], "scores_in": [[0, 12, 30]]}
    attrs = dict(ATTRS, normalized=False, keep_top_k=5)
    got = run_op("multiclass_nms2", {"BBoxes": boxes, "Scores": scores}, attrs, outputs=("Out", "Index"), lods=lods)
    rows, index = [], []
    for start, end in ((0, 12), (12, 30)):
        part, sc = boxes[start:end], scores[start:end].T
        for cls, i in image_reference(lambda k: part[:, k], sc, attrs, True):
            rows.append([cls, sc[cls, i]] + list(part[i, cls]))
            index.append([(start + i) * c + cls])
    np.testing.assert_allclose(got["Out"][0], rows)
    np.testing.assert_array_equal(got["Index"][0], index)


def test_multiclass_nms_without_detections():
    boxes, scores = rng.uniform(0, 1, (2, 5, 4)), rng.uniform(0, 1, (2, 3, 5))
    attrs = dict(ATTRS, score_threshold=2.0)
    np.testing.assert_array_equal(run_op("multiclass_nms", {"BBoxes": boxes, "Scores": scores}, attrs)["Out"][0], [[-1]])
    got = run_op("multiclass_nms2", {"BBoxes": boxes, "Scores": scores}, attrs, outputs=("Out", "Index"))
    assert got["Out"][0].shape == (0,) and got["Index"][0].shape == (0,)


@pytest.mark.parametrize("match_type", ["bipartite", "per_prediction"])
def test_bipartite_match(match_type):
    dist = rng.uniform(0, 1, (7, 9))
    got = run_op("bipartite_match", {"DistMat": dist}, {"match_type": match_type, "dist_threshold": 0.6},
                 outputs=("ColToRowMatchIndices", "ColToRowMatchDist"), lods={"distmat_in": [[0, 3, 7]]})
    for b, (lo, hi) in enumerate(((0, 3), (3, 7))):
        part = dist[lo:hi]
        cols, row_used = -np.ones(9, int), set()
        for value, i, j in sorted(((part[i, j], i, j) for i in range(hi - lo) for j in range(9)), reverse=True):
            if cols[j] == -1 and i not in row_used and value > 0:
                cols[j] = i
                row_used.add(i)
        if match_type == "per_prediction":
            for j in range(9):
                if cols[j] == -1 and part[:, j].max() >= 0.6:
                    cols[j] = int(part[:, j].argmax())
        np.testing.assert_array_equal(got["ColToRowMatchIndices"][0][b], cols)
        np.testing.assert_allclose(got["ColToRowMatchDist"][0][b], [part[i, j] if i >= 0 else 0
                                                                     for j, i in enumerate(cols)])


def test_target_assign_boxes_and_labels():
    gt_lod, num_prior = [0, 2, 5], 6
    boxes = rng.uniform(0, 1, (5, num_prior, 4))
    match = np.array([[1, -1, 0, -1, -1, 1], [-1, 2, -1, 0, -1, -1]], "int32")
    got = run_op("target_assign", {"X": boxes, "MatchIndices": match}, {"mismatch_value": 0},
                 outputs=("Out", "OutWeight"), lods={"x_in": [gt_lod]})
    labels = np.array([[[3]], [[1]], [[2]], [[4]], [[5]]], "int32")
    neg = np.array([[1], [3], [4]], "int32")
    lab = run_op("target_assign", {"X": labels, "MatchIndices": match, "NegIndices": neg}, {"mismatch_value": 7},
                 outputs=("Out", "OutWeight"), lods={"x_in": [gt_lod], "negindices_in": [[0, 1, 3]]})
    negs = [{1}, {4}]
    for i in range(2):
        for j in range(num_prior):
            k = match[i, j]
            if k >= 0:
                np.testing.assert_allclose(got["Out"][0][i, j], boxes[gt_lod[i] + k, j])
                assert lab["Out"][0][i, j, 0] == labels[gt_lod[i] + k, 0, 0] and lab["OutWeight"][0][i, j, 0] == 1
            else:
                assert not got["Out"][0][i, j].any() and got["OutWeight"][0][i, j, 0] == 0
                assert lab["Out"][0][i, j, 0] == 7 and lab["OutWeight"][0][i, j, 0] == (j in negs[i])


def test_mine_hard_examples():
    cls = np.array([[0.1, 0.9, 0.3, 0.5], [0.3, 0.1, 0.7, 0.6]])
    loc = np.array([[0.1, 0.2, 0.3, 0.0], [0.3, 0.4, 0.1, 0.9]])
    match = np.array([[0, -1, -1, -1], [-1, 0, -1, 1]], "int32")
    dist = np.array([[0.9, 0.4, 0.2, 0.6], [0.1, 0.9, 0.3, 0.8]])
    ins = {"ClsLoss": cls, "LocLoss": loc, "MatchIndices": match, "MatchDist": dist}
    got = run_op("mine_hard_examples", ins, {"mining_type": "max_negative", "neg_pos_ratio": 1.0},
                 outputs=("NegIndices", "UpdatedMatchIndices"))
    # image 0: one positive, negatives {1, 2} below 0.5 -> the highest loss: 1; image 1: two positives, {0, 2}
    np.testing.assert_array_equal(got["NegIndices"][0], [[1], [0], [2]])
    np.testing.assert_array_equal(got["UpdatedMatchIndices"][0], match)
    got = run_op("mine_hard_examples", ins, {"mining_type": "hard_example", "sample_size": 2},
                 outputs=("NegIndices", "UpdatedMatchIndices"))
    # image 0: losses [0.2, 1.1, 0.6, 0.5] -> {1, 2}: prior 0 loses its match; image 1: [0.6, 0.5, 0.8, 1.5] -> {2, 3}
    np.testing.assert_array_equal(got["NegIndices"][0], [[1], [2], [2]])
    np.testing.assert_array_equal(got["UpdatedMatchIndices"][0], [[-1, -1, -1, -1], [-1, -1, -1, 1]])


def test_locality_aware_nms_merges_then_suppresses():
    n, m = 2, 30
    boxes = np.concatenate([rng.uniform(0, 0.5, (n, m, 2)), rng.uniform(0.5, 1, (n, m, 2))], axis=2)
    boxes[:, 1::2] = boxes[:, 0::2] + rng.uniform(-0.02, 0.02, (n, m // 2, 4))     # neighbours that merge
    scores = rng.uniform(0, 1, (n, 1, m))
    attrs = dict(ATTRS, background_label=-1, nms_threshold=0.5, keep_top_k=8)
    got = run_op("locality_aware_nms", {"BBoxes": boxes, "Scores": scores}, attrs)["Out"][0]
    rows = []
    for b in range(n):
        box, sc = boxes[b].copy(), scores[b].copy()
        last = -1
        for i in range(m):
            if last > -1 and iou(box[i], box[last], True) > 0.5:
                box[last] = (box[i] * sc[0, i] + box[last] * sc[0, last]) / (sc[0, i] + sc[0, last])
                sc[0, last] += sc[0, i]
                sc[0, i] = attrs["score_threshold"] - 1
            else:
                last = i
        rows += [[c, sc[c, i]] + list(box[i]) for c, i in image_reference(lambda k: box, sc, attrs, False)]
    np.testing.assert_allclose(got, rows)
    assert len(rows) < n * m                          # something merged or was suppressed


def test_polygon_boxes_are_refused_by_name():
    with pytest.raises(NotImplementedError, match="polygon boxes .* not implemented in fluidist"):
        run_op("multiclass_nms", {"BBoxes": rng.uniform(0, 1, (1, 3, 8)), "Scores": rng.uniform(0, 1, (1, 2, 3))},
               ATTRS)
