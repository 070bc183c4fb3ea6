"""One training step (forward, backward, SGD update) timed three ways: the fluidist Executor, PyTorch
eager, and the same step written by hand against the array module (NumPy, or CuPy on a GPU).

    python benchmarks/executor.py                      # table + bench_results/executor.json
    python benchmarks/executor.py --reps 50 --threads 1
    python benchmarks/executor.py --device cuda        # on CUDAPlace(0), hand CuPy, PyTorch CUDA eager

Cases: an MLP 13-64-1 (relu, MSE) at batch 32, where per-step overhead dominates, an MLP
784-1024-1024-10 (relu, softmax cross entropy) at batch 64, where the matrix products dominate, and
the digits CNN of ``examples/digits.py`` (two 3x3 convolutions with relu and 2x2 max pooling, fc 64,
fc 10) on 8x8 images at batch 64, where convolution and pooling kernels dominate (no hand-written
NumPy step for it: fluidist and PyTorch only). All start from the same parameters (copied from
fluidist's startup program) and their first two losses are checked to agree before anything is
timed, so they really run the same step.

On a GPU (``--device cuda``) the batch is copied to the device once and every implementation reads
it there (fluidist is fed the CuPy arrays); the loss fetched to the host each step is the step's one
synchronisation for all three. Two larger MLPs are added (batch 1024, and 4096-wide), where the
arithmetic starts to outweigh the per-kernel launch cost. PyTorch's TF32 is turned off, as it is off
in CuPy, so all three compute in float32.

Threads: NumPy's BLAS and PyTorch are given the same number of threads (``--threads``, default: what
NumPy's BLAS uses already, as reported by threadpoolctl), through threadpoolctl for NumPy and
``torch.set_num_threads`` for PyTorch. Every step fetches the loss as a host number (fluidist fetches
it as a NumPy array, PyTorch calls ``.item()``), so no implementation skips work by being lazy.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spread  # noqa: E402
import fluidist as fluid  # noqa: E402

LR = 0.01
CASES = [
    {"name": "mlp_13_64_1", "sizes": [13, 64, 1], "batch": 32, "loss": "mse"},
    {"name": "mlp_784_1024_1024_10", "sizes": [784, 1024, 1024, 10], "batch": 64, "loss": "softmax_ce"},
    {"name": "digits_cnn", "sizes": [(1, 8, 8), 10], "batch": 64, "loss": "softmax_ce", "cnn": True, "reps": 300},
]
# goals: fluidist/torch at most this (median of the per-round ratios)
GOALS = {"mlp_13_64_1": 1.0, "mlp_784_1024_1024_10": 1.2, "digits_cnn": 1.0}
GPU_CASES = CASES + [
    {"name": "mlp_784_1024_1024_10_b1024", "sizes": [784, 1024, 1024, 10], "batch": 1024, "loss": "softmax_ce",
     "reps": 200},
    {"name": "mlp_4096_4096_4096_10_b1024", "sizes": [4096, 4096, 4096, 10], "batch": 1024, "loss": "softmax_ce",
     "reps": 100},
]


def make_batch(case, seed=0):
    r = np.random.RandomState(seed)
    first = case["sizes"][0]
    x = r.randn(case["batch"], *(first if isinstance(first, tuple) else (first,))).astype(np.float32)
    if case["loss"] == "mse":
        y = r.randn(case["batch"], case["sizes"][-1]).astype(np.float32)
    else:
        y = r.randint(0, case["sizes"][-1], size=(case["batch"], 1)).astype(np.int64)
    return x, y


# ---------------------------------------------------------------- fluidist
class FluidistStep:
    def __init__(self, case, place):
        sizes = case["sizes"]
        self.scope = fluid.Scope()
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 7
        with fluid.unique_name.guard(), fluid.program_guard(main, startup):
            first = list(sizes[0]) if isinstance(sizes[0], tuple) else [sizes[0]]
            x = fluid.data(name="x", shape=[None] + first, dtype="float32")
            if case["loss"] == "mse":
                y = fluid.data(name="y", shape=[None, sizes[-1]], dtype="float32")
            else:
                y = fluid.data(name="y", shape=[None, 1], dtype="int64")
            if case.get("cnn"):
                out = _digits_cnn(x)
            else:
                h = x
                for n in sizes[1:-1]:
                    h = fluid.layers.fc(input=h, size=n, act="relu")
                out = fluid.layers.fc(input=h, size=sizes[-1])
            if case["loss"] == "mse":
                loss = fluid.layers.mean(fluid.layers.square_error_cost(input=out, label=y))
            else:
                loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits=out, label=y))
            fluid.optimizer.SGD(learning_rate=LR).minimize(loss)
        self.main, self.loss = main, loss
        self.exe = fluid.Executor(place)
        self.exe.run(startup, scope=self.scope)
        # (weight, bias) names per layer, in layer order
        if case.get("cnn"):
            self.param_names = [("conv2d_%d.w_0" % i, "conv2d_%d.b_0" % i) for i in range(2)] + \
                [("fc_%d.w_0" % i, "fc_%d.b_0" % i) for i in range(2)]
        else:
            self.param_names = [("fc_%d.w_0" % i, "fc_%d.b_0" % i) for i in range(len(sizes) - 1)]

    def params(self):
        get = lambda n: np.array(self.scope.find_var(n).get_tensor())  # noqa: E731
        return [(get(w), get(b)) for w, b in self.param_names]

    def __call__(self, x, y):
        loss, = self.exe.run(self.main, feed={"x": x, "y": y}, fetch_list=[self.loss], scope=self.scope,
                             use_program_cache=True)
        return float(loss.reshape(-1)[0])


def _digits_cnn(x):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
    from digits import cnn
    return cnn(x)


# ---------------------------------------------------------------- NumPy by hand
class NumpyStep:
    """The same step by hand against the array module ``xp`` (NumPy, or CuPy on a GPU): fc = x @ W + b,
    relu, loss, hand-written backward, SGD; the loss read back as a host float."""

    def __init__(self, case, params, xp=np):
        self.loss_kind = case["loss"]
        self.xp = xp
        self.params = [(xp.array(w), xp.array(b)) for w, b in params]

    def __call__(self, x, y):
        xp = self.xp
        acts = [x]
        h = x
        last = len(self.params) - 1
        for i, (w, b) in enumerate(self.params):
            h = h @ w + b
            if i < last:
                h = xp.maximum(h, 0)
            acts.append(h)
        out = acts[-1]
        n = out.shape[0]
        if self.loss_kind == "mse":
            diff = out - y
            loss = float(xp.mean(diff * diff))
            d = diff * (np.float32(2.0) / diff.size)
        else:
            z = out - out.max(axis=1, keepdims=True)
            e = xp.exp(z)
            p = e / e.sum(axis=1, keepdims=True)
            rows = xp.arange(n)
            loss = float(-xp.mean(xp.log(p[rows, y[:, 0]])))
            d = p
            d[rows, y[:, 0]] -= 1
            d *= np.float32(1.0 / n)
        for i in range(last, -1, -1):
            w, b = self.params[i]
            a = acts[i]
            dw = a.T @ d
            db = d.sum(axis=0)
            if i > 0:
                d = (d @ w.T) * (a > 0)
            w -= np.float32(LR) * dw
            b -= np.float32(LR) * db
        return loss


# ---------------------------------------------------------------- PyTorch eager
class TorchStep:
    def __init__(self, case, params, torch, device="cpu"):
        self.torch = torch
        self.device = device
        layers = self._cnn(params, torch) if case.get("cnn") else self._mlp(params, torch)
        self.model = torch.nn.Sequential(*layers).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR)
        self.loss_fn = torch.nn.MSELoss() if case["loss"] == "mse" else torch.nn.CrossEntropyLoss()
        self.loss_kind = case["loss"]

    @staticmethod
    def _cnn(params, torch):
        """The digits CNN with fluidist's parameters: conv filters as they are, fc weights transposed."""
        nn = torch.nn
        layers = [nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                  nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)]
        with torch.no_grad():
            for layer, (w, b) in zip([layers[0], layers[3], layers[7], layers[9]], params):
                layer.weight.copy_(torch.from_numpy(w.copy() if w.ndim == 4 else w.T.copy()))
                layer.bias.copy_(torch.from_numpy(b.copy()))
        return layers

    @staticmethod
    def _mlp(params, torch):
        layers = []
        for i, (w, b) in enumerate(params):
            lin = torch.nn.Linear(w.shape[0], w.shape[1])
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(w.T.copy()))
                lin.bias.copy_(torch.from_numpy(b.copy()))
            layers.append(lin)
            if i < len(params) - 1:
                layers.append(torch.nn.ReLU())
        return layers

    def convert(self, x, y):
        tx = self.torch.from_numpy(x)
        ty = self.torch.from_numpy(y) if self.loss_kind == "mse" else self.torch.from_numpy(y[:, 0].copy())
        return tx.to(self.device), ty.to(self.device)

    def __call__(self, x, y):
        self.opt.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss.item()


