"""benchmarks/pserver: the metrics helpers, the shared workload, and a tiny real run of fluidist's side
(1M-parameter MLP, 2 pservers, 2 trainers, 4 steps each) whose JSON must hold every metric."""
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "benchmarks", "pserver")
sys.path.insert(0, BENCH)

import metrics  # noqa: E402
import workload  # noqa: E402

PHASES = ("compute", "send", "wait", "recv", "other", "step")


def test_percentile_matches_numpy():
    rng = np.random.RandomState(0)
    for n in (1, 2, 7, 50):
        v = list(rng.rand(n))
        for q in (0, 50, 90, 100):
            assert metrics.percentile(v, q) == pytest.approx(np.percentile(v, q))
    s = metrics.summarize([3.0, 1.0, 2.0])
    assert (s["n"], s["median"], s["min"], s["max"], s["mean"]) == (3, 2.0, 1.0, 3.0, 2.0)


def test_fluidist_ops_fall_into_phases():
    assert metrics.fluidist_phase("mul", 0) == "compute"
    assert metrics.fluidist_phase("mul_grad", 1) == "compute"
    assert metrics.fluidist_phase("split_byref", 1) == "send"
    assert metrics.fluidist_phase("send", 4) == "send"
    assert metrics.fluidist_phase("send_barrier", 4) == "wait"
    assert metrics.fluidist_phase("fetch_barrier", 4) == "wait"
    assert metrics.fluidist_phase("recv", 4) == "recv"
    assert metrics.fluidist_phase("concat", 8) == "recv"       # joins received blocks (Dist role)
    assert metrics.fluidist_phase("concat", 0) == "compute"    # a concat of the model itself
    events = [("mul", 0, 0.0, 0.004), ("send", 4, 0.004, 0.002), ("send_barrier", 4, 0.006, 0.001),
              ("recv", 4, 0.007, 0.003), ("concat", 8, 0.0105, 0.0005)]
    p = metrics.fluidist_step_phases(events, 0.0125)
    assert p["compute"] == 0.004 and p["send"] == 0.002 and p["wait"] == 0.001
    assert p["recv"] == pytest.approx(0.0035) and p["other"] == pytest.approx(0.002) and p["step"] == 0.0125
    # the look-ahead's split_ids runs within send_barrier: counted once, as the barrier's wait
    nested = events[:2] + [("send_barrier", 4, 0.006, 0.001), ("split_ids", 1, 0.0062, 0.0006)] + events[3:]
    assert metrics.fluidist_step_phases(nested, 0.0125) == p


def test_configs_give_the_advertised_sizes():
    m1, m10 = workload.load_model("mlp_1m"), workload.load_model("mlp_10m")
    assert 0.99e6 <= m1.num_params() <= 1.01e6
    assert 9.9e6 <= m10.num_params() <= 10.1e6
    workload.check_compatible(workload.load_data("synthetic_1000_small"), m1, "synthetic_1000_small", "mlp_1m")
    with pytest.raises(ValueError, match="mlp_10m"):
        workload.check_compatible(workload.load_data("synthetic_1000_small"), m10, "synthetic_1000_small", "mlp_10m")
    with pytest.raises(ValueError, match="no configuration 'nope'.*mlp_1m"):
        workload.load_model("nope")


def test_trainers_get_equal_disjoint_batches():
    data = workload.load_data("synthetic_1000_small")          # 256 samples
    b0 = workload.trainer_batches(data, 32, 3, 0, 2)
    b2 = workload.trainer_batches(data, 32, 3, 2, 2)
    assert len(b0) == len(b2) == 2 * 2                           # 8 batches // 3 trainers, 2 epochs
    np.testing.assert_array_equal(b0[0][0], data.x[0:32])        # batch 0 -> trainer 0
    np.testing.assert_array_equal(b2[0][0], data.x[64:96])       # batch 2 -> trainer 2
    np.testing.assert_array_equal(b0[2][0], b0[0][0])            # the second epoch repeats the first
    with pytest.raises(ValueError, match="fewer than the 9 trainers"):
        workload.trainer_batches(data, 32, 9, 0, 1)


def transpiled(model_id):
    """The benchmark's model ``model_id`` transpiled for 2 trainers x 2 pservers: (model, transpiler, endpoints)."""
    import fluidist as fluid
    import fluidist_roles
    model = workload.load_model(model_id)
    main, startup, _ = fluidist_roles.build_program(model)
    eps = ["127.0.0.1:1", "127.0.0.1:2"]
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=",".join(eps), trainers=2, startup_program=startup,
                current_endpoint=eps[0])
    return model, t, eps


