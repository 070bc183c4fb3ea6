"""What CURVE (authenticated, encrypted sockets: the default) costs the parameter-server benchmark.

    python benchmarks/pserver/security_cost.py                      # 1M and 10M, 5 rounds each
    python benchmarks/pserver/security_cost.py --rounds 7 --out bench_results/pserver_security.json

Runs ``launcher.py`` (2 trainers, 2 servers, sync, batch 32, one epoch, no bare-ZeroMQ reference) for
the 1M-parameter model (``mlp_1m`` on ``synthetic_1000``) and the 10M one (``mlp_10m`` on
``synthetic_3160``), once with the job's sockets plain (``FLUIDIST_INSECURE=1``) and once with CURVE,
in turns (plain, CURVE, plain, CURVE, ...) so that a change in the machine's load touches both alike.
Each run's figure is its slowest trainer's steps/s and step median (after the warm-up steps); the
table gives, per model and mode, the median over the rounds and the spread (min..max), and the cost
of CURVE as the ratio of the medians. Results go to JSON.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import spread  # noqa: E402  (benchmarks/spread.py)

CASES = [("mlp_1m", "synthetic_1000"), ("mlp_10m", "synthetic_3160")]
MODES = {"plain": {"FLUIDIST_INSECURE": "1"}, "curve": {"FLUIDIST_INSECURE": ""}}


def one_run(model, data, mode, log_dir, timeout):
    out = os.path.join(log_dir, "%s_%s_%d.json" % (model, mode, time.monotonic_ns()))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("FLUIDIST_INSECURE", None)
    env.update({k: v for k, v in MODES[mode].items() if v})
    env.setdefault("FLUIDIST_JOB_SECRET", "security-cost-benchmark-secret")
    cmd = [sys.executable, os.path.join(HERE, "launcher.py"), "--ntrainer", "2", "--nserver", "2", "--batch-size",
           "32", "--epochs", "1", "--data", data, "--model", model, "--sync", "--zmq-rounds", "0", "--out", out,
           "--log-dir", os.path.join(log_dir, "%s_%s" % (model, mode))]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s %s failed (exit %d):\n%s" % (model, mode, r.returncode, (r.stdout + r.stderr)[-3000:]))
    with open(out) as f:
        s = json.load(f)["fluidist"]["summary"]
    return {"steps_per_sec": s["steps_per_sec"], "step_median_ms": 1000 * s["step_median"],
            "comm_mb_per_sec": s["comm_bytes_per_sec"] / 1e6}


def summarize(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "values": values}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="runs per model and mode, in turns (default 5)")
    ap.add_argument("--models", default="mlp_1m,mlp_10m", help="comma list among %s" % [m for m, _ in CASES])
    ap.add_argument("--timeout", type=float, default=900, help="deadline of one run (s)")
    ap.add_argument("--out", default="bench_results/pserver_security.json", help="JSON results ('' writes none)")
    args = ap.parse_args(argv)
    wanted = args.models.split(",")
    log_dir = tempfile.mkdtemp(prefix="pserver_security_")
    runs = {(m, mode): [] for m, _ in CASES if m in wanted for mode in MODES}
    for rnd in range(args.rounds):
        for model, data in CASES:
            if model not in wanted:
                continue
            order = list(MODES) if rnd % 2 == 0 else list(MODES)[::-1]
            for mode in order:
                res = one_run(model, data, mode, log_dir, args.timeout)
                runs[(model, mode)].append(res)
                print("round %d %-8s %-5s %6.2f steps/s, step median %7.1f ms" % (
                    rnd + 1, model, mode, res["steps_per_sec"], res["step_median_ms"]), flush=True)
    table = {}
    print("\nCURVE's cost in the PS benchmark (2 trainers, 2 servers, sync, batch 32; %d rounds in turns; "
          "median [min..max])" % args.rounds)
    print("%-8s  %-5s  %-26s  %-28s" % ("model", "mode", "steps/s", "step median ms"))
    for model, _ in CASES:
        if model not in wanted:
            continue
        row = {}
        for mode in MODES:
            sps = summarize([r["steps_per_sec"] for r in runs[(model, mode)]])
            med = summarize([r["step_median_ms"] for r in runs[(model, mode)]])
            row[mode] = {"steps_per_sec": sps, "step_median_ms": med}
            print("%-8s  %-5s  %7.2f [%6.2f..%6.2f]      %8.1f [%7.1f..%7.1f]" % (
                model, mode, sps["median"], sps["min"], sps["max"], med["median"], med["min"], med["max"]))
        row["curve_over_plain_step_time"] = row["curve"]["step_median_ms"]["median"] / \
            row["plain"]["step_median_ms"]["median"]
        row["curve_over_plain_steps_per_sec"] = row["curve"]["steps_per_sec"]["median"] / \
            row["plain"]["steps_per_sec"]["median"]
        print("%-8s  CURVE: step time x%.2f, steps/s x%.2f" % (model, row["curve_over_plain_step_time"],
                                                                row["curve_over_plain_steps_per_sec"]))
        table[model] = row
    result = {"rounds": args.rounds, "results": table, "log_dir": log_dir,
              "environment": {"python": platform.python_version(), "machine": platform.machine(),
                              "cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()}}
    spread.write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
