"""2 pservers x 2 trainers over real processes and sockets equal one process on the whole batch."""
import numpy as np
import pytest

from cluster import Cluster, free_ports
from dist_models import batch_for, build, local_history
import fluidist as fluid

pytestmark = pytest.mark.timeout(180)


def run_cluster(tmp_path, model, optimizer, lr_decay=False, steps=3, batch=4, async_mode=False, trainers=2,
                extra=()):
    ports = free_ports(2)
    eps = ",".join("127.0.0.1:%d" % p for p in ports)
    common = ["--endpoints", eps, "--trainers", trainers, "--model", model, "--optimizer", optimizer,
              "--steps", steps, "--batch", batch]
    if lr_decay:
        common.append("--lr_decay")
    if async_mode:
        common.append("--async_mode")
    common += list(extra)
    outs = []
    with Cluster(tmp_path) as c:
        for i, ep in enumerate(eps.split(",")):
            c.start("ps%d" % i, "pserver_model.py", ["--role", "pserver", "--current_endpoint", ep] + common)
        for k in range(trainers):
            out = str(tmp_path / ("trainer%d.npz" % k))
            outs.append(out)
            c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k, "--out", out] + common)
        codes = c.wait(timeout=150)
        for name, code in codes.items():
            assert code == 0, "%s exited with %s:\n%s" % (name, code, c.log(name))
    return [dict(np.load(o)) for o in outs]


def run_cases(tmp_path, cases, steps=3, batch=4, trainers=2, env=None):
    """Train sync ``cases`` ((model, optimizer, lr_decay) each) one after the other on one set of 2
    pservers and ``trainers`` trainers, each case on its own ports: ``{case: [each trainer's history]}``."""
    ports = free_ports(2 * len(cases))
    eps = ["127.0.0.1:%d,127.0.0.1:%d" % (ports[2 * i], ports[2 * i + 1]) for i in range(len(cases))]
    common = ["--cases", ";".join("%s:%s:%d" % (m, o, int(d)) for m, o, d in cases), "--endpoints", ";".join(eps),
              "--trainers", trainers, "--steps", steps, "--batch", batch]
    outs = [tmp_path / ("trainer%d" % k) for k in range(trainers)]
    with Cluster(tmp_path) as c:
        for i in range(2):
            c.start("ps%d" % i, "pserver_model.py", ["--role", "pserver", "--pserver_index", i] + common, env=env)
        for k in range(trainers):
            outs[k].mkdir()
            c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k, "--out", outs[k]] + common,
                    env=env)
        # trainers first: a failed trainer is reported at once, not after the pservers' time limit
        c.check(names=["tr%d" % k for k in range(trainers)], timeout=60 + 10 * len(cases))
        c.check(names=["ps0", "ps1"], timeout=30)
    return {case: [dict(np.load(str(o / ("%d.npz" % i)))) for o in outs] for i, case in enumerate(cases)}


_JOBS = {}   # job key -> {case: results}: one job trains every case of one test function this session runs


def batched_results(request, tmp_path_factory, key, case, env=None):
    """The results of ``case`` from the job that trains the cases of every test of the calling test
    function (and ``key``) this session runs, started by the first of them."""
    if key not in _JOBS:
        fn = request.function
        mine = [item for item in request.session.items if getattr(item, "function", None) is fn]
        cases = sorted({case_of(item.callspec.params) for item in mine if key_of(item.callspec.params) == key})
        _JOBS[key] = run_cases(tmp_path_factory.mktemp("ps_sync"), cases, env=env)
    return _JOBS[key][case]


def case_of(params):
    return params["model"], params["optimizer"], params.get("lr_decay", False)


def key_of(params):
    return params.get("transport", "auto")


def assert_equal_local(results, model, optimizer, lr_decay, steps=3, batch=4):
    ref, params = local_history(model, optimizer, lr_decay, steps, batch * 2)
    for step in range(steps):
        # equal batch halves: the mean of the trainers' losses is the loss of the whole batch
        mean_loss = np.mean([r["loss_%d" % step] for r in results])
        np.testing.assert_allclose(mean_loss, ref["loss_%d" % step][0], rtol=1e-5)
        for name in params:
            if name.startswith("ftrl_"):
                continue   # below: FTRL's update is not a function of the gradient that float32 can follow
            want = ref["%s_%d" % (name, step)]
            for r in results:
                err = rel(r["%s_%d" % (name, step)], want)
                assert err < 1e-5, "step %d param %s: relative error %g" % (step, name, err)
    if model == "all_opt":
        assert_ftrl_follows_its_gradients(results, ref, [p for p in params if p.startswith("ftrl_")], steps)


