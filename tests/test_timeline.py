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
    # every rank its own report, none written over another's
    reports = sorted(f for f in os.listdir(out) if f.endswith(".json") and not f.endswith(".trace.json"))
    assert reports == ["profile.pserver0.json", "profile.pserver1.json", "profile.trainer0.json",
                       "profile.trainer1.json"]
    for f in reports:
        report = json.load(open(out / f))
        assert report["process"] == f.split(".")[1] and report["events"]
    assert "sgd" in {r["event"] for r in json.load(open(out / "profile.pserver0.json"))["events"]}
    assert "mul" in {r["event"] for r in json.load(open(out / "profile.trainer1.json"))["events"]}
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
        # a step's gradients, barrier and gets go to each pserver as the parts of one message
        sends = [e for e in by[k] if e["cat"] == "rpc" and e["name"] == "send batch"]
        assert sends and all(e["args"]["bytes"] > 0 and e["args"]["peer"].startswith("127.0.0.1:") for e in sends)
        assert any(e["args"]["parts"] >= 3 for e in sends)    # a step: its gradients, the barrier, the gets
        assert len({e["args"]["peer"] for e in sends}) == 2  # gradients went to both pservers
        assert any(e["cat"] == "wait" and e["args"]["bytes"] > 0 for e in by[k])  # waited for parameters
        assert {"mul", "send", "recv", "send_barrier", "fetch_barrier"} <= {e["name"] for e in by[k] if e["cat"] == "op"}
    for k in (2, 3):
        recvs = [e for e in by[k] if e["cat"] == "rpc" and e["name"] == "recv batch"]
        assert {e["args"]["peer"] for e in recvs} == {"trainer 0", "trainer 1"}
        assert all(e["args"]["bytes"] > 0 for e in recvs)
        assert "sgd" in {e["name"] for e in by[k] if e["cat"] == "op"}
    # the merged clock is one clock: every trainer's first send comes before the pservers' first sgd ends
    first_send = min(e["ts"] for k in (0, 1) for e in by[k] if e["name"] == "send batch")
    first_sgd_end = min(e["ts"] + e["dur"] for k in (2, 3) for e in by[k] if e["name"] == "sgd")
    assert first_send < first_sgd_end
    # a flow from every request a trainer sent to the span where its pserver received it
    starts = {e["id"]: e for e in ev if e.get("ph") == "s"}
    ends = {e["id"]: e for e in ev if e.get("ph") == "f"}
    assert starts and set(starts) == set(ends) and merged["otherData"]["fluidist"]["flows"] == len(starts)
    requests = [e for k in (0, 1) for e in by[k] if e["cat"] == "rpc" and e["name"].startswith("send ")]
    assert len(starts) == len(requests)   # every pserver was profiled: every request has its other end
    eps = {2: "pserver0", 3: "pserver1"}
    for fid, s in starts.items():
        f = ends[fid]
        assert s["pid"] in (0, 1) and f["pid"] in (2, 3) and f["bp"] == "e"
        sent = [e for e in by[s["pid"]] if e["cat"] == "rpc" and e["ts"] <= s["ts"] <= e["ts"] + e["dur"]]
        got = [e for e in by[f["pid"]] if e["cat"] == "rpc" and e["ts"] <= f["ts"] <= e["ts"] + e["dur"]]
        assert len(sent) == 1 and len(got) == 1, (s, f)
        a, b = sent[0]["args"], got[0]["args"]
        assert (a["kind"], a["var"], a["trainer"], a["step"]) == (b["kind"], b["var"], b["trainer"], b["step"])
        assert a["peer"] == b["endpoint"] and names[f["pid"]] == eps[f["pid"]]
        assert a["trainer"] == s["pid"] and s["name"] == ("%s %s" % (a["kind"], a["var"]) if a["var"] else a["kind"])
    assert "%d flows" % len(starts) in r.stdout


def test_merge_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "fluidist.timeline", str(bad)], capture_output=True, text=True,
                       timeout=60, env=_env(tmp_path))
    assert r.returncode == 1 and "%s is not a Chrome trace" % bad in r.stderr


def test_a_missing_output_folder_is_created_not_a_crash_at_the_end(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINING_ROLE", "TRAINER")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "1")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    path = tmp_path / "not" / "yet" / "prof"
    with fluid.profiler.profiler("CPU", profile_path=str(path)):
        assert path.parent.is_dir()   # made up front
        exe.run(main, feed={"x": np.ones((2, 4), "float32")}, fetch_list=[loss])
    assert json.load(open(str(path) + ".trainer1.json"))["process"] == "trainer1"
    assert (tmp_path / "not" / "yet" / "prof.trainer1.trace.json").is_file()
    # a folder that cannot be made is refused before anything runs, naming the path
    (tmp_path / "afile").write_text("")
    with pytest.raises(ValueError, match=r"profiler: cannot write the profile '.*afile/prof': its folder .* cannot be "
                                         r"created"):
        with fluid.profiler.profiler("CPU", profile_path=str(tmp_path / "afile" / "prof")):
            raise AssertionError("must not run")
    assert not fluid.profiler.is_profiler_enabled()
    # the merge tool makes the folder of its output too
    merged = tmp_path / "merged" / "job.json"
    r = subprocess.run([sys.executable, "-m", "fluidist.timeline", "-o", str(merged),
                        str(path) + ".trainer1.trace.json"], capture_output=True, text=True, timeout=60,
                       env=_env(tmp_path))
    assert r.returncode == 0 and merged.is_file(), r.stderr
    assert r.stdout.startswith("%s: 1 process(es), " % merged) and r.stdout.rstrip().endswith(", 0 flows")


def test_a_process_on_its_own_writes_its_report_at_profile_path(tmp_path, monkeypatch):
    for k in ("TRAINING_ROLE", "PADDLE_TRAINER_ID"):
        monkeypatch.delenv(k, raising=False)
    path = tmp_path / "prof"
    with fluid.profiler.profiler("CPU", profile_path=str(path)):
        pass
    assert json.load(open(str(path)))["process"].startswith("pid")
