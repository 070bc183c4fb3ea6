"""Adadelta, Dpsgd, Lookahead, ModelAverage and ExponentialMovingAverage against Paddle 1.8.5's own
numbers (tests/data/paddle18_optimizers.json: the same model, initial values and batches run in
Paddle 1.8.5); apply/restore exactness; Recompute equals plain training; refusals."""
import json
import os
import sys

import numpy as np
import pytest

import fluidist as fluid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
from make_paddle18_optimizers import build  # noqa: E402  (the cases Paddle 1.8.5 ran)

REF = json.load(open(os.path.join(os.path.dirname(__file__), "data", "paddle18_optimizers.json")))
INPUTS = REF["inputs"]


def run(kind, steps=None):
    main, startup, loss, extra = build(fluid, kind)
    main.lint()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        scope.find_var("w").get_tensor().set(np.array(INPUTS["W"], np.float32))
        scope.find_var("b").get_tensor().set(np.array(INPUTS["B"], np.float32))
        if kind == "lookahead":     # the slow copies start from the same values
            scope.find_var("w@SLOW").get_tensor().set(np.array(INPUTS["W"], np.float32))
            scope.find_var("b@SLOW").get_tensor().set(np.array(INPUTS["B"], np.float32))
        losses = []
        for x, y in list(zip(INPUTS["XS"], INPUTS["YS"]))[:steps]:
            losses.append(exe.run(main, feed={"x": np.array(x, np.float32), "y": np.array(y, np.float32)},
                                  fetch_list=[loss])[0][0])
    return exe, scope, losses, extra, main


def value(scope, name):
    return np.array(scope.find_var(name).get_tensor())


@pytest.mark.parametrize("kind", ["adadelta", "dpsgd", "lookahead", "model_average", "ema"])
def test_equal_to_paddle_18(kind):
    exe, scope, losses, extra, _ = run(kind)
    ref = REF[kind]
    np.testing.assert_allclose(losses, ref["loss"], rtol=2e-5)
    np.testing.assert_allclose(value(scope, "w"), ref["w"], rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(value(scope, "b"), ref["b"], rtol=2e-5, atol=1e-6)
    if extra is None:
        return
    trained = {n: value(scope, n) for n in ("w", "b")}
    with fluid.scope_guard(scope):
        for _ in range(2):                  # applying twice gives the same average (Paddle's EMA drifted)
            with extra.apply(exe):
                np.testing.assert_allclose(value(scope, "w"), ref["w_applied"], rtol=2e-5, atol=1e-6)
                np.testing.assert_allclose(value(scope, "b"), ref["b_applied"], rtol=2e-5, atol=1e-6)
            for n, v in trained.items():
                np.testing.assert_array_equal(value(scope, n), v)      # restored bit for bit
        with extra.apply(exe, need_restore=False):
            pass
        assert not np.array_equal(value(scope, "w"), trained["w"])
        extra.restore(exe)
        np.testing.assert_array_equal(value(scope, "w"), trained["w"])


def test_model_average_window_against_numpy():
    """The sliding window of average_accumulates, step by step, against a NumPy transcription."""
    exe, scope, _, avg, main = run("model_average", steps=0)
    ws = []
    with fluid.scope_guard(scope):
        for x, y in zip(INPUTS["XS"], INPUTS["YS"]):
            exe.run(main, feed={"x": np.array(x, np.float32), "y": np.array(y, np.float32)})
            ws.append(value(scope, "w"))
            with avg.apply(exe):
                got = value(scope, "w")
            # window: min 2, max 4, rate 0.5 -> restarts when accumulated >= max(2, min(4, 0.5 n))
            s1, s3, acc, old = 0, 0, 0, 0
            for n, w in enumerate(ws, 1):
                s1 = s1 + w
                acc += 1
                if acc >= 2 and acc >= min(4, n * 0.5):
                    s3, s1, old, acc = s1, 0, acc, 0
            np.testing.assert_allclose(got, (s1 + s3) / (acc + old), rtol=1e-5)


def test_ema_thres_steps_and_bias_correction():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 2], "float32")
        w = fluid.layers.create_parameter([2, 1], "float32", name="w",
                                          default_initializer=fluid.initializer.Constant(1.0))
        loss = fluid.layers.mean(fluid.layers.matmul(x, w))
        fluid.optimizer.SGD(0.1).minimize(loss)
        step = fluid.layers.autoincreased_step_counter(begin=0)
        ema = fluid.optimizer.ExponentialMovingAverage(0.9, thres_steps=step)
        ema.update()
    exe, scope = fluid.Executor(), fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        with ema.apply(exe):          # before any update: the average is what it was (zeros), no division by 0
            np.testing.assert_array_equal(value(scope, "w"), np.zeros((2, 1), np.float32))
        history, e, decays = [], np.zeros((2, 1)), []
        for t in range(5):
            exe.run(main, feed={"x": np.ones((3, 2), np.float32)})
            d = min(0.9, (t + 1) / (t + 10))
            decays.append(d)
            e = d * e + (1 - d) * value(scope, "w")
        with ema.apply(exe):
            np.testing.assert_allclose(value(scope, "w"), e / (1 - decays[-1] ** 5), rtol=1e-5)


