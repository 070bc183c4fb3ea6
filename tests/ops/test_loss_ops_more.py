"""Distance, ranking, sequence-labelling, CTC and sampled losses against NumPy (brute force where the
op runs a dynamic programme), gradients against finite differences."""
import itertools

import numpy as np
import pytest

import fluidist as fluid
from op_test import check_grad, run_op

rng = np.random.RandomState(13)


# ------------------------------------------------------------------ distance and ranking losses
def test_smooth_l1_loss():
    x, y = rng.uniform(-2, 2, (3, 4)), rng.uniform(-1, 1, (3, 4))
    iw, ow = rng.uniform(0, 2, (3, 4)), rng.uniform(0, 2, (3, 4))
    got = run_op("smooth_l1_loss", {"X": x, "Y": y, "InsideWeight": iw, "OutsideWeight": ow}, {"sigma": 2.0},
                 outputs=("Diff", "Out"))
    d = (x - y) * iw
    e = np.where(np.abs(d) < 0.25, 0.5 * 4 * d * d, np.abs(d) - 0.125) * ow
    np.testing.assert_allclose(got["Out"][0], e.sum(1, keepdims=True))
    check_grad("smooth_l1_loss", {"X": x, "Y": y, "InsideWeight": iw, "OutsideWeight": ow}, ["X", "Y"],
               {"sigma": 2.0}, outputs=("Diff", "Out"))


def test_huber_loss():
    x, y = rng.uniform(-2, 2, (5, 1)), rng.uniform(-2, 2, (5, 1))
    out = run_op("huber_loss", {"X": x, "Y": y}, {"delta": 0.7}, outputs=("Residual", "Out"))["Out"][0]
    r = y - x
    np.testing.assert_allclose(out, np.where(np.abs(r) <= 0.7, 0.5 * r * r, 0.7 * (np.abs(r) - 0.35)))
    check_grad("huber_loss", {"X": x, "Y": y}, ["X", "Y"], {"delta": 0.7}, outputs=("Residual", "Out"))


@pytest.mark.parametrize("reduction", ["none", "sum", "mean", "batchmean"])
def test_kldiv_loss(reduction):
    x = np.log(rng.uniform(0.1, 1, (3, 4)))
    t = rng.uniform(0, 1, (3, 4))
    t[1, 2] = 0.0
    out = run_op("kldiv_loss", {"X": x, "Target": t}, {"reduction": reduction}, outputs=("Loss",))["Loss"][0]
    e = np.where(t > 0, t * (np.log(np.where(t > 0, t, 1)) - x), 0)
    want = {"none": e, "sum": e.sum(), "mean": e.mean(), "batchmean": e.sum() / 3}[reduction]
    np.testing.assert_allclose(out.reshape(np.shape(want)), want)
    check_grad("kldiv_loss", {"X": x, "Target": t}, ["X"], {"reduction": reduction}, out_slot="Loss",
               outputs=("Loss",))


def test_rank_and_margin_rank_loss():
    label = np.array([[1.0], [0.0], [0.3]])
    left, right = rng.uniform(-2, 2, (3, 1)), rng.uniform(-2, 2, (3, 1))
    out = run_op("rank_loss", {"Label": label, "Left": left, "Right": right})["Out"][0]
    np.testing.assert_allclose(out, np.log1p(np.exp(left - right)) - label * (left - right))
    check_grad("rank_loss", {"Label": label, "Left": left, "Right": right}, ["Left", "Right"])
    sign = np.array([[1.0], [-1.0], [1.0]])
    got = run_op("margin_rank_loss", {"Label": sign, "X1": left, "X2": right}, {"margin": 0.3},
                 outputs=("Out", "Activated"))
    np.testing.assert_allclose(got["Out"][0], np.maximum(0, -sign * (left - right) + 0.3))
    check_grad("margin_rank_loss", {"Label": sign, "X1": left, "X2": right}, ["X1", "X2"], {"margin": 0.3},
               outputs=("Out", "Activated"))


def test_bpr_loss():
    x = rng.uniform(-2, 2, (3, 5))
    label = np.array([[0], [4], [2]], np.int64)
    out = run_op("bpr_loss", {"X": x, "Label": label}, outputs=("Y",))["Y"][0]
    want = [np.mean([np.log1p(np.exp(x[i, j] - x[i, label[i, 0]])) for j in range(5) if j != label[i, 0]])
            for i in range(3)]
    np.testing.assert_allclose(out.reshape(-1), want)
    check_grad("bpr_loss", {"X": x, "Label": label}, ["X"], out_slot="Y", outputs=("Y",))


