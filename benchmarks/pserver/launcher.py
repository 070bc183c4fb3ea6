"""Parameter-server benchmark: fluidist's DistributeTranspiler (pserver mode) and ZeroMQ runtime,
optionally against PyTorch's RPC parameter server on the same model, data and counts.

    python benchmarks/pserver/launcher.py --ntrainer 2 --nserver 2 --batch-size 32 --epochs 1 \
        --data synthetic_3160 --model mlp_10m --sync --compare torch --out bench_results/pserver.json

Every role is a local process on 127.0.0.1 (free ports): first a bare ZeroMQ exchange of one
trainer's step (the bytes-per-second reference, zmq_reference.py), then fluidist's pservers and
trainers (fluidist_roles.py), then, with ``--compare torch``, PyTorch's trainers, servers and master
(torch_rpc.py). The three run one after the other, never at the same time. Per-trainer and
per-server metrics are printed as tables and written as JSON; see README.md for what each column
means. Ids of ``--data`` and ``--model`` are looked up in configs/*.json (as PyTorch's launcher
does).
"""
import argparse
import importlib.util
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(HERE))

import metrics  # noqa: E402
import spread  # noqa: E402
import workload  # noqa: E402
from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: E402

# fluidist steps/s over PyTorch's (median of the rounds' ratios), as issue 34 states them: a CTR
# model (a distributed table) sync / async, the 10M-parameter MLP sync; other jobs have no goal
GOAL_SPEEDUP_CTR_SYNC, GOAL_SPEEDUP_CTR_ASYNC, GOAL_SPEEDUP_MLP_10M_SYNC = 1.25, 1.4, 3.0
GOAL_NONCOMPUTE_SHARE = 0.25      # a CTR trainer's send + wait + recv + other, over its compute
GOAL_ZMQ_FACTOR = 2.0             # fluidist bytes/s within 2x of bare ZeroMQ


class Processes:
    """Children in their own process groups, with logs; failures end in one root-cause line."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs = []    # (name, Popen, log path, log file)

    def start(self, name, argv):
        path = os.path.join(self.log_dir, name + ".log")
        log = open(path, "w")
        p = subprocess.Popen([sys.executable] + [str(a) for a in argv], stdout=log, stderr=subprocess.STDOUT,
                             env=spread.child_env(), cwd=ROOT, start_new_session=True)
        self.procs.append((name, p, path, log))
        return p

    def wait(self, names, deadline):
        """Wait for ``names`` until the monotonic ``deadline``; raise naming the first that failed."""
        for name, p, path, _ in self.procs:
            if name not in names:
                continue
            try:
                code = p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise RuntimeError(self._root_cause(name, p, path, "still running at the deadline")) from None
            if code != 0:
                how = "killed by signal %d" % -code if code < 0 else "exited with code %d" % code
                raise RuntimeError(self._root_cause(name, p, path, how))

    def _root_cause(self, name, p, path, how):
        tail = ""
        try:
            with open(path) as f:
                lines = [ln.rstrip() for ln in f.readlines() if ln.strip()]
            tail = " | ".join(lines[-4:])
        except OSError:
            pass
        return "%s (pid %d) %s; log %s; last lines: %s" % (name, p.pid, how, path, tail or "(empty)")

    def stop_all(self, grace=5.0):
        """SIGTERM to every live child's group, a grace period, then SIGKILL."""
        live = [(n, p) for n, p, _, _ in self.procs if p.poll() is None]
        for _, p in live:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        for _, p in live:
            try:
                p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        for _, _, _, log in self.procs:
            log.close()


def config_args(args):
    return ["--data-config-path", args.data_config_path, "--model-config-path", args.model_config_path]


def _load(path):
    with open(path) as f:
        return json.load(f)


