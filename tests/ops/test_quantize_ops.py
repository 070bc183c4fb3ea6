"""The fake-quantisation ops against NumPy references (C rounding: halves away from zero) and against
numbers Paddle 1.8.5 gave for the stateful window of ``fake_quantize_range_abs_max``."""
import math

import numpy as np
import pytest

import fluidist as fluid
from op_test import run_op

rng = np.random.RandomState(17)


def c_round(v):
    return np.vectorize(lambda a: math.copysign(math.floor(abs(a) + 0.5), a))(v)


def quant(x, scale, bits):
    bins = 2 ** (bits - 1) - 1
    return c_round(np.clip(x, -scale, scale) * bins / scale)


def test_abs_max_and_its_rounding_of_halves():
    x = np.array([[0.5, -0.5, 2.5, 1.5], [-2.5, 127.0, -127.0, 0.0]], "float32")
    got = run_op("fake_quantize_abs_max", {"X": x}, {"bit_length": 8}, outputs=("Out", "OutScale"))
    np.testing.assert_array_equal(got["Out"][0], [[1, -1, 3, 2], [-3, 127, -127, 0]])
    np.testing.assert_array_equal(got["OutScale"][0], [127.0])
    x = rng.uniform(-3, 3, (4, 6)).astype("float32")
    got = run_op("fake_quantize_abs_max", {"X": x}, {"bit_length": 5}, outputs=("Out", "OutScale"))
    np.testing.assert_array_equal(got["Out"][0], quant(x, np.abs(x).max(), 5))


def test_channel_wise_quantize_and_dequantize():
    x = rng.uniform(-3, 3, (3, 2, 4)).astype("float32")
    got = run_op("fake_channel_wise_quantize_abs_max", {"X": x}, {"bit_length": 8}, outputs=("Out", "OutScale"))
    scales = [np.abs(x[i]).max() for i in range(3)]
    np.testing.assert_allclose(got["OutScale"][0], scales)
    q = np.stack([quant(x[i], scales[i], 8) for i in range(3)])
    np.testing.assert_array_equal(got["Out"][0], q)
    back = run_op("fake_channel_wise_dequantize_max_abs", {"X": q, "Scales": [("s0", got["OutScale"][0])]},
                  {"quant_bits": [8]})["Out"][0]
    np.testing.assert_allclose(back, np.stack([q[i] * scales[i] / 127 for i in range(3)]), rtol=1e-6)
    per_col = np.abs(rng.uniform(1, 2, (2,))).astype("float32")
    two = run_op("fake_channel_wise_dequantize_max_abs",
                 {"X": q, "Scales": [("s0", per_col), ("s1", np.array([0.7], "float32"))]}, {"quant_bits": [8, 4]})
    want = np.stack([[q[i, j] * per_col[j] / 127 * 0.7 / 7 for j in range(2)] for i in range(3)])
    np.testing.assert_allclose(two["Out"][0], want, rtol=1e-6)


@pytest.mark.parametrize("dequant", [False, True])
def test_moving_average_abs_max(dequant):
    x = rng.uniform(-2, 2, (3, 5)).astype("float32")
    op_type = "fake_quantize_%smoving_average_abs_max" % ("dequantize_" if dequant else "")
    ins = {"X": x, "InScale": np.array([0.5], "float32"), "InAccum": np.array([2.0], "float32"),
           "InState": np.array([3.0], "float32")}
    got = run_op(op_type, ins, {"moving_rate": 0.9, "bit_length": 8}, outputs=("Out", "OutScale", "OutState", "OutAccum"))
    state, accum = 0.9 * 3 + 1, 0.9 * 2 + np.abs(x).max()
    scale = accum / state
    np.testing.assert_allclose([got["OutState"][0][0], got["OutAccum"][0][0], got["OutScale"][0][0]],
                               [state, accum, scale], rtol=1e-6)
    q = quant(x, np.float32(scale), 8)
    np.testing.assert_allclose(got["Out"][0], q * scale / 127 if dequant else q, rtol=1e-6)
    test = run_op(op_type, ins, {"moving_rate": 0.9, "bit_length": 8, "is_test": True}, outputs=("Out",))["Out"][0]
    q = quant(x, 0.5, 8)
    np.testing.assert_allclose(test, q * 0.5 / 127 if dequant else q, rtol=1e-6)
    scale_only = run_op("moving_average_abs_max_scale", {"X": x, "InAccum": ins["InAccum"], "InState": ins["InState"]},
                        {"moving_rate": 0.9}, outputs=("Out", "OutScale"))
    np.testing.assert_array_equal(scale_only["Out"][0], x)
    np.testing.assert_allclose(scale_only["OutScale"][0], [scale], rtol=1e-6)


@pytest.mark.parametrize("it,out,scale,window", [
    (4, [21, -85, 42], 3.0, [3.0, 2.0, 0.5]),      # the window's maximum (InScale) stays
    (3, [32, -127, 64], 2.0, [2.0, 1.0, 0.5]),     # the slot that held the maximum is replaced: a new maximum
])
def test_range_abs_max_keeps_its_window_in_the_scope(it, out, scale, window):
    """Paddle 1.8.5's numbers for X [0.5, -2, 1], InScale 3, window_size 3 and OutScales [3, 1, 0.5]."""
    prog = fluid.Program()
    block = prog.global_block()
    for name, shape, dtype in (("x", (1, 3), "float32"), ("s", (1,), "float32"), ("it", (1,), "int64"),
                               ("o", (1, 3), "float32"), ("os", (1,), "float32"), ("oss", (3,), "float32")):
        block.create_var(name=name, shape=shape, dtype=dtype, persistable=name == "oss")
    block.append_op("fake_quantize_range_abs_max", inputs={"X": ["x"], "InScale": ["s"], "Iter": ["it"]},
                    outputs={"Out": ["o"], "OutScale": ["os"], "OutScales": ["oss"]},
                    attrs={"window_size": 3, "bit_length": 8, "is_test": False})
    scope = fluid.Scope()
    scope.var("oss").get_tensor().set(np.array([3.0, 1.0, 0.5], "float32"))
    got = fluid.Executor(fluid.CPUPlace()).run(
        prog, feed={"x": np.array([[0.5, -2.0, 1.0]], "float32"), "s": np.array([3.0], "float32"),
                    "it": np.array([it], "int64")}, fetch_list=["o", "os", "oss"], scope=scope)
    np.testing.assert_array_equal(got[0], [out])
    np.testing.assert_array_equal(got[1], [scale])
    np.testing.assert_array_equal(got[2], window)


def test_dequantize_ops():
    x = np.array([-128, -127, -1, 0, 1, 5, 127], "int8")
    table = (np.arange(128) * 0.5).astype("float32")
    got = run_op("dequantize_log", {"X": x, "Dict": table})["Out"][0]
    np.testing.assert_array_equal(got, [-0.0, -0.5, -63.5, 0.0, 0.5, 2.5, 63.5])      # Paddle 1.8.5's numbers
    assert got.dtype == np.float32
    q = rng.randint(-127, 128, (3, 4)).astype("int8")
    got = run_op("dequantize_abs_max", {"X": q, "Scale": np.array([2.5], "float32")}, {"max_range": 127.0})["Out"][0]
    np.testing.assert_allclose(got, q.astype("float32") * 2.5 / 127, rtol=1e-6)
    qf = q.astype("float64")
    got = run_op("fake_dequantize_max_abs", {"X": qf, "Scale": np.array([2.5])}, {"max_range": 15.0})["Out"][0]
    np.testing.assert_allclose(got, qf * 2.5 / 15)
