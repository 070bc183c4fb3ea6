"""The fused ops of Paddle's programs (``fused.py``, ``fused_sequence.py``, ``fused_rnn.py``) against
NumPy references that compute the unfused steps one row / one time step at a time."""
import itertools

import numpy as np
import pytest

from op_test import check_grad, run_op

rng = np.random.RandomState(11)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def offsets(lengths):
    return [int(v) for v in np.concatenate([[0], np.cumsum(lengths)])]


# ------------------------------------------------------------------ fc / repeated fc / squared mat sub
@pytest.mark.parametrize("act,bias,padding", [("", False, False), ("relu", True, False), ("relu", True, True)])
def test_fc(act, bias, padding):
    x, w, b = rng.uniform(-1, 1, (2, 3, 2, 2)), rng.uniform(-1, 1, (12, 5)), rng.uniform(-1, 1, (5,))
    ins = {"Input": x, "W": np.pad(w, ((0, 4), (0, 4))) if padding else w}
    if bias:
        ins["Bias"] = b
    out = run_op("fc", ins, {"in_num_col_dims": 1, "activation_type": act, "padding_weights": padding})["Out"][0]
    want = np.array([[sum(x[n].ravel()[k] * w[k, j] for k in range(12)) + (b[j] if bias else 0) for j in range(5)]
                     for n in range(2)])
    np.testing.assert_allclose(out, np.maximum(want, 0) if act else want)


def test_fc_keeps_leading_dims():
    x, w = rng.uniform(-1, 1, (2, 3, 4)), rng.uniform(-1, 1, (4, 6))
    out = run_op("fc", {"Input": x, "W": w}, {"in_num_col_dims": 2})["Out"][0]
    np.testing.assert_allclose(out, x @ w)


def test_fusion_repeated_fc_relu_and_squared_mat_sub():
    x = rng.uniform(-1, 1, (3, 4))
    ws = [("w0", rng.uniform(-1, 1, (4, 5))), ("w1", rng.uniform(-1, 1, (5, 2)))]
    bs = [("b0", rng.uniform(-1, 1, (1, 5))), ("b1", rng.uniform(-1, 1, (1, 2)))]
    got = run_op("fusion_repeated_fc_relu", {"X": x, "W": ws, "Bias": bs}, outputs=(("ReluOut", 1), "Out"))
    h = np.maximum(x @ ws[0][1] + bs[0][1], 0)
    np.testing.assert_allclose(got["ReluOut"][0], h)
    np.testing.assert_allclose(got["Out"][0], np.maximum(h @ ws[1][1] + bs[1][1], 0))
    y = rng.uniform(-1, 1, (4, 6))
    got = run_op("fusion_squared_mat_sub", {"X": x, "Y": y}, {"scalar": -0.3},
                 outputs=("SquaredX", "SquaredY", "SquaredXY", "Out"))
    want = [[-0.3 * (sum(x[i, k] * y[k, j] for k in range(4)) ** 2 - sum(x[i, k] ** 2 * y[k, j] ** 2 for k in range(4)))
             for j in range(6)] for i in range(3)]
    np.testing.assert_allclose(got["Out"][0], want)


# ------------------------------------------------------------------ fused_elemwise_activation
UNARY = {"scale": lambda v: 0.3 * v, "relu": lambda v: max(v, 0.0), "tanh": np.tanh, "sigmoid": lambda v: sigmoid(v)}
BINARY = {"elementwise_add": lambda a, b: a + b, "elementwise_mul": lambda a, b: a * b}
PAIRS = [("elementwise_add", "scale"), ("elementwise_add", "relu"), ("elementwise_mul", "scale"),
         ("elementwise_mul", "tanh"), ("elementwise_mul", "sigmoid"), ("scale", "elementwise_add"),
         ("relu", "elementwise_add"), ("tanh", "elementwise_add")]
SHAPES = [((2, 3, 4), (3,), 1), ((2, 3, 4), (2, 3, 4), -1), ((3,), (2, 3, 4), 1), ((4, 1, 1), (4, 2, 3), -1)]


def _fea_reference(functors, x, y, axis):
    """Element by element: the smaller input indexed at the aligned position of the larger."""
    big, small, x_big = (x, y, True) if x.ndim > y.ndim or (x.ndim == y.ndim and x.size >= y.size) else (y, x, False)
    start = big.ndim - small.ndim if axis == -1 else axis
    out, mid = np.zeros(big.shape), np.zeros(big.shape)
    for idx in np.ndindex(big.shape):
        s_idx = tuple(0 if small.shape[k] == 1 else idx[start + k] for k in range(small.ndim))
        a, b = (big[idx], small[s_idx]) if x_big else (small[s_idx], big[idx])
        if functors[0] in BINARY:
            mid[idx] = UNARY[functors[1]](b)
            out[idx] = BINARY[functors[0]](a, mid[idx])
        else:
            mid[idx] = BINARY[functors[1]](a, b)
            out[idx] = UNARY[functors[0]](mid[idx])
    return out, mid