def run_fluidist(args, log_dir, steps_per_trainer):
    eps = ",".join("127.0.0.1:%d" % p for p in free_ports(args.nserver))
    script = os.path.join(HERE, "fluidist_roles.py")
    common = ["--endpoints", eps, "--trainers", args.ntrainer, "--model", args.model, "--data", args.data,
              "--batch-size", args.batch_size, "--epochs", args.epochs, "--warmup", args.warmup,
              "--steps-hint", steps_per_trainer, "--feed", args.feed] + config_args(args) + \
        (["--async-mode"] if args.async_mode else [])
    out = {}
    procs = Processes(log_dir)
    try:
        for i, ep in enumerate(eps.split(",")):
            out["fluidist_pserver%d" % i] = os.path.join(log_dir, "fluidist_pserver%d.json" % i)
            procs.start("fluidist_pserver%d" % i, [script, "--role", "pserver", "--current-endpoint", ep,
                                                   "--server-id", i, "--metrics-out",
                                                   out["fluidist_pserver%d" % i]] + common
                        + _trace_args(args, log_dir, "pserver%d" % i))
        for k in range(args.ntrainer):
            out["fluidist_trainer%d" % k] = os.path.join(log_dir, "fluidist_trainer%d.json" % k)
            procs.start("fluidist_trainer%d" % k, [script, "--role", "trainer", "--trainer-id", k, "--metrics-out",
                                                   out["fluidist_trainer%d" % k]] + common
                        + _trace_args(args, log_dir, "trainer%d" % k))
        deadline = time.monotonic() + args.timeout
        procs.wait(["fluidist_trainer%d" % k for k in range(args.ntrainer)], deadline)
        # pservers stop serving once every trainer has closed
        procs.wait(["fluidist_pserver%d" % i for i in range(args.nserver)], time.monotonic() + 60)
    finally:
        procs.stop_all()
    trainers = [_load(out["fluidist_trainer%d" % k]) for k in range(args.ntrainer)]
    servers = [_load(out["fluidist_pserver%d" % i]) for i in range(args.nserver)]
    traces = [("trainer%d" % k, _trace_path(log_dir, "trainer%d" % k)) for k in range(args.ntrainer)] + \
             [("pserver%d" % i, _trace_path(log_dir, "pserver%d" % i)) for i in range(args.nserver)]
    out = {"endpoints": eps, "trainers": trainers, "servers": servers}
    if args.timeline:
        out["traces"] = traces
    return out


def _trace_path(log_dir, role):
    return os.path.join(log_dir, "trace_%s.json" % role)


def _trace_args(args, log_dir, role):
    return ["--trace-out", _trace_path(log_dir, role)] if args.timeline else []


def run_torch(args, log_dir):
    out = os.path.join(log_dir, "torch.json")
    argv = [os.path.join(HERE, "torch_rpc.py"), "--ntrainer", args.ntrainer, "--nserver", args.nserver,
            "--model", args.model, "--data", args.data, "--batch-size", args.batch_size, "--epochs", args.epochs,
            "--warmup", args.warmup, "--out", out, "--run-timeout", args.timeout] + config_args(args)
    if args.async_mode:
        argv.append("--async-mode")
    if args.torch_transports:
        argv += ["--transports", args.torch_transports]
    if args.torch_channels:
        argv += ["--channels", args.torch_channels]
    procs = Processes(log_dir)
    try:
        procs.start("torch", argv)
        procs.wait(["torch"], time.monotonic() + args.timeout + 60)
    finally:
        procs.stop_all()
    return _load(out)


def write_timeline(path, fl):
    """The roles' Chrome traces merged by fluidist.timeline into one, a track per role."""
    from fluidist import timeline
    merged = timeline.merge(fl.pop("traces"))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(merged, f)


def environment():
    import numpy
    import zmq
    env = {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
           "numpy": numpy.__version__, "pyzmq": zmq.__version__, "libzmq": zmq.zmq_version(),
           "threads_per_process": 1}
    try:
        import fluidist
        env["fluidist"] = fluidist.__version__
    except Exception:  # the benchmark still reports what it can
        pass
    return env


def torch_available():
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        import torch
        return torch.__version__
    except Exception:
        return None


def speedup_goal(model_id, model, async_mode):
    """The stated steps/s ratio to PyTorch for this job, or None."""
    if hasattr(model, "TABLE"):
        return GOAL_SPEEDUP_CTR_ASYNC if async_mode else GOAL_SPEEDUP_CTR_SYNC
    if model_id == "mlp_10m" and not async_mode:
        return GOAL_SPEEDUP_MLP_10M_SYNC
    return None