# ---------------------------------------------------------------- reads back from a real GPU
def count_device_reads(step, args):
    """Each read of a device value by the host during one call of ``step`` on CuPy: ``get``,
    ``item``, the scalar conversions (``float``, ``int``, ``bool``) and ``cupy.asnumpy``, with the
    innermost frame of fluidist's code that made it. CuPy's Python methods are wrapped for the call
    and restored after it. (The stand-in device counts these without a GPU; a real device shows what
    the stand-in does not model.)"""
    import traceback
    import cupy
    package = os.path.dirname(os.path.abspath(fluid.__file__)) + os.sep
    reads = []

    def wrapped(owner, name):
        orig = getattr(owner, name)

        def read(*a, **k):
            frames = [f for f in traceback.extract_stack()[:-1] if f.filename.startswith(package)]
            where = "%s:%d (%s)" % (os.path.relpath(frames[-1].filename), frames[-1].lineno, frames[-1].name) \
                if frames else "outside fluidist"
            reads.append("%s at %s" % (name, where))
            return orig(*a, **k)
        return orig, read

    names = ("get", "item", "__float__", "__int__", "__bool__")
    saved = {}
    try:
        for name in names:
            saved[name], fn = wrapped(cupy.ndarray, name)
            setattr(cupy.ndarray, name, fn)
        saved["asnumpy"], fn = wrapped(cupy, "asnumpy")
        cupy.asnumpy = fn
        step(*args)
    finally:
        for name, orig in saved.items():
            setattr(cupy if name == "asnumpy" else cupy.ndarray, name, orig)
    return reads


