"""What feeding costs: one pass of a small CTR model (sparse ids summed per instance, dense
features, logistic loss) over the same instances, fed four ways, against feeding arrays by hand.

    python benchmarks/readers.py                     # table + bench_results/readers.json
    python benchmarks/readers.py --rounds 7 --lines 4000

- ``hand``: the batches built beforehand (numpy arrays, a LoDTensor for the ids), ``exe.run(feed=...)``
  -- the reference: what a training loop costs without any reader;
- ``loader``: an iterable ``DataLoader.from_generator`` over the same batches (a thread checks them
  and fills the queue);
- ``read_op``: a non-iterable ``DataLoader`` (``read`` op, ``EOFException`` at the end);
- ``dataset``: ``exe.train_from_dataset`` on an ``InMemoryDataset`` already in memory, one thread.

Each way trains from the same initial parameters; the rounds are interleaved (hand, loader,
read_op, dataset, hand, ...) and the table gives the median time per batch and the spread (min-max)
over the rounds. ``parse`` times ``load_into_memory`` of the MultiSlot text (lines per second).
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
import fluidist as fluid  # noqa: E402
import spread  # noqa: E402  (beside this file)

NUM_IDS, IDS_PER_LINE, BATCH = 1000, 8, 64


def write_multislot(path, lines, seed=0):
    rng = np.random.RandomState(seed)
    with open(path, "w") as f:
        for _ in range(lines):
            ids = rng.randint(0, NUM_IDS, IDS_PER_LINE)
            dense = rng.rand(3)
            label = int(rng.rand() < 0.5)
            f.write("3 %s %d %s 1 %d\n" % (" ".join("%.4f" % d for d in dense), len(ids), " ".join(map(str, ids)),
                                           label))


def build(with_read_op=False):
    """The CTR-like model; ``with_read_op``: fed by a non-iterable DataLoader's read op, whose
    loader is returned in place of the feed variables."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        dense = fluid.data("dense", [None, 3], "float32")
        ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
        label = fluid.data("label", [None, 1], "int64")
        feed_vars = [dense, ids, label]
        if with_read_op:
            feed_vars = fluid.io.DataLoader.from_generator(feed_list=feed_vars, capacity=8, iterable=False)
        emb = fluid.layers.embedding(ids, size=[NUM_IDS, 16], is_sparse=True)
        h = fluid.layers.fc(fluid.layers.concat([fluid.layers.sequence_pool(emb, "sum"), dense], axis=1), 32,
                            act="relu")
        loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(
            fluid.layers.fc(h, 1), fluid.layers.cast(label, "float32")))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, feed_vars, loss


def hand_batches(records):
    out = []
    for a in range(0, records.n, BATCH):
        (d, _), (i, lod), (l, _) = records.batch(a, min(a + BATCH, records.n))
        out.append({"dense": d, "ids": fluid.LoDTensor(i, lod), "label": l})
    return out


def run_way(way, ctx):
    main, startup, feed_vars, loss = ctx["model"]
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    batches = ctx["batches"]
    if way == "hand":
        t = time.perf_counter()
        for b in batches:
            exe.run(main, feed=b, scope=scope)
    elif way == "loader":
        loader = fluid.io.DataLoader.from_generator(feed_list=feed_vars, capacity=8)
        loader.set_batch_generator(lambda: ([b["dense"], b["ids"], b["label"]] for b in batches),
                                   places=fluid.cpu_places(1))
        t = time.perf_counter()
        for data in loader():
            exe.run(main, feed=data, scope=scope)
    elif way == "read_op":
        prog, loader = ctx["read_prog"]
        loader.set_batch_generator(lambda: ([b["dense"], b["ids"], b["label"]] for b in batches))
        t = time.perf_counter()
        loader.start()
        while True:
            try:
                exe.run(prog, scope=scope)
            except fluid.core.EOFException:
                loader.reset()
                break
    else:
        t = time.perf_counter()
        exe.train_from_dataset(main, ctx["dataset"], scope=scope, thread=1)
    return (time.perf_counter() - t) / len(batches) * 1000


def read_op_program():
    main, _, loader, _ = build(with_read_op=True)
    return main, loader


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lines", type=int, default=3200)
    ap.add_argument("--out", default=os.path.join("bench_results", "readers.json"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "part-0")
    write_multislot(path, a.lines)
    model = build()
    ds = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    ds.set_use_var(model[2])
    ds.set_batch_size(BATCH)
    ds.set_filelist([path])
    parse = []
    ways = ["hand", "loader", "read_op", "dataset"]
    times = {w: [] for w in ways}
    ctx = None
    for _ in range(a.rounds):
        t = time.perf_counter()
        ds.load_into_memory()
        parse.append(a.lines / (time.perf_counter() - t))
        if ctx is None:
            ctx = {"model": model, "batches": hand_batches(ds.records), "dataset": ds,
                   "read_prog": read_op_program()}
        for w in ways:
            times[w].append(run_way(w, ctx))
    rows = {w: {"median_ms": statistics.median(v), "min_ms": min(v), "max_ms": max(v)} for w, v in times.items()}
    ref = rows["hand"]["median_ms"]
    print("one pass of %d batches of %d instances (%d ids each), %d rounds, median [min-max] per batch"
          % (len(ctx["batches"]), BATCH, IDS_PER_LINE, a.rounds))
    print("%-8s %10s %22s %10s" % ("way", "ms/batch", "spread", "vs hand"))
    for w, r in rows.items():
        print("%-8s %10.3f %22s %10.2f" % (w, r["median_ms"], "[%.3f - %.3f]" % (r["min_ms"], r["max_ms"]),
                                            r["median_ms"] / ref))
    print("parse (load_into_memory): %.0f lines/s [%.0f - %.0f]" % (statistics.median(parse), min(parse), max(parse)))
    spread.write_results(a.out, {"rows": rows, "parse_lines_per_s": {"median": statistics.median(parse),
                                                                     "min": min(parse), "max": max(parse)},
                                 "batches": len(ctx["batches"]), "batch": BATCH, "rounds": a.rounds,
                                 "machine": platform.platform(), "python": sys.version.split()[0]})


if __name__ == "__main__":
    main()
