"""fluid.layers.conv2d / pool2d / adaptive_pool2d / batch_norm / dropout: the ops, parameters and
shapes they build, test-mode clones, and a small CNN that trains."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.framework.program import Parameter


def _ops(prog):
    return [op.type for op in prog.global_block().ops]


def _progs():
    return fluid.Program(), fluid.Program()


# ------------------------------------------------------------------ conv2d
def test_conv2d_builds_conv_bias_act_and_params():
    main, start = _progs()
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [3, 8, 8])
        out = fluid.layers.conv2d(img, num_filters=6, filter_size=3, stride=2, padding=1, act="relu")
    assert _ops(main) == ["conv2d", "elementwise_add", "relu"]
    conv, add, _ = main.global_block().ops
    assert conv.attr("strides") == [2, 2] and conv.attr("paddings") == [1, 1] and conv.attr("dilations") == [1, 1]
    assert conv.attr("groups") == 1 and conv.attr("data_format") == "NCHW"
    assert add.attr("axis") == 1
    assert out.shape == (-1, 6, 4, 4)
    w = main.global_block().var(conv.input("Filter")[0])
    b = main.global_block().var(add.input("Y")[0])
    assert isinstance(w, Parameter) and w.shape == (6, 3, 3, 3) and w.name == "conv2d_0.w_0"
    assert b.shape == (6,) and b.name == "conv2d_0.b_0"
    init = {op.output("Out")[0]: op for op in start.global_block().ops}
    assert init[w.name].type == "gaussian_random"
    assert init[w.name].attr("mean") == 0.0
    assert init[w.name].attr("std") == pytest.approx((2.0 / (3 * 3 * 3)) ** 0.5)
    assert init[b.name].type == "fill_constant" and init[b.name].attr("value") == 0.0


def test_conv2d_options():
    main, start = _progs()
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [4, 9, 7])
        a = fluid.layers.conv2d(img, 8, [3, 2], stride=[2, 1], padding=[1, 0], dilation=2, groups=2,
                                bias_attr=False)
        b = fluid.layers.conv2d(img, 4, 3, stride=2, padding="SAME")
        c = fluid.layers.conv2d(img, 4, 3, padding=[1, 2, 0, 1])
        d = fluid.layers.conv2d(img, 4, 3, padding=[[0, 0], [0, 0], [1, 1], [2, 2]])
        e = fluid.layers.conv2d(img, 8, 3, groups=4, use_cudnn=False)
    ops = main.global_block().ops
    assert ops[0].type == "conv2d" and ops[1].type == "conv2d"  # no bias op after the first
    assert main.global_block().var(ops[0].input("Filter")[0]).shape == (8, 2, 3, 2)
    assert a.shape == (-1, 8, 4, 5)  # H: (9 + 2 - 5) // 2 + 1, W: 7 - 3 + 1
    assert ops[1].attr("padding_algorithm") == "SAME" and b.shape == (-1, 4, 5, 4)
    assert c.shape == (-1, 4, 10, 6)
    conv_d = [op for op in ops if op.output("Output") and op.type == "conv2d"][-1]
    assert conv_d.attr("paddings") == [1, 2] and d.shape == (-1, 4, 9, 9)
    assert ops[-2].type == "depthwise_conv2d" and e.shape == (-1, 8, 7, 5)


def test_conv2d_nhwc_bias_on_last_axis():
    main, start = _progs()
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [8, 8, 3])
        out = fluid.layers.conv2d(img, 5, 3, padding=1, data_format="NHWC")
    assert out.shape == (-1, 8, 8, 5)
    add = main.global_block().ops[1]
    assert add.type == "elementwise_add" and add.attr("axis") == 3


def test_conv2d_errors():
    main, start = _progs()
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [3, 8, 8])
        with pytest.raises(ValueError, match="groups=2"):
            fluid.layers.conv2d(img, 4, 3, groups=2)
        with pytest.raises(ValueError, match="too small"):
            fluid.layers.conv2d(img, 4, 9)
        with pytest.raises(ValueError, match="padding"):
            fluid.layers.conv2d(img, 4, 3, padding="FULL")
        with pytest.raises(ValueError, match="4-D"):
            fluid.layers.conv2d(fluid.layers.data("flat", [10]), 4, 3)


# ------------------------------------------------------------------ pool2d
def test_pool2d_layer():
    main, start = _progs()
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [3, 7, 7])
        a = fluid.layers.pool2d(img, pool_size=2, pool_stride=2)
        b = fluid.layers.pool2d(img, pool_size=2, pool_stride=2, ceil_mode=True, pool_type="avg", exclusive=False)
        c = fluid.layers.pool2d(img, global_pooling=True, pool_type="avg")
        d = fluid.layers.pool2d(img, pool_size=3, pool_stride=2, pool_padding=1)
        e = fluid.layers.adaptive_pool2d(img, pool_size=[2, 3], pool_type="avg")
    assert (a.shape, b.shape, c.shape, d.shape, e.shape) == (
        (-1, 3, 3, 3), (-1, 3, 4, 4), (-1, 3, 1, 1), (-1, 3, 4, 4), (-1, 3, 2, 3))
    ops = main.global_block().ops
    assert _ops(main) == ["pool2d"] * 5
    assert ops[0].attr("pooling_type") == "max" and ops[0].attr("ksize") == [2, 2]
    assert ops[1].attr("ceil_mode") is True and ops[1].attr("exclusive") is False
    assert ops[2].attr("global_pooling") is True
    assert ops[4].attr("adaptive") is True
    with fluid.program_guard(main, start):
        with pytest.raises(ValueError, match="pool_size"):
            fluid.layers.pool2d(img)
        with pytest.raises(ValueError, match="pool_type"):
            fluid.layers.pool2d(img, 2, pool_type="min")


# ------------------------------------------------------------------ batch_norm
def test_batch_norm_layer_params_and_op():
    main, start = _progs()
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [4, 5, 5])
        y = fluid.layers.batch_norm(img, act="relu", momentum=0.8, moving_mean_name="mm")
    assert _ops(main) == ["batch_norm", "relu"]
    bn = main.global_block().ops[0]
    assert bn.attr("momentum") == 0.8 and bn.attr("epsilon") == 1e-5 and bn.attr("is_test") is False
    blk = main.global_block()
    scale, bias = blk.var(bn.input("Scale")[0]), blk.var(bn.input("Bias")[0])
    mean, var = blk.var(bn.input("Mean")[0]), blk.var(bn.input("Variance")[0])
    assert mean.name == "mm" and bn.output("MeanOut") == ["mm"] and bn.output("VarianceOut") == [var.name]
    for p in (scale, bias, mean, var):
        assert isinstance(p, Parameter) and p.shape == (4,) and p.persistable
    assert scale.trainable and bias.trainable
    assert not mean.trainable and not var.trainable and mean.stop_gradient and var.stop_gradient
    init = {op.output("Out")[0]: op.attr("value") for op in start.global_block().ops}
    assert init == {scale.name: 1.0, bias.name: 0.0, mean.name: 0.0, var.name: 1.0}
    assert y.shape == (-1, 4, 5, 5)
    assert blk.var(bn.output("SavedMean")[0]).shape == (4,)


def test_batch_norm_trains_only_scale_and_bias():
    main, start = _progs()
    with fluid.program_guard(main, start):
        x = fluid.layers.data("x", [3])
        y = fluid.layers.batch_norm(fluid.layers.fc(x, 4))
        loss = fluid.layers.mean(fluid.layers.square(y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    grads = {op.type: op for op in main.global_block().ops if op.type.endswith("_grad")}
    bng = grads["batch_norm_grad"]
    assert set(bng.outputs) == {"X@GRAD", "Scale@GRAD", "Bias@GRAD"}
    updated = sorted(op.input("Param")[0] for op in main.global_block().ops if op.type == "sgd")
    assert not any("w_1" in n or "w_2" in n for n in updated if n.startswith("batch_norm"))
    assert len(updated) == 4  # fc w, fc b, bn scale, bn bias


def test_batch_norm_train_then_test_clone():
    main, start = _progs()
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [2, 3, 3])
        y = fluid.layers.batch_norm(img)
    test_prog = main.clone(for_test=True)
    assert test_prog.global_block().ops[0].attr("is_test") is True
    exe = fluid.Executor()
    scope = fluid.Scope()
    exe.run(start, scope=scope)
    x = np.random.RandomState(0).normal(2.0, 3.0, (8, 2, 3, 3)).astype("float32")
    out = exe.run(main, feed={"img": x}, fetch_list=[y], scope=scope)[0]
    np.testing.assert_allclose(out.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(out.var(axis=(0, 2, 3)), 1, atol=1e-3)
    bn = main.global_block().ops[0]
    mean_name, var_name = bn.input("Mean")[0], bn.input("Variance")[0]
    mean = np.array(scope.find_var(mean_name).get_tensor())
    var = np.array(scope.find_var(var_name).get_tensor())
    np.testing.assert_allclose(mean, 0.1 * x.mean(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(var, 0.9 + 0.1 * x.var(axis=(0, 2, 3)), rtol=1e-5)
    # the test clone normalises with the running statistics and leaves them alone
    t = exe.run(test_prog, feed={"img": x}, fetch_list=[y.name], scope=scope)[0]
    expect = (x - mean.reshape(1, 2, 1, 1)) / np.sqrt(var.reshape(1, 2, 1, 1) + 1e-5)
    np.testing.assert_allclose(t, expect, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.array(scope.find_var(mean_name).get_tensor()), mean)


def test_batch_norm_in_place_grad_matches():
    """in_place=True writes Y over X; the gradient is the same as without it."""
    grads = []
    for in_place in (False, True):
        main, start = _progs()
        main.random_seed = start.random_seed = 5
        with fluid.program_guard(main, start):
            x = fluid.layers.data("x", [3], dtype="float64")
            h = fluid.layers.fc(x, 4)
            y = fluid.layers.batch_norm(h, in_place=in_place)
            loss = fluid.layers.mean(fluid.layers.square(fluid.layers.fc(y, 1)))
            pg = fluid.backward.append_backward(loss)
        exe, scope = fluid.Executor(), fluid.Scope()
        exe.run(start, scope=scope)
        feed = {"x": np.random.RandomState(1).normal(size=(6, 3))}
        names = sorted(g.name for p, g in pg if p.name.startswith("fc_0"))
        grads.append(exe.run(main, feed=feed, fetch_list=names, scope=scope))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-9)


# ------------------------------------------------------------------ dropout
def test_dropout_layer_attrs_and_test_clone():
    main, start = _progs()
    with fluid.program_guard(main, start):
        x = fluid.layers.data("x", [10])
        a = fluid.layers.dropout(x, 0.3)
        b = fluid.layers.dropout(x, 0.3, seed=7, dropout_implementation="upscale_in_train")
    da, db = main.global_block().ops
    assert da.type == "dropout" and da.attr("fix_seed") is False and da.attr("dropout_prob") == 0.3
    assert db.attr("fix_seed") is True and db.attr("seed") == 7
    assert main.global_block().var(da.output("Mask")[0]).dtype == "uint8"
    assert a.shape == (-1, 10)
    test_prog = main.clone(for_test=True)
    assert all(op.attr("is_test") for op in test_prog.global_block().ops)
    xv = np.random.RandomState(0).uniform(1, 2, (4, 10)).astype("float32")
    exe = fluid.Executor()
    ta, tb = exe.run(test_prog, feed={"x": xv}, fetch_list=[a.name, b.name], scope=fluid.Scope())
    np.testing.assert_allclose(ta, xv * 0.7, rtol=1e-6)
    np.testing.assert_allclose(tb, xv)
    tra = exe.run(main, feed={"x": xv}, fetch_list=[a], scope=fluid.Scope())[0]
    assert ((tra == 0) | np.isclose(tra, xv)).all() and (tra == 0).any()


def test_dropout_takes_program_seed():
    main, start = _progs()
    main.random_seed = 9
    with fluid.program_guard(main, start):
        x = fluid.layers.data("x", [10])
        fluid.layers.dropout(x, 0.5)
    op = main.global_block().ops[0]
    assert op.attr("fix_seed") is True and op.attr("seed") == 9


def test_dropout_bad_args():
    main, start = _progs()
    with fluid.program_guard(main, start):
        x = fluid.layers.data("x", [10])
        with pytest.raises(ValueError, match="dropout_prob"):
            fluid.layers.dropout(x, 1.5)
        with pytest.raises(ValueError, match="dropout_implementation"):
            fluid.layers.dropout(x, 0.5, dropout_implementation="scale")


# ------------------------------------------------------------------ end to end
def test_small_cnn_trains():
    """conv2d + batch_norm + pool2d + dropout + fc on 8x8 'images' whose target is a fixed linear map:
    SGD lowers the loss."""
    main, start = _progs()
    main.random_seed = start.random_seed = 9
    with fluid.program_guard(main, start):
        img = fluid.layers.data("img", [1, 8, 8])
        label = fluid.layers.data("label", [1])
        h = fluid.layers.conv2d(img, 8, 3, padding=1, act="relu")
        h = fluid.layers.batch_norm(h)
        h = fluid.layers.pool2d(h, 2, pool_stride=2)
        h = fluid.layers.conv2d(h, 16, 3, padding=1, act="relu")
        h = fluid.layers.pool2d(h, 2, pool_stride=2, pool_type="avg")
        h = fluid.layers.dropout(h, 0.1, dropout_implementation="upscale_in_train")
        pred = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, label))
        test_prog = main.clone(for_test=True)
        fluid.optimizer.SGD(0.005).minimize(loss)
    main.lint()
    start.lint()
    rs = np.random.RandomState(0)
    x = rs.uniform(0, 1, (64, 1, 8, 8)).astype("float32")
    y = (x.reshape(64, -1) @ rs.normal(0, 0.2, (64, 1))).astype("float32")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(start, scope=scope)
    losses = [exe.run(main, feed={"img": x, "label": y}, fetch_list=[loss], scope=scope)[0][0] for _ in range(30)]
    assert np.isfinite(losses).all() and losses[-1] < 0.1 * losses[0]
    # the test clone (running batch-norm statistics, no dropout) agrees that the model got better
    test_loss = exe.run(test_prog, feed={"img": x, "label": y}, fetch_list=[loss.name], scope=scope)[0][0]
    assert test_loss < 0.1 * losses[0]
