"""The launcher's job secret (a fresh one for a local job, --secret_file, --insecure, none at all for a
job on several nodes is an error), the proof of it in the --master rendezvous, and no orphans after a
``kill -9`` of the launcher, grandchildren included."""
import os
import signal

import pytest

from fluidist.distributed import security
from launch_testlib import Launcher, base_env, free_port, pid_alive, read_json, run_launcher, script, wait_until

pytestmark = pytest.mark.timeout(120)


def _env(out, **extra):
    env = base_env(out_dir=out)
    for k in (security.SECRET_ENV, security.SECRET_FILE_ENV, security.INSECURE_ENV):
        env.pop(k, None)
    env.update(extra)
    return env


def test_a_local_job_gets_a_fresh_secret_and_a_secret_file_or_insecure_is_handed_down(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc_per_node", "2", "--print_config", "1", script("secret_check.py")], cwd=tmp_path,
                     env=_env(out, HOME=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    got = [read_json(out / ("secret_%d.json" % i)) for i in range(2)]
    fresh = got[0]["FLUIDIST_JOB_SECRET"]
    assert fresh and len(fresh) >= 32 and got[1]["FLUIDIST_JOB_SECRET"] == fresh
    assert fresh not in r.stdout and "job_secret" not in r.stdout     # --print_config never shows it
    assert not (tmp_path / ".fluidist").exists()                       # not the per-user default
    f = tmp_path / "job.secret"
    security.write_secret_file(str(f), "s" * 24)
    r = run_launcher(["--nproc_per_node", "1", "--secret_file", str(f), script("secret_check.py")], cwd=tmp_path,
                     env=_env(out))
    assert r.returncode == 0, r.stderr
    assert read_json(out / "secret_0.json") == {"FLUIDIST_JOB_SECRET": "s" * 24, "FLUIDIST_SECRET_FILE": None,
                                                "FLUIDIST_INSECURE": None}
    f.chmod(0o644)
    r = run_launcher(["--nproc_per_node", "1", "--secret_file", str(f), script("secret_check.py")], cwd=tmp_path,
                     env=_env(out))
    assert r.returncode == 1 and "can be read by others (mode 0644): chmod 600" in r.stderr
    r = run_launcher(["--nproc_per_node", "1", "--insecure", script("secret_check.py")], cwd=tmp_path, env=_env(out))
    assert r.returncode == 0, r.stderr
    assert read_json(out / "secret_0.json")["FLUIDIST_INSECURE"] == "1"
    assert "--insecure: the job's sockets are neither authenticated nor encrypted" in r.stderr


def test_a_job_on_several_nodes_needs_a_shared_secret(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for args in (["--nnodes", "2", "--master", "127.0.0.1:%d" % free_port()],
                 ["--ips", "127.0.0.1,127.0.0.2"],
                 ["--servers", "127.0.0.1:%d,127.0.0.2:%d" % (free_port(), free_port()), "--workers", "127.0.0.1"]):
        r = run_launcher(args + ["--rendezvous_timeout", "5", script("secret_check.py")], cwd=tmp_path, env=_env(out))
        assert r.returncode == 1, (args, r.stderr)
        assert "a job on several nodes needs the same secret on every node: pass --secret_file FILE" in r.stderr
    assert not os.listdir(out)


def test_the_master_rendezvous_refuses_a_node_without_the_secret(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    args = ["--nnodes", "2", "--master", "127.0.0.1:%d" % port, "--nproc_per_node", "1", "--rendezvous_timeout", "8"]
    host = Launcher(args + ["--node_rank", "0", "--node_ip", "127.0.0.1", script("env_check.py")], cwd=tmp_path,
                    env=_env(out, FLUIDIST_JOB_SECRET="the-secret-of-this-job"), name="host")
    try:
        stranger = run_launcher(args + ["--node_rank", "1", "--node_ip", "127.0.0.2", script("env_check.py")],
                                cwd=tmp_path, env=_env(out, FLUIDIST_JOB_SECRET="the-secret-of-another-job"))
        assert stranger.returncode == 1
        assert "does not hold this job's secret" in stranger.stderr, stranger.stderr
        assert host.wait(30) == 1
        assert "refused a connection: node at 127.0.0.1 does not hold this job's secret" in host.stderr()
        assert "waited on 127.0.0.1:%d for 2 node(s) but only 1 joined" % port in host.stderr()
    finally:
        host.close()
    assert not os.listdir(out)


def test_no_process_of_the_job_survives_a_killed_launcher(tmp_path):
    """SIGKILL of the launcher: its children die (parent-death signal) and so do their grandchildren,
    which only the watchdog can reach (their parent, the child, is gone)."""
    out = tmp_path / "out"
    out.mkdir()
    lau = Launcher(["--nproc_per_node", "2", script("orphan_maker.py")], cwd=tmp_path, env=_env(out))
    try:
        wait_until(lambda: all((out / ("pids_%d.json" % i)).exists() for i in range(2)), 30, "both ranks to start")
        pids = [read_json(out / ("pids_%d.json" % i)) for i in range(2)]
        everyone = [p["script"] for p in pids] + [p["grandchild"] for p in pids]
        assert all(pid_alive(p) for p in everyone)
        lau.proc.send_signal(signal.SIGKILL)
        lau.wait(10)
        wait_until(lambda: not any(pid_alive(p) for p in everyone), 5, "every process of the job to die")
    finally:
        lau.close()
