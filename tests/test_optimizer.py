"""Optimizers: update rules against NumPy, graph structure (op roles, slots, accumulator names), and
row-sparse (SelectedRows) gradients against dense ones."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.core.tensor import SelectedRows
from fluidist.framework.op_role import OpRole
from fluidist.ops import registry

RTOL = 1e-5


# ------------------------------------------------------------------ NumPy reference rules
def ref_sgd(p, g, s, lr, t):
    return p - lr * g


def ref_momentum(mu, nesterov=False):
    def rule(p, g, s, lr, t):
        v = s["v"] = mu * s.get("v", 0.0) + g
        return p - (g + mu * v) * lr if nesterov else p - lr * v
    return rule


def ref_adam(b1=0.9, b2=0.999, eps=1e-8):
    def rule(p, g, s, lr, t):
        m1 = s["m1"] = b1 * s.get("m1", 0.0) + (1 - b1) * g
        m2 = s["m2"] = b2 * s.get("m2", 0.0) + (1 - b2) * g * g
        b1p, b2p = np.float32(b1) ** t, np.float32(b2) ** t   # the beta pows are float32 accumulators
        lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
        return p - lr_t * m1 / (np.sqrt(m2) + eps)        # (Paddle 1.8.5: epsilon unscaled)
    return rule


def ref_adamax(b1=0.9, b2=0.999, eps=1e-8):
    def rule(p, g, s, lr, t):
        m = s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        u = s["u"] = np.maximum(b2 * s.get("u", 0.0) + eps, np.abs(g))
        return p - lr / (1 - np.float32(b1) ** t) * m / u
    return rule


def ref_adagrad(eps=1e-6, init=0.0):
    def rule(p, g, s, lr, t):
        m = s["m"] = s.get("m", init) + g * g
        return p - lr * g / (np.sqrt(m) + eps)
    return rule


def ref_decayed_adagrad(decay=0.95, eps=1e-6):
    def rule(p, g, s, lr, t):
        m = s["m"] = decay * s.get("m", 0.0) + (1 - decay) * g * g
        return p - lr * g / (np.sqrt(m) + eps)
    return rule


def ref_rmsprop(rho=0.95, eps=1e-6, momentum=0.0, centered=False):
    def rule(p, g, s, lr, t):
        ms = s["ms"] = rho * s.get("ms", 0.0) + (1 - rho) * g * g
        if centered:
            mg = s["mg"] = rho * s.get("mg", 0.0) + (1 - rho) * g
            denom = np.sqrt(ms - mg * mg + eps)
        else:
            denom = np.sqrt(ms + eps)
        mom = s["mom"] = momentum * s.get("mom", 0.0) + lr * g / denom
        return p - mom
    return rule


def ref_ftrl(l1=0.0, l2=0.0, power=-0.5):
    def rule(p, g, s, lr, t):
        sq = s.get("sq", np.zeros_like(p))
        new_sq = sq + g * g
        if power == -0.5:
            dpow = np.sqrt(new_sq) - np.sqrt(sq)
            y = np.sqrt(new_sq) / lr + 2 * l2
        else:
            dpow = new_sq ** -power - sq ** -power
            y = new_sq ** -power / lr + 2 * l2
        lin = s["lin"] = s.get("lin", 0.0) + g - dpow / lr * p
        s["sq"] = new_sq
        return np.where(np.abs(lin) > l1, (l1 * np.sign(lin) - lin) / y, 0.0)
    return rule


def ref_lamb(wd=0.01, b1=0.9, b2=0.999, eps=1e-6):
    def rule(p, g, s, lr, t):
        m1 = s["m1"] = b1 * s.get("m1", 0.0) + (1 - b1) * g
        m2 = s["m2"] = b2 * s.get("m2", 0.0) + (1 - b2) * g * g
        r = m1 / (np.sqrt(m2) + eps) + wd * p   # Paddle 1.8's lamb: no bias correction
        pn, rn = np.linalg.norm(p), np.linalg.norm(r)
        trust = pn / rn if pn > 0 and rn > 0 else 1.0
        return p - lr * trust * r
    return rule


def ref_lars(mu, coeff=0.001, wd=0.0005):
    def rule(p, g, s, lr, t):
        pn, gn = np.linalg.norm(p), np.linalg.norm(g)
        local = lr * coeff * pn / (gn + wd * pn) if pn > 0 and gn > 0 else lr
        v = s["v"] = mu * s.get("v", 0.0) + local * (g + wd * p)
        return p - v
    return rule


O = fluid.optimizer
CASES = {
    "sgd": (lambda lr: O.SGD(learning_rate=lr), ref_sgd),
    "momentum": (lambda lr: O.Momentum(learning_rate=lr, momentum=0.9), ref_momentum(0.9)),
    "nesterov": (lambda lr: O.MomentumOptimizer(lr, 0.8, use_nesterov=True), ref_momentum(0.8, True)),
    "adam": (lambda lr: O.Adam(learning_rate=lr), ref_adam()),
    "adam_betas": (lambda lr: O.AdamOptimizer(lr, beta1=0.5, beta2=0.7, epsilon=1e-4), ref_adam(0.5, 0.7, 1e-4)),
    "adamax": (lambda lr: O.Adamax(learning_rate=lr), ref_adamax()),
    "adagrad": (lambda lr: O.Adagrad(learning_rate=lr), ref_adagrad()),
    "adagrad_init": (lambda lr: O.AdagradOptimizer(lr, initial_accumulator_value=0.5), ref_adagrad(init=0.5)),
    "decayed_adagrad": (lambda lr: O.DecayedAdagrad(learning_rate=lr, decay=0.9), ref_decayed_adagrad(0.9)),
    "rmsprop": (lambda lr: O.RMSProp(learning_rate=lr), ref_rmsprop()),
    "rmsprop_centered": (lambda lr: O.RMSPropOptimizer(lr, rho=0.9, epsilon=1e-4, momentum=0.5, centered=True),
                         ref_rmsprop(0.9, 1e-4, 0.5, True)),
    "ftrl": (lambda lr: O.Ftrl(learning_rate=lr, l1=0.01, l2=0.1), ref_ftrl(0.01, 0.1)),
    "ftrl_power": (lambda lr: O.FtrlOptimizer(lr, l1=0.0, l2=0.05, lr_power=-0.7), ref_ftrl(0.0, 0.05, -0.7)),
    "lamb": (lambda lr: O.Lamb(learning_rate=lr), ref_lamb()),
    "lars": (lambda lr: O.LarsMomentum(learning_rate=lr, momentum=0.9), ref_lars(0.9)),
}


# ------------------------------------------------------------------ a small fc model
def build_model(make_opt, dtype="float64", lr=0.05, hidden=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 4], dtype=dtype)
        y = fluid.data(name="y", shape=[None, 2], dtype=dtype)
        h = fluid.layers.fc(input=x, size=hidden, act="tanh")
        pred = fluid.layers.fc(input=h, size=2)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
        opt = make_opt(lr)
        opt_ops, params_grads = opt.minimize(loss)
    return main, startup, loss, opt, opt_ops, params_grads


def batches(n, dtype="float64", seed=3):
    rng = np.random.RandomState(seed)
    return [{"x": rng.uniform(-1, 1, (5, 4)).astype(dtype), "y": rng.uniform(-1, 1, (5, 2)).astype(dtype)}
            for _ in range(n)]


def rel_err(a, b):
    return np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), 1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_update_rule_matches_numpy(case):
    make_opt, rule = CASES[case]
    lr = 0.05
    main, startup, loss, opt, _, params_grads = build_model(make_opt, lr=lr)
    names = sorted(p.name for p, _ in params_grads)
    assert names == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    ref = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    init = {n: ref[n].copy() for n in names}
    state = {n: {} for n in names}
    losses = []
    for t, feed in enumerate(batches(4), start=1):
        out = exe.run(main, feed=feed, fetch_list=[loss] + [n + "@GRAD" for n in names] + names, scope=scope)
        losses.append(float(out[0][0]))
        grads, new = out[1:1 + len(names)], out[1 + len(names):]
        for n, g, p_new in zip(names, grads, new):
            ref[n] = rule(ref[n], g, state[n], lr, t)
            assert rel_err(p_new, ref[n]) < RTOL, (case, n, t)
    # the parameters did move (so the comparison above compared updates, not constants)
    for n, p_new in zip(names, new):
        assert np.abs(p_new - init[n]).max() > 1e-4, (case, n)


@pytest.mark.parametrize("case", ["sgd", "momentum", "adam", "rmsprop"])
def test_float32_model(case):
    make_opt, rule = CASES[case]
    main, startup, loss, opt, _, params_grads = build_model(make_opt, dtype="float32", lr=0.05)
    names = sorted(p.name for p, _ in params_grads)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    ref = {n: np.array(scope.find_var(n).get_tensor()).astype(np.float64) for n in names}
    state = {n: {} for n in names}
    for t, feed in enumerate(batches(3, "float32"), start=1):
        out = exe.run(main, feed=feed, fetch_list=[n + "@GRAD" for n in names] + names, scope=scope)
        for n, g, p_new in zip(names, out[:len(names)], out[len(names):]):
            assert p_new.dtype == np.float32
            ref[n] = rule(ref[n], g.astype(np.float64), state[n], 0.05, t)
            assert rel_err(p_new, ref[n]) < 1e-4, (case, n, t)


def test_training_reduces_loss():
    main, startup, loss, *_ = build_model(lambda lr: O.Adam(learning_rate=lr), lr=0.05, hidden=8)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    feed = batches(1)[0]
    first = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0][0]
    for _ in range(60):
        last = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0][0]
    assert last < 0.3 * first


# ------------------------------------------------------------------ graph structure
def test_adam_ops_roles_and_slots():
    main, startup, loss, opt, opt_ops, params_grads = build_model(lambda lr: O.Adam(learning_rate=lr))
    ops = main.global_block().ops
    types = [op.type for op in ops]
    first_opt = types.index("adam")
    # Paddle 1.8: the adam op advances the beta powers itself, no scale ops
    assert types[first_opt:] == ["adam"] * 4
    assert [op.type for op in opt_ops] == ["adam"] * 4
    params = ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    for i, p in enumerate(params):
        op = ops[first_opt + i]
        assert op.attr("op_role") == OpRole.Optimize
        assert op.attr("op_role_var") == [p, p + "@GRAD"]
        assert op.input("Param") == [p] and op.output("ParamOut") == [p]
        assert op.input("Grad") == [p + "@GRAD"]
        assert op.input("LearningRate") == ["learning_rate_0"]
        # accumulators are named as Paddle names them: <param>_<accumulator>_<n>
        assert op.input("Moment1") == op.output("Moment1Out") == [p + "_moment1_0"]
        assert op.input("Moment2") == op.output("Moment2Out") == [p + "_moment2_0"]
        assert op.input("Beta1Pow") == op.output("Beta1PowOut") == [p + "_beta1_pow_acc_0"]
        assert op.input("Beta2Pow") == op.output("Beta2PowOut") == [p + "_beta2_pow_acc_0"]
        assert op.attr("beta1") == 0.9 and op.attr("beta2") == 0.999 and op.attr("epsilon") == 1e-8
        assert op.attr("lazy_mode") is False and op.attr("min_row_size_to_use_multithread") == 1000
    b = main.global_block()
    assert b.var("fc_0.b_0_beta1_pow_acc_0").shape == (1,) and b.var("fc_0.w_0_moment1_0").shape == (4, 3)
    assert all(b.var(n).persistable for n in opt.get_opti_var_name_list())
    # startup fills the accumulators: beta pows with beta1 / beta2, moments with 0
    fills = {op.output("Out")[0]: op.attr("value") for op in startup.global_block().ops if op.type == "fill_constant"}
    assert fills["fc_1.b_0_beta1_pow_acc_0"] == pytest.approx(0.9)
    assert fills["fc_1.b_0_beta2_pow_acc_0"] == pytest.approx(0.999)
    assert fills["fc_1.w_0_moment2_0"] == 0.0 and fills["learning_rate_0"] == pytest.approx(0.05)
    main.lint()


@pytest.mark.parametrize("make_opt,op_type,slots", [
    (lambda lr: O.Momentum(lr, 0.9), "momentum", {"Velocity": ("VelocityOut", "velocity")}),
    (lambda lr: O.Adagrad(lr), "adagrad", {"Moment": ("MomentOut", "moment")}),
    (lambda lr: O.DecayedAdagrad(lr), "decayed_adagrad", {"Moment": ("MomentOut", "moment")}),
    (lambda lr: O.RMSProp(lr), "rmsprop", {"Moment": ("MomentOut", "momentum"),
                                           "MeanSquare": ("MeanSquareOut", "mean_square"),
                                           "MeanGrad": ("MeanGradOut", "mean_grad")}),
    (lambda lr: O.Adamax(lr), "adamax", {"Moment": ("MomentOut", "moment"), "InfNorm": ("InfNormOut", "inf_norm")}),
    (lambda lr: O.Ftrl(lr), "ftrl", {"SquaredAccumulator": ("SquaredAccumOut", "squared"),
                                     "LinearAccumulator": ("LinearAccumOut", "linear")}),
])
def test_update_op_slots_and_accumulator_names(make_opt, op_type, slots):
    main, startup, loss, opt, opt_ops, _ = build_model(make_opt)
    upd = [op for op in main.global_block().ops if op.type == op_type]
    assert [op.input("Param")[0] for op in upd] == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    for i, op in enumerate(upd):
        p = op.input("Param")[0]
        assert op.attr("op_role") == OpRole.Optimize and op.attr("op_role_var") == [p, p + "@GRAD"]
        for in_slot, (out_slot, acc) in slots.items():
            assert op.input(in_slot) == op.output(out_slot) == ["%s_%s_0" % (p, acc)]
            assert main.global_block().var("%s_%s_0" % (p, acc)).shape == main.global_block().var(p).shape
    # op attrs are the registered ones
    assert set(upd[0].attrs) - {"op_role", "op_role_var", "op_namescope"} == set(registry.get(op_type).attrs)


def test_momentum_and_rmsprop_attrs():
    main, *_ = build_model(lambda lr: O.MomentumOptimizer(lr, 0.7, use_nesterov=True))
    op = [o for o in main.global_block().ops if o.type == "momentum"][0]
    assert op.attr("mu") == pytest.approx(0.7) and op.attr("use_nesterov") is True
    main, *_ = build_model(lambda lr: O.RMSPropOptimizer(lr, rho=0.8, epsilon=1e-3, momentum=0.1, centered=True))
    op = [o for o in main.global_block().ops if o.type == "rmsprop"][0]
    assert (op.attr("decay"), op.attr("epsilon"), op.attr("momentum"), op.attr("centered")) == \
        (pytest.approx(0.8), pytest.approx(1e-3), pytest.approx(0.1), True)


def test_named_optimizer_prefixes_accumulators():
    main, *_ = build_model(lambda lr: O.Momentum(lr, 0.9, name="opt"))
    names = [n for n in main.global_block().vars if n.endswith("_opt_velocity_0")]
    assert names and all(main.global_block().var(n).persistable for n in names)


def test_param_learning_rate_scales_lr():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float64")
        pred = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(name="w", learning_rate=2.0),
                               bias_attr=fluid.ParamAttr(name="b"))
        loss = fluid.layers.mean(pred)
        O.SGD(0.1).minimize(loss)
    ops = main.global_block().ops
    sgd = {op.input("Param")[0]: op for op in ops if op.type == "sgd"}
    assert sgd["b"].input("LearningRate") == ["learning_rate_0"]
    lr_w = sgd["w"].input("LearningRate")[0]
    scale = [op for op in ops if op.type == "scale" and op.output("Out") == [lr_w]][0]
    assert scale.input("X") == ["learning_rate_0"] and scale.attr("scale") == 2.0
    assert scale.attr("op_role") == OpRole.LRSched | OpRole.Optimize
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    w0 = np.array(scope.find_var("w").get_tensor())
    b0 = np.array(scope.find_var("b").get_tensor())
    xv = np.random.RandomState(0).rand(4, 3)
    w1, b1 = exe.run(main, feed={"x": xv}, fetch_list=["w", "b"], scope=scope)
    # d mean(x w + b) / dw = mean of x over rows; / db = 1
    np.testing.assert_allclose(w1, w0 - 0.2 * xv.mean(0).reshape(3, 1), rtol=1e-12)
    np.testing.assert_allclose(b1, b0 - 0.1, rtol=1e-12)


def test_non_trainable_param_is_not_updated_and_minimize_returns_pairs():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        pred = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(name="w", trainable=False),
                               bias_attr=fluid.ParamAttr(name="b"))
        loss = fluid.layers.mean(pred)
        ops, pairs = O.Momentum(0.1, 0.9).minimize(loss)
    assert [p.name for p, g in pairs] == ["b"]
    assert [op.input("Param") for op in ops if op.type == "momentum"] == [["b"]]


def test_learning_rate_variable_and_errors():
    with pytest.raises(TypeError, match="learning_rate"):
        O.SGD(learning_rate="0.1")
    with pytest.raises(TypeError, match="grad_clip"):
        O.SGD(0.1, grad_clip=1.0)
    with pytest.raises(ValueError, match="beta1"):
        O.Adam(0.1, beta1=1.0)
    other = fluid.Program()
    with fluid.program_guard(other, fluid.Program()):
        lr_other = fluid.layers.exponential_decay(0.1, 10, 0.5)
    with pytest.raises(ValueError, match="another program"):
        build_model(lambda lr: O.SGD(learning_rate=lr_other))


def test_lr_var_with_wrong_size_is_named():
    prog = fluid.Program()
    b = prog.global_block()
    b.create_var(name="p", shape=[3], dtype="float64", persistable=True)
    b.create_var(name="g", shape=[3], dtype="float64")
    b.create_var(name="lr", shape=[2], dtype="float64")
    b.append_op("sgd", inputs={"Param": ["p"], "Grad": ["g"], "LearningRate": ["lr"]}, outputs={"ParamOut": ["p"]})
    with pytest.raises(ValueError, match="LearningRate 'lr'"):
        fluid.Executor().run(prog, feed={"p": np.zeros(3), "g": np.ones(3), "lr": np.ones(2)}, scope=fluid.Scope())


def test_grad_shape_mismatch_is_named():
    prog = fluid.Program()
    b = prog.global_block()
    for n, s in (("p", [3]), ("g", [4]), ("lr", [1]), ("v", [3])):
        b.create_var(name=n, shape=s, dtype="float64")
    b.append_op("momentum", inputs={"Param": ["p"], "Grad": ["g"], "LearningRate": ["lr"], "Velocity": ["v"]},
                outputs={"ParamOut": ["p"], "VelocityOut": ["v"]})
    with pytest.raises(ValueError, match="Grad 'g' has shape \\[4\\] but parameter 'p'"):
        fluid.Executor().run(prog, feed={"p": np.zeros(3), "g": np.ones(4), "lr": np.ones(1), "v": np.zeros(3)},
                             scope=fluid.Scope())


# ------------------------------------------------------------------ SelectedRows gradients at the op level
OP_CASES = {
    "sgd": ({}, (), {}),
    "momentum": ({"Velocity": "VelocityOut"}, (), {"mu": 0.9}),
    "momentum_nesterov": ({"Velocity": "VelocityOut"}, (), {"mu": 0.9, "use_nesterov": True}),
    "lars_momentum": ({"Velocity": "VelocityOut"}, (), {"mu": 0.9}),
    "adagrad": ({"Moment": "MomentOut"}, (), {}),
    "decayed_adagrad": ({"Moment": "MomentOut"}, (), {}),
    "adam": ({"Moment1": "Moment1Out", "Moment2": "Moment2Out"}, ("Beta1Pow", "Beta2Pow"), {}),
    "adamax": ({"Moment": "MomentOut", "InfNorm": "InfNormOut"}, ("Beta1Pow",), {}),
    "rmsprop": ({"Moment": "MomentOut", "MeanSquare": "MeanSquareOut", "MeanGrad": "MeanGradOut"}, (),
                {"centered": True, "momentum": 0.3}),
    "lamb": ({"Moment1": "Moment1Out", "Moment2": "Moment2Out"}, ("Beta1Pow", "Beta2Pow"), {}),
}


def run_update(op_type, param, grads, accs, scalars, attrs, lr=0.1):
    """Run one update op ``len(grads)`` times (one gradient per run); returns param and accumulators."""
    prog = fluid.Program()
    b = prog.global_block()
    scope = fluid.Scope()
    sparse = isinstance(grads[0], SelectedRows)
    b.create_var(name="p", shape=param.shape, dtype="float64", persistable=True)
    b.create_var(name="g", shape=param.shape, dtype="float64",
                 type="SELECTED_ROWS" if sparse else "LOD_TENSOR")
    b.create_var(name="lr", shape=[1], dtype="float64", persistable=True)
    ins = {"Param": ["p"], "Grad": ["g"], "LearningRate": ["lr"]}
    outs = {"ParamOut": ["p"]}
    scope.var("p").set_value(param.copy())
    scope.var("lr").set_value(np.array([lr]))
    for s, o in accs.items():
        b.create_var(name=s, shape=param.shape, dtype="float64", persistable=True)
        ins[s], outs[o] = [s], [s]
        scope.var(s).set_value(np.full(param.shape, 0.1 if s == "InfNorm" else 0.0))
    for s, v in scalars.items():
        b.create_var(name=s, shape=[1], dtype="float32", persistable=True)
        ins[s] = [s]
    b.append_op(op_type, inputs=ins, outputs=outs, attrs=attrs)
    exe = fluid.Executor()
    for t, g in enumerate(grads, start=1):
        for s, v in scalars.items():
            scope.var(s).set_value(np.array([v ** t], dtype=np.float32))
        scope.var("g").set_value(g)
        exe.run(prog, scope=scope)
    return {n: np.array(scope.find_var(n).get_tensor()) for n in ["p"] + list(accs)}


def sparse_and_dense_grads(rng, height=6, width=3, steps=3):
    """Per step a SelectedRows gradient with a repeated row and its dense equivalent."""
    sparse, dense = [], []
    for _ in range(steps):
        rows = np.array([4, 1, 4, 0], dtype=np.int64)
        value = rng.uniform(-1, 1, (4, width))
        sparse.append(SelectedRows(rows, value, height))
        d = np.zeros((height, width))
        np.add.at(d, rows, value)
        dense.append(d)
    return sparse, dense


@pytest.mark.parametrize("op_type", sorted(OP_CASES))
def test_sparse_gradient_matches_dense(op_type):
    accs, scalar_slots, attrs = OP_CASES[op_type]
    scalars = {"Beta1Pow": 0.9, "Beta2Pow": 0.999}
    scalars = {s: scalars[s] for s in scalar_slots}
    rng = np.random.RandomState(5)
    param = rng.uniform(-1, 1, (6, 3))
    sparse, dense = sparse_and_dense_grads(rng)
    real_op = op_type.split("_nesterov")[0]
    got = run_update(real_op, param, sparse, accs, scalars, attrs)
    want = run_update(real_op, param, dense, accs, scalars, attrs)
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-12, atol=1e-14, err_msg="%s %s" % (op_type, n))
    # the rows with a gradient moved
    assert not np.allclose(got["p"][[0, 1, 4]], param[[0, 1, 4]])


def test_adam_lazy_mode_updates_only_present_rows():
    rng = np.random.RandomState(2)
    param = rng.uniform(-1, 1, (6, 3))
    sparse, dense = sparse_and_dense_grads(rng, steps=1)
    accs = {"Moment1": "Moment1Out", "Moment2": "Moment2Out"}
    scalars = {"Beta1Pow": 0.9, "Beta2Pow": 0.999}
    # first step a full gradient (every row has moments), then a sparse one
    full = rng.uniform(-1, 1, (6, 3))
    lazy = run_update("adam", param, [full, sparse[0]], accs, scalars, {"lazy_mode": True})
    dense_run = run_update("adam", param, [full, dense[0]], accs, scalars, {"lazy_mode": True})
    once = run_update("adam", param, [full], accs, scalars, {"lazy_mode": True})
    absent, present = [2, 3, 5], [0, 1, 4]
    for n in lazy:
        np.testing.assert_allclose(lazy[n][absent], once[n][absent], rtol=0, atol=0)
        np.testing.assert_allclose(lazy[n][present], dense_run[n][present], rtol=1e-12)
    # the dense second step moved the absent rows: lazy mode is really different
    assert not np.allclose(dense_run["p"][absent], once["p"][absent])


@pytest.mark.parametrize("op_type,accs", [("sgd", {}), ("adagrad", {"Moment": "MomentOut"}),
                                          ("ftrl", {"SquaredAccumulator": "SquaredAccumOut",
                                                    "LinearAccumulator": "LinearAccumOut"})])
def test_row_wise_ops_leave_absent_rows_alone(op_type, accs):
    rng = np.random.RandomState(4)
    param = rng.uniform(-1, 1, (6, 3))
    sparse, dense = sparse_and_dense_grads(rng)
    got = run_update(op_type, param, sparse, accs, {}, {"l1": 0.01, "l2": 0.1} if op_type == "ftrl" else {})
    np.testing.assert_array_equal(got["p"][[2, 3, 5]], param[[2, 3, 5]])
    # the present rows follow the dense rule on them (row-wise rules)
    want = run_update(op_type, param[[0, 1, 4]], [d[[0, 1, 4]] for d in dense], accs, {},
                      {"l1": 0.01, "l2": 0.1} if op_type == "ftrl" else {})
    np.testing.assert_allclose(got["p"][[0, 1, 4]], want["p"], rtol=1e-12)


def test_sparse_gradient_height_checked():
    with pytest.raises(ValueError, match="height 7 but parameter 'p' has 6 rows"):
        run_update("sgd", np.zeros((6, 2)), [SelectedRows(np.array([1]), np.ones((1, 2)), 7)], {}, {}, {})


def test_empty_sparse_gradient_changes_nothing():
    p = np.arange(6.0).reshape(3, 2)
    got = run_update("adam", p, [SelectedRows(np.zeros(0, np.int64), np.zeros((0, 2)), 3)],
                     {"Moment1": "Moment1Out", "Moment2": "Moment2Out"}, {"Beta1Pow": 0.9, "Beta2Pow": 0.999},
                     {"lazy_mode": True})
    np.testing.assert_array_equal(got["p"], p)


# ------------------------------------------------------------------ sparse embedding vs dense embedding
def _embedding_model(is_sparse, make_opt):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup):
        ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        emb = fluid.layers.embedding(input=ids, size=[10, 4], is_sparse=is_sparse,
                                     param_attr=fluid.ParamAttr(name="emb"))
        pred = fluid.layers.fc(input=emb, size=1, param_attr=fluid.ParamAttr(name="fc_w"),
                               bias_attr=fluid.ParamAttr(name="fc_b"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
        make_opt().minimize(loss)
    return main, startup, loss


def _train_embedding(is_sparse, make_opt, steps=4):
    main, startup, loss = _embedding_model(is_sparse, make_opt)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    rng = np.random.RandomState(0)
    for _ in range(steps):
        feed = {"ids": rng.choice([1, 3, 3, 5, 8], size=(6, 1)).astype(np.int64),
                "y": rng.uniform(-1, 1, (6, 1)).astype(np.float32)}
        exe.run(main, feed=feed, scope=scope)
    return {n: np.array(scope.find_var(n).get_tensor()) for n in ("emb", "fc_w", "fc_b")}


SPARSE_OPTS = {
    "sgd": lambda: O.SGD(0.1),
    "momentum": lambda: O.Momentum(0.1, 0.9),
    "adagrad": lambda: O.Adagrad(0.1),
    "adam": lambda: O.Adam(0.05),
    "rmsprop": lambda: O.RMSProp(0.05),
    "sgd_l2": lambda: O.SGD(0.1, regularization=fluid.regularizer.L2Decay(0.1)),
    "momentum_clip": lambda: O.Momentum(0.1, 0.9, grad_clip=fluid.clip.GradientClipByGlobalNorm(0.05)),
}


@pytest.mark.parametrize("case", sorted(SPARSE_OPTS))
def test_sparse_embedding_trains_like_dense(case):
    sparse = _train_embedding(True, SPARSE_OPTS[case])
    dense = _train_embedding(False, SPARSE_OPTS[case])
    for n in dense:
        np.testing.assert_allclose(sparse[n], dense[n], rtol=1e-5, atol=1e-6, err_msg=n)
    # the looked-up rows did train
    before = _train_embedding(True, SPARSE_OPTS[case], steps=0)["emb"]
    assert not np.allclose(sparse["emb"][[1, 3, 5, 8]], before[[1, 3, 5, 8]])


def test_sparse_embedding_adam_lazy_mode_keeps_unseen_rows():
    before = _train_embedding(True, lambda: O.Adam(0.05, lazy_mode=True), steps=0)["emb"]
    lazy = _train_embedding(True, lambda: O.Adam(0.05, lazy_mode=True))["emb"]
    dense = _train_embedding(False, lambda: O.Adam(0.05, lazy_mode=True))["emb"]
    unseen, seen = [0, 2, 4, 6, 7, 9], [1, 3, 5, 8]
    np.testing.assert_array_equal(lazy[unseen], before[unseen])
    assert not np.allclose(lazy[seen], before[seen])
    # a dense gradient has zeros for unseen rows, and Adam still moves them by their moments;
    # here they never had a gradient, so they stay put in both cases
    np.testing.assert_allclose(dense[unseen], before[unseen])


def test_each_optimizer_takes_the_next_learning_rate_name():
    # Paddle 1.8 names the global rates learning_rate_0, learning_rate_1, ... one per optimizer
    names = []
    for _ in range(3):
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup):
            x = fluid.data("x", [None, 3], "float32")
            fluid.optimizer.SGD(0.01).minimize(fluid.layers.mean(fluid.layers.fc(x, 2)))
        names += [n for n in main.global_block().vars if n.startswith("learning_rate")]
    assert names == ["learning_rate_0", "learning_rate_1", "learning_rate_2"]
