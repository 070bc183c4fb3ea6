"""benchmarks/executor.py: a tiny real run of every case (the digits CNN included) whose implementations
agree on their first losses, and whose JSON and goal lines say what was measured."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


@pytest.mark.timeout(180)
def test_tiny_executor_run(tmp_path, capsys):
    import executor
    out = tmp_path / "executor.json"
    executor.main(["--reps", "10", "--warmup", "1", "--threads", "1", "--out", str(out)])
    r = json.loads(out.read_text())
    cases = {row["case"]: row for row in r["results"]}
    assert set(cases) == {"mlp_13_64_1", "mlp_784_1024_1024_10", "digits_cnn"}
    assert "numpy" not in cases["digits_cnn"] and cases["digits_cnn"]["fluidist"]["reps"] == 10
    printed = capsys.readouterr().out
    assert "digits_cnn" in printed
    if r["env"]["torch"] is not None:
        assert "goal digits_cnn" in printed