def ftrl_float32(p, g, sq, lin, lr=0.002, l1=0.001, l2=0.001):
    """Paddle's FTRL step (lr_power -0.5) in float32, operation by operation as its kernel rounds each."""
    f = np.float32
    new_sq = sq + g * g
    lin = lin + g - (np.sqrt(new_sq) - np.sqrt(sq)) / f(lr) * p
    p = np.where(np.abs(lin) > f(l1), (f(l1) * np.sign(lin) - lin) / (np.sqrt(new_sq) / f(lr) + f(2 * l2)), f(0))
    return p, new_sq, lin


def assert_ftrl_follows_its_gradients(results, ref, names, steps):
    """FTRL's parameters, checked in two parts that float32 can answer.

    Its step divides by the gradient: at the first, ``p1 = (l1 sign(z) - z) / (|g|/lr + 2 l2)`` with
    ``z = g - |g| p0 / lr``, which is ``p0 - lr sign(g) + l1 lr / |g|`` away from the l1 threshold, so a
    gradient rounded one way or the other by ``d`` moves ``p1`` by ``l1 lr d / g^2``: without a bound
    relative to ``p``. The two trainers' half-batch gradients, summed on the pservers, are rounded
    differently from the whole batch's, and how depends on the CPU's BLAS kernels and their thread
    count (2.6e-5 of the parameter on an AVX2 kernel, 5e-6 on an AVX-512 one, for one element whose
    gradient is 100 times smaller than the largest). So: the first step's gradients the job averaged
    equal the whole batch's (a sum of products, from the same parameters: float32's resolution times
    its terms; later steps start from parameters FTRL moved apart), and every parameter the pservers
    hold after each step is FTRL's float32 update of that step's averaged gradient, from the initial
    parameters, as the kernel rounds it (to the last bits)."""
    for name in names:
        p = results[0]["%s_init" % name]
        sq, lin = np.zeros_like(p), np.zeros_like(p)
        for step in range(steps):
            grads = [r["%s@GRAD_%d" % (name, step)] for r in results]
            g = (grads[0] + grads[1]) * np.float32(0.5)     # the pservers' sum and scale by 1/trainers
            if step == 0:
                err = rel(g, ref["%s@GRAD_%d" % (name, step)])
                assert err < 1e-5, "step %d gradient of %s: relative error %g" % (step, name, err)
            p, sq, lin = ftrl_float32(p, g, sq, lin)
            for r in results:
                err = rel(r["%s_%d" % (name, step)], p)
                assert err < 1e-6, "step %d param %s: relative error %g from FTRL's update" % (step, name, err)


@pytest.mark.parametrize("model,optimizer,lr_decay", [
    ("fc", "sgd", False), ("fc", "momentum", False), ("fc", "adam", False), ("fc", "sgd", True),
    ("emb", "sgd", False), ("dtable", "sgd", False), ("dtable", "adagrad", False), ("emb_one_shard", "sgd", False),
    ("emb_one_shard", "adam", False), ("fc", "adadelta", False), ("fc", "lookahead", False),
    ("fc", "ema", False), ("fc", "model_average", False), ("fc", "recompute", False),
    # every optimizer of fluid 1.x at once, each on a parameter sliced over both pservers (LAMB's and
    # LARS's norm-based updates keep theirs whole), with an LR schedule
    ("all_opt", "-", True)])
def test_sync_two_pservers_two_trainers_equal_local(request, tmp_path_factory, model, optimizer, lr_decay):
    """2 pservers and 2 trainers (one job for all the cases, each on its own ports and scope)."""
    results = batched_results(request, tmp_path_factory, "auto", (model, optimizer, lr_decay))
    assert_equal_local(results, model, optimizer, lr_decay)


@pytest.mark.parametrize("transport", ["tcp", "shm"])
@pytest.mark.parametrize("model,optimizer", [("fc", "momentum"), ("dtable", "sgd")])
def test_sync_equal_local_over_each_transport(request, tmp_path_factory, model, optimizer, transport):
    """Forced TCP, and shared memory for every payload (resident parameter blocks, sums on arrival,
    blocks received into the parameters): still equal to local training (one job per transport)."""
    env = {"FLUIDIST_PS_TRANSPORT": transport, "FLUIDIST_PS_SHM_MIN_BYTES": "1"}
    results = batched_results(request, tmp_path_factory, transport, (model, optimizer, False), env)
    assert_equal_local(results, model, optimizer, False)


