"""Chrome traces: per process from the profiler (ops, RPC and collective spans with peer and bytes,
waits), merged by ``python -m fluidist.timeline`` into one trace with a track per process."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import fluidist as fluid
from fluidist import timeline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "tests", "scripts", "timeline_ps_job.py")


def _env(out):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_", "FLUIDIST_", "TRAINING_ROLE"))}
    env.update(PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OUT_DIR=str(out),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    return env


def test_profiler_writes_a_trace_of_this_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINING_ROLE", "TRAINER")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    path = str(tmp_path / "prof")
    with fluid.profiler.profiler("CPU", profile_path=path):
        exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
        fluid.profiler.reset_profiler()  # clears the report's numbers, not the trace
        exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
    trace = json.load(open(path + ".trainer3.trace.json"))
    names = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert names == [op.type for op in main.global_block().ops] * 2
    assert trace["otherData"]["fluidist"]["name"] == "trainer3"
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"][0]
    assert ev["cat"] == "op" and ev["dur"] >= 0 and ev["args"] == {"op_role": 0} and ev["pid"] == os.getpid()
    assert not timeline.enabled


def test_collective_calls_are_spans_with_bytes():
    from fluidist.distributed.collective.cpu import thread_group
    comms = thread_group(2, ring_id=7)
    timeline.start()
    try:
        ts = [threading.Thread(target=c.allreduce, args=(np.ones(1000, "float32"),)) for c in comms]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
    finally:
        timeline.stop()
    spans = [s for s in timeline.events() if s[0] == "collective"]
    assert len(spans) == 2 and {s[5]["rank"] for s in spans} == {0, 1}
    assert all(s[1] == "allreduce" and s[5]["bytes"] == 4000 and s[5]["nranks"] == 2 and s[5]["ring"] == 7
               for s in spans)


@pytest.mark.timeout(180)
def test_a_2x2_job_merged_into_one_trace(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([sys.executable, "-m", "fluidist.distributed.launch", "--server_num", "2", "--worker_num", "2",
                        "--log_dir", str(tmp_path / "log"), JOB], env=_env(out), cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted(f for f in os.listdir(out) if f.endswith(".trace.json"))
    assert files == ["profile.pserver0.trace.json", "profile.pserver1.trace.json",
                     "profile.trainer0.trace.json", "profile.trainer1.trace.json"]
    merged_path = str(tmp_path / "job.json")
    r = subprocess.run([sys.executable, "-m", "fluidist.timeline", "-o", merged_path]
                       + [str(out / f) for f in files], env=_env(out), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    merged = json.load(open(merged_path))
    ev = merged["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert names == {0: "trainer0", 1: "trainer1", 2: "pserver0", 3: "pserver1"}  # a track per process
    spans = [e for e in ev if e.get("ph") == "X"]
    assert min(e["ts"] for e in spans) == 0
    by = {k: [e for e in spans if e["pid"] == k] for k in range(4)}
    for k in (0, 1):
        sends = [e for e in by[k] if e["cat"] == "rpc" and e["name"] == "send send"]
        assert sends and all(e["args"]["bytes"] > 0 and e["args"]["peer"].startswith("127.0.0.1:") for e in sends)
        assert len({e["args"]["peer"] for e in sends}) == 2  # gradients went to both pservers
        assert any(e["cat"] == "wait" and e["args"]["bytes"] > 0 for e in by[k])  # waited for parameters
        assert {"mul", "send", "recv", "send_barrier", "fetch_barrier"} <= {e["name"] for e in by[k] if e["cat"] == "op"}
    for k in (2, 3):
        recvs = [e for e in by[k] if e["cat"] == "rpc" and e["name"] == "recv send"]
        assert {e["args"]["peer"] for e in recvs} == {"trainer 0", "trainer 1"}
        assert all(e["args"]["bytes"] > 0 for e in recvs)
        assert "sgd" in {e["name"] for e in by[k] if e["cat"] == "op"}
    # the merged clock is one clock: every trainer's first send comes before the pservers' first sgd ends
    first_send = min(e["ts"] for k in (0, 1) for e in by[k] if e["name"] == "send send")
    first_sgd_end = min(e["ts"] + e["dur"] for k in (2, 3) for e in by[k] if e["name"] == "sgd")
    assert first_send < first_sgd_end


def test_merge_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "fluidist.timeline", str(bad)], capture_output=True, text=True,
                       timeout=60, env=_env(tmp_path))
    assert r.returncode == 1 and "%s is not a Chrome trace" % bad in r.stderr