def goals(result, num_params, goal=None, table=False):
    """Goals on the medians over the rounds (ratios are taken within each round): ``goal`` the steps/s
    ratio to PyTorch (``speedup_goal``); with ``table`` (a CTR model) also a trainer's non-compute time
    over its compute and its compute over PyTorch's."""
    g = {}
    summ = result["summary"]
    ratio = summ.get("speedup_vs_torch")
    if ratio and ratio["median"]:
        g["speedup_vs_torch"] = {"value": ratio["median"], "min": ratio["min"], "max": ratio["max"],
                                 "goal": ">= %.2fx" % goal if goal else "none stated for this job",
                                 "met": ratio["median"] >= goal if goal else None, "num_params": num_params}
    share = (summ.get("fluidist") or {}).get("noncompute_over_compute")
    if table and share and share["median"] is not None:
        g["noncompute_over_compute"] = {"value": share["median"], "min": share["min"], "max": share["max"],
                                        "goal": "<= %.2f" % GOAL_NONCOMPUTE_SHARE,
                                        "met": share["median"] <= GOAL_NONCOMPUTE_SHARE}
    compute = summ.get("compute_vs_torch")
    if table and compute and compute["median"]:
        g["compute_vs_torch"] = {"value": compute["median"], "min": compute["min"], "max": compute["max"],
                                 "goal": "<= 1.00x", "met": compute["median"] <= 1.0}
    z = summ.get("zmq_over_fluidist_bytes_per_sec")
    if z and z["median"]:
        g["zmq_over_fluidist_bytes_per_sec"] = {"value": z["median"], "min": z["min"], "max": z["max"],
                                                "goal": "<= %.1fx" % GOAL_ZMQ_FACTOR,
                                                "met": z["median"] <= GOAL_ZMQ_FACTOR}
    return g


def context(result):
    """Ratios that are not goals but help read them: the ZeroMQ exchange in the job's shape."""
    c = {}
    zt = result["summary"].get("zmq_topology_over_fluidist_bytes_per_sec")
    if zt and zt["median"]:
        c["zmq_topology_over_fluidist_bytes_per_sec"] = zt["median"]
    return c


ROUND_KEYS = ("steps_per_sec", "step_median", "comm_bytes_per_sec", "examples_per_sec", "rows_per_sec",
              "trainer_peak_rss", "server_peak_rss", "compute_median", "noncompute_over_compute")


def summarize_rounds(rounds):
    """Per implementation and quantity: the median and spread over the rounds; ratios within rounds."""
    out = {}
    for impl in ("fluidist", "torch"):
        sides = [r[impl] for r in rounds if r.get(impl)]
        if sides:
            out[impl] = {k: spread.spread([s.get(k) for s in sides]) for k in ROUND_KEYS}
    ratios, compute, zmq, zmq_topo = [], [], [], []
    for r in rounds:
        f, t = r.get("fluidist"), r.get("torch")
        if f and t and f.get("steps_per_sec") and t.get("steps_per_sec"):
            ratios.append(f["steps_per_sec"] / t["steps_per_sec"])
        if f and t and f.get("compute_median") and t.get("compute_median"):
            compute.append(f["compute_median"] / t["compute_median"])
        if f and f.get("comm_bytes_per_sec"):
            if r.get("zmq_bytes_per_sec"):
                zmq.append(r["zmq_bytes_per_sec"] / f["comm_bytes_per_sec"])
            if r.get("zmq_topology_bytes_per_sec"):
                zmq_topo.append(r["zmq_topology_bytes_per_sec"] / f["comm_bytes_per_sec"])
    if ratios:
        out["speedup_vs_torch"] = spread.spread(ratios)
    if compute:
        out["compute_vs_torch"] = spread.spread(compute)
    if zmq:
        out["zmq_over_fluidist_bytes_per_sec"] = spread.spread(zmq)
    if zmq_topo:
        out["zmq_topology_over_fluidist_bytes_per_sec"] = spread.spread(zmq_topo)
    for key in ("zmq_bytes_per_sec", "zmq_topology_bytes_per_sec", "load_average"):
        vals = [r.get(key) for r in rounds if r.get(key) is not None]
        if vals:
            out[key] = spread.spread(vals)
    return out