@pytest.mark.parametrize("transport", ["tcp", "shm"])
def test_async_two_trainers_converge(tmp_path, monkeypatch, transport):
    monkeypatch.setenv("FLUIDIST_PS_TRANSPORT", transport)
    monkeypatch.setenv("FLUIDIST_PS_SHM_MIN_BYTES", "1")
    steps = 30
    runs = run_cluster(tmp_path, "emb", "sgd", steps=steps, batch=16, async_mode=True)
    losses = np.array([[float(np.mean(r["loss_%d" % i])) for i in range(steps)] for r in runs])
    # both trainers together (each alone is noisy: the other's updates land between its steps)
    assert np.all(np.isfinite(losses)) and losses[:, -8:].mean() < 0.8 * losses[:, :8].mean(), losses


@pytest.mark.parametrize("transport", ["auto", "shm"])
def test_async_one_trainer_with_lr_decay_equals_local(tmp_path, monkeypatch, transport):
    """One trainer in async mode applies its gradients in order, so it must equal the local run,
    LR schedule included (the pservers advance the schedule on every trainer step); also with every
    payload through shared memory (async replies are snapshots)."""
    if transport == "shm":
        monkeypatch.setenv("FLUIDIST_PS_TRANSPORT", "shm")
        monkeypatch.setenv("FLUIDIST_PS_SHM_MIN_BYTES", "1")
    steps, batch = 3, 4
    (result,) = run_cluster(tmp_path, "fc", "sgd", True, steps, batch, async_mode=True, trainers=1)
    ref, params = local_history("fc", "sgd", True, steps, batch)
    for step in range(steps):
        for name in params:
            want, got = ref["%s_%d" % (name, step)], result["%s_%d" % (name, step)]
            err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)
            assert err < 1e-5, "step %d param %s: relative error %g" % (step, name, err)


def test_async_with_a_started_communicator_converges(tmp_path):
    """fluid.communicator.Communicator(program, ASYNC) started by the script: queued gradients merged
    and sent, parameters received, from background threads."""
    steps = 30
    runs = run_cluster(tmp_path, "emb", "sgd", steps=steps, batch=16, async_mode=True, extra=["--communicator", "async"])
    losses = np.array([[float(np.mean(r["loss_%d" % i])) for i in range(steps)] for r in runs])
    assert np.all(np.isfinite(losses)) and losses[:, -8:].mean() < 0.8 * losses[:, :8].mean(), losses


@pytest.mark.parametrize("model", ["fc", "emb"])
def test_half_async_one_trainer_equals_local(tmp_path, model):
    """Half-async with its communicator: every step ends at the barrier, after the step's gradients
    went out and the parameters came back; one trainer then trains exactly as alone."""
    steps, batch = 3, 4
    (result,) = run_cluster(tmp_path, model, "sgd", False, steps, batch, async_mode=True, trainers=1,
                            extra=["--communicator", "half_async"])
    ref, params = local_history(model, "sgd", False, steps, batch)
    for step in range(steps):
        for name in params:
            want, got = ref["%s_%d" % (name, step)], result["%s_%d" % (name, step)]
            err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)
            assert err < 1e-5, "step %d param %s: relative error %g" % (step, name, err)


@pytest.mark.parametrize("model", ["fc", "emb"])
def test_async_communicator_loses_and_repeats_no_gradient(tmp_path, model):
    """Two trainers with their async communicators (queues of 4, up to 4 merged, summed for SGD): after
    both stopped, the pservers hold the start minus lr times the sum of every gradient either trainer
    computed, whatever was merged and whenever the parameters came back."""
    steps, batch = 12, 8
    runs = run_cluster(tmp_path, model, "sgd", steps=steps, batch=batch, async_mode=True,
                       extra=["--communicator", "async", "--pull_dir", str(tmp_path)])
    main, startup, loss, params = build(model, "sgd", False)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for name in params:
        start = np.array(scope.find_var(name).get_tensor())
        total = np.zeros_like(start)
        for k, r in enumerate(runs):
            for step in range(steps):
                g = r["%s@GRAD_%d" % (name, step)]
                if g.shape == start.shape:
                    total += g
                else:      # a row-sparse gradient, fetched as its rows' values: one per id looked up
                    np.add.at(total, batch_for(model, step, batch * 2, k, 2)["ids"].reshape(-1), g)
        want = start - np.float32(0.05) * total
        for r in runs:
            assert rel(r["pulled_" + name], want) < 1e-5, (name, rel(r["pulled_" + name], want))


def rel(got, want):
    return np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)
