"""Heartbeats, not deadlines: a pserver, trainer or collective rank killed (SIGKILL) mid-run ends every
other process of the job within seconds with the shipped defaults, each naming it; one stopped (SIGSTOP)
ends them once it has been silent for FLUIDIST_PEER_TIMEOUT (set to 4 s here; 300 s by default), after a
warning; a peer that is merely slow (it sleeps many times the peer timeout between steps) is never ended.
No FLAGS_rpc_deadline and no FLUIDIST_COLLECTIVE_TIMEOUT here."""
import os
import signal
import time

import pytest

from child_procs import wait_until
from cluster import Cluster, free_ports
from test_collective_ops import finish, launch

pytestmark = pytest.mark.timeout(240)

LIMIT = 15.0
NO_DEADLINE = {"FLAGS_rpc_deadline": ""}
STOP_BOUND = {"FLUIDIST_PEER_TIMEOUT": "4", "FLUIDIST_PEER_WARN": "1"}


def _exit_times(procs, t0, limit):
    """{name: seconds after t0 the process exited} (None: still running at t0 + limit)."""
    out = {}
    while time.monotonic() < t0 + limit and len(out) < len(procs):
        for name, p in procs.items():
            if name not in out and p.poll() is not None:
                out[name] = time.monotonic() - t0
        time.sleep(0.05)
    return {name: out.get(name) for name in procs}


def _ps_job(c, eps, trainers=2, extra=(), env=None):
    common = ["--endpoints", ",".join(eps), "--trainers", trainers, "--model", "fc", "--steps", 100000,
              "--batch", 2] + list(extra)
    procs = {}
    for i, ep in enumerate(eps):
        procs["ps%d" % i] = c.start("ps%d" % i, "pserver_model.py",
                                    ["--role", "pserver", "--current_endpoint", ep] + common,
                                    env=dict(NO_DEADLINE, **(env or {})))
    for k in range(trainers):
        procs["tr%d" % k] = c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k] + common,
                                    env=dict(NO_DEADLINE, **(env or {})))
    return procs


@pytest.mark.parametrize("victim,how", [("ps0", "kill"), ("ps0", "stop"), ("tr0", "kill"), ("tr0", "stop")])
def test_a_lost_pserver_or_trainer_ends_every_other_process_naming_it(tmp_path, victim, how, record_property):
    eps = ["127.0.0.1:%d" % p for p in free_ports(2)]
    with Cluster(tmp_path) as c:
        procs = _ps_job(c, eps, extra=["--step_delay", "0.05"], env=STOP_BOUND if how == "stop" else None)
        wait_until(lambda: all("step 3 done" in c.log("tr%d" % k) for k in range(2)), 90, "the trainers' step 3")
        t0 = time.monotonic()
        os.kill(procs[victim].pid, signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        others = {n: p for n, p in procs.items() if n != victim}
        times = _exit_times(others, t0, LIMIT + 5)
        name = eps[0] if victim == "ps0" else "trainer 0"
        for n, t in times.items():
            assert t is not None and t < LIMIT, "%s still ran %.0f s after %s of %s:\n%s" % (
                n, LIMIT, how, victim, c.log(n)[-3000:])
            assert others[n].returncode != 0, c.log(n)[-3000:]
            assert name in c.log(n), "%s's log does not name %s:\n%s" % (n, name, c.log(n)[-3000:])
        record_property("detection_s", round(max(times.values()), 2))   # in the JUnit XML report
        if how == "stop":
            os.kill(procs[victim].pid, signal.SIGKILL)


@pytest.mark.parametrize("transport,how", [("zmq", "kill"), ("zmq", "stop"), ("shm", "stop")])
def test_a_lost_collective_rank_ends_the_others_naming_it(tmp_path, transport, how, monkeypatch, record_property):
    env_keep = os.environ.pop("FLUIDIST_COLLECTIVE_TIMEOUT", None)
    for k, v in (STOP_BOUND if how == "stop" else {}).items():
        monkeypatch.setenv(k, v)
    try:
        _, procs = launch(tmp_path, "loop", 3, transport)
    finally:
        if env_keep is not None:
            os.environ["FLUIDIST_COLLECTIVE_TIMEOUT"] = env_keep
    try:
        logs = {r: log for r, _, log in procs}

        def ready():
            for log in logs.values():
                log.seek(0)
                if "ready" not in log.read():
                    return False
            return True
        wait_until(ready, 90, "every rank's first all-reduce")
        victim = procs[1][1]
        t0 = time.monotonic()
        os.kill(victim.pid, signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        others = {r: p for r, p, _ in procs if r != 1}
        times = _exit_times(others, t0, LIMIT + 5)
        for r, t in times.items():
            logs[r].seek(0)
            text = logs[r].read()
            assert t is not None and t < LIMIT, "rank %d still ran %.0f s after %s of rank 1:\n%s" % (
                r, LIMIT, how, text[-3000:])
            assert "rank 1 " in text and "ring 0" in text, text[-3000:]
        record_property("detection_s", round(max(times.values()), 2))
    finally:
        if how == "stop":
            os.kill(procs[1][1].pid, signal.SIGKILL)
        finish(procs, 5)


def test_slow_peers_are_never_ended(tmp_path, monkeypatch):
    """A trainer and a collective rank sleep 5x the peer timeout between steps (their heartbeats go
    on, their work does not); nobody is ended."""
    monkeypatch.setenv("FLUIDIST_PEER_TIMEOUT", "2")
    monkeypatch.setenv("PAUSE_SECONDS", "10")
    monkeypatch.delenv("FLUIDIST_COLLECTIVE_TIMEOUT", raising=False)
    eps = ["127.0.0.1:%d" % p for p in free_ports(1)]
    with Cluster(tmp_path) as c:
        common = ["--endpoints", eps[0], "--trainers", 2, "--model", "fc", "--steps", 3, "--batch", 2]
        c.start("ps0", "pserver_model.py", ["--role", "pserver", "--current_endpoint", eps[0]] + common,
                env=NO_DEADLINE)
        c.start("tr0", "pserver_model.py", ["--role", "trainer", "--trainer_id", 0] + common, env=NO_DEADLINE)
        c.start("tr1", "pserver_model.py", ["--role", "trainer", "--trainer_id", 1, "--pause", "0:10"] + common,
                env=NO_DEADLINE)
        _, procs = launch(tmp_path, "pause", 3, "zmq")
        res = finish(procs, 90)
        for r, (code, out) in res.items():
            assert code == 0, "rank %d: %s" % (r, out[-3000:])
        c.check(timeout=90)
    assert "step 2 done" in c.log("tr1")

