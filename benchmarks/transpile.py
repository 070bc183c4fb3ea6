"""How long the DistributeTranspiler takes, by program size: the cost must grow linearly with ops.

    python benchmarks/transpile.py                       # table + bench_results/transpile.json
    python benchmarks/transpile.py --params 20 200 1000 --rounds 5

Programs: a stack of fc layers (weight and bias: two parameters a layer) trained with Adam, and a
CTR-like program with sparse embeddings, one of them a distributed lookup table. Each is transpiled
for 4 pservers x 8 trainers, timing what a job does: ``transpile`` (trainer 0), then
``get_trainer_program`` and, for every pserver, ``get_pserver_program`` and ``get_startup_program``.
Building the program (layers, backward, Adam) is not timed: every round builds a fresh one.

The table gives the median over the rounds and the spread (min-max), the ops of the built program,
and the time per 1,000 ops, which stays flat when the cost is linear.
"""
import argparse
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fluidist as fluid  # noqa: E402
import spread  # noqa: E402  (beside this file)

PSERVERS = ["127.0.0.1:%d" % (7000 + i) for i in range(4)]
TRAINERS = 8


def build_fc_stack(params):
    """``params`` parameters: params // 2 fc layers of width 16 (min_block_size slices none of them)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 16], dtype="float32")
        h = x
        for _ in range(max(params // 2, 1)):
            h = fluid.layers.fc(h, 16, act="relu")
        loss = fluid.layers.mean(h)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, startup


def build_ctr(params):
    """A CTR-like model: ``params // 4`` sparse slots (embedding + sum pool), the first one a
    distributed lookup table, then an fc tower; Adam."""
    main, startup = fluid.Program(), fluid.Program()
    slots = max(params // 4, 2)
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        pooled = []
        for i in range(slots):
            ids = fluid.data(name="slot%d" % i, shape=[None, 1], dtype="int64", lod_level=1)
            emb = fluid.layers.embedding(ids, size=[10000, 8], is_sparse=True, is_distributed=(i == 0))
            pooled.append(fluid.layers.sequence_pool(emb, "sum"))
        h = fluid.layers.concat(pooled, axis=1)
        for _ in range(max((params - slots) // 2, 1)):
            h = fluid.layers.fc(h, 16, act="relu")
        loss = fluid.layers.mean(h)
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, startup


MODELS = {"fc_adam": build_fc_stack, "ctr_sparse": build_ctr}


def time_transpile(build, params):
    main, startup = build(params)
    nops = len(main.global_block().ops)
    nparams = len(main.all_parameters())
    t0 = time.perf_counter()
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=",".join(PSERVERS), trainers=TRAINERS, startup_program=startup)
    t1 = time.perf_counter()
    t.get_trainer_program(wait_port=False)
    t2 = time.perf_counter()
    for ep in PSERVERS:
        prog = t.get_pserver_program(ep)
        t.get_startup_program(ep, prog)
    t3 = time.perf_counter()
    return {"ops": nops, "params": nparams, "transpile": t1 - t0, "trainer": t2 - t1, "pservers": t3 - t2,
            "total": t3 - t0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", type=int, nargs="+", default=[20, 200, 1000, 5000],
                    help="program sizes in parameters (default: %(default)s)")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS),
                    help="which programs (default: all)")
    ap.add_argument("--rounds", type=int, default=5, help="repetitions of each case (default: %(default)s)")
    ap.add_argument("--out", default=os.path.join("bench_results", "transpile.json"),
                    help="where the JSON results go (default: %(default)s)")
    a = ap.parse_args()
    rows = []
    print("%-11s %7s %7s %10s %10s %10s %10s %14s" % ("model", "params", "ops", "transpile", "trainer",
                                                       "pservers", "total", "ms / 1k ops"))
    for model in a.models:
        for n in a.params:
            runs = []
            for _ in range(a.rounds):
                runs.append(time_transpile(MODELS[model], n))
            total = [r["total"] for r in runs]
            med = {k: statistics.median(r[k] for r in runs) for k in ("transpile", "trainer", "pservers", "total")}
            row = {"model": model, "params": runs[0]["params"], "ops": runs[0]["ops"], "median_s": med,
                   "total_min_s": min(total), "total_max_s": max(total), "rounds": a.rounds}
            rows.append(row)
            print("%-11s %7d %7d %9.3fs %9.3fs %9.3fs %9.3fs %14.2f   (total %.3f-%.3f s)"
                  % (model, row["params"], row["ops"], med["transpile"], med["trainer"], med["pservers"],
                     med["total"], 1000.0 * 1000.0 * med["total"] / row["ops"], min(total), max(total)))
    spread.write_results(a.out, {"pservers": len(PSERVERS), "trainers": TRAINERS, "python": platform.python_version(),
                                 "machine": platform.machine(), "rows": rows})


if __name__ == "__main__":
    main()