def test_teacher_student_sigmoid_loss():
    x = np.array([[-0.8], [0.3], [0.6], [-0.2]])
    label = np.array([[-2.0], [-0.5], [0.3], [1.7]])
    out = run_op("teacher_student_sigmoid_loss", {"X": x, "Label": label}, outputs=("Y",))["Y"][0]

    def ce(z, t):
        return max(z, 0) - z * t + np.log1p(np.exp(-abs(z)))
    want = [ce(-0.8, 0), ce(0.3, 1), ce(0.6, 0) + ce(0.6, 0.3), ce(-0.2, 1) + ce(-0.2, 0.7)]
    np.testing.assert_allclose(out.reshape(-1), want)
    check_grad("teacher_student_sigmoid_loss", {"X": x, "Label": label}, ["X"], out_slot="Y", outputs=("Y",))


def test_center_loss_and_the_centre_update():
    x = rng.uniform(-1, 1, (4, 2))
    label = np.array([[0], [1], [0], [2]], np.int64)
    centers = rng.uniform(-1, 1, (3, 2))
    ins = {"X": x, "Label": label, "Centers": centers, "CenterUpdateRate": np.array([0.5])}
    outs = ("Loss", "SampleCenterDiff", "CentersOut")
    got = run_op("center_loss", ins, {"cluster_num": 3, "need_update": True}, outputs=outs)
    diff = x - centers[label[:, 0]]
    np.testing.assert_allclose(got["Loss"][0], 0.5 * (diff ** 2).sum(1, keepdims=True))
    want = centers.copy()
    for k in range(3):
        rows = label[:, 0] == k
        want[k] += 0.5 * diff[rows].sum(0) / (1 + rows.sum())
    np.testing.assert_allclose(got["CentersOut"][0], want)
    check_grad("center_loss", ins, ["X"], {"cluster_num": 3}, out_slot="Loss", outputs=outs)


# ------------------------------------------------------------------ linear-chain CRF
def path_score(x, w, y):
    return w[0, y[0]] + w[1, y[-1]] + sum(x[t, y[t]] for t in range(len(y))) + \
        sum(w[2 + y[t - 1], y[t]] for t in range(1, len(y)))


def test_linear_chain_crf_is_the_path_likelihood_over_all_paths():
    x = rng.uniform(-1, 1, (5, 3))
    w = rng.uniform(-1, 1, (5, 3))
    label = np.array([[0], [2], [1], [1], [0]], np.int64)
    lod = [[0, 3, 5]]
    outs = ("LogLikelihood", "Alpha", "EmissionExps", "TransitionExps")
    got = run_op("linear_chain_crf", {"Emission": x, "Transition": w, "Label": label}, outputs=outs,
                 lods={"emission_in": lod, "label_in": lod})
    for i, (a, b) in enumerate(zip(lod[0], lod[0][1:])):
        scores = [path_score(x[a:b], w, y) for y in itertools.product(range(3), repeat=b - a)]
        want = np.log(np.exp(scores).sum()) - path_score(x[a:b], w, label[a:b, 0])
        np.testing.assert_allclose(got["LogLikelihood"][0][i, 0], want)
    check_grad("linear_chain_crf", {"Emission": x, "Transition": w, "Label": label}, ["Emission", "Transition"],
               out_slot="LogLikelihood", outputs=outs, lods={"emission_in": lod, "label_in": lod})


def test_crf_decoding_is_the_best_path():
    x = rng.uniform(-1, 1, (6, 3))
    w = rng.uniform(-1, 1, (5, 3))
    lod = [[0, 4, 6]]
    path = run_op("crf_decoding", {"Emission": x, "Transition": w}, outputs=("ViterbiPath",),
                  lods={"emission_in": lod})["ViterbiPath"][0].reshape(-1)
    for a, b in zip(lod[0], lod[0][1:]):
        best = max(itertools.product(range(3), repeat=b - a), key=lambda y: path_score(x[a:b], w, y))
        assert list(path[a:b]) == list(best)


def test_chunk_eval_iob():
    # chunks of type 0 (tags 0 B, 1 I) and 1 (2 B, 3 I); 4 is outside
    inf = np.array([[0], [1], [4], [2], [3], [0]], np.int64)
    lab = np.array([[0], [1], [4], [2], [4], [0]], np.int64)
    outs = ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks")
    got = run_op("chunk_eval", {"Inference": inf, "Label": lab}, {"num_chunk_types": 2, "chunk_scheme": "IOB"},
                 outputs=outs, lods={"inference_in": [[0, 6]], "label_in": [[0, 6]]})
    # inferred: [0-1 type 0], [3-4 type 1], [5 type 0]; gold: [0-1 type 0], [3 type 1], [5 type 0]
    assert [int(got[k][0][0]) for k in outs[3:]] == [3, 3, 2]
    np.testing.assert_allclose([got[k][0][0] for k in outs[:3]], [2 / 3, 2 / 3, 2 / 3], rtol=1e-6)



