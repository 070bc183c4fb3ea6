import numpy as np
import pytest

import fluidist as fluid


def net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        pred = fluid.layers.fc(input=x, size=1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def data(n=8):
    r = np.random.RandomState(0)
    x = r.rand(n, 13).astype("float32")
    return x, x.sum(1, keepdims=True).astype("float32")


def test_issue_snippet_trains_and_matches_numpy_sgd():
    main, startup, loss = net()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xb, yb = data()
    w = np.array(fluid.global_scope().find_var("fc_0.w_0").get_tensor()).astype(np.float64)
    b = np.array(fluid.global_scope().find_var("fc_0.b_0").get_tensor()).astype(np.float64)
    for _ in range(5):
        l, = exe.run(main, feed={"x": xb, "y": yb}, fetch_list=[loss])
        pred = xb @ w + b
        ref_loss = np.mean((pred - yb) ** 2)
        d = 2 * (pred - yb) / len(xb)
        w, b = w - 0.01 * xb.T @ d, b - 0.01 * d.sum(0)
        np.testing.assert_allclose(l, [ref_loss], rtol=1e-5)
    got = np.array(fluid.global_scope().find_var(main.global_block().all_parameters()[0].name).get_tensor())
    # float32 training against a float64 reference: parameters of order 1 agree to float32's resolution
    # there (a weight that drifts near 0 cannot agree to 1e-5 of itself: 1.8e-8 apart was 1e-4 of 6e-4)
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_scope_tensor_set_and_lod():
    scope = fluid.Scope()
    t = scope.var("a").get_tensor()
    t.set(np.ones((2, 3), "float32"), fluid.CPUPlace())
    assert np.array(scope.find_var("a").get_tensor()).sum() == 6
    t.set_recursive_sequence_lengths([[1, 1]])
    assert t.lod() == [[0, 1, 2]]
    assert scope.find_var("missing") is None
    kid = scope.new_scope()
    assert kid.find_var("a") is not None
    with fluid.scope_guard(kid):
        assert fluid.global_scope() is kid


def test_missing_feed_names_variable_and_op():
    main, startup, loss = net()
    exe = fluid.Executor()
    exe.run(startup)
    xb, yb = data()
    with pytest.raises(ValueError, match="feed variable 'x' is required by op 'mul'"):
        exe.run(main, feed={"y": yb}, fetch_list=[loss])


def test_wrong_dtype_and_shape_are_named():
    main, startup, loss = net()
    exe = fluid.Executor()
    exe.run(startup)
    xb, yb = data()
    with pytest.raises(ValueError, match="'x' expects dtype float32 but got float64"):
        exe.run(main, feed={"x": xb.astype("float64"), "y": yb}, fetch_list=[loss])
    with pytest.raises(ValueError, match=r"'x' expects shape \[-1, 13\] but got \[8, 12\]"):
        exe.run(main, feed={"x": xb[:, :12], "y": yb}, fetch_list=[loss])
    with pytest.raises(ValueError, match="'nope' is not a variable"):
        exe.run(main, feed={"x": xb, "y": yb, "nope": yb}, fetch_list=[loss])


def test_layers_data_casts_dtype():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.layers.data("x", shape=[3])
        y = fluid.layers.scale(x, 2.0)
    assert x.shape == (-1, 3)
    out, = fluid.Executor().run(main, feed={"x": np.ones((2, 3))}, fetch_list=[y], scope=fluid.Scope())
    assert out.dtype == np.float32 and out.sum() == 12


def test_unknown_op_type_and_unproduced_fetch():
    main, startup, loss = net()
    exe = fluid.Executor()
    exe.run(startup)
    xb, yb = data()
    main.global_block().create_var(name="orphan", shape=[1], dtype="float32")
    with pytest.raises(ValueError, match="fetch variable 'orphan' has no value: no op"):
        exe.run(main, feed={"x": xb, "y": yb}, fetch_list=["orphan"])
    p = fluid.Program()
    from fluidist.framework.program import Operator
    p.global_block().ops.append(Operator(p.global_block(), "mystery_op", {}, {}, {}))
    with pytest.raises(ValueError, match="unknown op type 'mystery_op'"):
        exe.run(p)


def test_plan_cache_sees_program_edits():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 2])
        y = fluid.layers.scale(x, 2.0)
    exe = fluid.Executor()
    scope = fluid.Scope()
    xv = np.ones((1, 2), "float32")
    assert exe.run(main, feed={"x": xv}, fetch_list=[y], scope=scope, use_program_cache=True)[0].sum() == 4
    main.global_block().ops[0]._set_attr("scale", 3.0)
    assert exe.run(main, feed={"x": xv}, fetch_list=[y], scope=scope, use_program_cache=True)[0].sum() == 6


def test_uninitialised_parameter_error_and_closed_executor():
    main, startup, loss = net()
    exe = fluid.Executor()
    xb, yb = data()
    with pytest.raises(ValueError, match="run the startup program"):
        exe.run(main, feed={"x": xb, "y": yb}, fetch_list=[loss], scope=fluid.Scope())
    exe.close()
    with pytest.raises(RuntimeError, match="closed Executor"):
        exe.run(startup)


def test_fetch_returns_copies_not_views():
    main, startup, loss = net()
    exe = fluid.Executor()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    xb, yb = data()
    w1, = exe.run(main, feed={"x": xb, "y": yb}, fetch_list=["fc_0.w_0"], scope=scope)
    keep = w1.copy()
    exe.run(main, feed={"x": xb, "y": yb}, fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(w1, keep)


def test_return_numpy_false_gives_lod_tensors():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 1], lod_level=1)
        y = fluid.layers.scale(x, 1.0)
    t = fluid.create_lod_tensor(np.arange(3, dtype="float32").reshape(3, 1), [[1, 2]], fluid.CPUPlace())
    out, = fluid.Executor().run(main, feed={"x": t}, fetch_list=[y], return_numpy=False, scope=fluid.Scope())
    assert isinstance(out, fluid.LoDTensor)
    assert out.recursive_sequence_lengths() == [[1, 2]]
