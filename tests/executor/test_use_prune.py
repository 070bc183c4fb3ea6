"""``Executor.run(use_prune=True)`` and optimize ops in ``fetch_list``, as Paddle 1.8 runs them (its
numbers for these runs were the NumPy ones checked here): only the ops the fetches and the kept
optimize ops need run, and feeds the pruned program does not use are left out with a warning."""
import warnings

import numpy as np
import pytest

import fluidist as fluid

LR = 0.5


def two_heads():
    """Two losses on one input, each with its own SGD: head 1 (w1, b1) reads x only, head 2 (w2, b2)
    also reads the label."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        label = fluid.data(name="label", shape=[None, 2], dtype="float32")
        y1 = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w1"), bias_attr=fluid.ParamAttr(name="b1"))
        y2 = fluid.layers.fc(x, 2, param_attr=fluid.ParamAttr(name="w2"), bias_attr=fluid.ParamAttr(name="b2"))
        loss1 = fluid.layers.mean(y1)
        loss2 = fluid.layers.mean(fluid.layers.square_error_cost(y2, label))
        train1 = fluid.optimizer.SGD(LR).minimize(loss1)
        train2 = fluid.optimizer.SGD(LR).minimize(loss2)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    r = np.random.RandomState(0)
    start = {n: r.randn(*shape).astype("float32") for n, shape in (("w1", (3, 2)), ("w2", (3, 2)), ("b1", (2,)),
                                                                  ("b2", (2,)))}
    for name, value in start.items():
        scope.var(name).get_tensor().set(value, fluid.CPUPlace())
    feed = {"x": r.randn(4, 3).astype("float32"), "label": r.randn(4, 2).astype("float32")}
    return main, exe, scope, start, feed, (loss1, loss2), (train1, train2)


def head1_step(start, x):
    """loss1 = mean(x w1 + b1) and its SGD step, in NumPy."""
    n = x.shape[0] * 2
    loss = (x @ start["w1"] + start["b1"]).mean()
    return loss, start["w1"] - LR * x.T @ np.full((x.shape[0], 2), 1.0 / n), start["b1"] - LR * x.shape[0] / n


def head2_step(start, x, label):
    """loss2 = mean((x w2 + b2 - label)^2) and its SGD step, in NumPy."""
    d = x @ start["w2"] + start["b2"] - label
    g = 2 * d / d.size
    return (d * d).mean(), start["w2"] - LR * x.T @ g, start["b2"] - LR * g.sum(0)


def value(scope, name):
    return np.array(scope.find_var(name).get_tensor())


def test_optimize_ops_in_fetch_list_train_only_their_parameters():
    """``fetch_list=[loss1.name, train1]`` (minimize's (ops, params_grads) tuple): head 1 trains, head 2 and
    its label are pruned away (the label feed is dropped with a warning)."""
    main, exe, scope, start, feed, (loss1, _), (train1, _) = two_heads()
    with pytest.warns(UserWarning, match="feed 'label' is not used by the pruned program"):
        got, = exe.run(main, feed=dict(feed), fetch_list=[loss1.name, train1], scope=scope)
    want_loss, want_w1, want_b1 = head1_step(start, feed["x"])
    np.testing.assert_allclose(got, [want_loss], rtol=1e-5)
    np.testing.assert_allclose(value(scope, "w1"), want_w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value(scope, "b1"), want_b1, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(value(scope, "w2"), start["w2"])
    np.testing.assert_array_equal(value(scope, "b2"), start["b2"])


def test_a_list_of_optimize_ops_in_fetch_list_and_a_later_run_of_the_other_head():
    main, exe, scope, start, feed, (_, loss2), (_, train2) = two_heads()
    ops, _ = train2
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # every feed is used: no warning
        got, = exe.run(main, feed=dict(feed), fetch_list=[loss2, list(ops)], scope=scope)
    want_loss, want_w2, want_b2 = head2_step(start, feed["x"], feed["label"])
    np.testing.assert_allclose(got, [want_loss], rtol=1e-5)
    np.testing.assert_allclose(value(scope, "w2"), want_w2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value(scope, "b2"), want_b2, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(value(scope, "w1"), start["w1"])


def test_use_prune_without_optimize_ops_keeps_every_optimizer():
    """``use_prune=True`` with only a loss to fetch: Paddle keeps every optimize op of the program, so both
    heads train; the fetched loss is head 1's."""
    main, exe, scope, start, feed, (loss1, _), _ = two_heads()
    got, = exe.run(main, feed=dict(feed), fetch_list=[loss1.name], scope=scope, use_prune=True)
    want_loss, want_w1, _ = head1_step(start, feed["x"])
    _, want_w2, _ = head2_step(start, feed["x"], feed["label"])
    np.testing.assert_allclose(got, [want_loss], rtol=1e-5)
    np.testing.assert_allclose(value(scope, "w1"), want_w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value(scope, "w2"), want_w2, rtol=1e-5, atol=1e-6)


def test_pruned_runs_follow_edits_and_refuse_an_op_that_is_not_an_optimizer():
    main, exe, scope, start, feed, (loss1, _), (train1, _) = two_heads()
    with pytest.warns(UserWarning):
        exe.run(main, feed=dict(feed), fetch_list=[loss1.name, train1], scope=scope)
    _, w1, b1 = head1_step(start, feed["x"])
    with fluid.program_guard(main):           # an edit after the first pruned run is seen
        doubled = fluid.layers.scale(loss1, scale=2.0)
    with pytest.warns(UserWarning):
        got, = exe.run(main, feed=dict(feed), fetch_list=[doubled, train1], scope=scope)
    np.testing.assert_allclose(got, [2 * (feed["x"] @ w1 + b1).mean()], rtol=1e-5)
    with pytest.raises(TypeError, match="op 'mul' in fetch_list is not an optimize op"):
        exe.run(main, feed=dict(feed), fetch_list=[loss1, [main.global_block().ops[0]]], scope=scope)
