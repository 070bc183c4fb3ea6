"""Paddle's small first-generation ops (``classic_ops.py``, the v1 reshaping ops, the proximal
optimizers, ``sigmoid_focal_loss``, ``positive_negative_pair``, ``ref_by_trainer_id``) against NumPy
references written out element by element, gradients against finite differences."""
import itertools
import math

import numpy as np
import pytest

import fluidist as fluid
from op_test import check_grad, run_op

rng = np.random.RandomState(7)


@pytest.mark.parametrize("op_type,shape,attrs,want", [
    ("squeeze", (1, 3, 1, 2), {"axes": [0, -2]}, (3, 2)),
    ("squeeze", (1, 3, 1, 2), {"axes": []}, (3, 2)),
    ("unsqueeze", (3, 2), {"axes": [0, 3, 3]}, (1, 3, 2, 1, 1)),
    ("unsqueeze", (3, 2), {"axes": [-1]}, (3, 2, 1)),
    ("flatten", (2, 3, 4), {"axis": 0}, (1, 24)),
    ("flatten", (2, 3, 4), {"axis": 2}, (6, 4)),
])
def test_first_generation_reshapes(op_type, shape, attrs, want):
    x = rng.uniform(-1, 1, shape)
    out = run_op(op_type, {"X": x}, attrs)["Out"][0]
    assert out.shape == want
    np.testing.assert_array_equal(out.reshape(-1), x.reshape(-1))
    check_grad(op_type, {"X": x}, ["X"], attrs)


def test_unsqueeze_takes_its_axes_from_tensors():
    x = rng.uniform(-1, 1, (3, 2))
    out = run_op("unsqueeze", {"X": x, "AxesTensor": np.array([0, 2], "int32")}, {"axes": [5]})["Out"][0]
    assert out.shape == (1, 3, 1, 2)
    listed = [("a0", np.array([1], "int64")), ("a1", np.array([-1], "int64"))]
    assert run_op("unsqueeze", {"X": x, "AxesTensorList": listed})["Out"][0].shape == (3, 1, 2, 1)


def test_squeeze_refuses_an_axis_that_is_not_one():
    with pytest.raises(ValueError, match="do not have size 1"):
        run_op("squeeze", {"X": np.zeros((2, 3))}, {"axes": [0]})


def test_l1_norm_and_minus():
    x, y = rng.uniform(-1, 1, (4, 5)), rng.uniform(-1, 1, (4, 5))
    np.testing.assert_allclose(run_op("l1_norm", {"X": x})["Out"][0], [np.abs(x).sum()])
    check_grad("l1_norm", {"X": x}, ["X"])
    np.testing.assert_allclose(run_op("minus", {"X": x, "Y": y})["Out"][0], x - y)
    check_grad("minus", {"X": x, "Y": y}, ["X", "Y"])


def test_minus_gradient_is_two_scale_ops_as_paddle_writes_it():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [2, 2], "float32")
        y = fluid.data("y", [2, 2], "float32")
        x.stop_gradient = y.stop_gradient = False
        out = main.global_block().create_var(name="d", dtype="float32", shape=(2, 2))
        main.global_block().append_op("minus", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]})
        fluid.backward.append_backward(fluid.layers.mean(out))
    scales = [op for op in main.global_block().ops if op.type == "scale" and op.output("Out")[0] in ("x@GRAD", "y@GRAD")]
    assert sorted((op.output("Out")[0], op.attr("scale")) for op in scales) == [("x@GRAD", 1.0), ("y@GRAD", -1.0)]


def test_hinge_and_modified_huber_loss():
    x = rng.uniform(-2, 2, (20, 1))
    x[np.abs(np.abs(x) - 1) < 0.05] = 0.5            # away from the kinks for the finite differences
    y = rng.randint(0, 2, (20, 1)).astype("float64")
    hinge = run_op("hinge_loss", {"Logits": x, "Labels": y}, outputs=("Loss",))["Loss"][0]
    want = [[max(0.0, 1 - (2 * b - 1) * a)] for a, b in zip(x[:, 0], y[:, 0])]
    np.testing.assert_allclose(hinge, want)
    check_grad("hinge_loss", {"Logits": x, "Labels": y}, ["Logits"], out_slot="Loss", outputs=("Loss",))
    got = run_op("modified_huber_loss", {"X": x, "Y": y}, outputs=("IntermediateVal", "Out"))

    def mhl(v):
        return -4 * v if v < -1 else ((1 - v) ** 2 if v < 1 else 0.0)
    v = x * (2 * y - 1)
    np.testing.assert_allclose(got["IntermediateVal"][0], v)
    np.testing.assert_allclose(got["Out"][0], [[mhl(a)] for a in v[:, 0]])
    check_grad("modified_huber_loss", {"X": x, "Y": y}, ["X"], outputs=("IntermediateVal", "Out"))