@pytest.mark.parametrize("functors,shapes", list(itertools.product(PAIRS, SHAPES)))
def test_fused_elemwise_activation(functors, shapes):
    (xs, ys, axis) = shapes
    x, y = rng.uniform(-1, 1, xs), rng.uniform(-1, 1, ys)
    for arr in (x, y):
        arr[np.abs(arr) < 0.05] = 0.2                       # relu's kink stays away from the finite differences
    attrs = {"functor_list": list(functors), "axis": axis, "scale": 0.3, "save_intermediate_out": True}
    got = run_op("fused_elemwise_activation", {"X": x, "Y": y}, attrs, outputs=("Out", "IntermediateOut"))
    out, mid = _fea_reference(functors, x, y, axis)
    np.testing.assert_allclose(got["Out"][0], out, rtol=1e-12)
    if functors[0] in BINARY:
        mid = np.vectorize(UNARY[functors[1]])(y)
    np.testing.assert_allclose(got["IntermediateOut"][0].reshape(mid.shape), mid, rtol=1e-12)
    assert functors[0] != "relu" or np.abs(mid).min() > 1e-4      # relu's kink is beyond the finite differences
    check_grad("fused_elemwise_activation", {"X": x, "Y": y}, ["X", "Y"], attrs, outputs=("Out", "IntermediateOut"))


def test_fused_elemwise_activation_refuses_pairs_paddle_lacks():
    with pytest.raises(ValueError, match="functor_list"):
        run_op("fused_elemwise_activation", {"X": np.ones((2, 2)), "Y": np.ones((2, 2))},
               {"functor_list": ["elementwise_add", "tanh"]})


# ------------------------------------------------------------------ fused sequence ops
def _pool(rows, kind):
    total = rows.sum(axis=0)
    return total if kind == "SUM" else total / (len(rows) if kind == "AVERAGE" else np.sqrt(len(rows)))


@pytest.mark.parametrize("kind", ["SUM", "AVERAGE", "SQRT"])
@pytest.mark.parametrize("cvm", [None, True, False])
def test_fusion_seqpool_concat_and_cvm(kind, cvm):
    lengths = [[2, 1, 3], [1, 4, 1]]
    xs = [("x%d" % i, rng.uniform(0.1, 1, (sum(ls), 5))) for i, ls in enumerate(lengths)]
    ins, attrs = {"X": xs}, {"pooltype": kind, "axis": 1}
    op_type = "fusion_seqpool_concat"
    if cvm is not None:
        op_type, ins["CVM"] = "fusion_seqpool_cvm_concat", np.ones((3, 2))
        attrs["use_cvm"] = cvm
    out = run_op(op_type, ins, attrs, lods={n: [offsets(ls)] for (n, _), ls in zip(xs, lengths)})["Out"][0]
    rows = []
    for s in range(3):
        parts = []
        for (_, x), ls in zip(xs, lengths):
            o = offsets(ls)
            p = _pool(x[o[s]:o[s + 1]], kind)
            if cvm is True:
                p = np.concatenate([[np.log(p[0] + 1), np.log(p[1] + 1) - np.log(p[0] + 1)], p[2:]])
            elif cvm is False:
                p = p[2:]
            parts.append(p)
        rows.append(np.concatenate(parts))
    np.testing.assert_allclose(out, rows)


@pytest.mark.parametrize("sparse", [False, True])
def test_fused_embedding_seq_pool_and_its_gradient(sparse):
    table = rng.uniform(-1, 1, (7, 3))
    ids = np.array([[[4], [3]], [[4], [6]], [[2], [1]], [[0], [5]]], "int64")
    lod = {"ids_in": [[0, 3, 4]]}
    attrs = {"is_sparse": sparse, "padding_idx": 6}
    out = run_op("fused_embedding_seq_pool", {"W": table, "Ids": ids}, attrs, lods=lod)["Out"][0]
    emb = lambda i: np.zeros(3) if i == 6 else table[i]  # noqa: E731
    want = [np.concatenate([sum(emb(ids[r, k, 0]) for r in rows) for k in range(2)]) for rows in ([0, 1, 2], [3])]
    np.testing.assert_allclose(out, want)
    check_grad("fused_embedding_seq_pool", {"W": table, "Ids": ids}, ["W"], {"padding_idx": 6}, lods=lod)


