"""``detection_map`` (and ``fluid.metrics.DetectionMAP``) against a NumPy reference of the matching and
of both AP kinds, with its state accumulated over batches."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import run_op

rng = np.random.RandomState(47)


def iou(a, b):
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    return w * h / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h)


def marks(dets, gts, thr, difficult_too):
    """{class: [(score, tp)]} and positives per class, image by image."""
    tp, pos = {}, {}
    for d_img, g_img in zip(dets, gts):
        for g in g_img:
            if difficult_too or not g[1]:
                pos[int(g[0])] = pos.get(int(g[0]), 0) + 1
        for c in sorted({int(d[0]) for d in d_img}):
            preds = sorted([d for d in d_img if int(d[0]) == c], key=lambda d: -d[1])
            truth = [g for g in g_img if int(g[0]) == c]
            used = [False] * len(truth)
            for d in preds:
                box = np.clip(d[2:], 0, 1)
                ov = [iou(box, g[2:]) for g in truth]
                if not ov or max(ov) <= thr:
                    tp.setdefault(c, []).append((d[1], 0))
                    continue
                k = int(np.argmax(ov))
                if difficult_too or not truth[k][1]:
                    tp.setdefault(c, []).append((d[1], 0 if used[k] else 1))
                    used[k] = True
    return tp, pos


def mean_ap(tp, pos, kind):
    aps = []
    for c in sorted(pos):
        if pos[c] == 0 or c not in tp:
            continue
        flags = [f for _, f in sorted(tp[c], key=lambda t: -t[0])]
        hits = np.cumsum(flags)
        precision, recall = hits / np.arange(1, len(flags) + 1), hits / pos[c]
        if kind == "11point":
            aps.append(np.mean([max([p for p, r in zip(precision, recall) if r >= t / 10], default=0) for t in range(11)]))
        else:
            aps.append(sum(p * (r - q) for p, r, q in zip(precision, recall, np.concatenate([[0], recall[:-1]]))))
    return np.mean(aps) if aps else 0.0


def random_batch(images=3, classes=3):
    dets, gts = [], []
    for _ in range(images):
        g = []
        for _ in range(rng.randint(1, 4)):
            lo = rng.uniform(0, 0.6, 2)
            g.append([rng.randint(1, classes), rng.randint(0, 2)] + list(lo) + list(lo + rng.uniform(0.1, 0.4, 2)))
        d = []
        for k in range(rng.randint(1, 6)):
            base = np.array(g[k % len(g)][2:]) + rng.normal(0, 0.05, 4) if rng.rand() < 0.7 else rng.uniform(0, 1, 4)
            d.append([g[k % len(g)][0] if rng.rand() < 0.8 else rng.randint(1, classes), rng.uniform(0, 1)]
                     + list(np.sort(base.reshape(2, 2), axis=0).reshape(-1)))
        dets.append(d)
        gts.append(g)
    return dets, gts


def lod_of(parts):
    return [[0] + list(np.cumsum([len(p) for p in parts]))]


@pytest.mark.parametrize("kind", ["integral", "11point"])
@pytest.mark.parametrize("difficult", [True, False])
def test_detection_map(kind, difficult):
    dets, gts = random_batch()
    det, gt = np.concatenate(dets).astype("float32"), np.concatenate(gts).astype("float32")
    attrs = {"overlap_threshold": 0.4, "evaluate_difficult": difficult, "ap_type": kind, "class_num": 3}
    got = run_op("detection_map", {"DetectRes": det, "Label": gt}, attrs,
                 outputs=("MAP", "AccumPosCount", "AccumTruePos", "AccumFalsePos"),
                 lods={"detectres_in": lod_of(dets), "label_in": lod_of(gts)})
    tp, pos = marks(dets, gts, 0.4, difficult)
    assert got["MAP"][0][0] == pytest.approx(mean_ap(tp, pos, kind), rel=1e-5, abs=1e-6)
    np.testing.assert_array_equal(got["AccumPosCount"][0].ravel(), [pos.get(c, 0) for c in range(3)])
    np.testing.assert_allclose(got["AccumTruePos"][0], [[s, f] for c in range(3) for s, f in tp.get(c, [])], rtol=1e-6)
    np.testing.assert_allclose(got["AccumFalsePos"][0], [[s, 1 - f] for c in range(3) for s, f in tp.get(c, [])],
                               rtol=1e-6)


def test_detection_map_metric_accumulates_over_batches():
    batches = [random_batch(2) for _ in range(3)]
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        det = fluid.data("det", [None, 6], "float32", lod_level=1)
        gl = fluid.data("gl", [None, 1], "float32", lod_level=1)
        gd = fluid.data("gd", [None, 1], "float32", lod_level=1)
        gb = fluid.data("gb", [None, 4], "float32", lod_level=1)
        metric = fluid.metrics.DetectionMAP(det, gl, gb, gd, class_num=3, overlap_threshold=0.4)
        cur, accum = metric.get_map_var()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    place = fluid.CPUPlace()
    for rounds in range(2):
        seen_d, seen_g = [], []
        for dets, gts in batches:
            g = np.concatenate(gts).astype("float32")
            feed = {"det": fluid.create_lod_tensor(np.concatenate(dets).astype("float32"), [[len(d) for d in dets]], place)}
            for name, cols in (("gl", g[:, :1]), ("gd", g[:, 1:2]), ("gb", g[:, 2:])):
                feed[name] = fluid.create_lod_tensor(np.ascontiguousarray(cols), [[len(x) for x in gts]], place)
            c, a = exe.run(main, feed=feed, fetch_list=[cur, accum])
            seen_d += dets
            seen_g += gts
            assert c[0] == pytest.approx(mean_ap(*marks(dets, gts, 0.4, True), "integral"), rel=1e-5, abs=1e-6)
            assert a[0] == pytest.approx(mean_ap(*marks(seen_d, seen_g, 0.4, True), "integral"), rel=1e-5, abs=1e-6)
        metric.reset(exe)              # the second round starts afresh