# ---------------------------------------------------------------- timing
def time_interleaved(steps, warmup, reps, block=10):
    """Median and friends of single steps per implementation. The implementations take turns in
    blocks of ``block`` steps (the first of a round rotating), so that a burst of load from elsewhere
    hits them all alike rather than whichever happened to be running; within a block the caches
    are as warm as in a training loop, and the median ignores each block's first, colder step."""
    names = list(steps)
    for name in names:
        f, args = steps[name]
        for _ in range(warmup):
            f(*args)
    times = {name: [] for name in names}
    per_round = {name: [] for name in names}    # the median step of each round (one block per name)
    rounds = (reps + block - 1) // block
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            f, args = steps[name]
            mine = []
            for _ in range(min(block, reps - r * block)):
                t0 = time.perf_counter()
                f(*args)
                mine.append(time.perf_counter() - t0)
            times[name] += mine
            per_round[name].append(statistics.median(mine) * 1e3)
    return {name: {"median_ms": statistics.median(t) * 1e3, "min_ms": min(t) * 1e3,
                   "mean_ms": statistics.fmean(t) * 1e3, "reps": len(t),
                   "rounds_ms": spread.spread(per_round[name])} for name, t in times.items()}


def ratio_spread(row, a, b):
    """The ratio of ``a``'s to ``b``'s median step, round by round (both timed in the same round)."""
    if a not in row or b not in row:
        return None
    return spread.spread([x / y for x, y in zip(row[a]["rounds_ms"]["values"], row[b]["rounds_ms"]["values"])])


def check_same_losses(case_name, steps, x, y):
    """Two steps from the same parameters must give the same losses in every implementation."""
    got = {name: [f(*args), f(*args)] for name, (f, args) in steps.items()}
    ref = got["numpy"] if "numpy" in got else got["fluidist"]
    for name, losses in got.items():
        if not np.allclose(losses, ref, rtol=2e-4, atol=1e-6):
            raise AssertionError("%s: %s losses %s differ from numpy's %s" % (case_name, name, losses, ref))
    return got


def blas_threads():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return info[0]["num_threads"] if info else None


def _ms(r, name, fmt="%.3f"):
    return fmt % r[name]["median_ms"] if name in r else "-"


