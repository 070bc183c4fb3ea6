"""The README's main job: digits trained by 2 pservers and 2 trainers started as local processes."""
import os
import re
import subprocess
import sys

import pytest

from cluster import ROOT, child_env

pytestmark = pytest.mark.timeout(240)


def run_example(*args):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "dist_digits.py")] + list(args),
                         capture_output=True, text=True, env=child_env(), timeout=200)
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
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env())
    try:
        first_epoch_seen_while_running = None
        lines = []
        for line in p.stdout:
            lines.append(line)
            if first_epoch_seen_while_running is None and re.match(r"\[trainer [01]\] trainer [01] epoch  0 ", line):
                first_epoch_seen_while_running = p.poll() is None
        assert p.wait(60) == 0, "".join(lines)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert first_epoch_seen_while_running, "".join(lines)  # epoch 0 arrived before the trainers ended
    for k in range(2):
        assert sum(1 for l in lines if l.startswith("[trainer %d] trainer %d epoch " % (k, k))) == 4, lines
    a, b, mode = _accuracies("".join(lines))
    assert mode == "sync" and a == b and a > 0.9
