"""WeightNormParamAttr: the weight is g * v / ||v|| (norm over all but ``dim``), with parameters
``<name>_g`` / ``<name>_v`` that start as ||v|| / the initializer's v, against NumPy; gradients reach
g and v."""
import numpy as np
import pytest

import fluidist as fluid


def _norm_except(v, dim):
    if dim is None:
        return np.sqrt((v ** 2).sum())
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return np.sqrt((v ** 2).sum(axis=axes, keepdims=True))


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_fc_weight_is_g_times_direction(dim):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4], dtype="float64")
        y = fluid.layers.fc(x, 3, bias_attr=False,
                            param_attr=fluid.WeightNormParamAttr(dim=dim, name="wn", initializer=fluid.initializer.Normal(seed=3)))
        loss = fluid.layers.reduce_sum(y)
        fluid.backward.append_backward(loss)
    assert main.global_block().var("wn_g").shape == ((1, 1) if dim is None else (4, 1) if dim == 0 else (1, 3))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    v = np.array(scope.find_var("wn_v").get_tensor())
    g0 = np.array(scope.find_var("wn_g").get_tensor())
    np.testing.assert_allclose(g0, np.broadcast_to(_norm_except(v, dim), g0.shape))
    g = np.random.RandomState(1).uniform(0.5, 2.0, g0.shape)
    scope.find_var("wn_g").get_tensor().set(g, fluid.CPUPlace())
    xv = np.random.RandomState(2).randn(5, 4)
    out, dg, dv = exe.run(main, feed={"x": xv}, fetch_list=[y, "wn_g@GRAD", "wn_v@GRAD"], scope=scope)
    n = _norm_except(v, dim)
    w = g * v / n
    np.testing.assert_allclose(out, xv @ w, rtol=1e-10)
    up = xv.sum(axis=0)[:, None] * np.ones((1, 3))          # d loss / d w
    expect_dg = (up * v / n).sum() if dim is None else (up * v / n).sum(axis=1 - dim, keepdims=True)
    np.testing.assert_allclose(dg, np.broadcast_to(expect_dg, dg.shape), rtol=1e-10)
    assert dv.shape == v.shape


def test_conv_weight_norm_over_a_middle_dimension():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2, 5, 5], dtype="float64")
        y = fluid.layers.conv2d(x, 3, 3, bias_attr=False, param_attr=fluid.WeightNormParamAttr(dim=1, name="cw"))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    v = np.array(scope.find_var("cw_v").get_tensor())
    g = np.array(scope.find_var("cw_g").get_tensor())
    assert g.shape == (1, 2, 1, 1)
    np.testing.assert_allclose(g, _norm_except(v, 1))
    xv = np.random.RandomState(0).randn(1, 2, 5, 5)
    out, = exe.run(main, feed={"x": xv}, fetch_list=[y], scope=scope)
    plain_main, plain_startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(plain_main, plain_startup):
        px = fluid.data("x", [None, 2, 5, 5], dtype="float64")
        py = fluid.layers.conv2d(px, 3, 3, bias_attr=False, param_attr=fluid.ParamAttr(name="plain"))
    scope.var("plain").get_tensor().set(v, fluid.CPUPlace())         # g = ||v||: the weight is v
    ref, = exe.run(plain_main, feed={"x": xv}, fetch_list=[py], scope=scope)
    np.testing.assert_allclose(out, ref, rtol=1e-10)
