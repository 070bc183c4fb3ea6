"""Data parallelism on one machine, 2 processes: fluidist's Fleet collective against PyTorch DDP (gloo).

    python benchmarks/data_parallel.py                        # table + bench_results/data_parallel.json
    python benchmarks/data_parallel.py --rounds 7 --steps 80 --models mlp

Implementations, each a job of 2 worker processes started by this script (one BLAS/OpenMP thread
each, ``OMP_NUM_THREADS=1`` / ``torch.set_num_threads(1)``):

``fluidist_grad_allreduce``
    ``fleet.distributed_optimizer(SGD, strategy)`` with ``strategy.mode = "collective"``,
    ``collective_mode = "grad_allreduce"``: the collective transpiler inserts ``c_allreduce_sum`` of
    every gradient; the two ranks share one machine, so the CPU collective backend picks its
    shared-memory transport.
``fluidist_nccl2``
    Fleet's default mode (``DistributedStrategy()``, ``mode = "nccl2"``): ``fleet.main_program`` is
    ``CompiledProgram(main).with_data_parallel(...)``, whose runner all-reduces the gradients across the
    processes over the same CPU backend, fused into one buffer (``fuse_all_reduce_ops``, Paddle's
    default): one all-reduce per step instead of one per gradient.
``fluidist_local_sgd``
    ``strategy.use_local_sgd = True`` with ``local_sgd_steps`` (``--local-sgd-steps``, default 4):
    each rank steps on its own and the parameters are averaged every ``local_sgd_steps`` steps.
``torch_ddp``
    ``torch.nn.parallel.DistributedDataParallel`` over a ``gloo`` process group, ``torch.optim.SGD``.

Models (``--models``): ``mlp`` 784-1024-1024-10 (relu) on synthetic data with a linear teacher, and
``cnn``, the digits CNN of ``examples/digits.py`` (two 3x3 conv + 2x2 max-pool layers, fc 64, fc 10)
on scikit-learn's 8x8 digits; softmax cross entropy, SGD lr 0.01, ``--batch-size`` (default 64)
examples per process and step, the processes reading disjoint batches.

Every job runs ``--warmup`` untimed steps, then ``--steps`` timed ones; a job's steps/s is its slower
rank's (timed steps / their wall time). The whole set of jobs is repeated ``--rounds`` times (default
5), in an order rotated every round; the table gives, per model and implementation, the median steps/s
with the spread (min-max) of the rounds, and the ratio to DDP taken within each round.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import spread  # noqa: E402
from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: E402

IMPLS = ("fluidist_grad_allreduce", "fluidist_nccl2", "fluidist_local_sgd", "torch_ddp")
MODELS = ("mlp", "cnn")
NPROC = 2
LR = 0.01
GOAL_VS_DDP = 1.3


# ------------------------------------------------------------------------------------------ data
def batches(model, rank, nproc, batch_size, count, seed=0):
    """``count`` batches (x, y) of rank ``rank``: disjoint slices of one shuffled stream, cycled."""
    if model == "mlp":
        rng = np.random.RandomState(seed)
        n = batch_size * nproc * 16
        x = rng.standard_normal((n, 784)).astype(np.float32)
        y = np.argmax(x @ rng.standard_normal((784, 10)).astype(np.float32), axis=1).astype(np.int64)
    else:
        from sklearn.datasets import load_digits
        d = load_digits()
        x = (d.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
        y = d.target.astype(np.int64)
        order = np.random.RandomState(seed).permutation(len(x))
        x, y = x[order], y[order]
    per_step = batch_size * nproc
    nb = len(x) // per_step
    out = []
    for i in range(count):
        b = i % nb
        s = slice(b * per_step + rank * batch_size, b * per_step + (rank + 1) * batch_size)
        out.append((x[s], y[s].reshape(-1, 1)))
    return out


# ------------------------------------------------------------------------------------------ workers
def fluidist_worker(a):
    import fluidist as fluid
    from fluidist.incubate.fleet.base import role_maker
    from fluidist.incubate.fleet.collective import DistributedStrategy, fleet

    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    if a.impl == "fluidist_grad_allreduce":
        strategy.mode, strategy.collective_mode = "collective", "grad_allreduce"
    elif a.impl == "fluidist_nccl2":
        pass                   # the default: nccl2 mode, a data-parallel CompiledProgram
    else:
        strategy.use_local_sgd = True
        strategy.local_sgd_steps = a.local_sgd_steps
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        if a.model == "mlp":
            x = fluid.data(name="x", shape=[None, 784], dtype="float32")
            h = fluid.layers.fc(x, 1024, act="relu")
            h = fluid.layers.fc(h, 1024, act="relu")
            logits = fluid.layers.fc(h, 10)
        else:
            sys.path.insert(0, os.path.join(ROOT, "examples"))
            from digits import cnn
            x = fluid.data(name="x", shape=[None, 1, 8, 8], dtype="float32")
            logits = cnn(x)
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits=logits, label=label))
        fleet.distributed_optimizer(fluid.optimizer.SGD(LR), strategy=strategy).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    prog = fleet.main_program

    def step(xb, yb):
        out, = exe.run(prog, feed={"x": xb, "label": yb}, fetch_list=[loss], use_program_cache=True)
        return float(np.asarray(out).reshape(-1)[0])

    return timed_loop(a, step)


def torch_worker(a):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    torch.manual_seed(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.port, rank=a.rank, world_size=NPROC)
    if a.model == "mlp":
        net = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                  torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    else:
        net = torch.nn.Sequential(torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                  torch.nn.Flatten(), torch.nn.Linear(128, 64), torch.nn.ReLU(),
                                  torch.nn.Linear(64, 10))
    model = DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=LR)

    def step(xb, yb):
        xb, yb = torch.from_numpy(xb), torch.from_numpy(yb).view(-1)
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.item()

    try:
        result = timed_loop(a, step)
        dist.barrier()      # both ranks done before either tears gloo down (else: an abort at exit)
        return result
    finally:
        dist.destroy_process_group()


def timed_loop(a, step):
    data = batches(a.model, a.rank, NPROC, a.batch_size, a.warmup + a.steps)
    losses, times = [], []
    perf = time.perf_counter
    t_first = None
    for i, (xb, yb) in enumerate(data):
        t0 = perf()
        loss = step(xb, yb)
        t1 = perf()
        if i >= a.warmup:
            t_first = t0 if t_first is None else t_first
            times.append(t1 - t0)
        losses.append(loss)
    wall = perf() - t_first
    return {"rank": a.rank, "steps": a.steps, "wall_seconds": wall, "steps_per_sec": a.steps / wall,
            "step_median": float(np.median(times)), "loss_first": losses[0], "loss_last": losses[-1]}


def worker_main(a):
    rec = torch_worker(a) if a.impl == "torch_ddp" else fluidist_worker(a)
    with open(a.out, "w") as f:
        json.dump(rec, f)


# ------------------------------------------------------------------------------------------ driver
def run_job(args, impl, model, log_dir, tag):
    """One job of NPROC workers; returns its record (slowest rank's steps/s) or raises naming the rank."""
    ports = free_ports(NPROC + 1)
    eps = ["127.0.0.1:%d" % p for p in ports[:NPROC]]
    procs = []
    try:
        for rank in range(NPROC):
            env = spread.child_env()
            env.update(PADDLE_TRAINER_ENDPOINTS=",".join(eps), PADDLE_TRAINER_ID=str(rank),
                       PADDLE_CURRENT_ENDPOINT=eps[rank], PADDLE_TRAINERS_NUM=str(NPROC))
            out = os.path.join(log_dir, "%s_rank%d.json" % (tag, rank))
            log_path = os.path.join(log_dir, "%s_rank%d.log" % (tag, rank))
            argv = [sys.executable, os.path.abspath(__file__), "--worker", "--impl", impl, "--model", model,
                    "--rank", str(rank), "--port", str(ports[-1]), "--out", out, "--steps", str(args.steps),
                    "--warmup", str(args.warmup), "--batch-size", str(args.batch_size),
                    "--local-sgd-steps", str(args.local_sgd_steps)]
            log = open(log_path, "w")
            procs.append((rank, subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                                 start_new_session=True), out, log_path, log))
        deadline = time.monotonic() + args.timeout
        recs = []
        for rank, p, out, log_path, _ in procs:
            try:
                code = p.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                code = "still running at the deadline"
            if code != 0:
                with open(log_path) as f:
                    tail = " | ".join(ln.rstrip() for ln in f.readlines()[-4:])
                raise RuntimeError("%s %s rank %d (pid %d): %s; log %s: %s"
                                   % (impl, model, rank, p.pid, code if isinstance(code, str) else
                                      "exit code %d" % code, log_path, tail))
            with open(out) as f:
                recs.append(json.load(f))
    finally:
        for _, p, _, _, log in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    slow = min(recs, key=lambda r: r["steps_per_sec"])
    return {"steps_per_sec": slow["steps_per_sec"], "step_median": max(r["step_median"] for r in recs),
            "loss_first": recs[0]["loss_first"], "loss_last": recs[0]["loss_last"], "ranks": recs}


