"""``fluid.gradients`` with ``target_gradients``, and gradients of gradients (the ``*_grad_grad``
ops): second derivatives against finite differences of the first-order gradient program, the
names Paddle 1.8 gives the second pass's gradients, and what it returns for inputs a gradient
does not depend on (read from paddlepaddle 1.8.5)."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist import layers


def _program(build):
    """(main, inputs, y, dy, first-order grads) with ``y@GRAD`` a fed Variable."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xs, y = build()
        for v in xs:
            v.stop_gradient = False
        dy = main.global_block().create_var(name=y.name + "@GRAD", shape=y.shape, dtype=y.dtype)
        dy.stop_gradient = False
        grads = fluid.gradients(y, xs, dy)
    return main, startup, xs, dy, grads


def _run(program, feed, fetch, scope):
    return fluid.Executor(fluid.CPUPlace()).run(program, feed=feed, fetch_list=fetch, scope=scope)


def _check_double_grad(build, feed_values, rtol=1e-5, atol=1e-7, delta=1e-5):
    """For each first-order gradient g (of y, given y@GRAD), the second pass's gradients of
    sum(g * ddg) with respect to the inputs and y@GRAD, against central differences."""
    main, startup, xs, dy, grads = _program(build)
    rng = np.random.RandomState(7)
    scope = fluid.Scope()
    _run(startup, {}, [], scope)
    params = {v.name: np.array(scope.find_var(v.name).get_tensor()) for v in xs if v.persistable}
    values = dict(params, **feed_values)
    values[dy.name] = rng.uniform(-1, 1, dy.shape)
    wrt = xs + [dy]
    for g in [g for g in grads if g is not None]:
        prog = main.clone()
        block = prog.global_block()
        ddg = block.create_var(name=g.name + "@GRAD", shape=g.shape, dtype=g.dtype)
        second = fluid.gradients(block.var(g.name), [block.var(v.name) for v in wrt], ddg)
        ddg_value = rng.uniform(-1, 1, g.shape)
        got = _run(prog, dict(values, **{ddg.name: ddg_value}), [s for s in second if s is not None], scope)
        got = iter(got)
        for v, s in zip(wrt, second):
            analytic = next(got) if s is not None else np.zeros(values[v.name].shape)
            numeric = np.zeros(values[v.name].shape)
            for i in range(numeric.size):
                def loss(step):
                    moved = values[v.name].copy()
                    moved.flat[i] += step
                    out, = _run(main, dict(values, **{v.name: moved}), [g.name], scope)
                    return float((np.asarray(out) * ddg_value).sum())
                numeric.flat[i] = (loss(delta) - loss(-delta)) / (2 * delta)
            np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol,
                                       err_msg="d(%s . dd)/d%s" % (g.name, v.name))


def _data(name, shape):
    return layers.data(name, shape, append_batch_size=False, dtype="float64")


def _uniform(shape, low=-1.0, high=1.0, seed=0):
    return np.random.RandomState(seed).uniform(low, high, shape)


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "div"])
def test_elementwise_double_grads_broadcast_y(kind):
    def build():
        x, y = _data("x", [2, 3, 4]), _data("y", [3])
        return [x, y], getattr(layers, "elementwise_" + kind)(x, y, axis=1)
    _check_double_grad(build, {"x": _uniform([2, 3, 4]), "y": _uniform([3], 0.5, 1.5, 1)})


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "sqrt", "square"])
def test_activation_double_grads(act):
    def build():
        x = _data("x", [3, 4])
        return [x], getattr(layers, act)(x)
    low = 0.2 if act == "sqrt" else -1.0
    values = _uniform([3, 4], low, 1.0)
    values[np.abs(values) < 0.05] = 0.3      # away from relu's kink
    _check_double_grad(build, {"x": values})


