"""One data-parallel training step on several CPU places of one process
(``CompiledProgram.with_data_parallel``), against the same step on one place.

    python benchmarks/compiled_program.py                  # table + bench_results/compiled_program.json
    python benchmarks/compiled_program.py --places 2 --rounds 7

Model: the MLP 784-1024-1024-10 of ``executor.py`` (relu, softmax cross entropy, SGD) at a global
batch of 128, split over the places. The rounds interleave the two ways; the table gives the median
step time of each way and the spread (min-max) over the rounds. One BLAS thread per place: the
places run as threads, so ``--places 2`` on a 2-core machine uses both cores.
"""
import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fluidist as fluid  # noqa: E402
import spread  # noqa: E402  (beside this file)

SIZES = [784, 1024, 1024, 10]


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, SIZES[0]], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        h = x
        for width in SIZES[1:-1]:
            h = fluid.layers.fc(h, width, act="relu")
        logits = fluid.layers.fc(h, SIZES[-1])
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, y))
        fluid.optimizer.SGD(learning_rate=0.01).minimize(loss)
    return main, startup, loss


def make_runner(places):
    main, startup, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    prog = main if places == 1 else fluid.CompiledProgram(main).with_data_parallel(
        loss_name=loss.name, places=fluid.cpu_places(places))

    def step(feed):
        return exe.run(prog, feed=feed, fetch_list=[loss], scope=scope)[0]
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--places", type=int, default=2, help="CPU places of the data-parallel way (default: %(default)s)")
    ap.add_argument("--batch", type=int, default=128, help="global batch (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per round (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default: %(default)s)")
    ap.add_argument("--out", default=os.path.join("bench_results", "compiled_program.json"),
                    help="where the JSON results go (default: %(default)s)")
    a = ap.parse_args()
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    r = np.random.RandomState(0)
    feed = {"x": r.randn(a.batch, SIZES[0]).astype("float32"),
            "y": r.randint(0, SIZES[-1], (a.batch, 1)).astype("int64")}
    ways = {"1 place": make_runner(1), "%d places" % a.places: make_runner(a.places)}
    for step in ways.values():
        for _ in range(3):
            step(feed)
    times = {k: [] for k in ways}
    for _ in range(a.rounds):
        for name, step in ways.items():
            t0 = time.perf_counter()
            for _ in range(a.steps):
                step(feed)
            times[name].append((time.perf_counter() - t0) / a.steps)
    print("%-10s %12s %22s" % ("way", "ms / step", "spread (min-max)"))
    rows = []
    for name, ts in times.items():
        med = statistics.median(ts)
        rows.append({"way": name, "median_ms": 1000 * med, "min_ms": 1000 * min(ts), "max_ms": 1000 * max(ts)})
        print("%-10s %12.2f %14.2f-%.2f" % (name, 1000 * med, 1000 * min(ts), 1000 * max(ts)))
    spread.write_results(a.out, {"places": a.places, "batch": a.batch, "python": platform.python_version(),
                                 "rows": rows})


if __name__ == "__main__":
    main()
