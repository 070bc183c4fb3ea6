"""A small /dev/shm (64 MiB, a container's default) under a job whose payloads do not fit: the faithful
setting is a mount namespace (``unshare -m``, root) with a 64 MiB tmpfs over /dev/shm. Segments are
allocated up front (``posix_fallocate``), so a full tmpfs is an error at creation, never a SIGBUS at the
first write: with the default transport the process goes on over TCP (one log line), with
``FLUIDIST_PS_TRANSPORT=shm`` it refuses naming /dev/shm and ``FLUIDIST_PS_TRANSPORT=tcp``."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cluster import HERE, child_env
from dist_models import local_history

pytestmark = pytest.mark.timeout(240)

SMALL = "64m"


def _namespace_cmd(argv, size=SMALL):
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs -o size=%s tmpfs /dev/shm && exec "$0" "$@"' % size] + list(argv)


@pytest.fixture(scope="module")
def small_shm():
    """Skips, saying why, where a private mount namespace with its own tmpfs cannot be made."""
    if os.geteuid() != 0:
        pytest.skip("a tmpfs over /dev/shm in a private mount namespace needs root (unshare -m, mount)")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(_namespace_cmd(["true"], "1m"), capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("cannot mount a tmpfs over /dev/shm in a new mount namespace here: %s" % probe.stderr.strip())
    return _namespace_cmd


def test_a_2x2_job_whose_payloads_do_not_fit_goes_over_tcp_and_equals_local(tmp_path, small_shm):
    steps, batch = 2, 2
    env = child_env({"FLUIDIST_PS_TRANSPORT": "auto"})
    run = subprocess.run(small_shm([sys.executable, os.path.join(HERE, "small_shm_job.py"), str(tmp_path), str(steps)]),
                         capture_output=True, text=True, env=env, timeout=200)
    logs = {n: (tmp_path / (n + ".log")).read_text() for n in ("ps0", "ps1", "tr0", "tr1")}
    assert run.returncode == 0, "%s\n%s\n%s" % (run.stdout, run.stderr, "\n".join(
        "--- %s:\n%s" % (n, t[-3000:]) for n, t in logs.items()))
    said = {n: t.count("go over TCP from now on") for n, t in logs.items()}
    assert all(v <= 1 for v in said.values()) and sum(said.values()) >= 1, said
    assert any("/dev/shm has" in t and "does not fit" in t for t in logs.values()), logs
    ref, params = local_history("big", "sgd", False, steps, batch * 2)
    for k in range(2):
        got = dict(np.load(str(tmp_path / ("trainer%d.npz" % k))))
        for step in range(steps):
            for name in params:
                np.testing.assert_allclose(got["%s_%d" % (name, step)], ref["%s_%d" % (name, step)],
                                           rtol=1e-5, atol=1e-6)


REFUSE = """
import numpy as np
from fluidist.distributed import shm_payload, wire
frames = wire.encode("send", 1, "w", np.ones(20 << 20, np.float32))     # 80 MiB
try:
    shm_payload.pack(frames, ("t", "w"), owner=1)
except shm_payload.ShmError as e:
    print("REFUSED:", e)
"""


def test_shm_asked_for_refuses_naming_dev_shm_and_the_tcp_setting(tmp_path, small_shm):
    env = child_env({"FLUIDIST_PS_TRANSPORT": "shm"})
    run = subprocess.run(small_shm([sys.executable, "-c", REFUSE]), capture_output=True, text=True, env=env,
                         timeout=60, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "REFUSED:" in out and "/dev/shm has" in out and "FLUIDIST_PS_TRANSPORT=tcp" in out, out
