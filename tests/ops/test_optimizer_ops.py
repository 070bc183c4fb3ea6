"""Update ops as Paddle 1.8 runs them: adam advances its beta powers (Beta1PowOut / Beta2PowOut)
and takes Beta1Tensor / Beta2Tensor; lamb does not bias-correct; adadelta's parameter step depends
on whether AvgSquaredUpdateOut is AvgSquaredUpdate (each NumPy reference below was checked against
Paddle 1.8.5's op on the same inputs)."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import check_grad, run_op

rng = np.random.RandomState(3)


def run_update_op(op_type, inputs, outputs, attrs, in_place=()):
    """Run one update op. ``outputs``: {output slot: input slot it aliases or None (a fresh variable)};
    ``in_place`` lists the input slots whose output writes back to them."""
    prog = fluid.Program()
    block = prog.global_block()
    scope = fluid.Scope()
    for slot, value in inputs.items():
        block.create_var(name=slot, shape=value.shape, dtype=value.dtype.name, persistable=True)
        scope.var(slot).set_value(value.copy())
    outs = {}
    for out, src in outputs.items():
        if src in in_place:
            outs[out] = [src]
        else:
            block.create_var(name=out, dtype=inputs[src or "Param"].dtype.name)
            outs[out] = [out]
    block.append_op(op_type, inputs={s: [s] for s in inputs}, outputs=outs, attrs=attrs)
    fluid.Executor(fluid.CPUPlace()).run(prog, scope=scope)
    return {out: np.array(scope.find_var(names[0]).get_tensor()) for out, names in outs.items()}


def adam_inputs(shape=(5, 4)):
    return {"Param": rng.uniform(-1, 1, shape).astype("float32"), "Grad": rng.uniform(-1, 1, shape).astype("float32"),
            "Moment1": rng.uniform(-1, 1, shape).astype("float32"), "Moment2": rng.rand(*shape).astype("float32"),
            "LearningRate": np.array([0.01], "float32"),
            "Beta1Pow": np.array([0.85 ** 3], "float32"), "Beta2Pow": np.array([0.95 ** 3], "float32")}


ADAM_OUTPUTS = {"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2",
                "Beta1PowOut": "Beta1Pow", "Beta2PowOut": "Beta2Pow"}


def adam_reference(ins, b1, b2, eps=1e-8):
    b1, b2, eps = np.float32(b1), np.float32(b2), np.float32(eps)     # as Paddle's kernel holds its attrs
    m1 = b1 * ins["Moment1"] + (1 - b1) * ins["Grad"]
    m2 = b2 * ins["Moment2"] + (1 - b2) * ins["Grad"] ** 2
    lr_t = ins["LearningRate"] * np.sqrt(1 - ins["Beta2Pow"]) / (1 - ins["Beta1Pow"])
    return {"ParamOut": ins["Param"] - lr_t * m1 / (np.sqrt(m2) + eps),      # (Paddle 1.8.5: epsilon unscaled)
            "Moment1Out": m1, "Moment2Out": m2, "Beta1PowOut": ins["Beta1Pow"] * np.float32(b1),
            "Beta2PowOut": ins["Beta2Pow"] * np.float32(b2)}


@pytest.mark.parametrize("betas_as_tensors", [False, True])
def test_adam_advances_its_beta_powers(betas_as_tensors):
    ins = adam_inputs()
    attrs = {"epsilon": 1e-8}
    if betas_as_tensors:   # Beta1Tensor / Beta2Tensor replace the attrs
        ins.update(Beta1Tensor=np.array([0.85], "float32"), Beta2Tensor=np.array([0.95], "float32"))
        attrs.update(beta1=0.5, beta2=0.5)
    else:
        attrs.update(beta1=0.85, beta2=0.95)
    got = run_update_op("adam", ins, ADAM_OUTPUTS, attrs)
    want = adam_reference(ins, 0.85, 0.95)
    for slot, value in want.items():
        np.testing.assert_allclose(got[slot], value, rtol=2e-6, err_msg=slot)


def test_adam_optimizer_emits_paddle18_ops_and_a_variable_beta():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3], "float32")
        beta1 = fluid.layers.fill_constant([1], "float32", 0.8)
        loss = fluid.layers.mean(fluid.layers.fc(x, 2, bias_attr=False))
        fluid.optimizer.Adam(0.1, beta1=beta1).minimize(loss)
    ops = main.global_block().ops
    adam = [op for op in ops if op.type == "adam"]
    assert len(adam) == 1 and "scale" not in [op.type for op in ops[ops.index(adam[0]):]]
    assert adam[0].input("Beta1Tensor") == [beta1.name] and adam[0].attr("beta2") == pytest.approx(0.999)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    pow1 = adam[0].input("Beta1Pow")[0]
    assert np.array(scope.find_var(pow1).get_tensor())[0] == pytest.approx(0.9)  # Paddle's start for a Variable
    for _ in range(2):
        exe.run(main, feed={"x": np.ones((2, 3), "float32")}, scope=scope)
    assert np.array(scope.find_var(pow1).get_tensor())[0] == pytest.approx(0.9 * 0.8 * 0.8)


def test_lamb_does_not_bias_correct():
    ins = adam_inputs((6, 5))
    b1, b2, eps, wd = 0.78, 0.836, 1e-4, 0.01
    got = run_update_op("lamb", ins, {"ParamOut": "Param", "Moment1Out": "Moment1", "Moment2Out": "Moment2"},
                     {"beta1": b1, "beta2": b2, "epsilon": eps, "weight_decay": wd})
    p = ins["Param"]
    m1 = b1 * ins["Moment1"] + (1 - b1) * ins["Grad"]
    m2 = b2 * ins["Moment2"] + (1 - b2) * ins["Grad"] ** 2
    r = m1 / (np.sqrt(m2) + eps) + wd * p
    np.testing.assert_allclose(got["ParamOut"], p - 0.01 * np.linalg.norm(p) / np.linalg.norm(r) * r, rtol=1e-5)


@pytest.mark.parametrize("in_place", [False, True])
def test_adadelta_step_reads_the_state_it_was_given_or_wrote(in_place):
    shape = (4, 3)
    ins = {"Param": rng.rand(*shape).astype("float32"), "Grad": rng.rand(*shape).astype("float32"),
           "AvgSquaredGrad": rng.rand(*shape).astype("float32"), "AvgSquaredUpdate": rng.rand(*shape).astype("float32")}
    outs = {"ParamOut": "Param", "AvgSquaredGradOut": "AvgSquaredGrad", "AvgSquaredUpdateOut": "AvgSquaredUpdate"}
    got = run_update_op("adadelta", ins, outs, {"rho": 0.95, "epsilon": 1e-6},
                     in_place=tuple(outs.values()) if in_place else ())
    rho, eps, g = 0.95, 1e-6, ins["Grad"]
    asg = rho * ins["AvgSquaredGrad"] + (1 - rho) * g * g
    step = -np.sqrt((ins["AvgSquaredUpdate"] + eps) / (asg + eps)) * g
    asu = rho * ins["AvgSquaredUpdate"] + (1 - rho) * step * step
    if in_place:   # Paddle 1.8 (its optimizer's program): the parameter's step reads the new E[u^2]
        step = -np.sqrt((asu + eps) / (asg + eps)) * g
    np.testing.assert_allclose(got["AvgSquaredUpdateOut"], asu, rtol=1e-5)
    np.testing.assert_allclose(got["ParamOut"], ins["Param"] + step, rtol=1e-5)


def test_squared_l2_norm_has_a_gradient():
    # Paddle 1.8 registers squared_l2_norm_grad: dX = 2 * dOut * X
    x = rng.uniform(-1, 1, (3, 4))
    np.testing.assert_allclose(run_op("squared_l2_norm", {"X": x})["Out"][0], [np.sum(x * x)])
    check_grad("squared_l2_norm", {"X": x}, ["X"])


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_reads_mean_grad_only_when_centered(centered):
    """Paddle 1.8's MeanGrad is dispensable: an uncentered rmsprop runs without it."""
    shape = (6, 3)
    ins = {"Param": rng.uniform(-1, 1, shape).astype("float32"), "Grad": rng.uniform(-1, 1, shape).astype("float32"),
           "MeanSquare": rng.uniform(1, 2, shape).astype("float32"), "Moment": rng.rand(*shape).astype("float32"),
           "LearningRate": np.array([0.01], "float32")}
    outputs = {"ParamOut": "Param", "MeanSquareOut": "MeanSquare", "MomentOut": "Moment"}
    if centered:
        ins["MeanGrad"] = rng.rand(*shape).astype("float32")
        outputs["MeanGradOut"] = "MeanGrad"
    attrs = {"decay": 0.9, "momentum": 0.1, "epsilon": 1e-6, "centered": centered}
    got = run_update_op("rmsprop", ins, outputs, attrs, in_place=tuple(outputs.values()))
    g = ins["Grad"]
    ms = 0.9 * ins["MeanSquare"] + 0.1 * g * g
    var = ms - (0.9 * ins["MeanGrad"] + 0.1 * g) ** 2 if centered else ms
    mom = 0.1 * ins["Moment"] + 0.01 * g / np.sqrt(var + 1e-6)
    np.testing.assert_allclose(got["MomentOut"], mom, rtol=1e-5)
    np.testing.assert_allclose(got["ParamOut"], ins["Param"] - mom, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["MeanSquareOut"], ms, rtol=1e-6)


