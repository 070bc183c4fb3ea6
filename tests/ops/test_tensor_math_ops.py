"""Gradients of the tensor/math ops against finite differences (float64), and the errors bad input
gets (naming the op and the variable). Their values against Paddle 1.8's own numbers are checked in
tests/compat/test_paddle18_layers.py."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import places
from op_test import check_grad, run_op

rng = np.random.RandomState(3)


def f64(*shape):
    return rng.uniform(-1, 1, shape)


@pytest.mark.parametrize("op,inputs,attrs,wrt,outputs", [
    ("gather_nd", {"X": f64(3, 4), "Index": np.array([[0, 1], [2, 3], [0, 1]])}, {}, ["X"], ("Out",)),
    ("scatter_nd_add", {"X": f64(3, 2), "Index": np.array([[1], [1]]), "Updates": f64(2, 2)}, {}, ["X", "Updates"],
     ("Out",)),
    ("index_sample", {"X": f64(2, 4), "Index": np.array([[3, 3], [0, 1]])}, {}, ["X"], ("Out",)),
    ("where", {"Condition": np.array([[True, False], [False, True]]), "X": f64(2, 2), "Y": f64(2, 2)}, {},
     ["X", "Y"], ("Out",)),
    ("prelu", {"X": f64(2, 3, 2), "Alpha": f64(1, 3, 1, 1)}, {"mode": "channel"}, ["X", "Alpha"], ("Out",)),
    ("unfold", {"X": f64(1, 2, 4, 4)}, {"kernel_sizes": [2, 2], "strides": [2, 1], "paddings": [1, 0, 0, 1],
                                        "dilations": [1, 1]}, ["X"], ("Y",)),
    ("kron", {"X": f64(2, 1, 2), "Y": f64(3, 2)}, {}, ["X", "Y"], ("Out",)),
    ("trace", {"Input": f64(2, 3, 3)}, {"offset": -1, "dim1": 1, "dim2": 2}, ["Input"], ("Out",)),
    ("dist", {"X": f64(2, 3), "Y": f64(3)}, {"p": 3.0}, ["X", "Y"], ("Out",)),
    ("cumsum", {"X": f64(3, 4)}, {"axis": 1, "exclusive": True, "reverse": True}, ["X"], ("Out",)),
    ("pad2d", {"X": f64(1, 1, 3, 3)}, {"paddings": [2, 1, 1, 2], "mode": "reflect"}, ["X"], ("Out",)),
    ("pad2d", {"X": f64(1, 1, 2, 3)}, {"paddings": [1, 2, 2, 0], "mode": "edge"}, ["X"], ("Out",)),
    ("strided_slice", {"Input": f64(4, 5)}, {"axes": [0, 1], "starts": [3, 0], "ends": [0, 5], "strides": [-2, 2]},
     ["Input"], ("Out",)),
    ("mish", {"X": f64(3, 4) * 3}, {"threshold": 1.0}, ["X"], ("Out",)),
    ("hard_swish", {"X": f64(3, 4) * 4 + 0.01}, {}, ["X"], ("Out",)),
    ("gelu", {"X": f64(3, 4)}, {"approximate": True}, ["X"], ("Out",)),
    ("logsigmoid", {"X": f64(3, 4) * 5}, {}, ["X"], ("Out",)),
])
def test_gradient_against_finite_differences(op, inputs, attrs, wrt, outputs):
    check_grad(op, inputs, wrt, attrs, out_slot=outputs[0], outputs=outputs)


def test_unstack_and_meshgrid_gradients():
    x = f64(3, 2)
    check_grad("unstack", {"X": x}, ["X"], {"axis": 0, "num": 3}, out_slot="Y", outputs=(("Y", 3),))
    a, b = f64(3), f64(2)
    check_grad("meshgrid", {"X": [("a", a), ("b", b)]}, ["a", "b"], outputs=(("Out", 2),))


def test_multiplex_gradient_goes_to_the_chosen_input():
    a, b = f64(3, 2), f64(3, 2)
    ids = np.array([[1], [0], [1]], np.int32)
    check_grad("multiplex", {"Ids": ids, "X": [("a", a), ("b", b)]}, ["a", "b"])


def _fails(op, inputs, attrs, *words):
    with pytest.raises(ValueError) as e:
        run_op(op, inputs, attrs)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_ids_out_of_range_are_named_on_the_host_and_give_nan_rows_on_a_device():
    """The host checks ids at once; a device would wait for itself to read them back, so there the
    rows of such ids are NaN (tests/device/test_device_checks.py counts the waits)."""
    gather = ("gather", {"X": f64(3, 2), "Index": np.array([0, 3])}, {})
    one_hot = ("one_hot", {"X": np.array([[1], [7]])}, {"depth": 4})
    if isinstance(fluid.CPUPlace(), places.CPUPlace):
        _fails(*gather, "gather", "3", "index_in")
        _fails(*one_hot, "one_hot", "7", "allow_out_of_range")
        return
    for op, inputs, attrs in (gather, one_hot):
        out = run_op(op, inputs, attrs)["Out"][0]
        assert np.isfinite(out[0]).all() and np.isnan(out[1]).all(), (op, out)


def test_bad_inputs_name_the_op_and_the_variable():
    _fails("one_hot", {"X": np.array([[1, 2]])}, {"depth": 4}, "last dimension of 1", "one_hot_v2")
    _fails("squeeze2", {"X": f64(3, 1)}, {"axes": [0]}, "size 1")
    _fails("expand", {"X": f64(3, 1)}, {"expand_times": [2]}, "expand_times", "rank 2")
    _fails("space_to_depth", {"X": f64(1, 3, 4, 4)}, {"blocksize": 2}, "divisible")
    _fails("index_sample", {"X": f64(3, 2), "Index": np.array([[0], [1]])}, {}, "same rows")
    _fails("crop", {"X": f64(3, 3)}, {"shape": [2, 2], "offsets": [2, 0]}, "does not fit", "x_in")
    _fails("shard_index", {"X": np.array([[1]])}, {"index_num": 10, "nshards": 2, "shard_id": 2}, "shard_id")


def test_one_hot_allow_out_of_range_gives_zero_rows():
    out = run_op("one_hot_v2", {"X": np.array([1, 9])}, {"depth": 3, "allow_out_of_range": True})["Out"][0]
    np.testing.assert_array_equal(out, [[0, 1, 0], [0, 0, 0]])


def test_layers_check_their_arguments():
    x = fluid.layers.data(name="x", shape=[3, 4], dtype="float32", append_batch_size=False)
    with pytest.raises(TypeError, match="gather"):
        fluid.layers.gather(np.zeros(3), x)
    with pytest.raises(ValueError, match="prelu"):
        fluid.layers.prelu(x, "rows")
    with pytest.raises(ValueError, match="pad2d"):
        fluid.layers.pad2d(x, mode="wrap")
    with pytest.raises(ValueError, match="roll"):
        fluid.layers.roll(x, [1, 2], dims=[0])
    with pytest.raises(ValueError, match="t: "):
        fluid.layers.t(fluid.layers.data(name="y", shape=[2, 3, 4], dtype="float32", append_batch_size=False))
    with pytest.raises(ValueError, match="randint"):
        fluid.layers.randint(3, 2)


def test_random_ops_draw_in_range_and_repeat_with_a_seed():
    prog, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, start):
        x = fluid.layers.data(name="x", shape=[5, 2], dtype="float32", append_batch_size=False)
        u = fluid.layers.uniform_random_batch_size_like(x, [-1, 3], min=2.0, max=3.0, seed=7)
        r = fluid.layers.randint(4, 9, [50], seed=3)
        p = fluid.layers.randperm(6, seed=5)
        s = fluid.layers.sampling_id(fluid.layers.assign(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], "float32")))
    exe = fluid.Executor(fluid.CPUPlace())
    feed = {"x": np.zeros((5, 2), "float32")}
    a = exe.run(prog, feed=feed, fetch_list=[u, r, p, s])
    b = exe.run(prog, feed=feed, fetch_list=[u, r, p, s])
    assert a[0].shape == (5, 3) and (a[0] >= 2).all() and (a[0] < 3).all()
    assert a[1].dtype == np.int64 and (a[1] >= 4).all() and (a[1] < 9).all()
    assert sorted(a[2].tolist()) == list(range(6))
    np.testing.assert_array_equal(a[3], [1, 0])     # one-hot probabilities leave no choice
    for i in range(3):
        np.testing.assert_array_equal(a[i], b[i])   # a fixed seed draws the same values each run


def test_random_crop_advances_its_seed():
    prog, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, start):
        x = fluid.layers.data(name="x", shape=[2, 6, 6], dtype="float32", append_batch_size=False)
        c = fluid.layers.random_crop(x, [3, 3], seed=11)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(start, scope=scope)
    img = np.arange(72, dtype="float32").reshape(2, 6, 6)
    crops = [exe.run(prog, feed={"x": img}, fetch_list=[c], scope=scope)[0] for _ in range(4)]
    for cr in crops:
        assert cr.shape == (2, 3, 3)
        r0, c0 = divmod(int(cr[0, 0, 0]), 6)
        np.testing.assert_array_equal(cr[0], img[0, r0:r0 + 3, c0:c0 + 3])
    assert len({cr.tobytes() for cr in crops}) > 1


def test_erf_without_scipy_is_exact(monkeypatch):
    """scipy is optional: without it erf (and gelu) fall back to math.erf, elementwise."""
    import math
    import sys
    from fluidist.ops.math import erf
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    x = np.array([[-2.5, -0.3, 0.0, 0.7, 3.0]], dtype=np.float32)
    got = erf(np, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [[math.erf(v) for v in x[0]]], rtol=1e-6)
    assert erf(np, np.zeros((0,), np.float64)).shape == (0,)


@pytest.mark.parametrize("value,dtype", [(1e100, "float32"), (1e100, "float64"), (float("nan"), "float32"),
                                         (float("inf"), "float64"), (1e10, "int32"), (2, "bool"), (70000, "float16")])
def test_fill_any_like_refuses_a_value_out_of_range(value, dtype):
    # Paddle 1.8 raises EnforceNotMet for each (the value is a float32 attr: 1e100 is out of range even
    # for float64)
    from fluidist.core import EnforceNotMet
    with pytest.raises(EnforceNotMet, match="out of range"):
        run_op("fill_any_like", {"X": np.zeros(2, dtype)}, {"value": value})
    with pytest.raises(ValueError):
        run_op("fill_any_like", {"X": np.zeros(2, dtype)}, {"value": value})


def test_fill_any_like_value_is_a_float32_attr():
    # Paddle 1.8: 16777217 fills an int64 tensor with 16777216 (float32's nearest), 2.5 an int32 one with 2
    np.testing.assert_array_equal(run_op("fill_any_like", {"X": np.zeros(2, "int64")}, {"value": 16777217})["Out"][0],
                                  [16777216, 16777216])
    np.testing.assert_array_equal(run_op("fill_any_like", {"X": np.zeros(2, "int32")}, {"value": 2.5})["Out"][0], [2, 2])
    assert run_op("fill_any_like", {"X": np.zeros(2)}, {"value": 3e38})["Out"][0][0] == np.float32(3e38)


def test_gather_nd_and_scatter_nd_add_with_an_index_of_no_coordinates():
    # an Index [[], []] picks all of X per entry: gather stacks X twice, scatter adds both updates to X
    x = rng.uniform(-1, 1, (3, 4))
    index = np.zeros((2, 0), dtype=np.int32)
    out = run_op("gather_nd", {"X": x, "Index": index})["Out"][0]
    np.testing.assert_array_equal(out, np.stack([x, x]))
    check_grad("gather_nd", {"X": x, "Index": index}, ["X"])
    upd = rng.uniform(-1, 1, (2, 3, 4))
    out = run_op("scatter_nd_add", {"X": x, "Index": index, "Updates": upd})["Out"][0]
    np.testing.assert_allclose(out, x + upd[0] + upd[1], rtol=1e-12)
    check_grad("scatter_nd_add", {"X": x, "Index": index, "Updates": upd}, ["X", "Updates"])


def test_nd_ops_check_index_and_updates_when_built():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [3, 4, 5], "float32")
        with pytest.raises(ValueError, match="10 coordinates per entry"):
            fluid.layers.gather_nd(x, fluid.data("index", [2, 10], "int32"))
        with pytest.raises(ValueError, match="Updates 'updates' has shape"):
            fluid.layers.scatter_nd_add(x, fluid.data("i2", [2, 1], "int32"), fluid.data("updates", [2, 4, 5, 20], "float32"))
        with pytest.raises(ValueError, match="one dtype"):
            fluid.layers.scatter_nd_add(x, fluid.data("i3", [2, 1], "int32"), fluid.data("u3", [2, 4, 5], "float64"))
