"""One training step of a recurrent layer over a batch of sequences of different lengths: fluidist's
``dynamic_lstm`` / ``dynamic_gru`` (LoD input) and a ``DynamicRNN`` with an ``fc`` cell (a ``While``
over tensor arrays, backward through the loop), against PyTorch's ``nn.LSTM`` / ``nn.GRU`` on packed
sequences and an ``nn.RNNCell`` loop.

    python benchmarks/rnn.py                  # table + bench_results/rnn.json
    python benchmarks/rnn.py --rounds 7 --steps 20

Sizes: 32 sequences of 10 to 40 steps (fixed seed), input width 32, hidden size 64. A step is the
layer, a max sequence-pool, the mean, backward and an SGD update, the loss fetched to the host. The
implementations take turns (one block of ``--steps`` steps each per round, ``--rounds`` rounds), so
load from elsewhere hits them alike; the table gives the median per-step time over the rounds and
the spread (min to max of the round medians). The step is not compared numerically with PyTorch
(their parameter layouts differ); tests/paddle18 checks fluidist's layers against Paddle 1.8. Both
run on one thread (NumPy's BLAS through threadpoolctl when it is installed, ``torch.set_num_threads``).
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

BATCH, WIDTH, HIDDEN = 32, 32, 64


def make_batch(seed=0):
    rng = np.random.RandomState(seed)
    lengths = rng.randint(10, 41, BATCH).tolist()
    return rng.randn(sum(lengths), WIDTH).astype("float32"), lengths


class FluidistStep:
    def __init__(self, kind, x, lengths):
        L = fluid.layers
        self.main, startup = fluid.Program(), fluid.Program()
        with fluid.unique_name.guard(), fluid.program_guard(self.main, startup):
            xv = fluid.data("x", [None, WIDTH], "float32", lod_level=1)
            if kind == "lstm":
                h, _ = L.dynamic_lstm(L.fc(xv, 4 * HIDDEN), 4 * HIDDEN)
            elif kind == "gru":
                h = L.dynamic_gru(L.fc(xv, 3 * HIDDEN), HIDDEN)
            else:
                drnn = L.DynamicRNN()
                with drnn.block():
                    word = drnn.step_input(xv)
                    prev = drnn.memory(shape=[HIDDEN])
                    new = L.fc([word, prev], HIDDEN, act="tanh")
                    drnn.update_memory(prev, new)
                    drnn.output(new)
                h = drnn()
            self.loss = L.mean(L.sequence_pool(h, "max"))
            fluid.optimizer.SGD(0.01).minimize(self.loss)
        self.exe, self.scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
        self.exe.run(startup, scope=self.scope)
        self.feed = {"x": fluid.create_lod_tensor(x, [lengths], fluid.CPUPlace())}

    def __call__(self):
        return float(self.exe.run(self.main, feed=self.feed, fetch_list=[self.loss], scope=self.scope)[0][0])


class TorchStep:
    def __init__(self, torch, kind, x, lengths):
        nn = torch.nn
        self.torch, self.kind = torch, kind
        self.lengths = lengths
        seqs, at = [], 0
        for n in lengths:
            seqs.append(torch.from_numpy(x[at:at + n]))
            at += n
        self.padded = nn.utils.rnn.pad_sequence(seqs)               # [T, B, W]
        self.mask = torch.arange(self.padded.shape[0])[:, None] < torch.tensor(lengths)[None, :]
        if kind == "rnn_cell":
            self.cell = nn.RNNCell(WIDTH, HIDDEN)
            params = self.cell.parameters()
        else:
            self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(WIDTH, HIDDEN)
            params = self.rnn.parameters()
        self.opt = torch.optim.SGD(params, lr=0.01)

    def __call__(self):
        torch = self.torch
        self.opt.zero_grad()
        if self.kind == "rnn_cell":
            h = torch.zeros(BATCH, HIDDEN)
            outs = []
            for t in range(self.padded.shape[0]):
                h = torch.where(self.mask[t][:, None], self.cell(self.padded[t], h), h)
                outs.append(h)
            out = torch.stack(outs)
        else:
            packed = torch.nn.utils.rnn.pack_padded_sequence(self.padded, self.lengths, enforce_sorted=False)
            out, _ = torch.nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0])
        out = out.masked_fill(~self.mask[:, :, None], float("-inf"))
        loss = out.max(dim=0).values.mean()
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", default=os.path.join("bench_results", "rnn.json"))
    args = ap.parse_args()
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
        print("PyTorch is not installed: timing fluidist only")
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        print("threadpoolctl is not installed: NumPy's BLAS keeps its own thread count")
    x, lengths = make_batch()
    cases = {}
    for kind, torch_kind in (("lstm", "lstm"), ("gru", "gru"), ("dynamic_rnn", "rnn_cell")):
        impls = {"fluidist": FluidistStep(kind, x, lengths)}
        if torch is not None:
            impls["torch"] = TorchStep(torch, torch_kind, x, lengths)
        for f in impls.values():   # warm up, and every implementation runs
            for _ in range(2):
                assert np.isfinite(f())
        rounds = {name: [] for name in impls}
        for _ in range(args.rounds):
            for name, f in impls.items():
                t = []
                for _ in range(args.steps):
                    start = time.perf_counter()
                    f()
                    t.append(time.perf_counter() - start)
                rounds[name].append(statistics.median(t) * 1e3)
        cases[kind] = {name: {"median_ms": statistics.median(r), "min_ms": min(r), "max_ms": max(r),
                              "round_medians_ms": r} for name, r in rounds.items()}
    print("%-12s %-9s %10s %18s" % ("case", "impl", "median ms", "spread (rounds)"))
    for kind, res in cases.items():
        for name, r in res.items():
            print("%-12s %-9s %10.2f %8.2f - %7.2f" % (kind, name, r["median_ms"], r["min_ms"], r["max_ms"]))
    spread.write_results(args.out, {"cases": cases, "batch": BATCH, "width": WIDTH, "hidden": HIDDEN,
                                    "lengths": lengths, "rounds": args.rounds, "steps": args.steps,
                                    "python": platform.python_version(), "numpy": np.__version__,
                                    "torch": getattr(torch, "__version__", None)})


if __name__ == "__main__":
    main()
