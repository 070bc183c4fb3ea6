"""layers.auc (its persistable buckets, cumulative and sliding) and fluid.metrics."""
import numpy as np
import pytest

import fluidist as fluid


def roc_auc(p, y):
    """Exact ROC AUC by pairs (ties count half)."""
    pos, neg = p[y == 1], p[y == 0]
    diff = pos[:, None] - neg[None, :]
    return ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / (len(pos) * len(neg))


def _auc_program(num_thresholds, slide_steps):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        p = fluid.layers.data("p", [2], dtype="float32")
        y = fluid.layers.data("y", [1], dtype="int64")
        out = fluid.layers.auc(p, y, num_thresholds=num_thresholds, slide_steps=slide_steps)
    return main, start, out


def test_auc_accumulates_over_batches_and_its_window_slides():
    main, start, (auc, batch_auc, stats) = _auc_program(num_thresholds=10000, slide_steps=2)
    assert [op.type for op in main.global_block().ops] == ["auc", "auc"]
    assert all(v.persistable and v.dtype == "int64" for v in stats)
    assert [v.name for v in stats] == ["_generated_var_%d" % i for i in range(4)]
    main.lint()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    rng = np.random.RandomState(0)
    ps, ys, batch_vals = [], [], []
    for _ in range(4):
        prob = rng.uniform(0, 1, 16).astype(np.float32)
        lab = rng.randint(0, 2, 16)
        ps.append(prob)
        ys.append(lab)
        a, b = exe.run(main, feed={"p": np.stack([1 - prob, prob], 1), "y": lab.reshape(-1, 1).astype(np.int64)},
                       fetch_list=[auc, batch_auc])
        batch_vals.append(float(b[0]))
        assert float(a[0]) == pytest.approx(roc_auc(np.concatenate(ps), np.concatenate(ys)), abs=1e-3)
    assert batch_vals[-1] == pytest.approx(roc_auc(np.concatenate(ps[-2:]), np.concatenate(ys[-2:])), abs=1e-3)
    # zeroing the buckets starts over, as CTR trainers do between passes
    scope = fluid.global_scope()
    for v in stats:
        t = scope.find_var(v.name).get_tensor()
        t.set(np.zeros(np.array(t).shape, np.int64), fluid.CPUPlace())
    prob, lab = ps[0], ys[0]
    a, = exe.run(main, feed={"p": np.stack([1 - prob, prob], 1), "y": lab.reshape(-1, 1).astype(np.int64)},
                 fetch_list=[auc])
    assert float(a[0]) == pytest.approx(roc_auc(prob, lab), abs=1e-3)


def test_auc_of_one_class_is_zero_and_bad_predictions_are_named():
    main, start, (auc, _, _) = _auc_program(num_thresholds=100, slide_steps=1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    a, = exe.run(main, feed={"p": np.array([[0.3, 0.7]], np.float32), "y": np.array([[1]], np.int64)},
                 fetch_list=[auc])
    assert float(a[0]) == 0.0
    with pytest.raises(ValueError, match="must lie in \\[0, 1\\]"):
        exe.run(main, feed={"p": np.array([[0.3, 1.7]], np.float32), "y": np.array([[1]], np.int64)})


def test_metrics_precision_recall_accuracy():
    preds = np.array([[0.9], [0.2], [0.7], [0.4], [0.6]])
    labels = np.array([[1], [0], [0], [1], [1]])
    p, r = fluid.metrics.Precision(), fluid.metrics.Recall()
    comp = fluid.metrics.CompositeMetric()
    comp.add_metric(p)
    comp.add_metric(r)
    comp.update(preds, labels)
    assert comp.eval() == [pytest.approx(2 / 3), pytest.approx(2 / 3)]
    assert p.get_config() == {"name": "Precision", "states": {"tp": 2, "fp": 1}}
    p.reset()
    assert (p.tp, p.fp, p.eval()) == (0, 0, 0.0)
    acc = fluid.metrics.Accuracy("acc")
    with pytest.raises(ValueError, match="no data"):
        acc.eval()
    acc.update(0.5, 4)
    acc.update(np.array([1.0]), 2)
    assert np.asarray(acc.eval()).reshape(-1)[0] == pytest.approx(4 / 6)
    with pytest.raises(ValueError, match="must not be negative"):
        acc.update(0.5, -1)
    with pytest.raises(ValueError, match="not a MetricBase"):
        comp.add_metric(object())


def test_metrics_chunk_edit_distance_auc():
    ce = fluid.metrics.ChunkEvaluator()
    ce.update(np.array([3]), np.array([4]), np.array([2]))
    ce.update(1, 0, 1)
    precision, recall, f1 = ce.eval()
    assert (precision, recall) == (pytest.approx(0.75), pytest.approx(0.75)) and f1 == pytest.approx(0.75)
    ed = fluid.metrics.EditDistance("ed")
    ed.update(np.array([[0.0], [2.0], [1.0]]), 3)
    assert ed.eval() == (pytest.approx(1.0), pytest.approx(2 / 3))
    auc = fluid.metrics.Auc("auc", num_thresholds=1000)
    rng = np.random.RandomState(1)
    prob = rng.uniform(0, 1, 50)
    lab = rng.randint(0, 2, (50, 1))
    auc.update(np.stack([1 - prob, prob], 1), lab)
    assert auc.eval() == pytest.approx(roc_auc(prob, lab[:, 0]), abs=2e-3)


def test_auc_keeps_its_bucket_counts_as_python_lists():
    # Paddle 1.8.5 gives these lists (ints where no sample fell, floats where some did) and 0.875
    auc = fluid.metrics.Auc("auc", num_thresholds=4)
    auc.update(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), np.array([[1], [0], [0]]))
    auc.update(np.array([[0.5, 0.5]]), np.array([[1]]))
    assert auc._stat_pos == [0, 0, 1.0, 1.0, 0] and auc._stat_neg == [1.0, 0, 1.0, 0, 0]
    assert isinstance(auc._stat_pos, list)
    assert auc.eval() == pytest.approx(0.875)


def test_detection_map_works():
    """fluid.metrics.DetectionMAP builds its two detection_map ops (tests/ops/test_detection_map.py checks
    its numbers over several batches)."""
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        det = fluid.data("det", [None, 6], "float32", lod_level=1)
        gl = fluid.data("gl", [None, 1], "float32", lod_level=1)
        gb = fluid.data("gb", [None, 4], "float32", lod_level=1)
        metric = fluid.metrics.DetectionMAP(det, gl, gb, class_num=3)
        types = [op.type for op in fluid.default_main_program().global_block().ops]
    assert types.count("detection_map") == 2 and not getattr(fluid.metrics.DetectionMAP, "__fluidist_refused__", False)
    assert len(metric.get_map_var()) == 2
