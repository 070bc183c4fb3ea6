"""Sequence ops: gradients against finite differences (float64, LoD inputs), NumPy references for
the cases Paddle's layers do not reach (trainable context padding), and clear errors. Their values
and LoDs against Paddle 1.8's own are in tests/paddle18."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import append_op, build_op, check_grad, check_program_grad, run_op, sequence_pool_op

L = fluid.layers
rng = np.random.RandomState(11)


def lod_t(value, lengths):
    return fluid.create_lod_tensor(value, [lengths], fluid.CPUPlace())


def lod_in(name, width, dtype="float64"):
    v = fluid.data(name, [None, width], dtype, lod_level=1)
    v.stop_gradient = False
    return v


X = rng.uniform(-1, 1, (6, 3))
LENS = [3, 1, 2]

GRAD_CASES = {
    "sequence_conv": lambda x: L.sequence_conv(x, 2, filter_size=3, act="tanh"),
    "sequence_conv_wide": lambda x: L.sequence_conv(x, 2, filter_size=5, padding_start=-3),
    "sequence_softmax": lambda x: L.sequence_softmax(L.sequence_conv(x, 1, filter_size=1, bias_attr=False)),
    "sequence_pool_max": lambda x: sequence_pool_op(x, "max"),
    "sequence_concat": lambda x: L.sequence_concat([x, L.scale(x, 2.0)]),
    "sequence_expand_as": lambda x: L.sequence_expand_as(sequence_pool_op(x, "sum"), x),
    "sequence_expand": lambda x: L.sequence_expand(sequence_pool_op(x, "sum"), x),
    "sequence_pad_unpad": lambda x: L.sequence_unpad(*L.sequence_pad(x, L.fill_constant([1], "float64", 0.3))),
    "sequence_reshape": lambda x: L.sequence_reshape(x, 1),
    "sequence_reverse": lambda x: L.sequence_reverse(x),
    "lod_reset": lambda x: sequence_pool_op(L.lod_reset(x, target_lod=[0, 4, 6]), "sqrt"),
    "lod_append": lambda x: sequence_pool_op(L.lod_append(x, [0, 1, 2, 4, 5, 6]), "max"),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_sequence_gradients(case):
    def build():
        x = lod_in("x", 3)
        out = GRAD_CASES[case](x)
        w = fluid.data("w", [None, 1], "float64")
        return L.reduce_sum(L.elementwise_mul(L.elementwise_mul(out, out), w, axis=0))
    t = lod_t(X, LENS)
    # the weights: one per output row; the output's row count, from one forward run
    rows = {"sequence_concat": 12, "sequence_reshape": 18, "sequence_pool_max": 3, "lod_reset": 2,
            "lod_append": 5}.get(case, 6)
    check_program_grad(build, {"x": t, "w": np.linspace(0.5, 1.5, rows).reshape(rows, 1)}, ["x"])


def test_sequence_slice_and_scatter_gradients():
    def build():
        x = lod_in("x", 3)
        off = fluid.data("off", [3, 1], "int64")
        ln = fluid.data("len", [3, 1], "int64")
        base = fluid.data("base", [3, 5], "float64")
        base.stop_gradient = False
        ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
        upd = lod_in("upd", 1)
        s = L.sequence_slice(x, off, ln)
        sc = L.sequence_scatter(base, ids, upd)
        return L.reduce_sum(L.elementwise_mul(s, s)) + L.reduce_sum(L.elementwise_mul(sc, sc))
    feed = {"x": lod_t(X, LENS), "off": np.array([[1], [0], [0]], "int64"), "len": np.array([[2], [1], [2]], "int64"),
            "base": rng.uniform(-1, 1, (3, 5)), "ids": lod_t(np.array([[4], [4], [0], [1]], "int64"), [2, 1, 1]),
            "upd": lod_t(rng.uniform(-1, 1, (4, 1)), [2, 1, 1])}
    check_program_grad(build, feed, ["x", "base", "upd"])


def test_im2sequence_values_and_gradient():
    img = rng.uniform(-1, 1, (2, 2, 4, 5))

    def build():
        x = fluid.data("img", [2, 2, 4, 5], "float64")
        x.stop_gradient = False
        # the op itself: Paddle 1.8's layer takes float32 only
        out = append_op("im2sequence", {"X": x}, {"kernels": [2, 3], "strides": [2, 1], "paddings": [1, 0, 0, 1]})
        return L.reduce_sum(L.elementwise_mul(out, out))
    check_program_grad(build, {"img": img}, ["img"])
    got = run_op("im2sequence", {"X": img}, {"kernels": [2, 2], "strides": [2, 2], "paddings": [0, 0, 0, 0]})
    out = got["Out"][0]
    want = img[:, :, :4, :4].reshape(2, 2, 2, 2, 2, 2).transpose(0, 2, 4, 1, 3, 5).reshape(8, 8)
    np.testing.assert_allclose(out, want)


def _context_ref(x, lengths, start, length, pad=None):
    offsets = np.cumsum([0] + lengths)
    rows = []
    up = max(0, -start)
    for s, e in zip(offsets, offsets[1:]):
        for t in range(s, e):
            parts = []
            for j in range(length):
                src = t + start + j
                if s <= src < e:
                    parts.append(x[src])
                elif pad is None:
                    parts.append(np.zeros(x.shape[1]))
                else:
                    parts.append(pad[up + src - s] if src < s else pad[up + src - e])
            rows.append(np.concatenate(parts))
    return np.array(rows)


def test_sequence_conv_trainable_padding_matches_numpy_and_finite_differences():
    w = rng.uniform(-1, 1, (9, 2))
    pad = rng.uniform(-1, 1, (3, 3))     # contextStart -2, length 3: two rows up, one down
    attrs = {"contextLength": 3, "contextStart": -2, "paddingTrainable": True}
    lods = {"x_in": [[0, 3, 4, 6]]}
    out = run_op("sequence_conv", {"X": [("x_in", X)], "Filter": w, "PaddingData": pad}, attrs, lods=lods)["Out"][0]
    np.testing.assert_allclose(out, _context_ref(X, LENS, -2, 3, pad) @ w)
    check_grad("sequence_conv", {"X": [("x_in", X)], "Filter": w, "PaddingData": pad}, ["x_in", "Filter", "PaddingData"],
               attrs, lods=lods)
    plain = run_op("sequence_conv", {"X": [("x_in", X)], "Filter": w}, {"contextLength": 3, "contextStart": 0},
                   lods=lods)["Out"][0]
    np.testing.assert_allclose(plain, _context_ref(X, LENS, 0, 3) @ w)


def test_enumerate_mask_and_pad_values():
    ids = np.array([[1], [2], [3], [4], [5]], "int64")
    got = run_op("sequence_enumerate", {"X": [("ids", ids)]}, {"win_size": 2, "pad_value": 0},
                 lods={"ids": [[0, 3, 5]]})["Out"][0]
    np.testing.assert_array_equal(got, [[1, 2], [2, 3], [3, 0], [4, 5], [5, 0]])
    mask = run_op("sequence_mask", {"X": np.array([2, 0, 3], "int64")}, {"maxlen": 4, "out_dtype": "float32"},
                  outputs=("Y",))["Y"][0]
    np.testing.assert_array_equal(mask, [[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]])
    assert mask.dtype == np.float32
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        out, length = L.sequence_pad(x, L.assign(np.array([9.0, 8.0, 7.0], "float32")), maxlen=4)
    xv = np.arange(9, dtype="float32").reshape(3, 3)
    got, n = fluid.Executor().run(main, feed={"x": lod_t(xv, [1, 2])}, fetch_list=[out, length],
                                  scope=fluid.Scope())
    assert got.shape == (2, 4, 3) and list(n) == [1, 2]
    np.testing.assert_array_equal(got[0, 1:], [[9, 8, 7]] * 3)
    np.testing.assert_array_equal(got[1, :2], xv[1:])


def test_errors_name_the_input():
    with pytest.raises(ValueError, match="input X 'x_in' has no LoD"):
        run_op("sequence_conv", {"X": [("x_in", X)], "Filter": np.zeros((9, 1))}, {"contextLength": 3})
    with pytest.raises(ValueError, match="padded_length 1 is shorter than the longest sequence"):
        run_op("sequence_pad", {"X": [("x_in", X)], "PadValue": np.zeros(1)}, {"padded_length": 1},
               outputs=("Out", "Length"), lods={"x_in": [[0, 3, 4, 6]]})
    with pytest.raises(ValueError, match="does not fit X 'x_in' of 6 rows"):
        run_op("lod_reset", {"X": [("x_in", X)]}, {"target_lod": [0, 2, 5]})
    with pytest.raises(ValueError, match="cannot be cut into rows of 2"):
        run_op("sequence_reshape", {"X": [("x_in", X)]}, {"new_dim": 2}, lods={"x_in": [[0, 3, 4, 6]]})


def test_missing_lod_names_the_op_that_dropped_it():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1], "float32", lod_level=1)
        y = L.sequence_softmax(L.reshape(x, [-1, 1]))
    with pytest.raises(ValueError, match="op 'reshape2' wrote it and passed on no LoD"):
        fluid.Executor().run(main, feed={"x": lod_t(np.ones((3, 1), "float32"), [2, 1])}, fetch_list=[y],
                             scope=fluid.Scope())


def test_im2sequence_real_sizes_larger_than_the_image_read_zeros():
    # Paddle 1.8: a real size (Y, over out_stride, rounded up) beyond the image widens that image's
    # patch grid; the patches past the image read zeros. Image 0 claims 8 x 10 of a 4 x 5 image.
    x = rng.uniform(0.1, 1, (3, 1, 4, 5))
    real = np.array([[8, 10], [5, 8], [3, 3]], "float32")
    attrs = {"kernels": [2, 1], "strides": [1, 1], "paddings": [0, 0, 0, 0], "out_stride": [1, 1]}
    prog, feed, outs = build_op("im2sequence", {"X": x, "Y": real}, attrs)
    got, = fluid.Executor(fluid.CPUPlace()).run(prog, feed=feed, fetch_list=outs["Out"], return_numpy=False)
    pieces = []
    for img, (h, w) in zip(x, real.astype(int)):
        canvas = np.zeros((1, max(h, 4) + 1, max(w, 5)))
        canvas[:, :4, :5] = img
        pieces += [canvas[0, r:r + 2, c] for r in range(h - 1) for c in range(w)]
    np.testing.assert_array_equal(np.array(got), np.array(pieces))
    assert got.lod() == [[0, 70, 102, 108]]   # Paddle 1.8's
    check_grad("im2sequence", {"X": x, "Y": real}, ["X"], attrs)


def test_sequence_unpad_of_a_2d_x_gives_steps_of_one():
    # Paddle 1.8: X [3, 4] with lengths [2, 3, 1] unpads to [6, 1] (declared [-1, 1])
    x = rng.uniform(-1, 1, (3, 4))
    length = np.array([2, 3, 1], np.int64)
    prog, feed, outs = build_op("sequence_unpad", {"X": x, "Length": length})
    assert tuple(prog.global_block().var(outs["Out"][0]).shape) == (-1, 1)
    got, = fluid.Executor(fluid.CPUPlace()).run(prog, feed=feed, fetch_list=outs["Out"], return_numpy=False)
    np.testing.assert_array_equal(np.array(got), np.concatenate([x[0, :2], x[1, :3], x[2, :1]])[:, None])
    assert got.lod() == [[0, 2, 5, 6]]
    check_grad("sequence_unpad", {"X": x, "Length": length}, ["X"])
