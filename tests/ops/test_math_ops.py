import numpy as np
import pytest

import fluidist as fluid

from op_test import check_grad, run_op

rng = np.random.RandomState(1)


def f64(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float64)


@pytest.mark.parametrize("op,ref", [
    ("elementwise_add", np.add), ("elementwise_sub", np.subtract), ("elementwise_mul", np.multiply),
    ("elementwise_div", np.divide), ("elementwise_max", np.maximum), ("elementwise_min", np.minimum)])
def test_elementwise_axis_broadcast_and_grad(op, ref):
    x, y = f64(2, 3, 4), f64(3) + 2.0
    out = run_op(op, {"X": x, "Y": y}, {"axis": 1})["Out"][0]
    np.testing.assert_allclose(out, ref(x, y.reshape(1, 3, 1)))
    check_grad(op, {"X": x, "Y": y}, ["X", "Y"], {"axis": 1})
    check_grad(op, {"X": x, "Y": f64(2, 3, 4) + 2.0}, ["X", "Y"])


def test_elementwise_default_axis_trailing():
    x, y = f64(4, 5), f64(5)
    np.testing.assert_allclose(run_op("elementwise_add", {"X": x, "Y": y})["Out"][0], x + y)


def test_mul_flattens_and_grad():
    x, y = f64(2, 3, 4), f64(12, 5)
    out = run_op("mul", {"X": x, "Y": y}, {"x_num_col_dims": 1})["Out"][0]
    np.testing.assert_allclose(out, x.reshape(2, 12) @ y)
    check_grad("mul", {"X": x, "Y": y}, ["X", "Y"])


@pytest.mark.parametrize("tx,ty", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(tx, ty):
    x = f64(2, 4, 3) if tx else f64(2, 3, 4)
    y = f64(2, 5, 4) if ty else f64(2, 4, 5)
    attrs = {"transpose_X": tx, "transpose_Y": ty, "alpha": 2.0}
    out = run_op("matmul", {"X": x, "Y": y}, attrs)["Out"][0]
    xx = x.swapaxes(-1, -2) if tx else x
    yy = y.swapaxes(-1, -2) if ty else y
    np.testing.assert_allclose(out, 2.0 * xx @ yy)
    check_grad("matmul", {"X": x, "Y": y}, ["X", "Y"], attrs)


def test_scale_mean():
    x = f64(3, 4)
    np.testing.assert_allclose(run_op("scale", {"X": x}, {"scale": 2.0, "bias": 1.0})["Out"][0], 2 * x + 1)
    np.testing.assert_allclose(run_op("scale", {"X": x}, {"scale": 2.0, "bias": 1.0,
                                                          "bias_after_scale": False})["Out"][0], 2 * (x + 1))
    check_grad("scale", {"X": x}, ["X"], {"scale": 3.0})
    np.testing.assert_allclose(run_op("mean", {"X": x})["Out"][0], [x.mean()])
    check_grad("mean", {"X": x}, ["X"])


@pytest.mark.parametrize("op,ref", [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max),
                                    ("reduce_min", np.min), ("reduce_prod", np.prod)])
@pytest.mark.parametrize("dim,keep", [([1], False), ([0, 2], True), (None, False)])
def test_reductions(op, ref, dim, keep):
    x = f64(2, 3, 4) + 2.0
    attrs = {"dim": dim or [0], "keep_dim": keep, "reduce_all": dim is None}
    out = run_op(op, {"X": x}, attrs)["Out"][0]
    expect = ref(x, axis=tuple(dim) if dim else None, keepdims=keep)
    np.testing.assert_allclose(out, np.asarray(expect).reshape(out.shape))
    check_grad(op, {"X": x}, ["X"], attrs)