def mlp(checkpointed):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8], "float32")
        y = fluid.data("y", [None, 1], "int64")
        h1 = fluid.layers.fc(x, 16, act="tanh")
        h2 = fluid.layers.fc(h1, 16, act="relu")
        h2 = fluid.layers.dropout(h2, 0.3, seed=5)
        h3 = fluid.layers.fc(h2, 16, act="sigmoid")
        logits = fluid.layers.fc(h3, 3)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, y))
        opt = fluid.optimizer.Adam(0.01)
        if checkpointed:
            opt = fluid.optimizer.RecomputeOptimizer(opt)
            opt._set_checkpoints([h1, h3])
        opt.minimize(loss)
    return main, startup, loss


def test_recompute_equals_plain_training():
    plain, plain_startup, plain_loss = mlp(False)
    rec, rec_startup, rec_loss = mlp(True)
    types = [op.type for op in rec.global_block().ops]
    recomputed = [op for op in rec.global_block().ops if any("@RECOMPUTE@" in n for n in op.output_arg_names)]
    # h2's segment, dropout too: as in Paddle 1.8.5 a seed op before it gives both runs of it one mask
    assert {op.type for op in recomputed} == {"mul", "elementwise_add", "relu", "dropout"}
    dropouts = [op for op in rec.global_block().ops if op.type == "dropout"]
    assert len({tuple(op.input("Seed")) for op in dropouts}) == 1 and types[types.index("dropout") - 1] == "seed"
    first_grad = next(i for i, op in enumerate(rec.global_block().ops) if op.type.endswith("_grad"))
    assert all(types.index("relu", first_grad) > first_grad for _ in [0])
    rec.lint()
    r = np.random.RandomState(0)
    batches = [(r.randn(6, 8).astype("float32"), r.randint(0, 3, (6, 1)).astype("int64")) for _ in range(5)]
    exe = fluid.Executor()
    results = []
    for main, startup, loss in ((plain, plain_startup, plain_loss), (rec, rec_startup, rec_loss)):
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        losses = [exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss], scope=scope)[0][0] for x, y in batches]
        results.append((losses, {p.name: value(scope, p.name) for p in main.global_block().all_parameters()}))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for k, v in results[0][1].items():
        np.testing.assert_array_equal(results[1][1][k], v)
    with pytest.raises(ValueError, match="_set_checkpoints"):
        fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1)).minimize(plain_loss)


def test_dpsgd_noise_and_clipping():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        w = fluid.layers.create_parameter([1000], "float32", name="w",
                                          default_initializer=fluid.initializer.Constant(0.0))
        loss = fluid.layers.reduce_sum(w * 3.0)        # gradient 3 everywhere: norm 3 * sqrt(1000)
        opt = fluid.optimizer.Dpsgd(learning_rate=1.0, clip=1.0, batch_size=2.0, sigma=4.0)
        opt._seed = 7
        opt.minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.run(main, scope=scope)
    step1 = value(scope, "w")
    # one draw n per step, the same for every element: w = -(g / (|g| / clip) + n / batch_size)
    clipped = 3.0 / (3.0 * np.sqrt(1000))
    noise = -step1 - clipped
    assert np.allclose(noise, noise[0], atol=1e-6) and abs(noise[0]) > 0
    exe.run(main, scope=scope)
    np.testing.assert_allclose(value(scope, "w"), 2 * step1, rtol=1e-5)      # a fixed seed: the same draw


def test_refused_optimizers():
    for name in ("PipelineOptimizer", "DGCMomentumOptimizer"):
        cls = getattr(fluid.optimizer, name)
        assert cls.__fluidist_refused__
        with pytest.raises(NotImplementedError, match=name):
            cls(fluid.optimizer.SGD(0.1))


def test_a_recomputed_dropout_without_seed_draws_the_forward_mask():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8], "float32")
        h1 = fluid.layers.fc(x, 16, act="tanh")
        h2 = fluid.layers.dropout(fluid.layers.fc(h1, 16), 0.5)
        h3 = fluid.layers.fc(h2, 4)
        loss = fluid.layers.mean(h3)
        opt = fluid.optimizer.RecomputeOptimizer(fluid.optimizer.SGD(0.1))
        opt._set_checkpoints([h1, h3])
        opt.minimize(loss)
    drops = [op for op in main.global_block().ops if op.type == "dropout"]
    assert len(drops) == 2 and drops[0].input("Seed") == drops[1].input("Seed")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(2):          # a fresh seed each run; both runs of the dropout draw the same mask
        a, b = exe.run(main, feed={"x": np.ones((6, 8), "float32")}, scope=scope,
                       fetch_list=[drops[0].output("Mask")[0], drops[1].output("Mask")[0]])
        np.testing.assert_array_equal(a, b)
        assert 0 < a.mean() < 1
