"""Tensor ops (and the few math ops the other files leave out): forward against NumPy, gradients
against finite differences in float64."""
import os

import numpy as np
import pytest

import fluidist as fluid
from op_test import check_grad, run_op

rng = np.random.RandomState(7)


def f64(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float64)


def test_concat_and_its_gradient():
    a, b = f64(2, 3), f64(4, 3)
    out = run_op("concat", {"X": [("a", a), ("b", b)]}, {"axis": 0})["Out"][0]
    np.testing.assert_array_equal(out, np.concatenate([a, b]))
    check_grad("concat", {"X": [("a", a), ("b", b)]}, ["X"], {"axis": 0})
    c, d = f64(2, 1, 4), f64(2, 2, 4)
    check_grad("concat", {"X": [("c", c), ("d", d)]}, ["X"], {"axis": 1})


def test_split_by_sections_and_its_gradient():
    x = f64(5, 4)
    outs = run_op("split", {"X": x}, {"axis": 0, "sections": [2, 3]}, outputs=(("Out", 2),))["Out"]
    np.testing.assert_array_equal(outs[0], x[:2])
    np.testing.assert_array_equal(outs[1], x[2:])
    check_grad("split", {"X": x}, ["X"], {"axis": 1, "sections": [1, 3]}, outputs=(("Out", 2),))


def test_sum_of_several_inputs_and_its_gradient():
    xs = [("s%d" % i, f64(3, 2)) for i in range(3)]
    out = run_op("sum", {"X": xs})["Out"][0]
    np.testing.assert_allclose(out, sum(v for _, v in xs))
    check_grad("sum", {"X": xs}, ["X"])


def test_reshape2_and_transpose2_and_their_gradients():
    x = f64(2, 3, 4)
    out = run_op("reshape2", {"X": x}, {"shape": [0, -1]}, outputs=("Out", "XShape"))["Out"][0]
    np.testing.assert_array_equal(out, x.reshape(2, 12))
    check_grad("reshape2", {"X": x}, ["X"], {"shape": [4, 0, -1]}, outputs=("Out", "XShape"))
    out = run_op("transpose2", {"X": x}, {"axis": [2, 0, 1]}, outputs=("Out", "XShape"))["Out"][0]
    np.testing.assert_array_equal(out, x.transpose(2, 0, 1))
    check_grad("transpose2", {"X": x}, ["X"], {"axis": [2, 0, 1]}, outputs=("Out", "XShape"))


def test_assign_and_cast_and_their_gradients():
    x = f64(3, 2)
    out = run_op("assign", {"X": x})["Out"][0]
    np.testing.assert_array_equal(out, x)
    check_grad("assign", {"X": x}, ["X"])
    out = run_op("cast", {"X": x}, {"in_dtype": "float64", "out_dtype": "float32"})["Out"][0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, x.astype(np.float32))
    check_grad("cast", {"X": x}, ["X"], {"in_dtype": "float64", "out_dtype": "float64"})


def test_elementwise_pow_and_its_gradient():
    x, y = np.abs(f64(3, 4)) + 0.5, f64(3, 4)
    np.testing.assert_allclose(run_op("elementwise_pow", {"X": x, "Y": y})["Out"][0], np.power(x, y))
    check_grad("elementwise_pow", {"X": x, "Y": y}, ["X", "Y"])


def test_elementwise_floordiv_mod():
    """Integer floordiv and mod are C's (truncating, the remainder takes X's sign), as in Paddle 1.8."""
    x = np.array([[7, -7, 9]], dtype=np.int64)
    y = np.array([[2, 2, 4]], dtype=np.int64)
    np.testing.assert_array_equal(run_op("elementwise_floordiv", {"X": x, "Y": y})["Out"][0], [[3, -3, 2]])
    np.testing.assert_array_equal(run_op("elementwise_mod", {"X": x, "Y": y})["Out"][0], [[1, -1, 1]])


@pytest.mark.parametrize("op,ref", [("floor", np.floor), ("ceil", np.ceil), ("round", np.round),
                                    ("sign", np.sign), ("cos", np.cos)])
def test_elementwise_unary(op, ref):
    x = f64(4, 3) * 3
    np.testing.assert_allclose(run_op(op, {"X": x})["Out"][0], ref(x))


def test_cos_relu6_hard_sigmoid_gradients():
    x = f64(4, 3)
    check_grad("cos", {"X": x}, ["X"])
    x6 = np.array([[-1.0, 0.5, 3.0, 5.5]])
    np.testing.assert_allclose(run_op("relu6", {"X": x6 * 2})["Out"][0], np.clip(x6 * 2, 0, 6))
    check_grad("relu6", {"X": x6}, ["X"])
    xh = np.array([[-1.0, 0.3, 1.1, -2.0]])
    np.testing.assert_allclose(run_op("hard_sigmoid", {"X": xh})["Out"][0], np.clip(0.2 * xh + 0.5, 0, 1))
    check_grad("hard_sigmoid", {"X": xh}, ["X"])