def test_torch_side_blocks_are_the_transpilers_blocks():
    """PyTorch's servers must hold exactly the blocks fluidist's pservers hold."""
    model, t, eps = transpiled("mlp_1m")
    for s, ep in enumerate(eps):
        prog = t.get_pserver_program(ep)
        got = sorted((op.inputs["Param"][0], tuple(prog.global_block().var(op.inputs["Param"][0]).shape))
                     for i in range(1, prog.num_blocks) for op in prog.block(i).ops if op.type == "sgd")
        want = sorted((b["block"], tuple(b["shape"])) for b in workload.shard_plan(model, 2) if b["server"] == s)
        assert got == want
    import fluidist_roles
    sent, recv = fluidist_roles.trainer_bytes_per_step(t.get_trainer_program(wait_port=False))
    assert sent == recv == 4 * model.num_params()


@pytest.mark.timeout(90)
def test_tiny_fluidist_run_writes_every_metric(tmp_path, monkeypatch, capsys):
    """Also: with --compare torch and no torch installed, fluidist still runs and the skip is said."""
    import launcher
    monkeypatch.setenv("FLAGS_rpc_deadline", "30000")
    monkeypatch.setattr(launcher, "torch_available", lambda: None)
    out = tmp_path / "pserver.json"
    launcher.main(["--ntrainer", "2", "--nserver", "2", "--batch-size", "32", "--epochs", "1", "--warmup", "1",
                   "--data", "synthetic_1000_small", "--model", "mlp_1m", "--sync", "--compare", "torch",
                   "--zmq-rounds", "3", "--rounds", "2", "--log-dir", str(tmp_path / "logs"), "--timeout", "60",
                   "--out", str(out),
                   "--timeline", str(tmp_path / "timeline.json")])
    printed = capsys.readouterr().out
    assert "trainers (times in ms)" in printed and "servers" in printed
    assert "torch is not installed" in printed and "torch: skipped" in printed
    r = json.loads(out.read_text())
    assert r["torch"] == {"skipped": "torch is not installed"}
    n_params = workload.load_model("mlp_1m").num_params()
    assert r["config"]["num_params"] == n_params and r["config"]["steps_per_trainer"] == 4
    fl = r["fluidist"]
    assert len(fl["trainers"]) == 2 and len(fl["servers"]) == 2
    for t in fl["trainers"]:
        assert t["steps"] == 3                                   # 4 steps, 1 of warmup
        for p_ in PHASES:
            ph = t["phases"][p_]
            assert ph["n"] == 3 and 0 <= ph["median"] <= ph["p90"] <= ph["max"]
            assert len(t["per_step"][p_]) == 3
        for p_ in ("compute", "send", "recv"):
            assert t["phases"][p_]["median"] > 0, p_
        for k in range(3):                                       # the phases add up to the step
            total = sum(t["per_step"][p_][k] for p_ in PHASES[:-1])
            assert total == pytest.approx(t["per_step"]["step"][k], rel=1e-6)
        assert t["bytes_sent_per_step"] == t["bytes_recv_per_step"] == 4 * n_params
        assert t["steps_per_sec"] > 0 and t["comm_bytes_per_sec"] > 0
        assert np.isfinite(t["loss_first"]) and np.isfinite(t["loss_last"])
    assert sum(s["bytes_recv_per_step"] for s in fl["servers"]) == 2 * 4 * n_params
    for s in fl["servers"]:
        assert s["steps"] == 4 and s["optimize"]["n"] == 3 and s["optimize"]["median"] > 0
        assert 0 < s["busy_fraction"] < 1 and s["serve_seconds"] > 0
    # the timeline: fluidist.timeline's merge of the four roles' traces
    tl = json.loads((tmp_path / "timeline.json").read_text())["traceEvents"]
    assert {e["args"]["name"] for e in tl if e.get("name") == "process_name"} == \
        {"trainer0", "trainer1", "pserver0", "pserver1"}
    assert sum(1 for e in tl if e.get("cat") == "step") == 2 * 3     # the timed steps of both trainers
    assert any(e.get("cat") == "rpc" and e["args"]["bytes"] > 0 for e in tl)
    assert "traces" not in fl
    z = r["zmq_reference"]
    assert z["bytes_per_round"] == 2 * 4 * n_params and z["bytes_per_sec"] > 0
    zt = r["zmq_reference_topology"]
    assert (zt["ntrainer"], zt["nserver"], zt["bytes_per_round"]) == (2, 2, 2 * 4 * n_params)
    assert len(zt["clients"]) == 2 and all(c["bytes_per_sec"] > 0 for c in zt["clients"])
    assert "zmq_over_fluidist_bytes_per_sec" in r["goals"]
    assert r["context"]["zmq_topology_over_fluidist_bytes_per_sec"] > 0
    assert fl["summary"]["steps_per_sec"] == min(t["steps_per_sec"] for t in fl["trainers"])
    # two rounds, each summarised; the table gives the median and spread over them
    assert [rd["round"] for rd in r["rounds"]] == [0, 1]
    sps = r["summary"]["fluidist"]["steps_per_sec"]
    assert sps["n"] == 2 and sps["min"] <= sps["median"] <= sps["max"]
    assert sps["values"] == [rd["fluidist"]["steps_per_sec"] for rd in r["rounds"]]
    assert r["summary"]["fluidist"]["trainer_peak_rss"]["median"] > 0
    assert "over 2 rounds: median [min-max]" in printed


