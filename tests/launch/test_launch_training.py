"""Real distributed training started through the launcher equals one process training on the
concatenated batches (the equivalence references of tests/distributed/dist_models.py).

The training scripts (scripts/collective_train.py, scripts/ps_train.py) learn everything from the
environment the launcher sets, as users' scripts do; they run on the rpc runtime (parameter server)
and the CPU collective backend."""
import os
import sys
import uuid

import numpy as np
import pytest

from launch_testlib import ROOT, base_env, run_launcher, script, wait_until
from test_launch_elastic import etcd  # noqa: F401  (a real etcd server)
from test_launch_two_hosts import two_hosts  # noqa: F401  (the namespace pair fixture)

sys.path.insert(0, os.path.join(ROOT, "tests", "distributed"))
from dist_models import local_history  # noqa: E402

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

STEPS, BATCH = 3, 4


def _compare(out, n, model, optimizer):
    ref, params = local_history(model, optimizer, False, STEPS, BATCH * n)
    results = [dict(np.load(str(out / ("trainer_%d.npz" % r)))) for r in range(n)]
    for step in range(STEPS):
        for name in params:
            want = ref["%s_%d" % (name, step)]
            for r, got in enumerate(results):
                g = got["%s_%d" % (name, step)]
                err = np.abs(g - want).max() / max(np.abs(want).max(), 1e-12)
                assert err < 1e-5, "trainer %d step %d param %s: relative error %g" % (r, step, name, err)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_collective_nproc_per_node_2_equals_local(tmp_path, optimizer):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc_per_node", "2", script("collective_train.py"), "--optimizer", optimizer,
                      "--steps", STEPS, "--batch", BATCH], cwd=tmp_path, env=base_env(out_dir=out), timeout=240)
    assert r.returncode == 0, r.stderr
    assert "rank 0 step %d loss" % (STEPS - 1) in r.stdout
    _compare(out, 2, "fc", optimizer)


def test_ps_server_num_2_worker_num_2_equals_local(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    env = base_env(out_dir=out, extra={"FLAGS_rpc_deadline": "20000"})
    r = run_launcher(["--server_num", "2", "--worker_num", "2", script("ps_train.py"), "--steps", STEPS,
                      "--batch", BATCH], cwd=tmp_path, env=env, timeout=240)
    assert r.returncode == 0, r.stderr
    assert "trainer 0 step %d loss" % (STEPS - 1) in r.stdout
    assert sorted(os.listdir(tmp_path / "log")) == ["endpoints.log", "serverlog.0", "serverlog.1", "workerlog.0",
                                                    "workerlog.1"]
    _compare(out, 2, "fc", "sgd")


def test_collective_across_two_hosts_equals_local(tmp_path, two_hosts):
    from test_launch_two_hosts import HOSTS, _run_both
    out = tmp_path / "out"
    out.mkdir()
    codes, nodes = _run_both(tmp_path, two_hosts, lambda k: [
        "--ips", ",".join(HOSTS), "--nproc_per_node", "1", "--log_dir", "log%d" % k, script("collective_train.py"),
        "--steps", STEPS, "--batch", BATCH], out)
    assert codes == [0, 0], [n.stderr() for n in nodes]
    _compare(out, 2, "fc", "sgd")


def test_ps_across_two_hosts_equals_local(tmp_path, two_hosts):
    from test_launch_two_hosts import HOSTS, _run_both
    out = tmp_path / "out"
    out.mkdir()
    servers = ",".join("%s:6170" % h for h in HOSTS)
    codes, nodes = _run_both(tmp_path, two_hosts, lambda k: [
        "--servers", servers, "--workers", ",".join(HOSTS), "--log_dir", "log%d" % k, script("ps_train.py"),
        "--steps", STEPS, "--batch", BATCH], out)
    assert codes == [0, 0], [n.stderr() for n in nodes]
    _compare(out, 2, "fc", "sgd")


def test_elastic_training_resumes_with_the_new_membership(tmp_path, etcd):
    """Generation 1 (nodes A, B) trains 3 steps and checkpoints; B is killed, C joins; generation 2
    (A, C) loads the checkpoint and trains 3 more: every step equals one process on the whole batches."""
    from test_launch_elastic import _node
    out = tmp_path / "out"
    out.mkdir()
    job = "train-" + uuid.uuid4().hex[:8]
    nodes = {}
    try:
        for name in ("A", "B"):
            nodes[name] = _node(tmp_path, out, etcd, job, name, script="elastic_train.py",
                                script_args=["--steps", STEPS, "--batch", BATCH])
        wait_until(lambda: all((out / ("g1_trainer_%d.npz" % r)).exists() for r in range(2)), 120,
                   "generation 1 to train")
        nodes["B"].proc.kill()
        nodes["C"] = _node(tmp_path, out, etcd, job, "C", script="elastic_train.py",
                           script_args=["--steps", STEPS, "--batch", BATCH])
        assert nodes["A"].wait(120) == 0 and nodes["C"].wait(120) == 0, nodes["A"].stderr()
    finally:
        for n in nodes.values():
            n.close()
    gens = sorted({int(f.split("_")[0][1:]) for f in os.listdir(out) if f.startswith("g") and f.endswith(".npz")})
    last = gens[-1]
    assert last >= 2
    ref, params = local_history("fc", "sgd", False, 2 * STEPS, BATCH * 2)
    for gen, steps in ((1, range(STEPS)), (last, range(STEPS, 2 * STEPS))):
        for r in range(2):
            got = dict(np.load(str(out / ("g%d_trainer_%d.npz" % (gen, r)))))
            assert int(got["first_step"]) == steps[0]
            for step in steps:
                for name in params:
                    want = ref["%s_%d" % (name, step)]
                    err = np.abs(got["%s_%d" % (name, step)] - want).max() / max(np.abs(want).max(), 1e-12)
                    assert err < 1e-5, "generation %d trainer %d step %d %s: relative error %g" % (
                        gen, r, step, name, err)