def test_adam_steps_bit_for_bit_as_paddle_1_8_5():
    """Three Adam steps (lr 0.01, parameter lr 2, constant gradients 1/160 and 3/160): Paddle 1.8.5's
    float32 parameters exactly (its epsilon is not scaled, its betas are float32)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        init = fluid.initializer.NumpyArrayInitializer
        x = fluid.layers.create_parameter(dtype="float32", shape=[16, 10], attr=fluid.ParamAttr(learning_rate=2.0, name="px"),
                                          default_initializer=init(np.ones([16, 10], "float32")))
        y = fluid.layers.create_parameter(dtype="float32", shape=[16, 10], attr=fluid.ParamAttr(learning_rate=2.0, name="py"),
                                          default_initializer=init(2 * np.ones([16, 10], "float32")))
        loss = fluid.layers.mean(fluid.layers.elementwise_add(x, fluid.layers.scale(y, 3.0)))
        fluid.optimizer.AdamOptimizer(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    got = [[float(np.asarray(v).ravel()[0]) for v in exe.run(main, fetch_list=["px", "py"], scope=scope)]
           for _ in range(3)]
    paddle = [[0.98000103, 1.9800004], [0.9600018, 1.9600006], [0.94000256, 1.940001]]
    assert [[np.float32(v) for v in step] for step in got] == [[np.float32(v) for v in step] for step in paddle]