@pytest.mark.parametrize("y_rows", [4, 1])
def test_squared_l2_distance(y_rows):
    x, y = rng.uniform(-1, 1, (4, 2, 3)), rng.uniform(-1, 1, (y_rows, 2, 3))
    got = run_op("squared_l2_distance", {"X": x, "Y": y}, outputs=("sub_result", "Out"))
    want = [[sum((x[i].ravel()[k] - y[i % y_rows].ravel()[k]) ** 2 for k in range(6))] for i in range(4)]
    np.testing.assert_allclose(got["Out"][0], want)
    check_grad("squared_l2_distance", {"X": x, "Y": y}, ["X", "Y"], outputs=("sub_result", "Out"))


def test_conv_shift():
    x, y = rng.uniform(-1, 1, (3, 7)), rng.uniform(-1, 1, (3, 5))
    out = run_op("conv_shift", {"X": x, "Y": y})["Out"][0]
    want = np.zeros_like(x)
    for b, i, j in itertools.product(range(3), range(7), range(5)):
        want[b, i] += x[b, (i + j - 2) % 7] * y[b, j]
    np.testing.assert_allclose(out, want)
    check_grad("conv_shift", {"X": x, "Y": y}, ["X", "Y"])


def test_fill_zeros_like2_seed_and_ref_by_trainer_id():
    out = run_op("fill_zeros_like2", {"X": np.ones((2, 3), "float32")}, {"dtype": "int64"})["Out"][0]
    assert out.dtype == np.int64 and out.shape == (2, 3) and not out.any()
    np.testing.assert_array_equal(run_op("seed", {}, {"seed": 123})["Out"][0], np.array([123], "int32"))
    assert run_op("seed", {}, {"seed": 0})["Out"][0][0] > 0
    xs = [("p%d" % i, np.full((2, 2), float(i))) for i in range(3)]
    got = run_op("ref_by_trainer_id", {"X": xs, "TrainerId": np.array([2], "int64")})["Out"][0]
    np.testing.assert_array_equal(got, xs[2][1])


def test_shuffle_batch_permutes_rows_and_its_gradient_puts_them_back():
    x = np.arange(24, dtype="float64").reshape(2, 4, 3)
    got = run_op("shuffle_batch", {"X": x, "Seed": np.array([5], "int64")}, {"startup_seed": 1},
                 outputs=("Out", "ShuffleIdx", "SeedOut"))
    idx = got["ShuffleIdx"][0]
    assert sorted(idx.tolist()) == list(range(8))
    np.testing.assert_array_equal(got["Out"][0].reshape(8, 3), x.reshape(8, 3)[idx])
    again = run_op("shuffle_batch", {"X": x, "Seed": np.array([5], "int64")}, outputs=("Out", "ShuffleIdx", "SeedOut"))
    np.testing.assert_array_equal(again["ShuffleIdx"][0], idx)      # the same seed, the same order
    assert got["SeedOut"][0][0] != 5
    check_grad("shuffle_batch", {"X": x, "Seed": np.array([5], "int64")}, ["X"], outputs=("Out", "ShuffleIdx", "SeedOut"))


def _pr_states(idx, lab, w, k):
    """Per class [TP, FP, TN, FN], one instance at a time."""
    states = np.zeros((k, 4))
    for i, l, wt in zip(idx, lab, w):
        for c in range(k):
            if c == i == l:
                states[c, 0] += wt
            elif c == i:
                states[c, 1] += wt
            elif c == l:
                states[c, 3] += wt
            else:
                states[c, 2] += wt
    return states


def _pr_metrics(states):
    def ratio(a, b):
        return a / (a + b) if a + b > 0 else 1.0

    def f1(p, r):
        return 2 * p * r / (p + r) if p + r > 0 else 0.0
    mp = np.mean([ratio(s[0], s[1]) for s in states])
    mr = np.mean([ratio(s[0], s[3]) for s in states])
    up, ur = ratio(states[:, 0].sum(), states[:, 1].sum()), ratio(states[:, 0].sum(), states[:, 3].sum())
    return [mp, mr, f1(mp, mr), up, ur, f1(up, ur)]


def test_precision_recall_accumulates_over_states():
    k = 4
    idx, lab = rng.randint(0, k, (30, 1)).astype("int32"), rng.randint(0, k, (30, 1)).astype("int32")
    w = rng.uniform(0, 1, (30, 1)).astype("float32")
    prior = rng.randint(0, 5, (k, 4)).astype("float32")
    got = run_op("precision_recall", {"MaxProbs": rng.uniform(0, 1, (30, 1)).astype("float32"), "Indices": idx,
                                      "Labels": lab, "Weights": w, "StatesInfo": prior}, {"class_number": k},
                 outputs=("BatchMetrics", "AccumMetrics", "AccumStatesInfo"))
    states = _pr_states(idx[:, 0], lab[:, 0], w[:, 0], k)
    np.testing.assert_allclose(got["BatchMetrics"][0], _pr_metrics(states), rtol=1e-5)
    np.testing.assert_allclose(got["AccumStatesInfo"][0], states + prior, rtol=1e-5)
    np.testing.assert_allclose(got["AccumMetrics"][0], _pr_metrics(states + prior), rtol=1e-5)
    with pytest.raises(ValueError, match="outside"):
        run_op("precision_recall", {"MaxProbs": np.ones((1, 1), "float32"), "Indices": np.array([[9]], "int32"),
                                    "Labels": np.array([[0]], "int32")}, {"class_number": k},
               outputs=("BatchMetrics", "AccumMetrics", "AccumStatesInfo"))