def torch_version():
    try:
        import torch
        return torch.__version__
    except Exception:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: mlp, cnn")
    ap.add_argument("--impls", default=",".join(IMPLS), help="comma-separated: " + ", ".join(IMPLS))
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median and spread reported)")
    ap.add_argument("--steps", type=int, default=60, help="timed steps per job")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--batch-size", type=int, default=64, help="examples per process and step")
    ap.add_argument("--local-sgd-steps", type=int, default=4, help="LocalSGD's steps between averages")
    ap.add_argument("--timeout", type=float, default=300, help="deadline of one job (s)")
    ap.add_argument("--out", default="bench_results/data_parallel.json", help="JSON results ('' writes none)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--impl", default="", help=argparse.SUPPRESS)
    ap.add_argument("--model", default="", help=argparse.SUPPRESS)
    ap.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--log-dir", default="", help="where the workers' logs go (default: a temp dir)")
    a = ap.parse_args(argv)
    if a.worker:
        worker_main(a)
        return None
    models = [m for m in a.models.split(",") if m]
    impls = [i for i in a.impls.split(",") if i]
    for m in models:
        if m not in MODELS:
            ap.error("unknown model %r (choose from %s)" % (m, ", ".join(MODELS)))
    for i in impls:
        if i not in IMPLS:
            ap.error("unknown implementation %r (choose from %s)" % (i, ", ".join(IMPLS)))
    tv = torch_version()
    if "torch_ddp" in impls and tv is None:
        print("torch is not installed (pip install torch==2.13.0, a CPU wheel): timing fluidist only", flush=True)
        impls = [i for i in impls if i != "torch_ddp"]
    log_dir = a.log_dir or tempfile.mkdtemp(prefix="data_parallel_")
    os.makedirs(log_dir, exist_ok=True)
    jobs = [(m, i) for m in models for i in impls]
    rounds = []
    for r, order in enumerate(spread.interleaved(jobs, a.rounds)):
        rec = {"round": r, "load_average": os.getloadavg()[0], "jobs": {}}
        for m, i in order:
            rec["jobs"]["%s/%s" % (m, i)] = run_job(a, i, m, log_dir, "r%d_%s_%s" % (r, m, i))
        print("round %d: %s" % (r, ", ".join("%s %.1f" % (k, v["steps_per_sec"]) for k, v in rec["jobs"].items())),
              flush=True)
        rounds.append(rec)
    summary = {}
    for m in models:
        for i in impls:
            key = "%s/%s" % (m, i)
            s = {"steps_per_sec": spread.spread([rd["jobs"][key]["steps_per_sec"] for rd in rounds]),
                 "step_median": spread.spread([rd["jobs"][key]["step_median"] for rd in rounds])}
            if "torch_ddp" in impls and i != "torch_ddp":
                s["vs_ddp"] = spread.spread([rd["jobs"][key]["steps_per_sec"] /
                                             rd["jobs"]["%s/torch_ddp" % m]["steps_per_sec"] for rd in rounds])
            summary[key] = s
    result = {"config": {k: getattr(a, k) for k in ("rounds", "steps", "warmup", "batch_size", "local_sgd_steps")},
              "nproc": NPROC, "threads_per_process": 1, "models": models, "impls": impls,
              "environment": {"python": platform.python_version(), "cpus": os.cpu_count(), "numpy": np.__version__,
                              "torch": tv},
              "load_average": spread.spread([rd["load_average"] for rd in rounds]),
              "rounds": rounds, "summary": summary}
    print()
    print("data parallel, %d processes, batch %d per process, %d timed steps per job, %d rounds; "
          "median [min-max]; load average %s" % (NPROC, a.batch_size, a.steps, a.rounds,
                                                 spread.fmt(result["load_average"], "%.1f")))
    width = max(len(k) for k in summary) + 2
    print("%-*s %-24s %-22s %s" % (width, "model/impl", "steps/s", "step ms", "vs DDP (within a round)"))
    for key, s in summary.items():
        print("%-*s %-24s %-22s %s" % (width, key, spread.fmt(s["steps_per_sec"], "%.1f"),
                                       spread.fmt(s["step_median"], "%.2f", 1e3),
                                       spread.fmt(s.get("vs_ddp"), "%.2f") + ("x" if s.get("vs_ddp") else "")))
    goals = {}
    for key, s in summary.items():
        if s.get("vs_ddp") and s["vs_ddp"]["median"] is not None:
            goals[key] = {"value": s["vs_ddp"]["median"], "goal": ">= %.1fx DDP" % GOAL_VS_DDP,
                          "met": s["vs_ddp"]["median"] >= GOAL_VS_DDP}
            print("goal %-40s %.2fx (>= %.1fx): %s" % (key, goals[key]["value"], GOAL_VS_DDP,
                                                        "met" if goals[key]["met"] else "NOT met"))
    result["goals"] = goals
    spread.write_results(a.out, result)
    return result


if __name__ == "__main__":
    main()
