"""GEO-SGD over real processes on 127.0.0.1 (2 pservers): its arithmetic (one trainer trains exactly
as alone; two trainers' deltas are summed on the pservers) and its convergence with 2 trainers, on
a dense and a row-sparse model."""
import numpy as np
import pytest

from cluster import Cluster, free_ports
from dist_models import batch_for, build, local_history
import fluidist as fluid

pytestmark = pytest.mark.timeout(180)


def run_geo(tmp_path, model, push_nums, steps, batch, trainers=2, pull=False, extra=()):
    ports = free_ports(2)
    eps = ",".join("127.0.0.1:%d" % p for p in ports)
    common = ["--endpoints", eps, "--trainers", trainers, "--model", model, "--optimizer", "sgd",
              "--steps", steps, "--batch", batch, "--geo", push_nums] + list(extra)
    if pull:
        common += ["--pull_dir", str(tmp_path)]
    outs = []
    with Cluster(tmp_path) as c:
        for i, ep in enumerate(eps.split(",")):
            c.start("ps%d" % i, "pserver_model.py", ["--role", "pserver", "--current_endpoint", ep] + common)
        for k in range(trainers):
            out = str(tmp_path / ("trainer%d.npz" % k))
            outs.append(out)
            c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k, "--out", out] + common)
        c.check(timeout=150)
    return [dict(np.load(o)) for o in outs]


def rel_err(got, want):
    return np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)


@pytest.mark.parametrize("model,push_nums", [("fc", 1), ("fc", 3), ("emb", 1), ("emb", 2)])
def test_one_trainer_trains_as_alone(tmp_path, model, push_nums):
    """One trainer pushes its deltas and takes back exactly what it pushed: every step equals local
    training, and the pservers end with its parameters."""
    steps, batch = 5, 4
    (r,) = run_geo(tmp_path, model, push_nums, steps, batch, trainers=1, pull=True)
    ref, params = local_history(model, "sgd", False, steps, batch)
    for step in range(steps):
        np.testing.assert_allclose(r["loss_%d" % step], ref["loss_%d" % step], rtol=1e-6)
        for name in params:
            assert rel_err(r["%s_%d" % (name, step)], ref["%s_%d" % (name, step)]) < 1e-6, (step, name)
    for name in params:
        assert rel_err(r["pulled_" + name], ref["%s_%d" % (name, steps - 1)]) < 1e-6, name


def _alone(model, steps, batch, trainer_id, trainers):
    """A trainer's parameters after ``steps`` local SGD steps on its own batches, from the start."""
    main, startup, loss, params = build(model, "sgd", False)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    start = {p: np.array(scope.find_var(p).get_tensor()) for p in params}
    for step in range(steps):
        exe.run(main, feed=batch_for(model, step, batch * trainers, trainer_id, trainers), scope=scope)
    return start, {p: np.array(scope.find_var(p).get_tensor()) for p in params}


@pytest.mark.parametrize("model", ["fc", "emb"])
def test_two_trainers_deltas_summed_on_the_pservers(tmp_path, model):
    """Two trainers train 3 steps each and push once (push_nums 3): each pushes (its change) / 2, and
    the pservers end with start + (change_0 + change_1) / 2 (row-sparse: the rows each touched)."""
    steps, batch = 3, 4
    results = run_geo(tmp_path, model, steps, steps, batch, trainers=2, pull=True)
    start, after0 = _alone(model, steps, batch, 0, 2)
    _, after1 = _alone(model, steps, batch, 1, 2)
    for name in start:
        want = start[name] + ((after0[name] - start[name]) + (after1[name] - start[name])) / 2
        for k, r in enumerate(results):
            # until its push, each trainer trains alone
            assert rel_err(r["%s_%d" % (name, steps - 1)], (after0, after1)[k][name]) < 1e-6, (k, name)
            assert rel_err(r["pulled_" + name], want) < 1e-5, (k, name, rel_err(r["pulled_" + name], want))


def eval_loss(model, params):
    """The model's loss on a fixed batch of 512 samples none of the runs trained on."""
    from dist_models import global_batch
    main, startup, loss, _ = build(model, "sgd", False)
    test = main.clone(for_test=True)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope.var(name).set_value(np.asarray(value))
    return exe.run(test, feed=global_batch(model, 999, 512), fetch_list=[loss], scope=scope)[0].item()


@pytest.mark.parametrize("model", ["fc", "emb"])
def test_two_trainers_converge(tmp_path, model):
    """30 steps of 2 trainers pushing every 5: the pservers' parameters lose most of the loss one
    process loses training on the same batches."""
    steps, batch = 30, 16
    runs = run_geo(tmp_path, model, 5, steps, batch, pull=True)
    ref, params = local_history(model, "sgd", False, steps, batch * 2)
    start, _ = _alone(model, 0, batch, 0, 2)
    before = eval_loss(model, start)
    local = eval_loss(model, {p: ref["%s_%d" % (p, steps - 1)] for p in params})
    geo = eval_loss(model, {p: runs[0]["pulled_" + p] for p in params})
    assert np.isfinite(geo) and before - geo > 0.6 * (before - local), (before, local, geo)