@pytest.mark.parametrize("l1", [0.0, 0.3])
def test_proximal_gd_and_adagrad(l1):
    p, g, m = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4)), rng.uniform(0, 1, (3, 4))
    lr, l2 = np.array([0.1]), 0.2

    def prox(v):
        if l1 > 0:
            return np.sign(v) * np.maximum(np.abs(v) - 0.1 * l1, 0) / (1 + 0.1 * l2)
        return v / (1 + 0.1 * l2)
    got = run_op("proximal_gd", {"Param": p.copy(), "Grad": g, "LearningRate": lr}, {"l1": l1, "l2": l2},
                 outputs=("ParamOut",))
    np.testing.assert_allclose(got["ParamOut"][0], prox(p - 0.1 * g))
    got = run_op("proximal_adagrad", {"Param": p.copy(), "Grad": g, "Moment": m.copy(), "LearningRate": lr},
                 {"l1": l1, "l2": l2}, outputs=("ParamOut", "MomentOut"))
    np.testing.assert_allclose(got["MomentOut"][0], m + g * g)
    np.testing.assert_allclose(got["ParamOut"][0], prox(p - 0.1 * g / np.sqrt(m + g * g)))


def test_sigmoid_focal_loss():
    x = rng.normal(size=(6, 3))
    label = np.array([[0], [1], [3], [-1], [2], [1]], "int32")
    fg = np.array([4], "int32")
    out = run_op("sigmoid_focal_loss", {"X": x, "Label": label, "FgNum": fg}, {"gamma": 2.0, "alpha": 0.25})["Out"][0]
    want = np.zeros_like(x)
    for a, c in itertools.product(range(6), range(3)):
        p = 1 / (1 + math.exp(-x[a, c]))
        if label[a, 0] == c + 1:
            want[a, c] = -0.25 / 4 * (1 - p) ** 2 * math.log(p)
        elif label[a, 0] != -1:
            want[a, c] = -0.75 / 4 * p ** 2 * math.log(1 - p)
    np.testing.assert_allclose(out, want, rtol=1e-10)
    check_grad("sigmoid_focal_loss", {"X": x, "Label": label, "FgNum": fg}, ["X"], {"gamma": 2.0, "alpha": 0.25})


def test_positive_negative_pair():
    score = rng.normal(size=(12, 2)).astype("float32")
    score[3, 1] = score[5, 1]
    label = rng.randint(0, 3, (12, 1)).astype("float32")
    query = np.array([[0], [1], [0], [1], [0], [1], [2], [2], [0], [1], [2], [0]], "int64")
    w = rng.uniform(0.5, 1, (12, 1)).astype("float32")
    got = run_op("positive_negative_pair", {"Score": score, "Label": label, "QueryID": query, "Weight": w,
                                            "AccumulatePositivePair": np.array([2.0], "float32")}, {"column": 1},
                 outputs=("PositivePair", "NegativePair", "NeutralPair"))
    pos = neg = neu = 0.0
    for i, j in itertools.combinations(range(12), 2):
        if query[i, 0] != query[j, 0] or label[i, 0] == label[j, 0]:
            continue
        pw = (w[i, 0] + w[j, 0]) / 2
        if score[i, 1] == score[j, 1]:
            neu += pw
        elif (score[i, 1] - score[j, 1]) * (label[i, 0] - label[j, 0]) > 0:
            pos += pw
        else:
            neg += pw
    np.testing.assert_allclose([got[s][0][0] for s in ("PositivePair", "NegativePair", "NeutralPair")],
                               [pos + 2.0, neg, neu], rtol=1e-5)


def test_merge_lod_tensor_infer_merges_as_merge_lod_tensor():
    x = rng.uniform(-1, 1, (4, 2))
    mask = np.array([[True], [False], [False], [True]])
    ins = {"X": x, "Mask": mask, "InTrue": x[[0, 3]], "InFalse": x[[1, 2]]}
    got = run_op("merge_lod_tensor_infer", ins, {"level": 0})["Out"][0]
    np.testing.assert_array_equal(got, x)
    np.testing.assert_array_equal(got, run_op("merge_lod_tensor", ins, {"level": 0})["Out"][0])