def test_fusion_seqexpand_concat_fc():
    lengths = [2, 3]
    x0, x1 = rng.uniform(-1, 1, (5, 3)), rng.uniform(-1, 1, (2, 2))
    w, b = rng.uniform(-1, 1, (5, 4)), rng.uniform(-1, 1, (1, 4))
    got = run_op("fusion_seqexpand_concat_fc", {"X": [("x0", x0), ("x1", x1)], "FCWeight": w, "FCBias": b},
                 {"fc_activation": "relu"}, outputs=("Out", "FCOut"), lods={"x0": [offsets(lengths)]})
    seq = np.repeat(np.arange(2), lengths)
    want = [np.maximum(np.concatenate([x0[t], x1[seq[t]]]) @ w + b[0], 0) for t in range(5)]
    np.testing.assert_allclose(got["Out"][0], want)


@pytest.mark.parametrize("start,length", [(0, 3), (-2, 3), (-1, 4)])
def test_fusion_seqconv_eltadd_relu(start, length):
    lengths = [4, 1, 3]
    x = rng.uniform(-1, 1, (8, 2))
    w, b = rng.uniform(-1, 1, (2 * length, 3)), rng.uniform(-1, 1, (1, 3))
    got = run_op("fusion_seqconv_eltadd_relu", {"X": x, "Filter": w, "Bias": b},
                 {"contextStart": start, "contextLength": length}, outputs=("Out", "ColMat"),
                 lods={"x_in": [offsets(lengths)]})
    o = offsets(lengths)
    want = []
    for s in range(3):
        for t in range(o[s], o[s + 1]):
            ctx_rows = [x[t + start + j] if o[s] <= t + start + j < o[s + 1] else np.zeros(2) for j in range(length)]
            want.append(np.maximum(np.concatenate(ctx_rows) @ w + b[0], 0))
    np.testing.assert_allclose(got["Out"][0], want)


# ------------------------------------------------------------------ fused recurrent ops
def _lstm_reference(gates_in, lengths, wh, bias, h0, c0, peep, reverse):
    """Paddle's lstm op one sequence and one step at a time: gates [candidate, input, forget, output]."""
    d = wh.shape[0]
    hs, cs = np.zeros((len(gates_in), d)), np.zeros((len(gates_in), d))
    o = offsets(lengths)
    for s in range(len(lengths)):
        h, c = h0[s], c0[s]
        steps = range(o[s], o[s + 1])
        for t in (reversed(steps) if reverse else steps):
            g = gates_in[t] + h @ wh + bias[:4 * d]
            cand = np.tanh(g[:d])
            i = sigmoid(g[d:2 * d] + (c * bias[4 * d:5 * d] if peep else 0))
            f = sigmoid(g[2 * d:3 * d] + (c * bias[5 * d:6 * d] if peep else 0))
            c = cand * i + c * f
            out = sigmoid(g[3 * d:] + (c * bias[6 * d:] if peep else 0))
            h = out * np.tanh(c)
            hs[t], cs[t] = h, c
    return hs, cs


@pytest.mark.parametrize("peep,reverse,init", [(False, False, False), (True, True, True), (True, False, True)])
def test_fusion_lstm_and_fused_embedding_fc_lstm(peep, reverse, init):
    lengths, m, d = [2, 4, 1], 3, 2
    x = rng.uniform(-1, 1, (7, m))
    wx, wh = rng.uniform(-1, 1, (m, 4 * d)), rng.uniform(-1, 1, (d, 4 * d))
    bias = rng.uniform(-1, 1, (1, (7 if peep else 4) * d))
    h0, c0 = (rng.uniform(-1, 1, (3, d)) for _ in range(2)) if init else (np.zeros((3, d)),) * 2
    attrs = {"use_peepholes": peep, "is_reverse": reverse}
    ins = {"X": x, "WeightX": wx, "WeightH": wh, "Bias": bias}
    if init:
        ins.update(H0=h0, C0=c0)
    got = run_op("fusion_lstm", ins, attrs, outputs=("Hidden", "Cell", "XX"), lods={"x_in": [offsets(lengths)]})
    hs, cs = _lstm_reference(x @ wx, lengths, wh, bias[0], h0, c0, peep, reverse)
    np.testing.assert_allclose(got["Hidden"][0], hs, rtol=1e-10)
    np.testing.assert_allclose(got["Cell"][0], cs, rtol=1e-10)
    ids = rng.randint(0, 5, (7, 1)).astype("int64")
    emb = rng.uniform(-1, 1, (5, 4 * d))
    ins = {"Ids": ids, "Embeddings": emb, "WeightH": wh, "Bias": bias}
    if init:
        ins.update(H0=h0, C0=c0)
    got = run_op("fused_embedding_fc_lstm", ins, attrs, outputs=("Hidden", "Cell", "XX"),
                 lods={"ids_in": [offsets(lengths)]})
    no_gate_bias = np.concatenate([np.zeros(4 * d), bias[0, 4 * d:]])
    hs, cs = _lstm_reference(emb[ids[:, 0]], lengths, wh, no_gate_bias, h0, c0, peep, reverse)
    np.testing.assert_allclose(got["Hidden"][0], hs, rtol=1e-10)