def test_chunk_eval_padded_input_ignores_the_padding():
    # the same two sequences padded with -1 to [2, 4, 1] and given SeqLength: the padding is no tag
    inf = np.array([[0, 1, 4, -1], [2, 3, 0, -1]], np.int64)[..., None]
    lab = np.array([[0, 1, 4, -1], [2, 4, 0, -1]], np.int64)[..., None]
    outs = ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks")
    got = run_op("chunk_eval", {"Inference": inf, "Label": lab, "SeqLength": np.array([3, 3], np.int64)},
                 {"num_chunk_types": 2, "chunk_scheme": "IOB"}, outputs=outs)
    assert [int(got[k][0][0]) for k in outs[3:]] == [3, 3, 2]

# ------------------------------------------------------------------ edit distance, CTC
def test_edit_distance():
    hyp = np.array([1, 2, 3, 5, 4, 9], np.int64).reshape(-1, 1)
    ref = np.array([1, 3, 4, 4, 9, 9], np.int64).reshape(-1, 1)
    lods = {"hyps_in": [[0, 3, 3, 6]], "refs_in": [[0, 2, 4, 6]]}
    got = run_op("edit_distance", {"Hyps": hyp, "Refs": ref}, {"normalized": False}, outputs=("Out", "SequenceNum"),
                 lods=lods)
    np.testing.assert_allclose(got["Out"][0].reshape(-1), [1, 2, 2])
    assert int(got["SequenceNum"][0][0]) == 3
    got = run_op("edit_distance", {"Hyps": hyp, "Refs": ref}, {"normalized": True}, outputs=("Out", "SequenceNum"),
                 lods=lods)
    np.testing.assert_allclose(got["Out"][0].reshape(-1), [0.5, 1, 1])


def ctc_brute_force(logits, label, blank):
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(logits.shape[1]), repeat=logits.shape[0]):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or k != path[i - 1])]
        if collapsed == label:
            total += np.prod([p[t, k] for t, k in enumerate(path)])
    return -np.log(total)


def test_warpctc_sums_every_alignment():
    x = rng.uniform(-1, 1, (7, 3))
    label = np.array([[1], [1], [2]], np.int32)
    lods = {"logits_in": [[0, 4, 7]], "label_in": [[0, 2, 3]]}
    got = run_op("warpctc", {"Logits": x, "Label": label}, {"blank": 0}, outputs=("Loss", "WarpCTCGrad"), lods=lods)
    want = [ctc_brute_force(x[0:4], [1, 1], 0), ctc_brute_force(x[4:7], [2], 0)]
    np.testing.assert_allclose(got["Loss"][0].reshape(-1), want)
    check_grad("warpctc", {"Logits": x, "Label": label}, ["Logits"], {"blank": 0}, out_slot="Loss",
               outputs=("Loss", "WarpCTCGrad"), lods=lods)



def test_warpctc_label_no_alignment_fits_costs_zero():
    # warp-ctc (so Paddle 1.8) reports 0 and no gradient where len(label) + repeats > steps: [1, 2, 3]
    # in 2 steps and [1, 1] in 2 steps; [2] in 3 steps is a normal loss
    x = rng.uniform(-1, 1, (7, 4))
    label = np.array([[1], [2], [3], [1], [1], [2]], np.int32)
    lods = {"logits_in": [[0, 2, 4, 7]], "label_in": [[0, 3, 5, 6]]}
    got = run_op("warpctc", {"Logits": x, "Label": label}, {"blank": 0}, outputs=("Loss", "WarpCTCGrad"), lods=lods)
    np.testing.assert_allclose(got["Loss"][0].reshape(-1), [0.0, 0.0, ctc_brute_force(x[4:7], [2], 0)])
    assert not got["WarpCTCGrad"][0][:4].any()

# ------------------------------------------------------------------ sampled losses
def test_nce_with_fixed_negatives():
    x = rng.uniform(-1, 1, (3, 4))
    w, b = rng.uniform(-1, 1, (6, 4)), rng.uniform(-1, 1, (6, 1))
    label = np.array([[1], [4], [0]], np.int64)
    attrs = {"num_total_classes": 6, "num_neg_samples": 2, "custom_neg_classes": [2, 5], "sampler": 0}
    outs = ("Cost", "SampleLogits", "SampleLabels")
    got = run_op("nce", {"Input": x, "Label": label, "Weight": w, "Bias": b}, attrs, outputs=outs)
    bq = 2 / 6.0
    want = []
    for i in range(3):
        o = [1 / (1 + np.exp(-(x[i] @ w[c] + b[c, 0]))) for c in (label[i, 0], 2, 5)]
        want.append(-np.log(o[0] / (o[0] + bq)) - np.log(bq / (o[1] + bq)) - np.log(bq / (o[2] + bq)))
    np.testing.assert_allclose(got["Cost"][0].reshape(-1), want)
    check_grad("nce", {"Input": x, "Label": label, "Weight": w, "Bias": b}, ["Input", "Weight", "Bias"], attrs,
               out_slot="Cost", outputs=outs)


