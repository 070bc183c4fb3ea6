"""While / while_loop: forward semantics, step scopes, and gradients through the loop against finite
differences (loop-carried values, parameters read every step, tensor arrays)."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import check_program_grad, run_program as _run

L = fluid.layers


def test_while_counts_and_accumulates():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 5)
        acc = L.fill_constant([1], "float32", 0.0)
        cond = L.less_than(i, n)
        loop = L.While(cond)
        with loop.block():
            L.assign(L.elementwise_add(acc, L.cast(i, "float32")), acc)
            L.increment(i, in_place=True)
            L.less_than(i, n, cond=cond)
    main.lint()
    ops = main.global_block().ops
    w = [op for op in ops if op.type == "while"][0]
    assert set(w.input("X")) == {acc.name, i.name, n.name}
    assert set(w.output("Out")) == {acc.name, i.name, cond.name}
    got_i, got_acc = _run(main, startup, {}, [i, acc])
    assert got_i[0] == 5 and got_acc[0] == 10.0


def test_while_without_updating_cond_is_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        i = L.fill_constant([1], "int64", 0)
        cond = L.less_than(i, L.fill_constant([1], "int64", 3))
        with pytest.raises(ValueError, match="never updates its condition"):
            with L.While(cond).block():
                L.increment(i, in_place=True)


def test_while_loop_paddle_example():
    # Paddle 1.8's own example: i counts to 10, ten added each step
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        i = L.fill_constant([1], "int64", 0)
        ten = L.fill_constant([1], "int64", 10)
        out_i, out_ten = L.while_loop(lambda i, t: L.less_than(i, t), lambda i, t: [L.increment(i), t], [i, ten])
    assert out_i is i
    (got,) = _run(main, startup, {}, [out_i])
    assert got[0] == 10


def test_while_loop_gradient_through_carried_values():
    # x_{t+1} = x_t * w + i_t for i_t = 1..4; the gradient runs back through every step
    def build():
        x = fluid.data("x", [3], "float64")
        x.stop_gradient = False
        w = L.create_parameter([3], "float64", name="w",
                               default_initializer=fluid.initializer.Constant(0.9))
        i = L.fill_constant([1], "float64", 1.0)
        four = L.fill_constant([1], "float64", 4.0)

        def body(i, x):
            return [L.increment(i, in_place=False), L.elementwise_add(L.elementwise_mul(x, w), i)]
        _, out = L.while_loop(lambda i, x: L.less_equal(i, four), body, [i, x])
        return L.reduce_sum(L.elementwise_mul(out, out))
    feed = {"x": np.array([0.5, -1.0, 2.0])}
    g = check_program_grad(build, feed, ["x", "w"])
    # closed form: x4 = x w^4 + (w^3 + 2 w^2 + 3 w + 4)
    w = 0.9
    x4 = feed["x"] * w ** 4 + (w ** 3 + 2 * w ** 2 + 3 * w + 4)
    np.testing.assert_allclose(g["x"], 2 * x4 * w ** 4)


def test_while_loop_gradient_paddle_case():
    # Paddle 1.8's test case: x = i * i, i += 1 while i < 11. The loss only sees the last step, so
    # from i = 1 d mean(x) / d i = 2 * 10 = 20 (Paddle 1.8 sums over all steps and reports 110);
    # checked from i = 1.5 (away from the step where the loop count changes): 2 * 10.5
    def build():
        i = fluid.data("i", [1], "float64")
        i.stop_gradient = False
        x = fluid.data("x", [1], "float64")
        x.stop_gradient = False
        eleven = L.fill_constant([1], "float64", 11)

        def body(i, x):
            x = L.elementwise_mul(i, i)
            return [L.increment(i), x]
        out = L.while_loop(lambda i, x: L.less_than(i, eleven), body, [i, x])
        return L.mean(out[1])
    g = check_program_grad(build, {"i": np.array([1.5]), "x": np.ones(1)}, ["i"])
    np.testing.assert_allclose(g["i"], [21.0])


def test_gradient_through_a_cond_inside_a_loop():
    # each step: x = x * w if sum(x) > 0 else x + w (a different branch in different steps)
    def build():
        x = fluid.data("x", [2], "float64")
        x.stop_gradient = False
        w = L.create_parameter([2], "float64", name="w", default_initializer=fluid.initializer.Constant(-0.8))
        i = L.fill_constant([1], "int64", 0)
        n = L.fill_constant([1], "int64", 4)
        zero = L.fill_constant([1], "float64", 0.0)

        def body(i, x):
            y = L.cond(L.greater_than(L.reduce_sum(x), zero),
                       lambda: L.elementwise_mul(x, w), lambda: L.elementwise_add(x, w))
            return [L.increment(i, in_place=False), y]
        _, out = L.while_loop(lambda i, x: L.less_than(i, n), body, [i, x])
        return L.reduce_sum(L.elementwise_mul(out, out))
    check_program_grad(build, {"x": np.array([0.7, 0.5])}, ["x", "w"])


def test_gradient_through_nested_loops():
    # an inner loop of 2 steps inside an outer loop of 3: x <- tanh(x * w) six times, w read in the inner one
    def build():
        x = fluid.data("x", [3], "float64")
        x.stop_gradient = False
        w = L.create_parameter([3], "float64", name="w", default_initializer=fluid.initializer.Constant(1.3))
        i = L.fill_constant([1], "int64", 0)

        def outer(i, x):
            j = L.fill_constant([1], "int64", 0)
            _, y = L.while_loop(lambda j, y: L.less_than(j, L.fill_constant([1], "int64", 2)),
                                lambda j, y: [L.increment(j, in_place=False), L.tanh(L.elementwise_mul(y, w))],
                                [j, x])
            return [L.increment(i, in_place=False), y]
        _, out = L.while_loop(lambda i, x: L.less_than(i, L.fill_constant([1], "int64", 3)), outer, [i, x])
        return L.reduce_sum(out)
    xv = np.array([0.3, -0.5, 0.9])
    g = check_program_grad(build, {"x": xv}, ["x", "w"])
    # closed form for x: the chain of six tanh(w * .) steps
    y, d = xv.copy(), np.ones(3)
    for _ in range(6):
        y = np.tanh(y * 1.3)
        d = d * (1 - y * y) * 1.3
    np.testing.assert_allclose(g["x"], d, rtol=1e-6)


def test_is_test_while_keeps_no_step_scopes_and_clone_for_test():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [1], "float32")
        i = L.fill_constant([1], "int64", 0)
        _, y = L.while_loop(lambda i, y: L.less_than(i, L.fill_constant([1], "int64", 3)),
                            lambda i, y: [L.increment(i, in_place=False), L.scale(y, 2.0)], [i, x])
    test = main.clone(for_test=True)
    w = [op for op in test.global_block().ops if op.type == "while"][0]
    assert w.attr("is_test") is True
    exe, scope = fluid.Executor(), fluid.Scope()
    got = exe.run(test, feed={"x": np.array([1.5], "float32")}, fetch_list=[y], scope=scope)[0]
    assert got[0] == 12.0
    assert scope.find_var(w.output("StepScopes")[0]).value() == []