def test_lookup_table_v2_gradient():
    w = f64(6, 3)
    ids = np.array([1, 4, 1], dtype=np.int64)
    out = run_op("lookup_table_v2", {"W": w, "Ids": ids})["Out"][0]
    np.testing.assert_array_equal(out, w[ids])
    check_grad("lookup_table_v2", {"W": w, "Ids": ids}, ["W"])


def test_truncated_gaussian_random_is_seeded_and_truncated():
    attrs = {"shape": [200, 50], "mean": 1.0, "std": 0.5, "seed": 3, "dtype": "float32"}
    a = run_op("truncated_gaussian_random", {}, attrs)["Out"][0]
    b = run_op("truncated_gaussian_random", {}, attrs)["Out"][0]
    np.testing.assert_array_equal(a, b)
    assert a.shape == (200, 50) and a.dtype == np.float32
    assert a.min() >= 0.0 - 1e-6 and a.max() <= 2.0 + 1e-6      # within two standard deviations
    assert abs(a.mean() - 1.0) < 0.02


def test_save_then_load_op_round_trip(tmp_path):
    prog = fluid.Program()
    b = prog.global_block()
    b.create_var(name="w", shape=[2, 3], dtype="float32", persistable=True)
    b.create_var(name="w2", shape=[2, 3], dtype="float32", persistable=True)
    path = str(tmp_path / "w.npy")
    b.append_op("save", inputs={"X": ["w"]}, attrs={"file_path": path})
    b.append_op("load", outputs={"Out": ["w2"]}, attrs={"file_path": path})
    scope = fluid.Scope()
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    scope.var("w").get_tensor().set(w, fluid.CPUPlace())
    fluid.Executor().run(prog, scope=scope)
    np.testing.assert_array_equal(np.array(scope.find_var("w2").get_tensor()), w)
    assert np.load(path, allow_pickle=False).shape == (2, 3)
    other = str(tmp_path / "w.bin")        # any name: the file is written under exactly that name
    b2 = fluid.Program().global_block()
    b2.create_var(name="w", shape=[2, 3], dtype="float32", persistable=True)
    b2.create_var(name="w3", shape=[2, 3], dtype="float32", persistable=True)
    b2.append_op("save", inputs={"X": ["w"]}, attrs={"file_path": other})
    b2.append_op("load", outputs={"Out": ["w3"]}, attrs={"file_path": other})
    fluid.Executor().run(b2.program, scope=scope)
    np.testing.assert_array_equal(np.array(scope.find_var("w3").get_tensor()), w)
    assert sorted(os.listdir(tmp_path)) == ["w.bin", "w.npy"]
    bad = fluid.Program()
    bad.global_block().create_var(name="v", shape=[1], dtype="float32")
    bad.global_block().append_op("load", outputs={"Out": ["v"]}, attrs={"file_path": str(tmp_path / "none.npy")})
    with pytest.raises(ValueError, match="no file .* for variable 'v'"):
        fluid.Executor().run(bad, scope=fluid.Scope())


def test_fill_constant_batch_size_like_counts_sequences_of_a_lod_input():
    # Paddle 1.8: with a 2-level LoD [[2, 1], [1, 2, 3]] on 6 rows the batch is the last level's 3
    # sequences (input_dim_idx 0), while uniform_random_batch_size_like keeps the 6 rows
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [-1, 4], "float32", lod_level=2)
        out = fluid.layers.fill_constant_batch_size_like(x, [-1, 3], "float32", 1.5)
        moved = fluid.layers.fill_constant_batch_size_like(x, [2, -1], "float32", 1.5, output_dim_idx=1)
        rand = fluid.layers.uniform_random_batch_size_like(x, [-1, 3])
    t = fluid.create_lod_tensor(np.ones((6, 4), "float32"), [[2, 1], [1, 2, 3]], fluid.CPUPlace())
    a, b, c = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": t}, fetch_list=[out, moved, rand])
    np.testing.assert_array_equal(a, np.full((3, 3), 1.5, "float32"))
    assert b.shape == (2, 3) and c.shape == (6, 3)


def test_concat_passes_on_lod_as_paddle():
    """Along axis 0 the inputs' sequences follow one another; along another axis the output keeps the
    first input's LoD (Paddle 1.8.5: [[0, 1, 3, 5, 6]] and [[0, 1, 3]] for these inputs)."""
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        a = fluid.data("a", [None, 2], "float32", lod_level=1)
        b = fluid.data("b", [None, 2], "float32", lod_level=1)
        rows, cols = fluid.layers.concat([a, b], axis=0), fluid.layers.concat([a, b], axis=1)
    assert rows.lod_level == cols.lod_level == 1
    place = fluid.CPUPlace()
    got = fluid.Executor(place).run(main, feed={"a": fluid.create_lod_tensor(np.ones((3, 2), "float32"), [[1, 2]], place),
                                                "b": fluid.create_lod_tensor(np.ones((3, 2), "float32"), [[2, 1]], place)},
                                    fetch_list=[rows, cols], return_numpy=False)
    assert got[0].lod() == [[0, 1, 3, 5, 6]] and got[1].lod() == [[0, 1, 3]]