def test_click_data_is_zipf_like_and_deterministic():
    data = workload.load_data("clicks_small")
    ids = data.x["ids"]
    assert ids.shape == (256, 26) and ids.dtype == np.int64 and 0 <= ids.min() and ids.max() < 100000
    _, counts = np.unique(ids, return_counts=True)
    assert counts.max() >= 20 and np.median(counts) == 1          # a few hot ids, a long tail of rare ones
    np.testing.assert_array_equal(workload.load_data("clicks_small").x["ids"], ids)
    assert 0.2 < data.y.mean() < 0.8
    x, y = workload.trainer_batches(data, 32, 2, 1, 1)[0]
    np.testing.assert_array_equal(x["ids"], ids[32:64])
    with pytest.raises(ValueError, match="do not go together"):
        workload.check_compatible(data, workload.load_model("mlp_1m"), "clicks_small", "mlp_1m")


def test_ctr_program_keeps_the_table_on_the_pservers():
    """The CTR model's table is a distributed table: trainers prefetch rows and send row-sparse
    gradients; the pservers hold the table's shards (row i on pserver i % 2) and no trainer recvs it."""
    model, t, eps = transpiled("ctr_small")
    trainer = t.get_trainer_program(wait_port=False)
    types = [op.type for op in trainer.global_block().ops]
    assert "prefetch" in types and "lookup_table" not in types
    recvd = {n for op in trainer.global_block().ops if op.type == "recv" for n in op.output_arg_names}
    assert model.TABLE not in recvd
    import fluidist_roles
    sent, recv = fluidist_roles.trainer_bytes_per_step(trainer)
    assert sent == recv == 4 * (model.num_params() - model.table_rows * model.embedding_dim)
    for k, ep in enumerate(eps):
        shard = t.get_pserver_program(ep).global_block().var(model.TABLE)
        assert list(shard.shape) == [len(range(k, model.table_rows, 2)), model.embedding_dim]


@pytest.mark.timeout(90)
def test_tiny_ctr_run_counts_rows_examples_and_memory(tmp_path, monkeypatch):
    import launcher
    monkeypatch.setenv("FLAGS_rpc_deadline", "30000")
    out = tmp_path / "ctr.json"
    launcher.main(["--batch-size", "32", "--warmup", "1", "--data", "clicks_small", "--model", "ctr_small",
                   "--zmq-rounds", "0", "--rounds", "1", "--log-dir", str(tmp_path / "logs"), "--timeout", "60",
                   "--out", str(out)])
    r = json.loads(out.read_text())
    for t in r["fluidist"]["trainers"]:
        assert t["steps"] == 3 and np.isfinite(t["loss_last"])
        assert 32 <= t["rows_in_per_step"] <= 32 * 26 and t["rows_out_per_step"] == t["rows_in_per_step"]
        assert t["examples_per_sec"] == pytest.approx(32 * t["steps_per_sec"])
        assert t["peak_rss"] > 0
    s = r["summary"]["fluidist"]
    assert s["rows_per_sec"]["median"] > 0 and s["server_peak_rss"]["median"] > 0


@pytest.mark.timeout(90)
def test_trainer_compute_times_every_kernel_of_one_trainer_by_both_clocks(tmp_path, monkeypatch, capsys):
    """trainer_compute.py: one CTR trainer against 2 pservers; per op type and per phase, the median per
    step of the wall clock and of the thread's CPU clock, every op of the trainer program timed."""
    import trainer_compute
    monkeypatch.setenv("FLAGS_rpc_deadline", "30000")
    out = tmp_path / "compute.json"
    trainer_compute.main(["--model", "ctr_small", "--data", "clicks_small", "--batch-size", "32", "--epochs", "1",
                          "--warmup", "1", "--log-dir", str(tmp_path / "logs"), "--out", str(out)])
    printed = capsys.readouterr().out
    r = json.loads(out.read_text())
    assert "torch" not in r and "fluidist wall" in printed and "mul_grad/compute" in printed
    ops, losses = r["fluidist"]["ops"], r["fluidist"]["losses"]
    assert len(losses) == 256 // 32 - 1 and all(np.isfinite(losses))
    _, t, _ = transpiled("ctr_small")
    types = {op.type for op in t.get_trainer_program(wait_port=False).global_block().ops}
    timed = {k.split("/")[0] for k in ops if "/" in k}
    assert {"mul", "mul_grad", "sum", "concat", "merge_ids", "split_ids", "prefetch", "recv"} <= timed <= types
    for phase in ("compute", "send", "recv"):
        clocks = ops["phase " + phase]
        assert 0 < clocks["cpu"] <= clocks["wall"], phase     # a thread's CPU time never runs ahead of the wall
    assert ops["sum/compute"]["cpu"] <= ops["phase compute"]["cpu"]