def print_report(result):
    cfg = result["config"]
    print()
    print("parameter-server benchmark: model %s (%d float32 parameters), data %s, %d trainers, %d servers, "
          "batch %d, %s, %d timed steps per trainer (after %d warmup), %d interleaved rounds"
          % (cfg["model"], cfg["num_params"], cfg["data"], cfg["ntrainer"], cfg["nserver"], cfg["batch_size"],
             "async" if cfg["async_mode"] else "sync", cfg["steps_per_trainer"] - cfg["warmup"], cfg["warmup"],
             cfg["rounds"]))
    z = result.get("zmq_reference")
    if z:
        print("bare ZeroMQ reference (DEALER/ROUTER, copy=False, %d frames, %.1f MB there and back), last round: "
              "median %.2f ms per round, %.1f MB/s"
              % (len(z["frames"]), z["bytes_per_round"] / 1e6, z["round_time"]["median"] * 1e3,
                 z["bytes_per_sec"] / 1e6))
    impls = [("fluidist", result["fluidist"])]
    if "trainers" in result.get("torch", {}):
        impls.append(("torch", result["torch"]))
    print()
    print("last round in detail:")
    print(metrics.trainer_table_multi(impls))
    print()
    print(metrics.server_table_multi(impls))
    print()
    summ = result["summary"]
    print("over %d rounds: median [min-max]%s" % (cfg["rounds"], "; load average %s" % spread.fmt(
        summ["load_average"], "%.1f") if summ.get("load_average") else ""))
    headers = ["impl", "steps/s", "step ms", "examples/s", "rows/s (emb)", "comm MB/s per trainer",
               "trainer peak RSS MB", "server peak RSS MB"]
    rows = []
    for name in ("fluidist", "torch"):
        s = summ.get(name)
        if not s:
            continue
        rows.append([name, spread.fmt(s["steps_per_sec"]), spread.fmt(s["step_median"], "%.1f", 1e3),
                     spread.fmt(s["examples_per_sec"], "%.0f"), spread.fmt(s["rows_per_sec"], "%.0f"),
                     spread.fmt(s["comm_bytes_per_sec"], "%.0f", 1e-6),
                     spread.fmt(s["trainer_peak_rss"], "%.0f", 1e-6), spread.fmt(s["server_peak_rss"], "%.0f", 1e-6)])
    print(metrics.format_table(headers, rows))
    for key, label in (("zmq_bytes_per_sec", "bare ZeroMQ MB/s (one pair)"),
                       ("zmq_topology_bytes_per_sec", "bare ZeroMQ MB/s per client in the job's shape")):
        if summ.get(key):
            print("%-48s %s" % (label, spread.fmt(summ[key], "%.0f", 1e-6)))
    if "skipped" in result.get("torch", {}):
        print("torch: skipped (%s)" % result["torch"]["skipped"])
    if "failed" in result.get("torch", {}):
        print("torch: failed (%s)" % result["torch"]["failed"])
    for k, g in result.get("goals", {}).items():
        print("goal %-34s %6.2f [%.2f-%.2f] (%s): %s" % (k, g["value"], g["min"], g["max"], g["goal"],
                                                        {True: "met", False: "NOT met"}.get(g["met"], "-")))
    for k, v in result.get("context", {}).items():
        print("context %-31s %6.2f" % (k, v))


