"""The examples train for real: fit_a_line learns, the digits MLP and CNN reach their accuracy."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("sklearn")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import digits  # noqa: E402
import fit_a_line  # noqa: E402


def test_fit_a_line_learns():
    r = fit_a_line.train(epochs=15, verbose=False)
    losses = r["train_loss"]
    assert len(losses) == 15
    assert losses[-1] < losses[0] / 4
    assert all(np.isfinite(losses))
    # ordinary least squares reaches about 3400 on this split; predicting the mean about 5100
    assert r["test_mse"] < 0.75 * r["baseline_mse"]
    assert r["test_mse"] < 3900


def test_fit_a_line_is_reproducible():
    a = fit_a_line.train(epochs=2, seed=3, verbose=False)
    b = fit_a_line.train(epochs=2, seed=3, verbose=False)
    assert a["train_loss"] == b["train_loss"] and a["test_mse"] == b["test_mse"]


def test_digits_mlp_reaches_93_percent():
    r = digits.train("mlp", epochs=8, verbose=False)
    assert r["train_loss"][-1] < r["train_loss"][0] / 3
    assert r["final_accuracy"] > 0.93, r["test_accuracy"]


def test_digits_cnn_reaches_95_percent():
    r = digits.train("cnn", epochs=8, verbose=False)
    assert r["train_loss"][-1] < r["train_loss"][0] / 3
    assert r["final_accuracy"] > 0.95, r["test_accuracy"]


@pytest.mark.parametrize("optimizer", ["momentum", "sgd"])
def test_digits_mlp_other_optimizers_learn(optimizer):
    r = digits.train("mlp", epochs=3, optimizer=optimizer, verbose=False)
    assert r["train_loss"][-1] < r["train_loss"][0]
    assert r["final_accuracy"] > 0.85, r["test_accuracy"]


def test_digits_command_line_prints_final_accuracy():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "digits.py"), "--model", "mlp",
                          "--epochs", "2"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    last = [l for l in out.stdout.splitlines() if l.startswith("test accuracy: ")]
    assert len(last) == 1 and 0.5 < float(last[0].split(": ")[1]) <= 1.0, out.stdout


def test_every_example_flag_has_help():
    import ast
    for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if not name.endswith(".py"):
            continue
        tree = ast.parse(open(os.path.join(ROOT, "examples", name)).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                assert any(k.arg == "help" for k in node.keywords), "%s:%d: a flag without help" % (name, node.lineno)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "dist_digits.py"), "--help"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "(default: 0.003)" in out.stdout and "--async_mode" in out.stdout
