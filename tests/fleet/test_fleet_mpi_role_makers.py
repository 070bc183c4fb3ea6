"""MPIRoleMaker and MPISymetricRoleMaker under a real mpirun (OpenMPI) with 2 and 4 processes."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from fleet_cluster import child_env

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = shutil.which("mpirun")

try:
    import mpi4py  # noqa: F401  (only whether it is there: MPI itself starts in the child processes)
    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(MPIRUN is None or not HAVE_MPI4PY,
                                 reason="needs OpenMPI's mpirun and mpi4py (apt-get install openmpi-bin "
                                        "libopenmpi-dev; pip install mpi4py), which .ci/run installs")]


def mpi_env():
    env = child_env()
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_MCA_btl_vader_single_copy_mechanism="none", OMPI_MCA_plm_rsh_agent="")
    env.pop("POD_IP", None)
    return env


def run_mpi(tmp_path, n, kind):
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(n), sys.executable,
           os.path.join(HERE, "fleet_mpi_child.py"), kind, str(tmp_path)]
    p = subprocess.run(cmd, env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    assert p.returncode == 0, "mpirun -np %d failed (%d):\n%s" % (n, p.returncode, p.stdout.decode(errors="replace"))
    out = []
    for r in range(n):
        with open(os.path.join(str(tmp_path), "rank%d.json" % r)) as f:
            out.append(json.load(f))
    return out


@pytest.mark.parametrize("n", [2, 4])
def test_mpi_role_maker_every_rank_a_worker(tmp_path, n):
    res = run_mpi(tmp_path, n, "plain")
    eps = res[0]["workers"]
    assert len(eps) == n and len(set(eps)) == n
    for r, d in enumerate(res):
        assert d["rank"] == r and d["size"] == n
        assert d["before_generate"] == "generate_role() should be called first"
        assert d["second_generate"] == "You should check role generation first"
        assert d["is_worker"] and not d["is_server"] and d["is_first_worker"] == (r == 0)
        assert d["worker_num"] == n and d["worker_index"] == r and d["server_num"] == 0
        assert d["workers"] == eps and d["servers"] == []
        assert d["gather"] == ["r%d" % k for k in range(n)]
        assert d["sum"] == [sum(range(n)), -sum(range(n)), sum(10 * k + 1 for k in range(n))]
        assert d["max"] == [n - 1, 0, 10 * (n - 1) + 1]
        assert d["min"] == [0, -(n - 1), 1]
        assert "unknown mode: prod" in d["bad_mode"]


@pytest.mark.parametrize("n", [2, 4])
def test_mpi_symetric_role_maker_pairs_servers_and_workers(tmp_path, n):
    res = run_mpi(tmp_path, n, "symetric")
    half = n // 2
    servers, workers = res[0]["servers"], res[0]["workers"]
    assert len(servers) == half and len(workers) == half and len(set(servers + workers)) == n
    for r, d in enumerate(res):
        server = r % 2 == 0
        assert d["is_server"] == server and d["is_worker"] == (not server)
        # integer counts and indices (Paddle 1.x returned floats)
        assert d["worker_num"] == half and d["server_num"] == half and isinstance(d["worker_num"], int)
        assert d["worker_index"] == r // 2 and d["server_index"] == r // 2 and isinstance(d["worker_index"], int)
        assert d["is_first_worker"] == (r == 1)
        assert d["servers"] == servers and d["workers"] == workers
        assert d["gather"] == ["r%d" % k for k in range(n)]
        if server:
            assert d["sum"] is None
        else:
            wr = [k for k in range(n) if k % 2]   # the workers' world ranks
            assert d["sum"] == [sum(wr), -sum(wr), sum(10 * k + 1 for k in wr)]
            assert d["max"] == [max(wr), -min(wr), 10 * max(wr) + 1]
            assert d["min"] == [min(wr), -max(wr), 10 * min(wr) + 1]


def test_mpi_symetric_role_maker_needs_even_size(tmp_path):
    p = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", sys.executable,
                        os.path.join(HERE, "fleet_mpi_child.py"), "symetric", str(tmp_path)],
                       env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    out = p.stdout.decode(errors="replace")
    assert p.returncode != 0
    assert "needs an even number of MPI processes, got 1" in out


def test_parameter_server_fleet_under_mpirun(tmp_path):
    """mpirun -np 4 with MPISymetricRoleMaker: ranks 0 and 2 serve, ranks 1 and 3 train (sync);
    the workers end every step with one process's parameters on the whole batch."""
    import numpy as np
    from fleet_models import PARAMS, local_history, rel_err
    out = str(tmp_path / "worker{}.npz")
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "4", sys.executable,
           os.path.join(HERE, "fleet_ps_child.py"), "--role_maker", "mpi", "--optimizer", "momentum",
           "--steps", "3", "--batch", "8", "--out", out]
    p = subprocess.run(cmd, env=mpi_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=200)
    assert p.returncode == 0, p.stdout.decode(errors="replace")[-5000:]
    ref = local_history("momentum", 3, 8)
    for k in range(2):
        r = dict(np.load(out.format(k)))
        for step in range(3):
            for name in PARAMS:
                key = "%s_%d" % (name, step)
                assert rel_err(r[key], ref[key]) < 1e-5, (k, key)
