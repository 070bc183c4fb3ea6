"""One parameter-server trainer's compute, fluidist's and (``--torch``) PyTorch's, kernel by kernel.

    python benchmarks/pserver/trainer_compute.py --model ctr_1m --data clicks_1m --batch-size 1024 --epochs 2 --torch

fluidist: ``--nserver`` pservers (fluidist_roles.py) and one trainer, this process, transpiled with
one trainer, so that nothing else of the job runs while the trainer computes. Every kernel is timed by
the wall clock and by the thread's CPU clock (the executor's kernel wrapper, as ``fluidist.profiler``
wraps them); the compute phase is the ops ``metrics.fluidist_phase`` puts there. On a machine shared
with other work the wall clock measures the load, the CPU clock what the kernels cost.

PyTorch (``--torch``): the step ``torch_rpc.py``'s trainers compute (``torch_rpc.compute_step``) in this
process, the embedding rows looked up in a local table of the same layout, left out of the time as
there, and SGD applied locally between steps. Every process runs one BLAS/OpenMP thread, as in the
launcher. Prints, per op type, the median per step of each clock, and writes them as JSON (``--out``).
"""
import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"     # before NumPy loads its BLAS

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import fluidist as fluid  # noqa: E402
from fluidist.executor.plan import set_kernel_wrapper  # noqa: E402
from fluidist.launch.cluster import find_free_ports  # noqa: E402
import fluidist_roles  # noqa: E402
import launcher  # noqa: E402
import metrics  # noqa: E402
import spread  # noqa: E402
import workload  # noqa: E402


class KernelClocks:
    """A kernel wrapper recording each call's (op type, phase, wall seconds, thread CPU seconds)."""

    def __init__(self):
        self.calls = []

    def __call__(self, kernel, op):
        phase = metrics.fluidist_phase(op.type, int(op.attrs.get("op_role", 0) or 0))
        calls, wall, cpu = self.calls, time.perf_counter, time.thread_time

        def timed(ctx, ins, attrs):
            w0 = wall()
            c0 = cpu()
            try:
                return kernel(ctx, ins, attrs)
            finally:
                c1 = cpu()      # (the CPU span inside the wall one)
                calls.append((op.type, phase, wall() - w0, c1 - c0))
        return timed


def medians(steps):
    """{key: {"wall": ms, "cpu": ms}}: the median over ``steps`` (dicts key -> [wall s, cpu s])."""
    keys = {k for s in steps for k in s}
    return {k: {c: 1000 * float(np.median([s.get(k, (0.0, 0.0))[i] for s in steps]))
                for i, c in enumerate(("wall", "cpu"))} for k in keys}


def start_pservers(args, procs):
    eps = ",".join("127.0.0.1:%d" % p for p in find_free_ports(args.nserver))
    for i, ep in enumerate(eps.split(",")):
        procs.start("pserver%d" % i, [os.path.join(HERE, "fluidist_roles.py"), "--role", "pserver",
                                      "--current-endpoint", ep, "--server-id", i, "--endpoints", eps,
                                      "--trainers", 1, "--model", args.model, "--data", args.data,
                                      "--batch-size", args.batch_size, "--epochs", args.epochs,
                                      "--metrics-out", os.path.join(args.log_dir, "pserver%d.json" % i)])
    return eps


def run_fluidist(args):
    """Per op type and for the compute phase, the medians per step of both clocks, and the losses."""
    model = workload.load_model(args.model)
    procs = launcher.Processes(args.log_dir)
    try:
        eps = start_pservers(args, procs)
        main, startup, loss = fluidist_roles.build_program(model)
        t = fluid.DistributeTranspiler()
        t.transpile(0, program=main, pservers=eps, trainers=1, sync_mode=True, startup_program=startup,
                    current_endpoint=eps.split(",")[0])
        prog = t.get_trainer_program()
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        batches = workload.trainer_batches(workload.load_data(args.data), args.batch_size, 1, 0, args.epochs)
        clocks = KernelClocks()
        set_kernel_wrapper(clocks)
        steps, losses = [], []
        try:
            for i, (x, y) in enumerate(batches):
                del clocks.calls[:]
                out, = exe.run(prog, feed=fluidist_roles.feed_of(model, x, y), fetch_list=[loss])
                if i < args.warmup:
                    continue
                step = {}
                for op_type, phase, wall, cpu in clocks.calls:
                    for key in ("%s/%s" % (op_type, phase), "phase " + phase):
                        w, c = step.get(key, (0.0, 0.0))
                        step[key] = (w + wall, c + cpu)
                steps.append(step)
                losses.append(float(np.asarray(out).reshape(-1)[0]))
        finally:
            set_kernel_wrapper(None)
        exe.close()
        procs.wait(["pserver%d" % i for i in range(args.nserver)], time.monotonic() + 60)
    finally:
        procs.stop_all()
    return {"ops": medians(steps), "losses": losses}