def test_mul_reduce_mean_and_reshape_double_grads():
    def build():
        x, y = _data("x", [2, 3, 2]), _data("y", [6, 3])
        out = layers.mul(x, y, x_num_col_dims=1)
        return [x, y], layers.reshape(layers.reduce_mean(layers.square(out), dim=1, keep_dim=True), [1, 2])
    _check_double_grad(build, {"x": _uniform([2, 3, 2]), "y": _uniform([6, 3], seed=2)})


@pytest.mark.parametrize("data_format", ["NCHW", "NHWC"])
def test_conv2d_double_grad_with_groups_stride_and_padding(data_format):
    def build():
        shape = [2, 4, 5, 5] if data_format == "NCHW" else [2, 5, 5, 4]
        x = _data("x", shape)
        y = layers.conv2d(x, 4, 3, stride=2, padding=[1, 0], groups=2, bias_attr=False, data_format=data_format)
        return [x, main_params()[0]], y
    shape = [2, 4, 5, 5] if data_format == "NCHW" else [2, 5, 5, 4]
    _check_double_grad(build, {"x": _uniform(shape)}, rtol=1e-4)


def test_conv3d_double_grad():
    def build():
        x = _data("x", [1, 2, 3, 4, 3])
        y = layers.conv3d(x, 2, 2, padding=1, bias_attr=False)
        return [x, main_params()[0]], y
    _check_double_grad(build, {"x": _uniform([1, 2, 3, 4, 3])}, rtol=1e-4)


def test_instance_norm_double_grad_with_scale_and_bias():
    def build():
        x = _data("x", [2, 3, 2, 3])
        y = layers.instance_norm(x)
        return [x] + main_params(), y
    _check_double_grad(build, {"x": _uniform([2, 3, 2, 3])}, rtol=1e-4, atol=1e-6)


def main_params():
    return fluid.default_main_program().global_block().all_parameters()


def _two_inputs(kind):
    def build():
        x, y = _data("x", [2, 3]), _data("y", [2, 3])
        return [x, y], getattr(layers, "elementwise_" + kind)(x, y)
    return build


def test_second_pass_names_and_none_as_paddle():
    """Paddle 1.8.5: the second pass writes its gradients of existing names as ``grad/grad/...``;
    elementwise_add's gradient does not depend on x or y (None), only on y@GRAD."""
    main, _, xs, dy, grads = _program(_two_inputs("mul"))
    block = main.global_block()
    ddx = block.create_var(name="x@GRAD@GRAD", shape=[2, 3], dtype="float64")
    second = fluid.gradients(grads[0], xs + [dy], ddx)
    assert [s.name for s in second] == ["grad/grad/x@GRAD", "grad/grad/y@GRAD", dy.name + "@GRAD"]
    assert block.ops[-1].type == "elementwise_mul_grad_grad"
    assert sorted(block.ops[-1].input_names) == ["DDX", "DDY", "DOut", "X", "Y"]

    main, _, xs, dy, grads = _program(_two_inputs("add"))
    ddx = main.global_block().create_var(name="x@GRAD@GRAD", shape=[2, 3], dtype="float64")
    second = fluid.gradients(grads[0], xs + [dy], ddx)
    assert second[:2] == [None, None] and second[2].name == dy.name + "@GRAD"


def test_target_gradients_weight_the_targets():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = _data("x", [2, 2])
        x.stop_gradient = False
        a, b = layers.square(x), layers.scale(x, scale=3.0)
        weight = _data("w", [2, 2])
        gx = fluid.gradients([a, b], x, [weight, None])
    xv, wv = _uniform([2, 2]), _uniform([2, 2], seed=3)
    out, = _run(main, {"x": xv, "w": wv}, [gx], fluid.Scope())
    np.testing.assert_allclose(out, 2 * xv * wv + 3.0)


def test_target_gradients_are_checked_as_paddle():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = _data("x", [2, 2])
        y = layers.square(x)
        with pytest.raises(ValueError, match="shapes"):
            fluid.gradients(y, x, _data("w", [2, 3]))
        with pytest.raises(ValueError, match="target_gradients"):
            fluid.gradients(y, x, [None, None])
