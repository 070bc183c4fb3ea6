"""Loss ops (cross_entropy, cross_entropy2, softmax_with_cross_entropy, sigmoid_cross_entropy_with_logits,
log_loss) and metric ops (top_k, accuracy, arg_max, arg_min) against NumPy, with gradients."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import places

from op_test import check_grad, run_op

rng = np.random.RandomState(3)


def probs(n, d):
    p = rng.uniform(0.1, 1.0, (n, d))
    return p / p.sum(1, keepdims=True)


def softmax(z, axis=-1):
    e = np.exp(z - z.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# ------------------------------------------------------------------ cross_entropy
def test_cross_entropy_hard_label_and_ignore_index():
    x = probs(5, 4)
    label = np.array([[0], [3], [-100], [1], [2]], np.int64)
    y = run_op("cross_entropy", {"X": x, "Label": label}, outputs=("Y",))["Y"][0]
    expect = np.array([-np.log(x[i, l]) if l != -100 else 0.0 for i, l in enumerate(label[:, 0])])
    np.testing.assert_allclose(y, expect.reshape(5, 1))
    check_grad("cross_entropy", {"X": x, "Label": label}, ["X"], out_slot="Y")


def test_cross_entropy_soft_label():
    x, label = probs(4, 3), probs(4, 3)
    y = run_op("cross_entropy", {"X": x, "Label": label}, {"soft_label": True}, outputs=("Y",))["Y"][0]
    np.testing.assert_allclose(y, -(label * np.log(x)).sum(1, keepdims=True))
    check_grad("cross_entropy", {"X": x, "Label": label}, ["X"], {"soft_label": True}, out_slot="Y")


def test_cross_entropy_of_a_zero_probability_is_clamped():
    x = np.array([[0.0, 1.0]])
    y = run_op("cross_entropy", {"X": x, "Label": np.array([[0]], np.int64)}, outputs=("Y",))["Y"][0]
    assert y[0, 0] == 1e20


def test_cross_entropy_label_errors():
    bad = {"X": probs(2, 4), "Label": np.array([[1], [4]], np.int64)}
    if isinstance(fluid.CPUPlace(), places.CPUPlace):
        with pytest.raises(ValueError, match="label 4 .* out of range for 4 classes"):
            run_op("cross_entropy", bad, outputs=("Y",))
    else:   # a device checks no labels (that would read them back every step): the row's loss is NaN
        y = run_op("cross_entropy", bad, outputs=("Y",))["Y"][0].reshape(-1)
        assert np.isfinite(y[0]) and np.isnan(y[1])
    with pytest.raises(ValueError, match="must be an integer tensor"):
        run_op("cross_entropy", {"X": probs(2, 4), "Label": np.array([[1.0], [0.0]])}, outputs=("Y",))
    with pytest.raises(ValueError, match="Label 'label_in' has shape \\[2, 2\\]"):
        run_op("cross_entropy", {"X": probs(2, 4), "Label": np.zeros((2, 2), np.int64)}, outputs=("Y",))


def test_cross_entropy2_keeps_matchx_and_its_gradient():
    x = probs(4, 5)
    label = np.array([[4], [0], [-100], [2]], np.int64)
    got = run_op("cross_entropy2", {"X": x, "Label": label}, outputs=("Y", "MatchX", "XShape"))
    match = np.array([x[0, 4], x[1, 0], 0.0, x[3, 2]]).reshape(4, 1)
    np.testing.assert_allclose(got["MatchX"][0], match)
    np.testing.assert_allclose(got["Y"][0], np.where(match > 0, -np.log(np.where(match > 0, match, 1)), 0))
    np.testing.assert_array_equal(got["XShape"][0], [4, 5])
    check_grad("cross_entropy2", {"X": x, "Label": label}, ["X"], outputs=("Y", "MatchX", "XShape"), out_slot="Y")


# ------------------------------------------------------------------ softmax_with_cross_entropy
SWCE_OUT = ("Softmax", "Loss")


def test_softmax_with_cross_entropy_hard():
    z = rng.uniform(-3, 3, (6, 5))
    label = rng.randint(0, 5, (6, 1)).astype(np.int64)
    label[2, 0] = -100
    got = run_op("softmax_with_cross_entropy", {"Logits": z, "Label": label}, outputs=SWCE_OUT)
    sm = softmax(z)
    np.testing.assert_allclose(got["Softmax"][0], sm)
    expect = -np.log(sm[np.arange(6), np.where(label[:, 0] < 0, 0, label[:, 0])])
    expect[2] = 0
    np.testing.assert_allclose(got["Loss"][0], expect.reshape(6, 1))
    check_grad("softmax_with_cross_entropy", {"Logits": z, "Label": label}, ["Logits"], outputs=SWCE_OUT,
               out_slot="Loss")


def test_softmax_with_cross_entropy_saturates_as_paddle_for_huge_logits():
    """Paddle 1.8 clips the shifted logits at -64: a hopeless class costs 64, not 1000."""
    z = np.array([[1000.0, 0.0, -1000.0]])
    got = run_op("softmax_with_cross_entropy", {"Logits": z, "Label": np.array([[1]], np.int64)}, outputs=SWCE_OUT)
    np.testing.assert_allclose(got["Loss"][0], [[64.0]])
    assert np.isfinite(got["Softmax"][0]).all()


def test_softmax_with_cross_entropy_soft():
    z, label = rng.uniform(-2, 2, (4, 3)), probs(4, 3)
    got = run_op("softmax_with_cross_entropy", {"Logits": z, "Label": label}, {"soft_label": True}, outputs=SWCE_OUT)
    np.testing.assert_allclose(got["Loss"][0], -(label * np.log(softmax(z))).sum(1, keepdims=True))
    check_grad("softmax_with_cross_entropy", {"Logits": z, "Label": label}, ["Logits"], {"soft_label": True},
               outputs=SWCE_OUT, out_slot="Loss")


def test_softmax_with_cross_entropy_on_another_axis():
    z = rng.uniform(-2, 2, (2, 4, 3))
    label = rng.randint(0, 4, (2, 1, 3)).astype(np.int64)
    got = run_op("softmax_with_cross_entropy", {"Logits": z, "Label": label}, {"axis": 1}, outputs=SWCE_OUT)
    sm = softmax(z, axis=1)
    np.testing.assert_allclose(got["Softmax"][0], sm)
    expect = -np.log(np.take_along_axis(sm, label, axis=1))
    np.testing.assert_allclose(got["Loss"][0], expect)
    check_grad("softmax_with_cross_entropy", {"Logits": z, "Label": label}, ["Logits"], {"axis": 1},
               outputs=SWCE_OUT, out_slot="Loss")


# ------------------------------------------------------------------ sigmoid_cross_entropy_with_logits
@pytest.mark.parametrize("normalize", [False, True])
def test_sigmoid_cross_entropy_with_logits(normalize):
    x = rng.uniform(-4, 4, (3, 4))
    label = rng.randint(0, 2, (3, 4)).astype(np.float64)
    label[0, 1] = label[2, 3] = -100
    out = run_op("sigmoid_cross_entropy_with_logits", {"X": x, "Label": label}, {"normalize": normalize})["Out"][0]
    p = 1 / (1 + np.exp(-x))
    expect = np.where(label == -100, 0, -label * np.log(p) - (1 - label) * np.log(1 - p))
    if normalize:
        expect = expect / 10
    np.testing.assert_allclose(out, expect, rtol=1e-10)
    check_grad("sigmoid_cross_entropy_with_logits", {"X": x, "Label": label}, ["X"], {"normalize": normalize})


def test_log_loss():
    p = rng.uniform(0.05, 0.95, (5, 1))
    y = rng.randint(0, 2, (5, 1)).astype(np.float64)
    out = run_op("log_loss", {"Predicted": p, "Labels": y}, {"epsilon": 1e-4}, outputs=("Loss",))["Loss"][0]
    np.testing.assert_allclose(out, -y * np.log(p + 1e-4) - (1 - y) * np.log(1 - p + 1e-4))
    check_grad("log_loss", {"Predicted": p, "Labels": y}, ["Predicted"], out_slot="Loss")


# ------------------------------------------------------------------ metrics
def test_top_k_values_indices_and_grad():
    x = rng.permutation(24).reshape(2, 3, 4).astype(np.float64)
    got = run_op("top_k", {"X": x}, {"k": 2}, outputs=("Out", "Indices"))
    idx = np.argsort(-x, axis=-1)[..., :2]
    np.testing.assert_array_equal(got["Indices"][0], idx)
    assert got["Indices"][0].dtype == np.int64
    np.testing.assert_array_equal(got["Out"][0], np.take_along_axis(x, idx, -1))
    check_grad("top_k", {"X": x / 7.0}, ["X"], {"k": 2}, outputs=("Out", "Indices"))


def test_top_k_ties_take_the_lower_index_and_k_is_checked():
    got = run_op("top_k", {"X": np.array([[1.0, 3.0, 3.0, 0.0]])}, {"k": 2}, outputs=("Out", "Indices"))
    np.testing.assert_array_equal(got["Indices"][0], [[1, 2]])
    with pytest.raises(ValueError, match="k = 5 must be in \\[1, 4\\]"):
        run_op("top_k", {"X": np.zeros((2, 4))}, {"k": 5}, outputs=("Out", "Indices"))


def test_accuracy_counts_labels_within_the_top_k():
    scores = rng.uniform(size=(6, 5))
    label = np.array([[0], [1], [2], [3], [4], [0]], np.int64)
    for k in (1, 3):
        tk = run_op("top_k", {"X": scores}, {"k": k}, outputs=("Out", "Indices"))
        got = run_op("accuracy", {"Out": tk["Out"][0], "Indices": tk["Indices"][0], "Label": label},
                     outputs=("Accuracy", "Correct", "Total"))
        top = np.argsort(-scores, 1)[:, :k]
        correct = int((top == label).any(1).sum())
        assert got["Correct"][0].dtype == np.int32 and got["Total"][0].dtype == np.int32
        assert got["Accuracy"][0].dtype == np.float32
        assert got["Correct"][0].tolist() == [correct] and got["Total"][0].tolist() == [6]
        np.testing.assert_allclose(got["Accuracy"][0], [correct / 6.0], rtol=1e-6)


@pytest.mark.parametrize("op,fn", [("arg_max", np.argmax), ("arg_min", np.argmin)])
def test_arg_max_min(op, fn):
    x = rng.uniform(size=(3, 4, 5))
    for axis in (0, 1, -1):
        out = run_op(op, {"X": x}, {"axis": axis})["Out"][0]
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, fn(x, axis=axis))
    np.testing.assert_array_equal(run_op(op, {"X": x}, {"axis": 1, "keepdims": True})["Out"][0],
                                  fn(x, axis=1)[:, None, :])
    np.testing.assert_array_equal(run_op(op, {"X": x}, {"flatten": True})["Out"][0], [fn(x)])


@pytest.mark.parametrize("op", ["cross_entropy", "cross_entropy2"])
@pytest.mark.parametrize("x_shape", [(5, 4), (2, 3, 4)])
def test_hard_label_without_trailing_one_gives_loss_of_its_shape(op, x_shape):
    # Paddle 1.8: a Label of X.shape[:-1] (no trailing 1) gives Y of that shape, at build and at run time
    x = rng.uniform(0.1, 1.0, x_shape)
    x /= x.sum(-1, keepdims=True)
    label = rng.randint(0, x_shape[-1], x_shape[:-1]).astype(np.int64)
    prog = fluid.Program()
    blk = prog.global_block()
    ins = {"X": blk.create_var(name="x", shape=x.shape, dtype="float64"),
           "Label": blk.create_var(name="label", shape=label.shape, dtype="int64")}
    outs = {s: blk.create_var(name=s.lower(), dtype="float64")
            for s in (("Y", "MatchX", "XShape") if op == "cross_entropy2" else ("Y",))}
    blk.append_op(op, inputs=ins, outputs=outs)
    assert tuple(outs["Y"].shape) == x_shape[:-1]
    y, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": x, "label": label}, fetch_list=[outs["Y"]])
    want = -np.log(np.take_along_axis(x, label[..., None], -1))[..., 0]
    assert y.shape == x_shape[:-1]
    np.testing.assert_allclose(y, want, rtol=1e-12)
