"""benchmarks/data_parallel.py and benchmarks/spread.py: a tiny real run (2 processes, fluidist's
collective GradAllReduce, nccl2 mode and LocalSGD on the digits CNN) whose JSON holds the summary over rounds."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import spread  # noqa: E402


def test_spread_and_interleaving():
    s = spread.spread([3.0, None, 1.0, 2.0, 10.0])
    assert (s["n"], s["median"], s["min"], s["max"]) == (4, 2.5, 1.0, 10.0)
    assert spread.fmt(s, "%.1f") == "2.5 [1.0-10.0]"
    assert spread.fmt(spread.spread([])) == "-"
    assert spread.interleaved(["a", "b", "c"], 4) == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"],
                                                      ["a", "b", "c"]]


@pytest.mark.timeout(180)
def test_tiny_data_parallel_run(tmp_path, capsys):
    import data_parallel
    out = tmp_path / "dp.json"
    data_parallel.main(["--models", "cnn", "--impls", "fluidist_grad_allreduce,fluidist_nccl2,fluidist_local_sgd",
                        "--rounds", "2",
                        "--steps", "3", "--warmup", "1", "--batch-size", "16", "--log-dir", str(tmp_path / "logs"),
                        "--out", str(out)])
    r = json.loads(out.read_text())
    assert len(r["rounds"]) == 2
    for key in ("cnn/fluidist_grad_allreduce", "cnn/fluidist_nccl2", "cnn/fluidist_local_sgd"):
        s = r["summary"][key]["steps_per_sec"]
        assert s["n"] == 2 and 0 < s["min"] <= s["median"] <= s["max"]
        for rd in r["rounds"]:
            ranks = rd["jobs"][key]["ranks"]
            assert [x["rank"] for x in ranks] == [0, 1] and all(x["steps"] == 3 for x in ranks)
    assert "median [min-max]" in capsys.readouterr().out
