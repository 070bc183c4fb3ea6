"""``match_matrix_tensor``, ``sequence_topk_avg_pooling``, ``var_conv_2d`` and ``tree_conv`` against
NumPy references written element by element, gradients against finite differences."""
import itertools

import numpy as np
import pytest

from op_test import check_grad, run_op

rng = np.random.RandomState(3)


def offsets(lengths):
    return [int(v) for v in np.concatenate([[0], np.cumsum(lengths)])]


def test_match_matrix_tensor():
    xl, yl, h, t = [2, 1], [1, 3], 3, 2
    x, y, w = rng.uniform(-1, 1, (3, h)), rng.uniform(-1, 1, (4, h)), rng.uniform(-1, 1, (h, t, h))
    lods = {"x_in": [offsets(xl)], "y_in": [offsets(yl)]}
    got = run_op("match_matrix_tensor", {"X": x, "Y": y, "W": w}, {"dim_t": t}, outputs=("Out", "Tmp"), lods=lods)
    want = []
    ox, oy = offsets(xl), offsets(yl)
    for s in range(2):
        for k, a, b in itertools.product(range(t), range(ox[s], ox[s + 1]), range(oy[s], oy[s + 1])):
            want.append(sum(x[a, i] * w[i, k, j] * y[b, j] for i in range(h) for j in range(h)))
    np.testing.assert_allclose(got["Out"][0].ravel(), want)
    check_grad("match_matrix_tensor", {"X": x, "Y": y, "W": w}, ["X", "Y", "W"], {"dim_t": t},
               outputs=("Out", "Tmp"), lods=lods)


def test_sequence_topk_avg_pooling():
    rows, cols, ch, topks = [2, 1], [3, 2], 2, [1, 3]
    sizes = [ch * r * c for r, c in zip(rows, cols)]
    x = rng.permutation(sum(sizes)).astype("float64").reshape(-1, 1) / 7       # no ties
    lods = {"x_in": [offsets(sizes)], "row_in": [offsets(rows)], "column_in": [offsets(cols)]}
    ins = {"X": x, "ROW": rng.uniform(size=(3, 2)), "COLUMN": rng.uniform(size=(5, 2))}
    got = run_op("sequence_topk_avg_pooling", ins, {"topks": topks, "channel_num": ch}, outputs=("Out", "pos"),
                 lods=lods)
    want, pos, at = [], [], 0
    for r, c in zip(rows, cols):
        img = x[at:at + ch * r * c, 0].reshape(ch, r, c)
        at += ch * r * c
        for i in range(r):
            row = []
            for k in range(ch):
                order = sorted(range(c), key=lambda j: -img[k, i, j])[:3]
                pos += order + [-1] * (3 - len(order))
                row += [sum(img[k, i, j] for j in order[:n]) / n for n in topks]
            want.append(row)
    np.testing.assert_allclose(got["Out"][0], want)
    np.testing.assert_array_equal(got["pos"][0], pos)
    check_grad("sequence_topk_avg_pooling", ins, ["X"], {"topks": topks, "channel_num": ch},
               outputs=("Out", "pos"), lods=lods)


@pytest.mark.parametrize("kh,kw,sh,sw", [(2, 3, 1, 1), (3, 3, 2, 1), (1, 2, 1, 2)])
def test_var_conv_2d(kh, kw, sh, sw):
    rows, cols, ic, oc = [3, 2], [2, 4], 2, 3
    sizes = [ic * r * c for r, c in zip(rows, cols)]
    x = rng.uniform(-1, 1, (sum(sizes), 1))
    w = rng.uniform(-1, 1, (oc, ic * kh * kw))
    lods = {"x_in": [offsets(sizes)], "row_in": [offsets(rows)], "column_in": [offsets(cols)]}
    attrs = {"InputChannel": ic, "OutputChannel": oc, "KernelH": kh, "KernelW": kw, "StrideH": sh, "StrideW": sw}
    ins = {"X": x, "ROW": rng.uniform(size=(5, 2)), "COLUMN": rng.uniform(size=(6, 2)), "W": w}
    got = run_op("var_conv_2d", ins, attrs, outputs=("Out", "Col"), lods=lods)
    want, at = [], 0
    for r, c in zip(rows, cols):
        img = x[at:at + ic * r * c, 0].reshape(ic, r, c)
        at += ic * r * c
        out = np.zeros((oc, (r - 1) // sh + 1, (c - 1) // sw + 1))
        for o, y0, x0 in itertools.product(range(oc), range(out.shape[1]), range(out.shape[2])):
            for z, ky, kx in itertools.product(range(ic), range(kh), range(kw)):
                yy, xx = y0 * sh + ky - kh // 2, x0 * sw + kx - kw // 2
                if 0 <= yy < r and 0 <= xx < c:
                    out[o, y0, x0] += w[o, (z * kh + ky) * kw + kx] * img[z, yy, xx]
        want += out.ravel().tolist()
    np.testing.assert_allclose(got["Out"][0].ravel(), want)
    check_grad("var_conv_2d", ins, ["X", "W"], attrs, outputs=("Out", "Col"), lods=lods)


def test_tree_conv():
    edges = np.array([[[1, 2], [1, 3], [2, 4], [2, 5], [3, 6], [0, 0]],
                      [[1, 2], [2, 3], [0, 0], [0, 0], [0, 0], [0, 0]]], "int32")
    nodes = rng.uniform(-1, 1, (2, 7, 3))
    filt = rng.uniform(-1, 1, (3, 3, 2, 2))
    depth = 3
    out = run_op("tree_conv", {"NodesVector": nodes, "EdgeSet": edges, "Filter": filt}, {"max_depth": depth})["Out"][0]
    want = np.zeros((2, 7, 2, 2))
    for b in range(2):
        kids = {}
        for p, c in edges[b]:
            if p == 0:
                break
            kids.setdefault(p, []).append(c)
        count = max(max(e) for e in edges[b])

        def visit(v, idx, sib, level, u):
            eta_t = (depth - level) / depth
            eta_l = (1 - eta_t) * (0.5 if sib == 1 else (idx - 1) / (sib - 1))
            eta_r = (1 - eta_t) * (1 - eta_l)
            w = eta_l * filt[:, 0] + eta_r * filt[:, 1] + eta_t * filt[:, 2]
            want[b, u - 1] += np.tensordot(nodes[b, v - 1], w, axes=1)
            for i, c in enumerate(kids.get(v, []), 1):
                if level + 1 < depth:
                    visit(c, i, len(kids[v]), level + 1, u)
        for u in range(1, count + 1):
            visit(u, 1, 1, 0, u)
    np.testing.assert_allclose(out, want)
    check_grad("tree_conv", {"NodesVector": nodes, "EdgeSet": edges, "Filter": filt}, ["NodesVector", "Filter"],
               {"max_depth": depth})
