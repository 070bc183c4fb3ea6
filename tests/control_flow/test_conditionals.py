"""cond / case / switch_case / IfElse / Switch: which branch runs, the op lists Paddle 1.8 builds,
and gradients through conditional blocks (taken and not taken) against finite differences."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import check_program_grad, run_program as _run

L = fluid.layers


def test_cond_builds_paddle18_ops():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [2], "float32")
        pred = L.less_than(L.reduce_sum(x), L.fill_constant([1], "float32", 0.0))
        out = L.cond(pred, lambda: L.scale(x, 2.0), lambda: L.scale(x, 3.0))
    main.lint()
    types = [op.type for op in main.global_block().ops]
    assert types[-5:] == ["conditional_block", "logical_not", "conditional_block", "cast", "select_input"]
    assert [op.type for op in main.block(1).ops] == ["scale", "assign"]
    got = _run(main, startup, {"x": np.array([1.0, 2.0], "float32")}, [out])[0]
    np.testing.assert_allclose(got, [3.0, 6.0])
    got = _run(main, startup, {"x": np.array([-1.0, -2.0], "float32")}, [out])[0]
    np.testing.assert_allclose(got, [-2.0, -4.0])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond_gradient_through_either_branch(sign):
    def build():
        x = fluid.data("x", [3], "float64")
        x.stop_gradient = False
        w = L.create_parameter([3], "float64", name="w", default_initializer=fluid.initializer.Constant(0.7))
        pred = L.greater_than(L.reduce_sum(x), L.fill_constant([1], "float64", 0.0))
        a, b = L.cond(pred, lambda: (L.elementwise_mul(x, w), L.exp(x)),
                      lambda: (L.elementwise_mul(L.elementwise_mul(x, x), w), L.scale(x, -2.0)))
        return L.reduce_sum(a) + L.reduce_sum(L.elementwise_mul(b, b))
    check_program_grad(build, {"x": sign * np.array([0.5, 1.0, -0.2])}, ["x", "w"])


def test_case_and_switch_case_pick_the_right_branch():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        idx = fluid.data("idx", [1], "int32")
        x = fluid.data("x", [1], "float32")
        one = L.fill_constant([1], "float32", 1.0)
        c = L.case([(L.less_than(x, one), lambda: L.scale(x, 10.0)),
                    (L.less_than(x, L.scale(one, 5.0)), lambda: L.scale(x, 100.0))],
                   default=lambda: L.scale(x, 0.0))
        s = L.switch_case(idx, {1: lambda: L.scale(x, 1.0), 3: lambda: L.scale(x, 3.0)},
                          default=lambda: L.scale(x, -1.0))
        s2 = L.switch_case(idx, [lambda: L.scale(x, 0.5), lambda: L.scale(x, 7.0)])   # default: the last
    exe, scope = fluid.Executor(), fluid.Scope()
    for xv, iv, want in [(0.5, 1, (5.0, 0.5, 3.5)), (2.0, 3, (200.0, 6.0, 14.0)), (9.0, 0, (0.0, -9.0, 4.5)),
                         (9.0, 5, (0.0, -9.0, 63.0))]:
        got = exe.run(main, feed={"x": np.array([xv], "float32"), "idx": np.array([iv], "int32")},
                      fetch_list=[c, s, s2], scope=scope)
        np.testing.assert_allclose([g[0] for g in got], want)
    with pytest.raises(ValueError, match="appears more than once"):
        with fluid.program_guard(main, startup):
            L.switch_case(idx, [(1, lambda: x), (1, lambda: x)])


def test_switch_case_gradient():
    def build():
        x = fluid.data("x", [2], "float64")
        x.stop_gradient = False
        idx = fluid.data("idx", [1], "int64")
        y = L.switch_case(idx, {0: lambda: L.exp(x), 1: lambda: L.elementwise_mul(x, x), 2: lambda: L.tanh(x)})
        return L.reduce_sum(y)
    for i in (0, 1, 2):
        check_program_grad(build, {"x": np.array([0.3, -0.4]), "idx": np.array([i], "int64")}, ["x"])


def test_ifelse_splits_rows_and_merges_back():
    def build():
        x = fluid.data("x", [None, 2], "float64")
        x.stop_gradient = False
        limit = L.fill_constant([1], "float64", 0.0)
        cond = L.less_than(L.reduce_sum(x, dim=1, keep_dim=True), limit)
        ie = L.IfElse(cond)
        with ie.true_block():
            ie.output(L.scale(L.elementwise_mul(ie.input(x), ie.input(x)), 3.0))
        with ie.false_block():
            ie.output(L.exp(ie.input(x)))
        out, = ie()
        return L.reduce_sum(L.elementwise_mul(out, L.scale(x, 0.5, bias=1.0)))
    xv = np.array([[0.1, 0.2], [-1.0, 0.3], [0.4, -0.9], [0.5, 0.5]])
    g = check_program_grad(build, {"x": xv}, ["x"])
    neg = xv.sum(1, keepdims=True) < 0
    f = np.where(neg, 3 * xv * xv, np.exp(xv))
    df = np.where(neg, 6 * xv, np.exp(xv))
    np.testing.assert_allclose(g["x"], df * (0.5 * xv + 1) + 0.5 * f)


def test_ifelse_all_rows_one_side():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1], "float32")
        cond = L.less_than(x, L.fill_constant([1], "float32", 100.0))
        ie = L.IfElse(cond)
        with ie.true_block():
            ie.output(L.scale(ie.input(x), 2.0))
        with ie.false_block():
            ie.output(L.scale(ie.input(x), -1.0))
        out, = ie()
    got = _run(main, startup, {"x": np.array([[1.0], [2.0]], "float32")}, [out])[0]
    np.testing.assert_allclose(got, [[2.0], [4.0]])


def test_switch_gradient_flows_to_the_taken_case():
    def build():
        x = fluid.data("x", [2], "float64")
        x.stop_gradient = False
        step = fluid.data("step", [1], "float64")
        out = L.create_global_var([2], 0.0, "float64", name="sw_out")
        out.stop_gradient = False
        with L.Switch() as switch:
            with switch.case(L.less_than(step, L.fill_constant([1], "float64", 1.0))):
                L.assign(L.exp(x), out)
            with switch.default():
                L.assign(L.elementwise_mul(x, x), out)
        return L.reduce_sum(out)
    for s in (0.0, 2.0):
        check_program_grad(build, {"x": np.array([0.3, -0.6]), "step": np.array([s])}, ["x"])


def test_print_prints_paddles_layout_and_passes_values(capsys):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32", lod_level=1)
        x.stop_gradient = False
        y = L.Print(x, message="hello", summarize=4)
        loss = L.mean(y)
        fluid.append_backward(loss)
    t = fluid.create_lod_tensor(np.arange(9, dtype="float32").reshape(3, 3), [[1, 2]], fluid.CPUPlace())
    got = _run(main, startup, {"x": t}, [y])[0]
    np.testing.assert_array_equal(got, np.arange(9).reshape(3, 3))
    out = capsys.readouterr().out.splitlines()
    assert out[0].split("\t")[1:] == ["hello", "The place is:%r" % fluid.CPUPlace()]   # CPUPlace, or the test device
    assert out[1:6] == ["Tensor[x]", "\tshape: [3,3,]", "\tdtype: f", "\tLoD: [[ 0,1,3, ]]", "\tdata: 0,1,2,3,"]
    # the gradient is printed too (print_phase "both")
    assert out[7] == "Tensor[%s@GRAD]" % y.name and out[-1] == "\tdata: 0.111111,0.111111,0.111111,0.111111,"


def test_is_empty():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32")
        e = L.is_empty(x)
    assert _run(main, startup, {"x": np.zeros((0, 2), "float32")}, [e])[0][0]
    assert not _run(main, startup, {"x": np.zeros((1, 2), "float32")}, [e])[0][0]
