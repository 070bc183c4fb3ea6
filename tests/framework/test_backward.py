import numpy as np
import pytest

import fluidist as fluid
from fluidist.backward import append_backward


def test_variable_used_twice_gets_summed_gradient():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        h = fluid.layers.fc(x, 3, bias_attr=False, param_attr=fluid.ParamAttr(name="w"))
        a = fluid.layers.relu(h)
        b = fluid.layers.sigmoid(h)
        loss = fluid.layers.mean(fluid.layers.elementwise_add(a, b))
        pg = append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert "sum" in types
    s = main.global_block().ops[types.index("sum")]
    assert s.input("X") == [h.name + "@GRAD@RENAME@0", h.name + "@GRAD@RENAME@1"]
    assert s.output("Out") == [h.name + "@GRAD"]
    assert [(p.name, g.name) for p, g in pg] == [("w", "w@GRAD")]
    # numerics: d/dW mean(relu(xW) + sigmoid(xW))
    exe = fluid.Executor()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    xv = np.random.RandomState(0).randn(4, 3).astype("float32")
    g, = exe.run(main, feed={"x": xv}, fetch_list=["w@GRAD"], scope=scope)
    w = np.array(scope.find_var("w").get_tensor())
    hv = xv @ w
    dh = ((hv > 0) + (1 / (1 + np.exp(-hv))) * (1 - 1 / (1 + np.exp(-hv)))) / hv.size
    np.testing.assert_allclose(g, xv.T @ dh, rtol=1e-5)


def test_stop_gradient_and_no_grad_set():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        h1 = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="w1"), bias_attr=False)
        h1.stop_gradient = True
        h2 = fluid.layers.fc(h1, 1, param_attr=fluid.ParamAttr(name="w2"), bias_attr=False)
        loss = fluid.layers.mean(h2)
        pg = append_backward(loss)
    assert [p.name for p, _ in pg] == ["w2"]
    assert not main.global_block().has_var("w1@GRAD")
    main2, startup2 = fluid.Program(), fluid.Program()
    with fluid.program_guard(main2, startup2):
        x = fluid.data("x", [None, 3])
        h1 = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="w1"), bias_attr=False)
        h2 = fluid.layers.fc(h1, 1, param_attr=fluid.ParamAttr(name="w2"), bias_attr=False)
        loss = fluid.layers.mean(h2)
        pg = append_backward(loss, no_grad_set={"w1"})
    assert [p.name for p, _ in pg] == ["w2"]


def test_trainable_false_and_parameter_list():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        h = fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="w1", trainable=False), bias_attr=False)
        h = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="w2"), bias_attr=fluid.ParamAttr(name="b2"))
        loss = fluid.layers.mean(h)
        pg = append_backward(loss, parameter_list=["b2"])
    assert [p.name for p, _ in pg] == ["b2"]


def test_loss_must_be_scalar_and_produced():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data("x", [None, 3])
        h = fluid.layers.fc(x, 3)
        with pytest.raises(ValueError, match="scalar"):
            append_backward(h)
        with pytest.raises(ValueError, match="no op"):
            append_backward(x)


def test_gradients_api():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2])
        y = fluid.layers.reduce_sum(fluid.layers.square(x))
        gx, = fluid.gradients(y, x)
    xv = np.array([[1.0, 2.0], [3.0, -1.0]], dtype="float32")
    out, = fluid.Executor().run(main, feed={"x": xv}, fetch_list=[gx], scope=fluid.Scope())
    np.testing.assert_allclose(out, 2 * xv)


def test_paddles_path_helpers_name_the_ops_between_inputs_and_loss():
    from fluidist import backward
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        ids = fluid.data(name="ids", shape=[4, 1], dtype="int64")
        label = fluid.data(name="label", shape=[4, 1], dtype="float32")
        emb = fluid.embedding(ids, size=[10, 3])
        pred = fluid.layers.fc(emb, size=1, act="sigmoid")
        fluid.layers.fc(emb, size=1, name="unused")                       # not on the loss's path
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, label))
    block = main.global_block()
    stopped = backward._get_stop_gradients_(main)
    assert stopped == {0: {"ids@GRAD", "label@GRAD"}}          # as Paddle 1.8.5 answers for this net
    no_grad = {backward._strip_grad_suffix_(n) for n in stopped[0]}
    path = backward._find_op_path_(block, [loss], [], no_grad)
    assert [op.type for op in path] == ["lookup_table_v2", "mul", "elementwise_add", "sigmoid",   # Paddle 1.8.5
                                        "elementwise_sub", "square", "mean"]
    assert backward._find_no_grad_vars(block, path, [loss], no_grad) == set()
    from_emb = backward._find_op_path_(block, [loss], [emb], set())
    assert from_emb[0].type == "mul" and len(from_emb) == 6
    assert backward._strip_grad_suffix_("y@GRAD@RENAME@1") == "y" and backward._append_grad_suffix_("y") == "y@GRAD"
