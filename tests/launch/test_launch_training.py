"""Real distributed training started through the launcher equals one process training on the
concatenated batches (the equivalence references of tests/distributed/dist_models.py).

The training scripts (scripts/collective_train.py, scripts/ps_train.py) learn everything from the
environment the launcher sets, as users' scripts do. The parameter-server case needs the rpc runtime
(``fluidist.ops.rpc_ops``) and is skipped, saying so, while that module is missing."""
import importlib.util
import os
import sys

import numpy as np
import pytest

from launch_testlib import ROOT, base_env, run_launcher, script
from test_launch_two_hosts import two_hosts  # noqa: F401  (the namespace pair fixture)

sys.path.insert(0, os.path.join(ROOT, "tests", "distributed"))
from dist_models import local_history  # noqa: E402

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]

STEPS, BATCH = 3, 4


def _have(module):
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


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


@pytest.mark.skipif(not _have("fluidist.ops.collective_ops"), reason="fluidist.ops.collective_ops is not there yet")
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_collective_nproc_per_node_2_equals_local(tmp_path, optimizer):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc_per_node", "2", script("collective_train.py"), "--optimizer", optimizer,
                      "--steps", STEPS, "--batch", BATCH], cwd=tmp_path, env=base_env(out_dir=out), timeout=240)
    assert r.returncode == 0, r.stderr
    assert "rank 0 step %d loss" % (STEPS - 1) in r.stdout
    _compare(out, 2, "fc", optimizer)


@pytest.mark.skipif(not _have("fluidist.ops.rpc_ops"),
                    reason="fluidist.ops.rpc_ops (the parameter-server runtime) is not there yet")
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


@pytest.mark.skipif(not _have("fluidist.ops.collective_ops"), reason="fluidist.ops.collective_ops is not there yet")
def test_collective_across_two_hosts_equals_local(tmp_path, two_hosts):
    from test_launch_two_hosts import HOSTS, _run_both
    out = tmp_path / "out"
    out.mkdir()
    codes, nodes = _run_both(tmp_path, two_hosts, lambda k: [
        "--ips", ",".join(HOSTS), "--nproc_per_node", "1", "--log_dir", "log%d" % k, script("collective_train.py"),
        "--steps", STEPS, "--batch", BATCH], out)
    assert codes == [0, 0], [n.stderr() for n in nodes]
    _compare(out, 2, "fc", "sgd")


@pytest.mark.skipif(not _have("fluidist.ops.rpc_ops"),
                    reason="fluidist.ops.rpc_ops (the parameter-server runtime) is not there yet")
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
