"""The README's main job: digits trained by 2 pservers and 2 trainers started as local processes."""
import os
import re
import signal
import subprocess
import sys

import pytest

from cluster import ROOT, child_env
from load_aware import scaled

pytestmark = pytest.mark.timeout(240)


def readme_env():
    """The environment the README's command runs in: no deadline of the tests' own (FLAGS_rpc_deadline,
    FLUIDIST_WAIT_PORT_TIMEOUT), so a busy machine is waited for as a user's would be."""
    env = child_env()
    for name in ("FLAGS_rpc_deadline", "FLUIDIST_WAIT_PORT_TIMEOUT"):
        env.pop(name, None)
    return env


def run_example(*args):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "dist_digits.py")] + list(args),
                         capture_output=True, text=True, env=readme_env(), timeout=scaled(200, cap=3))
    assert out.returncode == 0, out.stdout + out.stderr
    return _accuracies(out.stdout)


def _accuracies(stdout):
    """(trainer 0's, trainer 1's test accuracy, the mode) from the example's last line."""
    m = re.search(r"^test accuracy: ([\d.]+) / ([\d.]+) \(2 pservers, 2 trainers, (\w+) mode\)$", stdout, re.M)
    assert m, stdout
    return float(m.group(1)), float(m.group(2)), m.group(3)


def test_async_local_cluster_converges():
    a, b, mode = run_example("--epochs", "6", "--async_mode")
    assert mode == "async" and a > 0.9 and b > 0.9


def test_sync_job_streams_its_progress_prefixed_by_role_and_both_trainers_hold_the_same_model():
    """One run of the README's command: each trainer's epochs are printed, prefixed by its role, while
    the job runs; at the end both trainers hold the same model, which has learnt."""
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", "dist_digits.py"), "--epochs", "4"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=readme_env())
    try:
        first_epoch_seen_while_running = None
        lines = []
        for line in p.stdout:
            lines.append(line)
            if first_epoch_seen_while_running is None and re.match(r"\[trainer [01]\] trainer [01] epoch  0 ", line):
                first_epoch_seen_while_running = p.poll() is None
        assert p.wait(scaled(60)) == 0, "".join(lines)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert first_epoch_seen_while_running, "".join(lines)  # epoch 0 arrived before the trainers ended
    # what the job is doing, from its first line: one INFO line per phase, in order
    assert re.match(r"INFO \S+ \S+ dist_digits\] starting 2 pserver\(s\) \(127\.0\.0\.1:\d+,127\.0\.0\.1:\d+\) and 2 "
                    r"trainer\(s\), sync mode, 4 epoch\(s\)$", lines[0]), lines[0]
    phases = ["trainer 0: connecting to the pservers", "trainer 0: loading the data", "trainer 0: training 4 epoch(s)",
              "trainer 0 epoch  0 "]
    at = [next(i for i, l in enumerate(lines) if l.startswith("[trainer 0]") and p in l) for p in phases]
    assert at == sorted(at), lines
    for k in range(2):
        assert sum(1 for l in lines if l.startswith("[trainer %d] trainer %d epoch " % (k, k))) == 4, lines
    a, b, mode = _accuracies("".join(lines))
    assert mode == "sync" and a == b and a > 0.9


def test_ctrl_c_stops_the_local_cluster_with_one_line_and_status_130():
    """ctrl-C at the terminal (SIGINT to the job's process group) while the trainers load their data:
    one line, no traceback from any of the five processes, exit status 130."""
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, "examples", "dist_digits.py")], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=readme_env(), start_new_session=True)
    lines = []
    try:
        for line in p.stdout:
            lines.append(line)
            if "loading the data" in line:
                os.killpg(p.pid, signal.SIGINT)
                break
        lines += p.stdout.readlines()
        assert p.wait(scaled(60)) == 130, "".join(lines)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    out = "".join(lines)
    assert out.count("interrupted (ctrl-C): stopped the local cluster (2 pservers, 2 trainers)") == 1, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
