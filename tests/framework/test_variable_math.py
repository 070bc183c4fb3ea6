import numpy as np
import pytest

import fluidist as fluid


def test_operators_on_variables_build_ops_and_compute():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2])
        y = fluid.data("y", [None, 2])
        z = (x + y) * 2.0 - x / 4.0 + 1.0
        w = -z
        v = 3.0 * x - y
    types = [op.type for op in main.global_block().ops]
    assert types[:2] == ["elementwise_add", "scale"]
    xv = np.array([[1.0, 2.0]], "float32")
    yv = np.array([[3.0, 5.0]], "float32")
    zo, wo, vo = fluid.Executor().run(main, feed={"x": xv, "y": yv}, fetch_list=[z, w, v], scope=fluid.Scope())
    np.testing.assert_allclose(zo, (xv + yv) * 2 - xv / 4 + 1)
    np.testing.assert_allclose(wo, -zo)
    np.testing.assert_allclose(vo, 3 * xv - yv)


def test_gradient_flows_through_operators():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        h = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        loss = fluid.layers.mean(h * h + 2.0)
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor()
    exe.run(startup, scope=scope)
    xv = np.ones((2, 3), "float32")
    w0 = np.array(scope.find_var("w").get_tensor())
    exe.run(main, feed={"x": xv}, scope=scope)
    h0 = xv @ w0
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()),
                               w0 - 0.1 * xv.T @ (2 * h0 / 2), rtol=1e-5)


def test_data_feeder():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        img = fluid.data("img", [None, 3])
        label = fluid.data("label", [None, 1], dtype="int64")
        seq = fluid.data("seq", [None, 1], dtype="int64", lod_level=1)
    feeder = fluid.DataFeeder([img, label, seq], fluid.CPUPlace(), program=main)
    out = feeder.feed([([1, 2, 3], [0], [1, 2]), ([4, 5, 6], [1], [3])])
    # as Paddle 1.8's DataFeeder, every value is a LoDTensor
    assert out["img"].shape() == [2, 3] and np.array(out["img"]).dtype == np.float32
    assert out["label"].shape() == [2, 1] and np.array(out["label"]).dtype == np.int64
    assert out["seq"].recursive_sequence_lengths() == [[2, 1]]
    assert np.array(out["seq"]).tolist() == [[1], [2], [3]]
    with pytest.raises(ValueError, match="sample 0 has 2 fields for 3"):
        feeder.feed([([1, 2, 3], [0])])


def test_number_minus_variable_is_one_scale_op_as_in_paddle18():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = 1.5 - x
    ops = main.global_block().ops
    assert [op.type for op in ops] == ["scale"]
    assert ops[0].attr("scale") == -1.0 and ops[0].attr("bias") == 1.5
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    (got,) = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": xv}, fetch_list=[y])
    np.testing.assert_allclose(got, 1.5 - xv)
