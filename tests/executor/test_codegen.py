"""The plan run as one generated function (fluidist/executor/codegen.py): kernels bound to their ops
(registry binders) give the numbers the kernels themselves give, through the generated function and
through the plan's interpreter alike; an op's error names the op; an edited program is planned and
generated afresh; a stand-in device place runs the same generated code."""
import os
import sys

import numpy as np
import pytest

import fluidist as fluid
from fluidist.device.standin import StandinPlace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "examples"))
from digits import cnn  # noqa: E402
from kernel_wrappers import wrapped_kernels  # noqa: E402 (tests/kernel_wrappers.py)

LR = 0.05


def mlp_program():
    """13-64-1 with relu, mean squared error, SGD: the small MLP of benchmarks/executor.py."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        h = fluid.layers.fc(input=x, size=64, act="relu")
        out = fluid.layers.fc(input=h, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=out, label=y))
        fluid.optimizer.SGD(learning_rate=LR).minimize(loss)
    return main, startup, loss


def cnn_program():
    """The digits CNN of examples/digits.py (conv, pool, fc, softmax cross entropy), SGD."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 1, 8, 8], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits=cnn(x), label=y))
        fluid.optimizer.SGD(learning_rate=LR).minimize(loss)
    return main, startup, loss


def batches(kind, steps, n=16):
    r = np.random.RandomState(3)
    for _ in range(steps):
        if kind == "mlp":
            x = r.randn(n, 13).astype("float32")
            yield x, (x[:, :3].sum(1, keepdims=True) * 0.5).astype("float32")
        else:
            yield r.rand(n, 1, 8, 8).astype("float32"), r.randint(0, 10, size=(n, 1)).astype("int64")


def train(build, kind, steps, way, place=None):
    """Losses and final parameters of ``steps`` SGD steps, run ``way``: "bound" (the generated function
    with bound kernels), "kernels" (the generated function calling every kernel with its dicts: the
    profiler's wrapper keeps binders out), "interpreted" (the plan's interpreter loop)."""
    main, startup, loss = build()
    scope = fluid.Scope()
    exe = fluid.Executor(place or fluid.CPUPlace())
    exe.run(startup, scope=scope)
    with wrapped_kernels(on=way == "kernels"):
        plan = exe._plan(main, 0)
        if way == "interpreted":
            plan._fast = lambda vals, lods: 0      # "an input is missing at step 0": the interpreter runs all
        losses = []
        for x, y in batches(kind, steps):
            got, = exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
            losses.append(np.array(got))
    params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}
    return np.array(losses), params, plan


@pytest.mark.parametrize("build, kind", [(mlp_program, "mlp"), (cnn_program, "cnn")])
def test_bound_kernels_give_the_bits_of_the_kernels_and_of_the_interpreter(build, kind):
    bound = train(build, kind, 4, "bound")
    kernels = train(build, kind, 4, "kernels")
    interpreted = train(build, kind, 4, "interpreted")
    assert [s.bound is None for s in kernels[2].steps] == [True] * len(kernels[2].steps)
    for other in (kernels, interpreted):
        np.testing.assert_array_equal(bound[0], other[0])
        assert sorted(bound[1]) == sorted(other[1])
        for name in bound[1]:
            np.testing.assert_array_equal(bound[1][name], other[1][name], err_msg=name)
    assert bound[0][-1] < bound[0][0]


def test_every_op_of_the_mlp_step_is_bound_and_the_step_trains_as_numpy():
    losses, params, plan = train(mlp_program, "mlp", 4, "bound")
    assert [s.op.type for s in plan.steps if s.bound is None] == []
    # the same four steps by hand in float64, from the same initial parameters
    main, startup, _ = mlp_program()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    w0, b0, w1, b1 = (np.array(scope.find_var(n).get_tensor()).astype(np.float64)
                      for n in ("fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_1.b_0"))
    for step, (x, y) in enumerate(batches("mlp", 4)):
        h = np.maximum(x @ w0 + b0, 0)
        diff = h @ w1 + b1 - y
        np.testing.assert_allclose(losses[step], [np.mean(diff ** 2)], rtol=1e-5)
        d = 2 * diff / diff.size
        dh = (d @ w1.T) * (h > 0)
        w1, b1 = w1 - LR * h.T @ d, b1 - LR * d.sum(0)
        w0, b0 = w0 - LR * x.T @ dh, b0 - LR * dh.sum(0)
    np.testing.assert_allclose(params["fc_0.w_0"], w0, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["fc_1.w_0"], w1, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("way", ["bound", "kernels"])
def test_an_op_error_in_the_generated_step_names_the_op_and_its_variables(way):
    main, startup, loss = mlp_program()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    scope.find_var("fc_1.w_0").get_tensor().set(np.ones((5, 1), "float32"), fluid.CPUPlace())
    x, y = next(batches("mlp", 1))
    with wrapped_kernels(on=way == "kernels"), pytest.raises(ValueError) as info:
        exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)
    assert isinstance(info.value, fluid.core.EnforceNotMet)
    assert "(in op 3 'mul' of block 0: X=fc_0.tmp_2, Y=fc_1.w_0 -> Out=fc_1.tmp_0)" in str(info.value)


def test_an_input_held_by_a_parent_scope_runs_on_from_that_step():
    """The generated function stops at the first input its scope lacks (here the parameters, in the
    parent scope): the interpreter carries on from that op, finding them up the chain."""
    main, startup, loss = mlp_program()
    parent = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=parent)
    want = train(mlp_program, "mlp", 2, "bound")[0]
    child = parent.new_scope()
    got = [np.array(exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=child)[0])
           for x, y in batches("mlp", 2)]
    np.testing.assert_array_equal(np.array(got), want)


def test_an_edited_program_is_generated_afresh():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2])
        y = fluid.layers.relu(fluid.layers.scale(x, 2.0))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    xv = np.array([[1.0, -1.0]], "float32")
    np.testing.assert_array_equal(exe.run(main, feed={"x": xv}, fetch_list=[y], scope=scope)[0], [[2, 0]])
    first = exe._plan(main, 0)._fast
    main.global_block().ops[0]._set_attr("scale", -3.0)
    np.testing.assert_array_equal(exe.run(main, feed={"x": xv}, fetch_list=[y], scope=scope)[0], [[0, 3]])
    with fluid.program_guard(main, fluid.Program()):
        z = fluid.layers.square(y)
    got = exe.run(main, feed={"x": xv}, fetch_list=[z], scope=scope)[0]
    np.testing.assert_array_equal(got, [[0, 9]])
    again = exe._plan(main, 0)._fast
    assert again is not first and "b2(" in again.source and "b2(" not in first.source


@pytest.mark.cpu_only("compares the CPU's bits with the stand-in's (NumPy behind both); a GPU's matmul rounds "
                      "otherwise")
def test_the_standin_device_runs_the_same_bound_steps_as_the_cpu():
    cpu = train(mlp_program, "mlp", 3, "bound")
    dev = train(mlp_program, "mlp", 3, "bound", place=StandinPlace())
    assert [s.op.type for s in dev[2].steps if s.bound is None] == []
    np.testing.assert_array_equal(cpu[0], dev[0])
    for name in cpu[1]:
        np.testing.assert_array_equal(cpu[1][name], dev[1][name], err_msg=name)