ACTS = {
    "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh,
    "exp": np.exp, "square": np.square, "abs": np.abs, "softplus": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)), "leaky_relu": lambda x: np.where(x > 0, x, 0.02 * x),
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1), "swish": lambda x: x / (1 + np.exp(-x)),
    "reciprocal": lambda x: 1 / x, "gelu": None,
}


@pytest.mark.parametrize("op", sorted(ACTS))
def test_activations(op):
    x = f64(3, 4)
    x[np.abs(x) < 0.05] = 0.3  # keep away from kinks
    if op == "reciprocal":
        x = x + 2.0
    out = run_op(op, {"X": x})["Out"][0]
    if ACTS[op] is not None:
        np.testing.assert_allclose(out, ACTS[op](x), rtol=1e-6)
    check_grad(op, {"X": x}, ["X"])


def test_log_sqrt_positive():
    x = f64(3, 4) + 2.0
    np.testing.assert_allclose(run_op("log", {"X": x})["Out"][0], np.log(x))
    np.testing.assert_allclose(run_op("sqrt", {"X": x})["Out"][0], np.sqrt(x))
    for op in ("log", "sqrt", "rsqrt"):
        check_grad(op, {"X": x}, ["X"])


def test_softmax():
    x = f64(3, 5)
    out = run_op("softmax", {"X": x})["Out"][0]
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True))
    check_grad("softmax", {"X": x}, ["X"])


def test_clip_pow():
    x = f64(4, 4)
    x[np.abs(np.abs(x) - 0.5) < 0.05] = 0.2
    np.testing.assert_allclose(run_op("clip", {"X": x}, {"min": -0.5, "max": 0.5})["Out"][0], np.clip(x, -0.5, 0.5))
    check_grad("clip", {"X": x}, ["X"], {"min": -0.5, "max": 0.5})
    xp = np.abs(x) + 1
    np.testing.assert_allclose(run_op("pow", {"X": xp}, {"factor": 3.0})["Out"][0], xp ** 3)
    check_grad("pow", {"X": xp}, ["X"], {"factor": 3.0})


def test_scale_onto_itself_never_writes_into_a_fed_array():
    prog = fluid.Program()
    b = prog.global_block()
    b.create_var(name="x", shape=[-1, 2], dtype="float32", is_data=True)
    b.append_op("scale", inputs={"X": ["x"]}, outputs={"Out": ["x"]}, attrs={"scale": 2.0})
    mine = np.ones((1, 2), dtype="float32")
    out, = fluid.Executor().run(prog, feed={"x": mine}, fetch_list=["x"], scope=fluid.Scope())
    np.testing.assert_array_equal(out, [[2.0, 2.0]])
    np.testing.assert_array_equal(mine, [[1.0, 1.0]])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_elementwise_div_truncates_toward_zero(dtype):
    # Paddle 1.8 gives [3, -3, -3, 3] (C's integer division), not NumPy's floor [3, -4, -4, 3]
    x, y = np.array([7, -7, 7, -7], dtype), np.array([2, 2, -2, -2], dtype)
    out = run_op("elementwise_div", {"X": x, "Y": y})["Out"][0]
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, [3, -3, -3, 3])


def test_scale_takes_its_factor_from_scale_tensor():
    x = f64(3, 4)
    s = np.array([-2.3], "float32")
    out = run_op("scale", {"X": x, "ScaleTensor": s}, {"scale": 5.0, "bias": 1.0})["Out"][0]
    np.testing.assert_allclose(out, x * float(s[0]) + 1.0)
    check_grad("scale", {"X": x, "ScaleTensor": s}, ["X"], {"bias": 1.0})
    # the layer takes a Variable factor as Paddle 1.8's does
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        xv = fluid.data("x", [3, 4], "float64")
        factor = fluid.layers.fill_constant([1], "float32", 0.5)
        y = fluid.layers.scale(xv, scale=factor, bias=2.0, bias_after_scale=False)
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": x}, fetch_list=[y])
    np.testing.assert_allclose(got, (x + 2.0) * 0.5)