def run_torch(args):
    """The compute phase of ``torch_rpc.py``'s trainer, step by step in this process: medians per step."""
    import torch
    import torch_rpc
    torch.set_num_threads(1)
    spec = workload.load_model(args.model)
    model = torch_rpc.TorchMLP(spec)
    with torch.no_grad():
        for name, value in spec.initial_params(seed=1).items():
            model.param(name).copy_(torch.from_numpy(value))
    shards = None
    if isinstance(spec, workload.CTR):      # server s holds rows s, s + N, ... (torch_rpc's layout)
        shards = [torch.empty(len(range(s, spec.table_rows, args.nserver)), spec.embedding_dim).uniform_(
            -spec.init_scale, spec.init_scale, generator=torch.Generator().manual_seed(100 + s))
            for s in range(args.nserver)]

    lookup_cpu = []

    def lookup(locals_):
        c0 = time.thread_time()
        rows = [shard.index_select(0, r) for shard, r in zip(shards, locals_)]
        lookup_cpu.append(time.thread_time() - c0)
        return rows

    batches = workload.trainer_batches(workload.load_data(args.data), args.batch_size, 1, 0, args.epochs)
    steps, losses = [], []
    for i, (x, y) in enumerate(batches):
        del lookup_cpu[:]
        w0, c0 = time.perf_counter(), time.thread_time()
        loss, sparse, _, t_lookup = torch_rpc.compute_step(model, x, y, args.nserver, spec, lookup)
        wall, cpu = time.perf_counter() - w0 - t_lookup, time.thread_time() - c0 - sum(lookup_cpu)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-spec.learning_rate)
            for shard, (rows, grad) in zip(shards or [], sparse):
                shard.index_add_(0, rows, grad, alpha=-spec.learning_rate)
        if i >= args.warmup:
            steps.append({"phase compute": (wall, cpu)})
            losses.append(loss)
    return {"ops": medians(steps), "losses": losses}


def print_table(results):
    cols = [(impl, c) for impl in results for c in ("wall", "cpu")]
    phases = ["phase " + p for p in metrics.PHASES]
    keys = [k for k in phases if any(k in r["ops"] for r in results.values())]
    keys += sorted({k for r in results.values() for k in r["ops"]} - set(phases),
                   key=lambda k: -max(r["ops"].get(k, {}).get("cpu", 0) for r in results.values()))
    print("%-44s" % "ms per step (median)", "".join("%16s" % ("%s %s" % c) for c in cols))
    for k in keys:
        cells = [results[impl]["ops"].get(k, {}).get(c) for impl, c in cols]
        if max(v or 0 for v in cells) >= 0.05:
            print("%-44s" % k, "".join("%16s" % ("-" if v is None else "%.2f" % v) for v in cells))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="ctr_1m")
    ap.add_argument("--data", default="clicks_1m")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--nserver", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--torch", action="store_true", help="also time PyTorch's trainer compute (torch_rpc.py's)")
    ap.add_argument("--log-dir", default="", help="where the pservers' logs go (default: a temp dir)")
    ap.add_argument("--out", default="", help="JSON results ('' writes none)")
    args = ap.parse_args(argv)
    if not args.log_dir:
        import tempfile
        args.log_dir = tempfile.mkdtemp(prefix="trainer_compute_")
    os.makedirs(args.log_dir, exist_ok=True)
    results = {"fluidist": run_fluidist(args)}
    if args.torch:
        results["torch"] = run_torch(args)
    print_table(results)
    print("load average %.2f" % os.getloadavg()[0])
    spread.write_results(args.out, dict(results, config=vars(args), load_average=os.getloadavg()))


if __name__ == "__main__":
    main()