def test_hierarchical_sigmoid_default_tree():
    x = rng.uniform(-1, 1, (3, 2))
    w, b = rng.uniform(-1, 1, (4, 2)), rng.uniform(-1, 1, (4, 1))
    label = np.array([[0], [3], [4]], np.int64)
    got = run_op("hierarchical_sigmoid", {"X": x, "W": w, "Label": label, "Bias": b}, {"num_classes": 5},
                 outputs=("Out", "PreOut"))
    width = 3  # bits of num_classes - 1 = 4
    for i in range(3):
        c = int(label[i, 0]) + 5
        length = c.bit_length() - 1
        total = (width - length) * np.log(2.0)   # the unused tail counts softplus(0), as in Paddle
        for j in range(length):
            node = (c >> (j + 1)) - 1
            z = x[i] @ w[node] + b[node, 0]
            total += np.log1p(np.exp(z)) - ((c >> j) & 1) * z
        np.testing.assert_allclose(got["Out"][0][i, 0], total)
    check_grad("hierarchical_sigmoid", {"X": x, "W": w, "Label": label, "Bias": b}, ["X", "W", "Bias"],
               {"num_classes": 5}, outputs=("Out", "PreOut"))


def test_sample_logits_with_customised_samples():
    logits = rng.uniform(-1, 1, (2, 5))
    labels = np.array([[3], [0]], np.int64)
    samples = np.array([[3, 0, 2], [0, 0, 4]], np.int64)
    probs = np.array([[0.5, 0.2, 0.3], [0.4, 0.1, 0.6]])
    outs = ("SampledLogits", "Samples", "Probabilities", "SampledLabels", "LogitsDim", "LabelsDim")
    ins = {"Logits": logits, "Labels": labels, "CustomizedSamples": samples, "CustomizedProbabilities": probs}
    got = run_op("sample_logits", ins, {"use_customized_samples": True, "num_samples": 2}, outputs=outs)
    want = np.take_along_axis(logits, samples, 1) - np.log(probs)
    want[1, 1] -= 1e20  # a sampled negative equal to the row's label
    np.testing.assert_allclose(got["SampledLogits"][0], want)
    check_grad("sample_logits", ins, ["Logits"], {"use_customized_samples": True, "num_samples": 2,
                                                  "remove_accidental_hits": False},
               out_slot="SampledLogits", outputs=outs)



@pytest.mark.parametrize("shapes", [((5,), (5, 1), (5, 1)), ((5, 1), (5,), (5, 1)), ((5,), (5,), (5, 1))])
def test_rank_loss_pairs_flat_elements_of_mixed_shapes(shapes):
    # Paddle 1.8: [N] and [N, 1] inputs pair element by element; Out is shaped like Label and each
    # input's gradient like that input
    label = rng.randint(0, 2, shapes[0]).astype(np.float64)
    left, right = rng.uniform(0, 1, shapes[1]), rng.uniform(0, 1, shapes[2])
    out = run_op("rank_loss", {"Label": label, "Left": left, "Right": right})["Out"][0]
    o = left.reshape(-1) - right.reshape(-1)
    np.testing.assert_allclose(out, (np.log1p(np.exp(o)) - label.reshape(-1) * o).reshape(shapes[0]), rtol=1e-12)
    check_grad("rank_loss", {"Label": label, "Left": left, "Right": right}, ["Left", "Right"])


def test_nce_draws_depend_on_the_seed_alone():
    """As in Paddle 1.8.5 (test_nce's dense-versus-sparse case): two nce layers with one seed, in
    two programs, one of them with a sparse weight gradient, draw the same negatives."""
    losses = []
    for sparse in (False, True):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 10], "float32")
            y = fluid.data("y", [None, 1], "int64")
            cost = fluid.layers.nce(x, y, num_total_classes=20, num_neg_samples=5, seed=1, is_sparse=sparse,
                                    param_attr=fluid.initializer.Constant(0.1), bias_attr=fluid.initializer.Constant(0.0))
            loss = fluid.layers.mean(cost)
            fluid.optimizer.SGD(0.1).minimize(loss)
        exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        exe.run(startup, scope=scope)
        r = np.random.RandomState(0)
        feed = {"x": r.randn(8, 10).astype("float32"), "y": r.randint(0, 20, (8, 1)).astype("int64")}
        losses.append(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])
    np.testing.assert_array_equal(losses[0], losses[1])
