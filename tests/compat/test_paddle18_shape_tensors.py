"""Variables inside shapes, axes and sizes (``fill_constant(shape=[layers.shape(x)[0], 1])``, ...):
fluidist builds Paddle 1.8's ops (types, input slots, attrs), declares its shapes and computes its
values (``shape_tensors_cases.py``; ``tools/paddle18_layer_facts.py shape_tensors`` recorded Paddle's
facts), and computes NumPy's values for the ops it added inputs to, gradients included."""
import json
import os

import numpy as np
import pytest

import fluidist as fluid
import shape_tensors_cases as cases

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "paddle18_shape_tensors.json")) as _f:
    REFS = json.load(_f)


def test_every_case_has_paddles_record():
    assert sorted(k for k in REFS if not k.startswith("_")) == sorted(cases.CASES)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_case_builds_and_computes_what_paddle18_does(name):
    want = REFS[name]
    got = cases.run(fluid, name)
    if "error" in want:     # Paddle refuses it (a TypeError): fluidist too
        assert got == want
        return
    if name not in cases.DIFFERENCES:
        assert got["ops"] == want["ops"]
        assert got["shape"] == want["shape"]
    else:       # the same op that computes, the documented difference aside
        assert got["ops"][-1][:2] == want["ops"][-1][:2]
    assert got["dtype"] == want["dtype"] and got["out_shape"] == want["out_shape"]
    if want["out"] is not None:
        np.testing.assert_allclose(got["out"], want["out"], rtol=1e-6)


@pytest.mark.parametrize("name,low,high", [("uniform_list_var", -1, 1), ("uniform_shape_var", -1, 1),
                                           ("randint_list_var", 0, 5), ("randint_shape_var", 0, 5)])
def test_drawn_values_are_in_range(name, low, high):
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 6], dtype="float32")
        y = eval(cases.CASES[name], {"L": fluid.layers, "x": x, "np": np})
    out, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": cases.X}, fetch_list=[y])
    assert out.min() >= low and out.max() < high


def _run(build, feed, out_shape=None):
    """``build(layers, x)`` run on ``feed``; with ``out_shape``, also a weight ``w`` of that shape and
    the gradient of ``sum(y * w)`` with respect to ``x``."""
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[-1, 6], dtype="float32")
        x.stop_gradient = False
        y = build(fluid.layers, x)
        fetch = [y]
        if out_shape:
            w = fluid.layers.assign(np.random.RandomState(1).rand(*out_shape).astype("float32"))
            loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(
                fluid.layers.reshape(y, [-1]), fluid.layers.reshape(w, [-1])))
            fetch += [w] + fluid.backward.gradients([loss], [x])
    return fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": feed}, fetch_list=fetch)


def test_fill_constant_with_a_batch_sized_shape_follows_the_batch():
    for rows in (1, 4):
        out, = _run(lambda L, x: L.fill_constant(shape=[L.shape(x)[0], 1], dtype="int64", value=7),
                    np.zeros((rows, 6), "float32"))
        np.testing.assert_array_equal(out, np.full((rows, 1), 7, "int64"))


def test_value_tensor_is_cast_to_the_dtype():
    out, = _run(lambda L, x: L.fill_constant([2, 2], "int32", L.fill_constant([1], "float32", 3.75)),
                cases.X)
    np.testing.assert_array_equal(out, np.full((2, 2), 3, "int32"))


def test_gradients_through_ops_given_tensors():
    """A scale given a ScaleTensor, a pow given a FactorTensor, a concat / split given an AxisTensor:
    their gradients read the same tensors (NumPy's derivatives)."""
    x = np.random.RandomState(0).rand(3, 6).astype("float32") + 0.5
    y, w, g = _run(lambda L, x: L.scale(x, scale=L.fill_constant([1], "float32", 3.0), bias=1.0), x, (3, 6))
    np.testing.assert_allclose(y, 3 * x + 1, rtol=1e-6)
    np.testing.assert_allclose(g, 3 * w, rtol=1e-6)
    y, w, g = _run(lambda L, x: L.pow(x, factor=L.fill_constant([1], "float32", 3.0)), x, (3, 6))
    np.testing.assert_allclose(y, x ** 3, rtol=1e-5)
    np.testing.assert_allclose(g, 3 * x ** 2 * w, rtol=1e-5)
    y, w, g = _run(lambda L, x: L.split(L.concat([x, x * 2.0], axis=L.fill_constant([1], "int32", 1)),
                                        num_or_sections=[L.fill_constant([1], "int32", 8), 4],
                                        dim=L.fill_constant([1], "int32", 1))[0], x, (3, 8))
    np.testing.assert_allclose(y, np.concatenate([x, 2 * x], 1)[:, :8], rtol=1e-6)
    np.testing.assert_allclose(g, w[:, :6] + 2 * np.concatenate([w[:, 6:], np.zeros((3, 4), "float32")], 1),
                               rtol=1e-6)


def test_reshape_and_unsqueeze_by_tensors_and_their_gradients():
    x = np.random.RandomState(0).rand(3, 6).astype("float32")
    y, w, g = _run(lambda L, x: L.reshape(x, shape=[L.shape(x)[0], 3, -1]), x, (3, 3, 2))
    np.testing.assert_array_equal(y, x.reshape(3, 3, 2))
    np.testing.assert_allclose(g, w.reshape(3, 6))
    y, w, g = _run(lambda L, x: L.unsqueeze(x, axes=[L.fill_constant([1], "int32", 0), 2]), x, (1, 3, 1, 6))
    np.testing.assert_array_equal(y, x[None, :, None, :])
    np.testing.assert_allclose(g, w.reshape(3, 6))


def test_shape_variables_paddle_refuses():
    """Paddle 1.8's dtype checks of shape Variables (``_get_shape_tensor_inputs``) and its type checks."""
    x = fluid.data(name="x", shape=[-1, 6], dtype="float32")
    with pytest.raises(TypeError, match="shape"):
        fluid.layers.fill_constant(shape=fluid.layers.cast(fluid.layers.shape(x), "float32"), dtype="float32",
                                   value=1.0)
    with pytest.raises(TypeError, match=r"shape\[0\]"):
        fluid.layers.gaussian_random(shape=[fluid.layers.cast(fluid.layers.shape(x)[0], "float32"), 2])
    with pytest.raises(TypeError, match="shape"):
        fluid.layers.fill_constant(shape=3, dtype="float32", value=1.0)
    with pytest.raises(TypeError, match="dtype"):
        fluid.layers.fill_constant(shape=[1], dtype="uint8", value=1.0)
    with pytest.raises(TypeError, match="out"):
        fluid.layers.fill_constant(shape=[1], dtype="int64", value=1, out=x)


def test_batch_norm_momentum_given_as_a_variable_weights_the_moving_mean():
    """Paddle 1.8's layer misspells the slot and drops a Variable momentum (0.9 is used); fluidist
    reads it (``MomentumTensor``, the slot of Paddle's op)."""
    x = np.random.RandomState(0).rand(4, 3).astype("float32")
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        xv = fluid.data(name="x", shape=[-1, 3], dtype="float32")
        fluid.layers.batch_norm(xv, momentum=fluid.layers.fill_constant([1], "float32", 0.25),
                                moving_mean_name="mm", moving_variance_name="mv")
    assert "MomentumTensor" in prog.global_block().ops[-1].inputs
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(prog, feed={"x": x}, scope=scope)
    np.testing.assert_allclose(np.array(scope.find_var("mm").get_tensor()), 0.75 * x.mean(0), rtol=1e-5)
