"""Learning-rate schedules (values over steps against the closed forms, op lists and roles) and the
control-flow pieces under them: compare/logical ops, conditional_block, Switch, cond."""
import math

import numpy as np
import pytest

import fluidist as fluid
from fluidist.framework.op_role import OpRole
from fluidist.layers import control_flow as cf
from op_test import run_op

L = fluid.layers


def lr_values(build, steps, feed=None):
    """Build a schedule in fresh programs; fetch its value for ``steps`` runs."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        lr = build()
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    vals = [float(exe.run(main, feed=feed or {}, fetch_list=[lr], scope=scope)[0].reshape(-1)[0])
            for _ in range(steps)]
    return np.array(vals), main, startup, lr


SCHEDULES = {
    "exponential": (lambda: L.exponential_decay(0.5, 3, 0.7),
                    lambda s: 0.5 * 0.7 ** (s / 3)),
    "exponential_staircase": (lambda: L.exponential_decay(0.5, 3, 0.7, staircase=True),
                              lambda s: 0.5 * 0.7 ** math.floor(s / 3)),
    "natural_exp": (lambda: L.natural_exp_decay(0.5, 3, 0.4),
                    lambda s: 0.5 * math.exp(-0.4 * s / 3)),
    "natural_exp_staircase": (lambda: L.natural_exp_decay(0.5, 3, 0.4, staircase=True),
                              lambda s: 0.5 * math.exp(-0.4 * math.floor(s / 3))),
    "inverse_time": (lambda: L.inverse_time_decay(0.5, 2, 0.3),
                     lambda s: 0.5 / (1 + 0.3 * s / 2)),
    "inverse_time_staircase": (lambda: L.inverse_time_decay(0.5, 2, 0.3, staircase=True),
                               lambda s: 0.5 / (1 + 0.3 * math.floor(s / 2))),
    "polynomial": (lambda: L.polynomial_decay(0.5, 5, end_learning_rate=0.01, power=2.0),
                   lambda s: (0.5 - 0.01) * (1 - min(s, 5) / 5) ** 2 + 0.01),
    "polynomial_cycle": (lambda: L.polynomial_decay(0.5, 3, end_learning_rate=0.01, power=1.5, cycle=True),
                         lambda s: (0.5 - 0.01) * (1 - s / (3 * max(math.ceil(s / 3), 1))) ** 1.5 + 0.01),
    "piecewise": (lambda: L.piecewise_decay([2, 5, 5, 7], [1.0, 0.5, 0.3, 0.2, 0.1]),
                  lambda s: 1.0 if s < 2 else 0.5 if s < 5 else 0.2 if s < 7 else 0.1),
    "noam": (lambda: L.noam_decay(16, 4),
             lambda s: 16 ** -0.5 * min((s + 1) ** -0.5, 4 ** -1.5 * (s + 1))),
    "noam_lr": (lambda: L.noam_decay(16, 4, learning_rate=2.0),
                lambda s: 2.0 * 16 ** -0.5 * min((s + 1) ** -0.5, 4 ** -1.5 * (s + 1))),
    "cosine": (lambda: L.cosine_decay(0.4, 2, 5),
               lambda s: 0.4 * 0.5 * (math.cos(math.floor(s / 2) * math.pi / 5) + 1)),
    "linear_warmup": (lambda: L.linear_lr_warmup(0.3, 4, 0.01, 0.2),
                      lambda s: 0.01 + (0.2 - 0.01) * s / 4 if s < 4 else 0.3),
    "warmup_of_piecewise": (lambda: L.linear_lr_warmup(L.piecewise_decay([6], [0.3, 0.03]), 3, 0.0, 0.3),
                            lambda s: 0.3 * s / 3 if s < 3 else (0.3 if s < 6 else 0.03)),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_values(name):
    build, formula = SCHEDULES[name]
    got, main, startup, lr = lr_values(build, 12)
    want = np.array([formula(s) for s in range(12)])
    np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    assert lr.shape == (1,) and lr.dtype == "float32"
    # every op of the schedule, in every block, is an LR-schedule op
    for b in main.blocks:
        for op in b.ops:
            assert op.attr("op_role") == OpRole.LRSched, (name, op.type)
            assert op.attr("op_role_var") == []
    assert main.global_block().ops[0].type == "increment"
    main.lint()


def test_exponential_decay_staircase_op_list():
    _, main, startup, lr = lr_values(lambda: L.exponential_decay(0.1, 10, 0.5, staircase=True), 1)
    ops = main.global_block().ops
    assert [op.type for op in ops] == ["increment", "cast", "scale", "floor", "fill_constant", "elementwise_pow",
                                       "scale"]
    inc = ops[0]
    assert inc.input("X") == inc.output("Out") == ["@LR_DECAY_COUNTER@"] and inc.attr("step") == 1.0
    counter = main.global_block().var("@LR_DECAY_COUNTER@")
    assert counter.persistable and counter.dtype == "int64" and counter.shape == (1,)
    assert ops[1].input("X") == ["@LR_DECAY_COUNTER@"] and ops[1].attr("out_dtype") == "float32"
    assert [op.attr("value") for op in ops if op.type == "fill_constant"] == [0.5]
    assert [(op.attr("scale"), op.attr("bias")) for op in ops if op.type == "scale"] == [
        (pytest.approx(0.1), 0.0), (pytest.approx(0.1), 0.0)]
    assert ops[-1].output("Out") == [lr.name]
    # the startup program starts the counter one below the first step (0)
    init = [op for op in startup.global_block().ops if op.output("Out") == ["@LR_DECAY_COUNTER@"]]
    assert len(init) == 1 and init[0].type == "fill_constant" and init[0].attr("value") == -1.0
    assert init[0].attr("dtype") == "int64"


# main-program op types of each schedule as paddlepaddle 1.8.5 builds them (its Variable operators
# make one scale op of x + n, n + x, x - n, n - x, x * n, n * x and x / n)
PADDLE18_OP_TYPES = {
    "exponential_staircase": (lambda: L.exponential_decay(0.1, 10, 0.5, staircase=True),
                              "increment cast scale floor fill_constant elementwise_pow scale"),
    "exponential": (lambda: L.exponential_decay(0.1, 10, 0.5),
                    "increment cast scale fill_constant elementwise_pow scale"),
    "natural_exp_staircase": (lambda: L.natural_exp_decay(0.1, 10, 0.5, staircase=True),
                              "increment cast scale floor scale exp scale"),
    "inverse_time_staircase": (lambda: L.inverse_time_decay(0.1, 10, 0.5, staircase=True),
                               "increment cast scale floor scale scale fill_constant elementwise_div"),
    "polynomial": (lambda: L.polynomial_decay(0.1, 10, 0.001, 2.0),
                   "increment cast fill_constant elementwise_min scale scale fill_constant elementwise_pow scale "
                   "scale"),
    "polynomial_cycle": (lambda: L.polynomial_decay(0.1, 10, 0.001, 2.0, cycle=True),
                         "increment cast scale ceil fill_constant fill_constant equal logical_not conditional_block "
                         "scale elementwise_div scale fill_constant elementwise_pow scale scale"),
    "noam": (lambda: L.noam_decay(16, 4),
             "increment cast fill_constant elementwise_pow scale elementwise_min scale"),
    "cosine": (lambda: L.cosine_decay(0.1, 10, 5), "increment cast scale floor scale scale cos scale scale"),
}


@pytest.mark.parametrize("name", sorted(PADDLE18_OP_TYPES))
def test_schedule_op_types_as_paddle18(name):
    build, want = PADDLE18_OP_TYPES[name]
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        build()
    assert [op.type for op in main.global_block().ops] == want.split()


def test_piecewise_decay_structure():
    _, main, startup, lr = lr_values(lambda: L.piecewise_decay([3, 6], [0.1, 0.01, 0.001]), 1)
    ops = main.global_block().ops
    types = [op.type for op in ops]
    assert types[:2] == ["increment", "cast"]
    assert types.count("less_than") == 2 and types.count("conditional_block") == 3
    conds = [op for op in ops if op.type == "conditional_block"]
    assert [op.attr("sub_block").idx for op in conds] == [1, 2, 3]
    for op in conds:
        sub = op.attr("sub_block")
        assert sub.parent_idx == 0
        assert [o.type for o in sub.ops] == ["assign"]
        assert op.output("Out") == [lr.name] and op.attr("is_scalar_condition") is True
        assert op.input("Input") == sub.ops[0].input("X")
    assert main.global_block().var(lr.name).persistable
    fills = {op.output("Out")[0]: op.attr("value") for op in startup.global_block().ops}
    assert fills[lr.name] == 0.0


def test_counter_is_shared_by_schedules():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        a = L.exponential_decay(1.0, 2, 0.5)
        b = L.inverse_time_decay(1.0, 2, 0.5)
    types = [op.type for op in main.global_block().ops]
    assert types.count("increment") == 1 and types[0] == "increment"
    assert [op.type for op in startup.global_block().ops].count("fill_constant") == 1
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    for s in range(3):
        va, vb = exe.run(main, fetch_list=[a, b], scope=scope)
        assert va[0] == pytest.approx(0.5 ** (s / 2)) and vb[0] == pytest.approx(1 / (1 + 0.5 * s / 2))


def test_schedule_drives_optimizer():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        loss = L.mean(L.fc(x, 1, param_attr=fluid.ParamAttr(name="w"), bias_attr=False))
        lr = L.piecewise_decay([2], [0.1, 0.01])
        ops, _ = fluid.optimizer.SGD(learning_rate=lr).minimize(loss)
    sgd = [op for op in ops if op.type == "sgd"][0]
    assert sgd.input("LearningRate") == [lr.name]
    assert not main.global_block().has_var("learning_rate_1")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    w = np.array(scope.find_var("w").get_tensor())
    xv = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    for s in range(4):
        (w_new,) = exe.run(main, feed={"x": xv}, fetch_list=["w"], scope=scope)
        w = w - (0.1 if s < 2 else 0.01) * xv.mean(0).reshape(2, 1)
        np.testing.assert_allclose(w_new, w, rtol=1e-6)


def test_program_with_sub_blocks_round_trips_through_json():
    _, main, startup, lr = lr_values(lambda: L.piecewise_decay([1, 2], [3.0, 2.0, 1.0]), 1)
    clone = fluid.Program.from_json(main.to_json())
    assert clone.to_json() == main.to_json()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    vals = [float(exe.run(clone, fetch_list=[lr.name], scope=scope)[0][0]) for _ in range(4)]
    assert vals == [3.0, 2.0, 1.0, 1.0]
    # clone(for_test) drops the schedule
    assert all(op.attr("op_role") != OpRole.LRSched for op in main.clone(for_test=True).global_block().ops)


def test_schedule_argument_errors():
    with pytest.raises(ValueError, match="len\\(values\\)"):
        L.piecewise_decay([1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="decay_steps"):
        L.exponential_decay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match="non-decreasing"):
        L.piecewise_decay([3, 1], [0.1, 0.2, 0.3])


# ------------------------------------------------------------------ control-flow ops and layers
@pytest.mark.parametrize("op,ref", [("less_than", np.less), ("less_equal", np.less_equal),
                                    ("greater_than", np.greater), ("greater_equal", np.greater_equal),
                                    ("equal", np.equal), ("not_equal", np.not_equal)])
def test_compare_ops(op, ref):
    x = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    y = np.array([2.0, 2.0, 2.0])
    out = run_op(op, {"X": x, "Y": y})["Out"][0]
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, ref(x, y))
    np.testing.assert_array_equal(run_op(op, {"X": x, "Y": x[::-1].copy()})["Out"][0], ref(x, x[::-1]))


@pytest.mark.parametrize("op,ref", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                    ("logical_xor", np.logical_xor)])
def test_logical_ops(op, ref):
    x = np.array([True, True, False, False])
    y = np.array([True, False, True, False])
    np.testing.assert_array_equal(run_op(op, {"X": x, "Y": y})["Out"][0], ref(x, y))
    np.testing.assert_array_equal(run_op("logical_not", {"X": x})["Out"][0], ~x)


def _run(main, startup, fetch, feed=None, steps=1):
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    return [exe.run(main, feed=feed or {}, fetch_list=fetch, scope=scope) for _ in range(steps)]


def test_switch_picks_first_true_case_then_default():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[1], dtype="float32")
        out = main.global_block().create_var(name="out", shape=[1], dtype="float32")
        consts = {}
        for v in (0.0, 10.0, 1.0, 2.0, 3.0):
            c = main.global_block().create_var(name="c%g" % v, shape=[1], dtype="float32")
            main.global_block().append_op("fill_constant", outputs={"Out": [c]},
                                          attrs={"shape": [1], "value": v, "dtype": "float32"})
            consts[v] = c
        with cf.Switch() as switch:
            with switch.case(cf.less_than(x, consts[0.0])):
                main.current_block().append_op("assign", inputs={"X": [consts[1.0]]}, outputs={"Out": [out]})
            with switch.case(cf.less_than(x, consts[10.0])):
                main.current_block().append_op("assign", inputs={"X": [consts[2.0]]}, outputs={"Out": [out]})
            with switch.default():
                main.current_block().append_op("assign", inputs={"X": [consts[3.0]]}, outputs={"Out": [out]})
    assert main.num_blocks == 4 and main.current_block_idx == 0
    exe, scope = fluid.Executor(), fluid.Scope()
    for xv, want in ((-5.0, 1.0), (5.0, 2.0), (50.0, 3.0), (-1.0, 1.0)):
        (got,) = exe.run(main, feed={"x": np.array([xv], np.float32)}, fetch_list=[out], scope=scope)
        assert got[0] == want, xv
    with pytest.raises(ValueError, match="at least one Switch.case"):
        with cf.Switch() as s:
            s.default()
    with pytest.raises(ValueError, match="inside"):
        cf.Switch().case(x)


def test_cond_both_branches():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[2], dtype="float32")
        zero = main.global_block().create_var(name="zero", shape=[1], dtype="float32")
        main.global_block().append_op("fill_constant", outputs={"Out": [zero]},
                                      attrs={"shape": [1], "value": 0.0, "dtype": "float32"})
        s = L.reduce_sum(x)
        pred = cf.greater_than(s, zero)
        out = cf.cond(pred, lambda: L.scale(x, 2.0), lambda: L.scale(x, -1.0))
        pair = cf.cond(pred, lambda: (L.scale(x, 1.0), s), lambda: (x, L.scale(s, 0.0)))
    assert isinstance(pair, tuple) and len(pair) == 2
    exe, scope = fluid.Executor(), fluid.Scope()
    got = exe.run(main, feed={"x": np.array([1.0, 2.0], np.float32)}, fetch_list=[out, pair[1]], scope=scope)
    np.testing.assert_allclose(got[0], [2.0, 4.0])
    np.testing.assert_allclose(got[1], [3.0])
    got = exe.run(main, feed={"x": np.array([-1.0, -2.0], np.float32)}, fetch_list=[out, pair[1]], scope=scope)
    np.testing.assert_allclose(got[0], [1.0, 2.0])
    np.testing.assert_allclose(got[1], [0.0])
    with pytest.raises(ValueError, match="returns 1 outputs but false_fn returns 2"):
        with fluid.program_guard(main, startup):
            cf.cond(pred, lambda: x, lambda: (x, x))


def test_conditional_block_non_scalar_condition_and_errors():
    main = fluid.Program()
    b = main.global_block()
    b.create_var(name="c", shape=[-1], dtype="float32")
    b.create_var(name="out", shape=[1], dtype="float32", persistable=True)
    sub = main._create_block()
    sub.append_op("fill_constant", outputs={"Out": ["out"]}, attrs={"shape": [1], "value": 7.0})
    main._rollback()
    b.append_op("conditional_block", inputs={"Cond": ["c"]}, outputs={"Out": ["out"]},
                attrs={"sub_block": sub, "is_scalar_condition": False})
    exe, scope = fluid.Executor(), fluid.Scope()
    scope.var("out").set_value(np.zeros(1, np.float32))
    (got,) = exe.run(main, feed={"c": np.zeros(0, np.float32)}, fetch_list=["out"], scope=scope)
    assert got[0] == 0.0       # an empty condition tensor: not run
    (got,) = exe.run(main, feed={"c": np.zeros(3, np.float32)}, fetch_list=["out"], scope=scope)
    assert got[0] == 7.0
    b.ops[-1]._set_attr("is_scalar_condition", True)
    with pytest.raises(ValueError, match="must hold one value"):
        exe.run(main, feed={"c": np.zeros(3, np.float32)}, fetch_list=["out"], scope=scope)


def test_autoincreased_step_counter_and_increment():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        c = cf.autoincreased_step_counter(begin=5, step=2)
        again = cf.autoincreased_step_counter()
        x = fluid.data(name="x", shape=[1], dtype="float32")
        y = cf.increment(x, 3.0, in_place=False)
    assert again is c and c.name == "@STEP_COUNTER@"
    assert [op.type for op in main.global_block().ops] == ["increment", "increment"]
    res = _run(main, startup, [c, y], feed={"x": np.array([1.0], np.float32)}, steps=3)
    assert [int(r[0][0]) for r in res] == [5, 7, 9]
    assert res[0][1][0] == 4.0