@pytest.mark.parametrize("reverse,origin", [(False, False), (True, False), (False, True)])
def test_fusion_gru(reverse, origin):
    lengths, m, d = [3, 1, 2], 4, 3
    x, wx, wh = rng.uniform(-1, 1, (6, m)), rng.uniform(-1, 1, (m, 3 * d)), rng.uniform(-1, 1, (d, 3 * d))
    b, h0 = rng.uniform(-1, 1, (1, 3 * d)), rng.uniform(-1, 1, (3, d))
    got = run_op("fusion_gru", {"X": x, "WeightX": wx, "WeightH": wh, "Bias": b, "H0": h0},
                 {"is_reverse": reverse, "origin_mode": origin}, outputs=("Hidden", "XX"),
                 lods={"x_in": [offsets(lengths)]})
    flat = wh.reshape(-1)
    wg, wc = flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)
    want, o = np.zeros((6, d)), offsets(lengths)
    for s in range(3):
        h = h0[s]
        steps = range(o[s], o[s + 1])
        for t in (reversed(steps) if reverse else steps):
            g = x[t] @ wx + b[0]
            u, r = sigmoid(g[:d] + h @ wg[:, :d]), sigmoid(g[d:2 * d] + h @ wg[:, d:])
            c = np.tanh(g[2 * d:] + (r * h) @ wc)
            h = u * h + (1 - u) * c if origin else u * (c - h) + h
            want[t] = h
    np.testing.assert_allclose(got["Hidden"][0], want, rtol=1e-10)


@pytest.mark.parametrize("scalar,init", [(True, True), (False, False)])
def test_attention_lstm(scalar, init):
    lengths, m, d = [3, 2], 4, 2
    x = rng.uniform(-1, 1, (5, m))
    c0, h0 = rng.uniform(-1, 1, (2, d)), rng.uniform(-1, 1, (2, d))
    aw, ab = rng.uniform(-1, 1, (m + d, 1)), rng.uniform(-1, 1, (1, 1))
    sw, sb = rng.uniform(0.5, 1, (1, 1)), rng.uniform(-1, 1, (1, 1))
    w, b = rng.uniform(-1, 1, (m + d, 4 * d)), rng.uniform(-1, 1, (1, 4 * d))
    ins = {"X": x, "C0": c0, "AttentionWeight": aw, "AttentionBias": ab, "LSTMWeight": w, "LSTMBias": b}
    if scalar:
        ins.update(AttentionScalar=sw, AttentionScalarBias=sb)
    if init:
        ins["H0"] = h0
    got = run_op("attention_lstm", ins, outputs=("Hidden", "Cell", "AttentionedX"), lods={"x_in": [offsets(lengths)]})
    hidden, o = np.zeros((5, d)), offsets(lengths)
    for s in range(2):
        seq = x[o[s]:o[s + 1]]
        h, c = (h0[s] if init else np.zeros(d)), c0[s]
        for t in range(lengths[s]):
            score = np.maximum(np.concatenate([seq, np.tile(c, (len(seq), 1))], axis=1) @ aw[:, 0] + ab[0, 0], 0)
            if scalar:
                score = np.maximum(score * sw[0, 0] + sb[0, 0], 0)
            att = np.exp(score - score.max()) / np.exp(score - score.max()).sum()
            g = np.concatenate([h, att @ seq]) @ w + b[0]
            f, i, out = sigmoid(g[:d]), sigmoid(g[d:2 * d]), sigmoid(g[2 * d:3 * d])
            c = c * f + i * np.tanh(g[3 * d:])
            h = out * np.tanh(c)
            hidden[o[s] + t] = h
    np.testing.assert_allclose(got["Hidden"][0], hidden, rtol=1e-10)