def _print_tables(results, threads, device="cpu"):
    print("\none training step (forward, backward, SGD), median over repetitions; %d thread(s)" % threads)
    head = "%-24s %12s %12s %12s %16s %16s" % ("case", "fluidist ms", "torch ms", "by hand ms",
                                                "fluidist/torch", "fluidist/hand")
    print(head)
    print("-" * len(head))
    for r in results:
        ratio = lambda k: "%.2f" % r[k] if r[k] is not None else "-"  # noqa: E731
        print("%-24s %12s %12s %12s %16s %16s" % (r["case"], _ms(r, "fluidist"), _ms(r, "torch"), _ms(r, "numpy"),
                                                  ratio("ratio_fluidist_torch"), ratio("ratio_fluidist_numpy")))
    print("\nper round (one block of 10 steps per implementation, in turns): median [min-max] of the rounds' "
          "median steps; load average %.1f" % os.getloadavg()[0])
    head = "%-24s %7s %22s %22s %22s %20s %20s" % ("case", "rounds", "fluidist ms", "torch ms", "by hand ms",
                                                   "fluidist/torch", "fluidist/hand")
    print(head)
    print("-" * len(head))
    rounds = lambda r, k: spread.fmt(r[k]["rounds_ms"], "%.3f") if k in r else "-"  # noqa: E731
    for r in results:
        print("%-24s %7d %22s %22s %22s %20s %20s" % (
            r["case"], r["fluidist"]["rounds_ms"]["n"], rounds(r, "fluidist"), rounds(r, "torch"), rounds(r, "numpy"),
            spread.fmt(r["ratio_fluidist_torch_rounds"]), spread.fmt(r["ratio_fluidist_numpy_rounds"])))
    for r in results:
        if "fluidist_device_reads" in r:
            print("%s: fluidist reads the device %d time(s) per step: %s" % (
                r["case"], len(r["fluidist_device_reads"]), "; ".join(r["fluidist_device_reads"])))
    print()
    for r in results if device == "cpu" else ():     # the goals are the CPU's
        ratio = r["ratio_fluidist_torch_rounds"]
        if ratio is None:
            continue
        goal = GOALS.get(r["case"])
        if goal is None:
            continue
        print("goal %-22s fluidist/torch %s (<= %.1f): %s" % (r["case"], spread.fmt(ratio), goal,
                                                              "met" if ratio["median"] <= goal else "NOT met"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=0,
                    help="timed steps per case (default: 300 for the small MLP and the CNN, 60 for the large MLP)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for NumPy's BLAS and PyTorch (default: NumPy's current setting)")
    ap.add_argument("--device", choices=("cpu", "cuda", "standin"), default="cpu",
                    help="cuda: fluidist on CUDAPlace(0), the hand-written step in CuPy, PyTorch on CUDA; "
                         "standin: fluidist and the hand-written step on the stand-in GPU (the per-op Python "
                         "cost on a device place; PyTorch on the CPU)")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    args.out = args.out or ("bench_results/executor.json" if args.device == "cpu" else
                            "bench_results/executor_%s.json" % args.device)

    threads = args.threads or blas_threads() or os.cpu_count()
    limiter = None
    try:
        from threadpoolctl import threadpool_limits
        limiter = threadpool_limits(limits=threads, user_api="blas")
    except ImportError:
        print("threadpoolctl is missing: NumPy keeps its own thread setting (set OMP_NUM_THREADS)")
    try:
        import torch
        torch.set_num_threads(threads)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    except ImportError:
        torch = None
        print("PyTorch is not installed: timing fluidist and NumPy only "
              "(pip install torch, a CPU wheel, to compare with PyTorch eager)")

    env = {"python": platform.python_version(), "numpy": np.__version__, "fluidist": fluid.__version__,
           "torch": torch.__version__ if torch is not None else None, "threads": threads,
           "cpu_count": os.cpu_count(), "machine": platform.machine(), "platform": platform.platform(),
           "device": args.device}
    place, xp = fluid.CPUPlace(), np
    if args.device == "cuda":
        import cupy as xp
        place = fluid.CUDAPlace(0)
        env.update(cupy=xp.__version__, gpu=xp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    elif args.device == "standin":
        from fluidist.device import standin
        place, xp = standin.StandinPlace(0), standin.xp
    results = []
    for case in (GPU_CASES if args.device == "cuda" else CASES):
        reps = args.reps or case.get("reps") or (300 if case["batch"] <= 32 else 60)
        x, y = make_batch(case)
        fl = FluidistStep(case, place)
        params = fl.params()
        dx, dy = xp.asarray(x), xp.asarray(y)
        steps = {"fluidist": (fl, (dx, dy))}
        if not case.get("cnn"):
            steps["numpy"] = (NumpyStep(case, params, xp), (dx, dy))
        if torch is not None and args.device != "standin":    # the stand-in run: fluidist against the hand step
            ts = TorchStep(case, params, torch, args.device)
            steps["torch"] = (ts, ts.convert(x, y))
        check_same_losses(case["name"], steps, x, y)
        row = {"case": case["name"], "sizes": case["sizes"], "batch": case["batch"], "loss": case["loss"]}
        row.update(time_interleaved(steps, args.warmup, reps))
        if args.device == "cuda":
            row["fluidist_device_reads"] = count_device_reads(fl, (dx, dy))
        med = lambda k: row[k]["median_ms"] if k in row else None  # noqa: E731
        row["ratio_fluidist_numpy"] = med("fluidist") / med("numpy") if "numpy" in row else None
        row["ratio_fluidist_torch"] = med("fluidist") / med("torch") if torch is not None else None
        row["ratio_fluidist_numpy_rounds"] = ratio_spread(row, "fluidist", "numpy")
        row["ratio_fluidist_torch_rounds"] = ratio_spread(row, "fluidist", "torch")
        results.append(row)
    if limiter is not None:
        limiter.restore_original_limits()

    _print_tables(results, threads, args.device)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"env": env, "results": results}, f, indent=1)
        print("\nwrote %s" % args.out)
    return results


if __name__ == "__main__":
    main()
