"""Weight decay (L1/L2) and gradient clipping (by value, norm, global norm): op lists, roles, numerics,
precedence rules, row-sparse gradients and the JSON form of programs holding them."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist import clip as C
from fluidist import regularizer as R
from fluidist.device.places import to_host
from fluidist.core.tensor import SelectedRows
from fluidist.framework.op_role import OpRole
from op_test import run_op

LR = 0.1
RNG = np.random.RandomState(9)
X = RNG.uniform(-1, 1, (5, 3))
Y = RNG.uniform(-1, 1, (5, 2))


def build(opt=None, w_attr=None, b_attr=None):
    """fc without activation: pred = x w + b; loss = mean((pred - y)^2)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float64")
        y = fluid.data(name="y", shape=[None, 2], dtype="float64")
        pred = fluid.layers.fc(x, 2, param_attr=w_attr or fluid.ParamAttr(name="w"),
                               bias_attr=b_attr or fluid.ParamAttr(name="b"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        ops, pairs = (opt or fluid.optimizer.SGD(LR)).minimize(loss)
    return main, startup, ops, pairs


def step(main, startup):
    """One step; returns (initial params, raw grads computed in NumPy, new params)."""
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    w0 = np.array(scope.find_var("w").get_tensor())
    b0 = np.array(scope.find_var("b").get_tensor())
    w1, b1 = exe.run(main, feed={"x": X, "y": Y}, fetch_list=["w", "b"], scope=scope)
    dpred = 2 * (X @ w0 + b0 - Y) / Y.size
    return {"w": w0, "b": b0}, {"w": X.T @ dpred, "b": dpred.sum(0)}, {"w": w1, "b": b1}


def after_backward(main):
    ops = main.global_block().ops
    last_bwd = max(i for i, op in enumerate(ops) if op.attr("op_role") & OpRole.Backward)
    return ops[last_bwd + 1:]


def check_guarded(ops):
    for op in ops:
        assert op.attr("op_role") == OpRole.Optimize, op.type
        p, g = op.attr("op_role_var")
        # the gradient named is the one the op works on: the raw one or its clipped version
        assert g.startswith(p + "@GRAD"), op.type
        if "Grad" in op.inputs:
            assert op.input("Grad") == [g]


# ------------------------------------------------------------------ regularizers
def test_l2_decay_ops_and_numerics():
    main, startup, _, _ = build(fluid.optimizer.SGD(LR, regularization=fluid.regularizer.L2Decay(0.3)))
    ops = after_backward(main)
    assert [op.type for op in ops] == ["scale", "sum", "scale", "sum", "sgd", "sgd"]
    check_guarded(ops)
    assert [op.attr("op_role_var")[0] for op in ops] == ["b", "b", "w", "w", "b", "w"]
    scale, add = ops[2], ops[3]
    assert scale.input("X") == ["w"] and scale.attr("scale") == pytest.approx(0.3)
    assert add.input("X") == ["w@GRAD"] + scale.output("Out") and add.output("Out") == ["w@GRAD"]
    assert add.output("Out") == ["w@GRAD"]                      # in place, as Paddle
    assert "regularization" in add.attr("op_namescope")
    assert ops[-1].input("Grad") == ["w@GRAD"]
    p0, g, p1 = step(main, startup)
    for n in "wb":
        np.testing.assert_allclose(p1[n], p0[n] - LR * (g[n] + 0.3 * p0[n]), rtol=1e-12)


def test_l1_decay_numerics():
    main, startup, _, _ = build(fluid.optimizer.SGD(LR, regularization=fluid.regularizer.L1DecayRegularizer(0.2)))
    assert [op.type for op in after_backward(main)][:3] == ["sign", "scale", "sum"]
    p0, g, p1 = step(main, startup)
    for n in "wb":
        np.testing.assert_allclose(p1[n], p0[n] - LR * (g[n] + 0.2 * np.sign(p0[n])), rtol=1e-12)


def test_param_attr_regularizer_wins():
    opt = fluid.optimizer.SGD(LR, regularization=fluid.regularizer.L2Decay(0.3))
    main, startup, _, _ = build(opt, w_attr=fluid.ParamAttr(name="w", regularizer=fluid.regularizer.L1Decay(0.2)))
    types = [(op.type, op.attr("op_role_var")[0]) for op in after_backward(main)]
    assert ("sign", "w") in types and ("sign", "b") not in types
    p0, g, p1 = step(main, startup)
    np.testing.assert_allclose(p1["w"], p0["w"] - LR * (g["w"] + 0.2 * np.sign(p0["w"])), rtol=1e-12)
    np.testing.assert_allclose(p1["b"], p0["b"] - LR * (g["b"] + 0.3 * p0["b"]), rtol=1e-12)
    # a ParamAttr built from a regularizer alone
    assert fluid.ParamAttr._to_attr(fluid.regularizer.L2Decay(0.5)).regularizer._regularization_coeff == 0.5


def test_regularizer_type_checked_and_str():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float64")
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        with pytest.raises(TypeError, match="WeightDecayRegularizer"):
            fluid.optimizer.SGD(LR, regularization=0.1).minimize(loss)
    assert str(R.L2Decay(0.5)) == "L2Decay, regularization_coeff=0.500000"


# ------------------------------------------------------------------ clipping
def test_clip_by_value_per_param_attr():
    main, startup, _, _ = build(w_attr=fluid.ParamAttr(name="w", gradient_clip=C.GradientClipByValue(0.05)))
    ops = after_backward(main)
    assert [op.type for op in ops] == ["clip", "sgd", "sgd"]
    check_guarded(ops)
    assert ops[0].input("X") == ["w@GRAD"] and ops[0].output("Out") == ["w@GRAD@CLIP"]
    assert (ops[0].attr("min"), ops[0].attr("max")) == (-0.05, 0.05)
    assert "gradient_clip" in ops[0].attr("op_namescope")
    assert ops[2].input("Grad") == ["w@GRAD@CLIP"] and ops[1].input("Grad") == ["b@GRAD"]
    p0, g, p1 = step(main, startup)
    assert np.abs(g["w"]).max() > 0.05          # the clip matters
    np.testing.assert_allclose(p1["w"], p0["w"] - LR * np.clip(g["w"], -0.05, 0.05), rtol=1e-12)
    np.testing.assert_allclose(p1["b"], p0["b"] - LR * g["b"], rtol=1e-12)


def test_clip_by_norm_with_set_gradient_clip():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float64")
        y = fluid.data(name="y", shape=[None, 2], dtype="float64")
        pred = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w"), bias_attr=fluid.ParamAttr(name="b"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        clip = C.GradientClipByNorm(clip_norm=0.1)
        C.set_gradient_clip(clip, param_list=["w"])
        fluid.optimizer.SGD(LR).minimize(loss)
    w = main.global_block().var("w")
    assert isinstance(w.gradient_clip_attr, C.GradientClipByNorm) and w.gradient_clip_attr is not clip
    assert main.global_block().var("b").gradient_clip_attr is None
    ops = after_backward(main)
    assert [op.type for op in ops] == ["clip_by_norm", "sgd", "sgd"]
    assert ops[0].attr("max_norm") == pytest.approx(0.1)
    p0, g, p1 = step(main, startup)
    norm = np.linalg.norm(g["w"])
    assert norm > 0.1
    np.testing.assert_allclose(p1["w"], p0["w"] - LR * g["w"] * 0.1 / norm, rtol=1e-12)


@pytest.mark.parametrize("clip_norm", [0.05, 100.0])
def test_clip_by_global_norm_through_optimizer(clip_norm):
    opt = fluid.optimizer.SGD(LR, grad_clip=C.GradientClipByGlobalNorm(clip_norm=clip_norm))
    # the optimizer's grad_clip wins over the parameter's own
    main, startup, _, _ = build(opt, w_attr=fluid.ParamAttr(name="w", gradient_clip=C.GradientClipByValue(1e-9)))
    ops = after_backward(main)
    assert [op.type for op in ops] == [
        "fill_constant", "squared_l2_norm", "squared_l2_norm", "sum", "sqrt", "elementwise_max",
        "elementwise_div", "elementwise_mul", "elementwise_mul", "sgd", "sgd"]
    check_guarded(ops)
    assert [op.attr("op_role_var")[0] for op in ops] == ["b", "b", "w", "b", "b", "b", "b", "b", "w", "b", "w"]
    assert ops[3].input("X") == ops[1].output("Out") + ops[2].output("Out")
    assert ops[8].input("X") == ["w@GRAD"] and ops[8].output("Out") == ops[10].input("Grad")
    p0, g, p1 = step(main, startup)
    gnorm = np.sqrt(sum((g[n] ** 2).sum() for n in "wb"))
    scale = clip_norm / max(clip_norm, gnorm)
    for n in "wb":
        np.testing.assert_allclose(p1[n], p0[n] - LR * g[n] * scale, rtol=1e-12)


def test_minimize_grad_clip_argument_and_group_check():
    main, startup, _, _ = build(fluid.optimizer.Momentum(LR, 0.9), w_attr=fluid.ParamAttr(name="w"))
    assert "clip" not in [op.type for op in main.global_block().ops]
    opt = fluid.optimizer.SGD(LR)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float64")
        pred = fluid.layers.fc(
            x, 2, param_attr=fluid.ParamAttr(name="w", gradient_clip=C.GradientClipByGlobalNorm(1.0)),
            bias_attr=fluid.ParamAttr(name="b", gradient_clip=C.GradientClipByGlobalNorm(2.0)))
        loss = fluid.layers.mean(pred)
        with pytest.raises(ValueError, match="same clip_norm"):
            opt.minimize(loss)
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float64")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        fluid.optimizer.SGD(LR).minimize(loss, grad_clip=C.GradientClipByValue(0.5))
    assert [op.type for op in main.global_block().ops].count("clip") == 2


def test_clip_then_regularization():
    opt = fluid.optimizer.SGD(LR, regularization=R.L2Decay(0.3), grad_clip=C.GradientClipByValue(0.02))
    main, startup, _, _ = build(opt)
    ops = after_backward(main)
    assert [op.type for op in ops] == ["clip", "clip", "scale", "sum", "scale", "sum",
                                       "sgd", "sgd"]
    # the decay is added to the clipped gradient, in place
    assert ops[5].input("X")[0] == ops[5].output("Out")[0] == "w@GRAD@CLIP"
    p0, g, p1 = step(main, startup)
    for n in "wb":
        np.testing.assert_allclose(p1[n], p0[n] - LR * (np.clip(g[n], -0.02, 0.02) + 0.3 * p0[n]), rtol=1e-12)


def test_clip_argument_errors():
    with pytest.raises(ValueError, match="min"):
        C.GradientClipByValue(max=1.0, min=2.0)
    with pytest.raises(ValueError, match="clip_norm"):
        C.GradientClipByNorm(0.0)
    with pytest.raises(TypeError, match="group_name"):
        C.GradientClipByGlobalNorm(1.0, group_name=3)
    with pytest.raises(TypeError, match="GradientClip"):
        C.set_gradient_clip(1.0)
    assert C.GradientClipByValue(2.0).min == -2.0


def test_params_with_clip_and_regularizer_round_trip_json():
    w_attr = fluid.ParamAttr(name="w", regularizer=R.L2Decay(0.25),
                             gradient_clip=C.GradientClipByGlobalNorm(3.0, "grp"))
    b_attr = fluid.ParamAttr(name="b", regularizer=R.L1Decay(0.5), gradient_clip=C.GradientClipByNorm(2.0))
    main, startup, _, _ = build(fluid.optimizer.Adam(0.01), w_attr=w_attr, b_attr=b_attr)
    text = main.to_json()
    back = fluid.Program.from_json(text)
    assert back.to_json() == text
    w, b = back.global_block().var("w"), back.global_block().var("b")
    assert isinstance(w.regularizer, R.L2DecayRegularizer) and w.regularizer._regularization_coeff == 0.25
    assert isinstance(w.gradient_clip_attr, C.GradientClipByGlobalNorm)
    assert (w.gradient_clip_attr.clip_norm, w.gradient_clip_attr.group_name) == (3.0, "grp")
    assert isinstance(b.regularizer, R.L1DecayRegularizer)
    assert isinstance(b.gradient_clip_attr, C.GradientClipByNorm) and b.gradient_clip_attr.clip_norm == 2.0
    # and the round-tripped program runs to the same result
    exe = fluid.Executor()
    outs = []
    for prog in (main, back):
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        exe.run(prog, feed={"x": X, "y": Y}, scope=scope)
        outs.append(exe.run(prog, feed={"x": X, "y": Y}, fetch_list=["w", "b"], scope=scope))
    for a, c in zip(*outs):
        np.testing.assert_array_equal(a, c)


# ------------------------------------------------------------------ norm ops and row-sparse gradients
def test_squared_l2_norm_and_clip_by_norm_ops():
    x = RNG.uniform(-1, 1, (4, 3))
    np.testing.assert_allclose(run_op("squared_l2_norm", {"X": x})["Out"][0], [(x ** 2).sum()])
    n = np.linalg.norm(x)
    np.testing.assert_allclose(run_op("clip_by_norm", {"X": x}, {"max_norm": n / 2})["Out"][0], x / 2, rtol=1e-12)
    np.testing.assert_allclose(run_op("clip_by_norm", {"X": x}, {"max_norm": n * 2})["Out"][0], x)
    np.testing.assert_array_equal(run_op("clip_by_norm", {"X": np.zeros((2, 2))})["Out"][0], np.zeros((2, 2)))


def _run_with_values(prog, values, fetch):
    scope = fluid.Scope()
    for k, v in values.items():
        scope.var(k).set_value(v)
    return fluid.Executor().run(prog, fetch_list=fetch, scope=scope, return_numpy=False)


def _sparse_grad():
    rows = np.array([3, 0, 3], dtype=np.int64)
    value = RNG.uniform(-1, 1, (3, 2))
    dense = np.zeros((5, 2))
    np.add.at(dense, rows, value)
    return SelectedRows(rows, value, 5), dense


def test_norm_ops_on_selected_rows():
    sr, dense = _sparse_grad()
    prog = fluid.Program()
    b = prog.global_block()
    b.create_var(name="g", shape=[5, 2], dtype="float64", type="SELECTED_ROWS")
    for n in ("sq", "clipped"):
        b.create_var(name=n, dtype="float64")
    b.append_op("squared_l2_norm", inputs={"X": ["g"]}, outputs={"Out": ["sq"]})
    b.append_op("clip_by_norm", inputs={"X": ["g"]}, outputs={"Out": ["clipped"]}, attrs={"max_norm": 0.5})
    sq, clipped = _run_with_values(prog, {"g": sr}, ["sq", "clipped"])
    np.testing.assert_allclose(np.array(sq), [(dense ** 2).sum()], rtol=1e-12)
    assert isinstance(clipped, SelectedRows) and sorted(clipped.rows.tolist()) == [0, 3]
    np.testing.assert_allclose(to_host(clipped.to_dense()), dense * 0.5 / np.linalg.norm(dense), rtol=1e-12)
    assert sr.value.shape == (3, 2)       # the input was not touched


def _sparse_param_program(reg=None, clip=None):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        b = main.global_block()
        p = b.create_parameter(name="emb", shape=[5, 2], dtype="float64")
        g = b.create_var(name="emb@GRAD", shape=[5, 2], dtype="float64", type="SELECTED_ROWS")
        pairs = [(p, g)]
        if clip is not None:
            pairs = C.append_gradient_clip_ops(pairs, clip)
        pairs = R.append_regularization_ops(pairs, reg)
    return main, pairs


def test_regularization_of_selected_rows_grad_is_dense():
    main, pairs = _sparse_param_program(R.L2Decay(0.3))
    ops = main.global_block().ops
    assert [op.type for op in ops] == ["scale", "sum"]
    new_grad = pairs[0][1]
    assert new_grad.name == "emb@GRAD@NEWGRAD" and new_grad.type == "LOD_TENSOR"
    assert ops[1].input("X") == ["emb@GRAD", ops[0].output("Out")[0]] and ops[1].output("Out") == [new_grad.name]
    check_guarded(ops)
    sr, dense = _sparse_grad()
    param = RNG.uniform(-1, 1, (5, 2))
    (out,) = _run_with_values(main, {"emb": param, "emb@GRAD": sr}, [new_grad.name])
    np.testing.assert_allclose(np.array(out), dense + 0.3 * param, rtol=1e-12)


def test_clip_keeps_selected_rows_and_regularization_sees_it():
    main, pairs = _sparse_param_program(R.L1Decay(0.1), C.GradientClipByNorm(0.5))
    assert [op.type for op in main.global_block().ops] == ["clip_by_norm", "sign", "scale", "sum"]
    assert R.is_selected_rows_grad(main.global_block().var("emb@GRAD@CLIP"))
    sr, dense = _sparse_grad()
    param = RNG.uniform(-1, 1, (5, 2))
    (out,) = _run_with_values(main, {"emb": param, "emb@GRAD": sr}, [pairs[0][1].name])
    want = dense * 0.5 / np.linalg.norm(dense) + 0.1 * np.sign(param)
    np.testing.assert_allclose(np.array(out), want, rtol=1e-12)


def test_is_selected_rows_grad_follows_producers():
    prog = fluid.Program()
    b = prog.global_block()
    for n in ("a", "c"):
        b.create_var(name=n, shape=[4, 2], dtype="float32", type="SELECTED_ROWS")
    for n in ("d", "s", "mixed", "scaled"):
        b.create_var(name=n, shape=[4, 2], dtype="float32")
    b.append_op("sum", inputs={"X": ["a", "c"]}, outputs={"Out": ["s"]})
    b.append_op("sum", inputs={"X": ["a", "d"]}, outputs={"Out": ["mixed"]})
    b.append_op("scale", inputs={"X": ["s"]}, outputs={"Out": ["scaled"]})
    assert R.is_selected_rows_grad(b.var("s")) and R.is_selected_rows_grad(b.var("scaled"))
    assert not R.is_selected_rows_grad(b.var("mixed")) and not R.is_selected_rows_grad(b.var("d"))
    # what the registry says keeps rows (keeps_rows), merge_selected_rows included: the regularizer's
    # own list of such ops lacked it
    b.create_var(name="merged", shape=[4, 2], dtype="float32")
    b.append_op("merge_selected_rows", inputs={"X": ["a"]}, outputs={"Out": ["merged"]})
    assert R.is_selected_rows_grad(b.var("merged"))


def test_clip_by_value_and_global_norm_keep_selected_rows():
    sr, dense = _sparse_grad()
    param = RNG.uniform(-1, 1, (5, 2))
    main, pairs = _sparse_param_program(clip=C.GradientClipByValue(0.3))
    (out,) = _run_with_values(main, {"emb": param, "emb@GRAD": sr}, [pairs[0][1].name])
    assert isinstance(out, SelectedRows)
    np.testing.assert_allclose(to_host(out.to_dense()), np.clip(dense, -0.3, 0.3), rtol=1e-12)
    main, pairs = _sparse_param_program(clip=C.GradientClipByGlobalNorm(0.2))
    assert [op.type for op in main.global_block().ops][-1] == "elementwise_mul"
    (out,) = _run_with_values(main, {"emb": param, "emb@GRAD": sr}, [pairs[0][1].name])
    assert isinstance(out, SelectedRows)
    np.testing.assert_allclose(to_host(out.to_dense()), dense * 0.2 / np.linalg.norm(dense), rtol=1e-12)


def test_selected_rows_x_only_for_mul_by_scalar():
    prog = fluid.Program()
    b = prog.global_block()
    b.create_var(name="g", shape=[5, 2], dtype="float64", type="SELECTED_ROWS")
    b.create_var(name="s", shape=[1], dtype="float64")
    b.create_var(name="o", dtype="float64")
    b.append_op("elementwise_add", inputs={"X": ["g"], "Y": ["s"]}, outputs={"Out": ["o"]})
    with pytest.raises(ValueError, match="only supported by elementwise_mul"):
        _run_with_values(prog, {"g": _sparse_grad()[0], "s": np.ones(1)}, ["o"])
