"""The progress lines of long loops: at most one per FLUIDIST_PROGRESS seconds, on stderr when logging is
not set up, none with FLUIDIST_PROGRESS=0; a DataLoader pass says how far it is."""
import os
import subprocess
import sys

import pytest

from fluidist.console import progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize("text,seconds", [("", 10.0), ("on", 10.0), ("2.5", 2.5), ("0", 0.0), ("off", 0.0),
                                          ("no", 0.0), ("-3", 0.0), ("soon", 10.0)])
def test_the_interval_comes_from_the_variable(monkeypatch, text, seconds):
    monkeypatch.setenv("FLUIDIST_PROGRESS", text)
    assert progress.interval() == seconds
    progress.set_interval(1.0)
    try:
        assert progress.interval() == 1.0
    finally:
        progress.set_interval(None)


def test_a_line_once_per_interval_with_count_and_rate(monkeypatch):
    monkeypatch.setenv("FLUIDIST_PROGRESS", "10")
    lines = []
    monkeypatch.setattr(progress, "_emit", lines.append)
    clock = Clock()
    p = progress.Progress("train", "step(s)", total=100, clock=clock)
    for _ in range(30):     # 30 steps of 1 s: lines at 10, 20 and 30 s
        clock.now += 1.0
        p.step()
    assert lines == ["train: 10 of 100 step(s) in 10.0 s (1.0/s)", "train: 20 of 100 step(s) in 20.0 s (1.0/s)",
                     "train: 30 of 100 step(s) in 30.0 s (1.0/s)"]
    monkeypatch.setenv("FLUIDIST_PROGRESS", "0")
    clock.now += 100
    p.step()
    assert len(lines) == 3 and p.count == 31


LOOP = """
import numpy as np
import fluidist as fluid
x = fluid.data(name="x", shape=[None, 2], dtype="float32")
loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=4)
loader.set_batch_generator(lambda: ([np.ones((3, 2), "float32")] for _ in range(5)), places=fluid.cpu_places(1))
print(sum(1 for _ in loader()))
"""


@pytest.mark.parametrize("every,lines", [("0.000001", 5), ("0", 0)])
def test_a_dataloader_pass_writes_its_lines_to_stderr(every, lines):
    env = dict(os.environ, FLUIDIST_PROGRESS=every, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout == "5\n", r.stderr
    said = [l for l in r.stderr.splitlines() if "fluidist.progress] DataLoader: " in l]
    assert len(said) == lines, r.stderr
    if lines:
        assert said[-1].startswith("INFO ") and " DataLoader: 5 batch(es) in " in said[-1], said