def _round_record(side):
    s = dict(side["summary"])
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ntrainer", type=int, default=2, help="trainer count")
    ap.add_argument("--nserver", type=int, default=2, help="parameter-server count")
    ap.add_argument("--batch-size", "--batch_size", type=int, default=32, help="examples per trainer step")
    ap.add_argument("--epochs", type=int, default=1, help="passes over the data")
    ap.add_argument("--data", required=True, help="id in the data configuration file")
    ap.add_argument("--model", required=True, help="id in the model configuration file")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--sync", dest="async_mode", action="store_false", help="synchronous SGD (default)")
    mode.add_argument("--async", dest="async_mode", action="store_true", help="each gradient applied as it arrives")
    ap.set_defaults(async_mode=False)
    ap.add_argument("--compare", choices=["torch", "none"], default="none", help="also run PyTorch's RPC pserver")
    ap.add_argument("--torch-transports", default="",
                    help="TensorPipe transports for --compare torch, e.g. 'uv' (default: TensorPipe's own)")
    ap.add_argument("--torch-channels", default="", help="TensorPipe channels, e.g. 'basic' (default: its own)")
    ap.add_argument("--warmup", type=int, default=2, help="first steps of each trainer left out of the metrics")
    ap.add_argument("--feed", choices=["run", "loader"], default="run",
                    help="fluidist trainers' batches: exe.run(feed=dict) each (default), or an iterable DataLoader "
                         "(a distributed table's trainer then asks for the next batch's rows with each step)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds of the whole comparison (median and spread are reported)")
    ap.add_argument("--zmq-rounds", type=int, default=30,
                    help="timed exchanges of the bare ZeroMQ reference per round (0: skip it)")
    ap.add_argument("--data-config-path", default=workload.DATA_CONFIGS)
    ap.add_argument("--model-config-path", default=workload.MODEL_CONFIGS)
    ap.add_argument("--timeout", type=float, default=600, help="deadline of each implementation's run (s)")
    ap.add_argument("--log-dir", default="", help="where the roles' logs and JSON go (default: a temp dir)")
    ap.add_argument("--out", default="bench_results/pserver.json", help="JSON results ('' writes none)")
    ap.add_argument("--timeline", default="", help="also write fluidist's op calls of every role as a Chrome trace")
    args = ap.parse_args(argv)
    if args.ntrainer < 1 or args.nserver < 1:
        ap.error("--ntrainer and --nserver must be at least 1")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    args.data_config_path = os.path.abspath(args.data_config_path)
    args.model_config_path = os.path.abspath(args.model_config_path)

    data = workload.load_data(args.data, args.data_config_path)
    model = workload.load_model(args.model, args.model_config_path)
    workload.check_compatible(data, model, args.data, args.model)
    steps = len(workload.trainer_batches(data, args.batch_size, args.ntrainer, 0, args.epochs))
    if steps <= args.warmup:
        ap.error("data %r gives each trainer %d steps at batch %d over %d epochs: not more than --warmup %d"
                 % (args.data, steps, args.batch_size, args.epochs, args.warmup))
    del data
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="pserver_bench_")
    os.makedirs(log_dir, exist_ok=True)
    plan = workload.shard_plan(model, args.nserver)
    result = {"config": {"ntrainer": args.ntrainer, "nserver": args.nserver, "batch_size": args.batch_size,
                         "epochs": args.epochs, "data": args.data, "model": args.model,
                         "num_params": model.num_params(), "async_mode": args.async_mode,
                         "warmup": args.warmup, "steps_per_trainer": steps, "rounds": args.rounds,
                         "feed": args.feed,
                         "torch_transports": args.torch_transports or "default",
                         "torch_channels": args.torch_channels or "default",
                         "blocks": [{k: b[k] for k in ("block", "shape", "server")} for b in plan],
                         "log_dir": log_dir},
              "environment": environment()}
    print("logs in %s" % log_dir, flush=True)

    if args.compare == "torch" and getattr(model, "optimizer", "sgd") != "sgd":
        raise SystemExit("--compare torch: the PyTorch side trains with SGD only; model %r uses %s"
                         % (args.model, model.optimizer))
    torch_version = torch_available() if args.compare == "torch" else None
    if args.compare == "torch":
        if torch_version is None:
            print("torch is not installed (pip install torch==2.13.0, a CPU wheel): running fluidist only",
                  flush=True)
            result["torch"] = {"skipped": "torch is not installed"}
        else:
            result["environment"]["torch"] = torch_version
    impls = ["fluidist"] + (["torch"] if torch_version else [])
    rounds = []
    for r, order in enumerate(spread.interleaved(impls, args.rounds)):
        rec = {"round": r, "order": order, "load_average": os.getloadavg()[0]}
        if args.zmq_rounds > 0:
            import zmq_reference
            nbytes = [4 * int(workload.np.prod(b["shape"])) for b in plan]
            result["zmq_reference"] = zmq_reference.measure(nbytes, rounds=args.zmq_rounds)
            per_server = [[n for n, b in zip(nbytes, plan) if b["server"] == s] for s in range(args.nserver)]
            result["zmq_reference_topology"] = zmq_reference.measure_topology(
                [sizes for sizes in per_server if sizes], args.ntrainer, rounds=args.zmq_rounds)
            rec["zmq_bytes_per_sec"] = result["zmq_reference"]["bytes_per_sec"]
            rec["zmq_topology_bytes_per_sec"] = result["zmq_reference_topology"]["bytes_per_sec"]
        for impl in order:
            rlog = os.path.join(log_dir, "round%d" % r)
            os.makedirs(rlog, exist_ok=True)
            if impl == "fluidist":
                fl = run_fluidist(args, rlog, steps)
                fl["summary"] = metrics.side_summary(fl["trainers"], fl["servers"])
                if args.timeline and r == args.rounds - 1:
                    write_timeline(args.timeline, fl)
                    print("fluidist timeline (Chrome trace) in %s" % args.timeline, flush=True)
                fl.pop("traces", None)
                result["fluidist"] = fl
                rec["fluidist"] = _round_record(fl)
            else:
                try:
                    tr = run_torch(args, rlog)
                    tr["summary"] = metrics.side_summary(tr["trainers"], tr["servers"])
                    result["torch"] = tr
                    rec["torch"] = _round_record(tr)
                except RuntimeError as e:      # fluidist's results are still worth writing
                    print("torch run failed: %s" % e, flush=True)
                    result["torch"] = {"failed": str(e)}
                    rec["torch"] = None
        print("round %d (%s): %s" % (r, ", ".join(order), "; ".join(
            "%s %.2f steps/s" % (i, rec[i]["steps_per_sec"]) for i in order if rec.get(i))), flush=True)
        rounds.append(rec)
    result["rounds"] = rounds
    result["summary"] = summarize_rounds(rounds)
    result["goals"] = goals(result, model.num_params(), speedup_goal(args.model, model, args.async_mode),
                            table=hasattr(model, "TABLE"))
    result["context"] = context(result)
    print_report(result)
    spread.write_results(args.out, result)
    return result


if __name__ == "__main__":
    main()
