"""All-reduce between 2 processes on this machine: fluidist's collective backend against PyTorch's
gloo (CPU) or, with ``--gpu``, fluidist's NCCL through CuPy against torch.distributed's NCCL.

    python benchmarks/allreduce.py                          # table + bench_results/allreduce.json
    python benchmarks/allreduce.py --transport zmq          # force fluidist's ZeroMQ path
    python benchmarks/allreduce.py --gpu                    # one rank per GPU (needs 2 GPUs)

Sizes: float32 tensors of 4 KB, 256 KB, 4 MB and 64 MB (``--sizes`` in bytes to change). For each,
both ranks run ``iters`` all-reduces back to back, several times; the table gives the median time
per all-reduce (rank 0's clock) and the bus bandwidth ``busbw = 2*(n-1)/n * bytes / time`` (nccl-tests'
definition; for n = 2 it is bytes / time). fluidist is timed two ways: ``comm.allreduce(x, out=x)``
(in place, as torch.distributed.all_reduce works) and ``comm.allreduce(x)`` (a new result array each
call, as the ``c_allreduce_sum`` kernel does). The machine's memory-copy bandwidth (rank 0's
``np.copyto`` of the same size into a preallocated array) is given for reference. All of them are
timed in turns, one block each, so that a change in the machine's load touches them alike. Results
are checked (the sum of the ranks' tensors) before anything is timed.
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

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spread  # noqa: E402

SIZES = [4 << 10, 256 << 10, 4 << 20, 64 << 20]
NRANKS = 2


def plan(nbytes):
    """(iterations per timed block, blocks): about 0.2-0.5 s of work per implementation and size."""
    if nbytes <= 64 << 10:
        return 1000, 5
    if nbytes <= 1 << 20:
        return 200, 5
    if nbytes <= 16 << 20:
        return 40, 5
    return 10, 5


def time_blocks(fn, barrier, iters, blocks, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(blocks):
        barrier()
        t = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - t) / iters)
    return times


# ---------------------------------------------------------------- fluidist
def fluidist_comm(rank, endpoints, gpu):
    from fluidist.distributed.collective.rendezvous import CommId, new_comm_id, receive_on_endpoint, \
        send_to_endpoints
    from fluidist.distributed.collective.registry import create_communicator
    from fluidist.device.places import CPUPlace, CUDAPlace
    place = CUDAPlace(rank) if gpu else CPUPlace()
    what = "benchmark id (rank %d)" % rank
    if rank == 0:
        nid = None
        if gpu:
            from fluidist.distributed.collective.nccl import new_unique_id
            import cupy
            with cupy.cuda.Device(0):
                nid = new_unique_id()
        cid = new_comm_id(0, "nccl" if gpu else "cpu", endpoints[0], nid)
        send_to_endpoints({"kind": "bench", "id": cid.to_json()}, endpoints[1:], what)
    else:
        cid = CommId.from_json(receive_on_endpoint(endpoints[rank], what, {"kind": "bench"})["id"])
    cid.endpoint = endpoints[rank]
    return create_communicator(cid, len(endpoints), rank, place)


def _array_module(gpu, rank):
    if not gpu:
        return np, (lambda: None)
    import cupy
    cupy.cuda.Device(rank).use()
    return cupy, (lambda: cupy.cuda.get_current_stream().synchronize())


def _expected_sum(n):
    return (np.arange(n, dtype=np.float32) % 97) * NRANKS + sum(range(NRANKS))


class Fluidist:
    name = "fluidist"

    def __init__(self, rank, endpoints, gpu):
        self.comm = fluidist_comm(rank, endpoints, gpu)
        self.rank = rank
        self.xp, self.sync = _array_module(gpu, rank)
        self.gpu = gpu

    def variants(self, nbytes):
        """{variant: callable doing one all-reduce}, after checking the result once."""
        xp, comm, sync = self.xp, self.comm, self.sync
        n = nbytes // 4
        x = xp.arange(n, dtype=xp.float32) % 97 + self.rank
        got = comm.allreduce(x, "sum")
        if not np.array_equal(got.get() if self.gpu else got, _expected_sum(n)):
            raise AssertionError("fluidist all-reduce of %d bytes gave a wrong sum" % nbytes)
        buf = x * 0     # stays zero under repeated in-place sums

        def inplace():
            comm.allreduce(buf, "sum", out=buf)
            sync()

        def fresh():
            comm.allreduce(x, "sum")
            sync()
        return {"inplace": inplace, "fresh": fresh}

    def barrier(self):
        self.sync()
        self.comm.barrier()

    def close(self):
        self.comm.close()


class Torch:
    name = "torch"

    def __init__(self, rank, port, gpu):
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        self.torch, self.dist, self.gpu, self.rank = torch, dist, gpu, rank
        self.backend = "nccl" if gpu else "gloo"
        if gpu:
            torch.cuda.set_device(rank)
        dist.init_process_group(self.backend, init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                                world_size=NRANKS)
        self.device = torch.device("cuda", rank) if gpu else torch.device("cpu")

    def sync(self):
        if self.gpu:
            self.torch.cuda.synchronize()

    def variants(self, nbytes):
        torch, dist = self.torch, self.dist
        n = nbytes // 4
        x = (torch.arange(n, dtype=torch.float32) % 97 + self.rank).to(self.device)
        check = x.clone()
        dist.all_reduce(check)
        if not torch.equal(check.cpu(), torch.from_numpy(_expected_sum(n))):
            raise AssertionError("torch all-reduce of %d bytes gave a wrong sum" % nbytes)
        buf = x * 0

        def inplace():
            dist.all_reduce(buf)
            self.sync()
        return {"inplace": inplace}

    def close(self):
        self.dist.destroy_process_group()


class MemCopy:
    """The reference: rank 0 copies ``nbytes`` into a preallocated array (rank 1 waits)."""

    name = "memcpy"

    def __init__(self, rank, gpu):
        self.rank = rank
        self.xp, self.sync = _array_module(gpu, rank)

    def variants(self, nbytes):
        xp = self.xp
        a = xp.ones(nbytes // 4, xp.float32)
        b = xp.empty_like(a)

        def copy():
            if self.rank == 0:
                xp.copyto(b, a)
                self.sync()
        return {"copy": copy}

    def close(self):
        pass


def worker(args):
    """Every implementation is timed in turns, block by block, so that a change in the machine's
    load during the run touches them alike."""
    endpoints = args.endpoints.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    ours = Fluidist(args.rank, endpoints, args.gpu)
    impls = [ours, MemCopy(args.rank, args.gpu)]
    out = {"fluidist": {"transport": ours.comm.transport}}
    if not args.no_torch:
        try:
            impls.append(Torch(args.rank, args.torch_port, args.gpu))
            out["torch"] = {"backend": impls[-1].backend, "version": impls[-1].torch.__version__}
        except ImportError as e:
            out["torch"] = {"error": "torch is not installed (%s)" % e}
    out["memcpy"] = {}
    for nbytes in sizes:
        iters, blocks = plan(nbytes)
        blocks = max(blocks, args.rounds)
        fns = [(impl.name, v, fn) for impl in impls for v, fn in impl.variants(nbytes).items()]
        times = {(name, v): [] for name, v, _ in fns}
        for name, v, fn in fns:
            time_blocks(fn, ours.barrier, 0, 0, max(2, iters // 10))   # warm up
        for _ in range(blocks):
            for name, v, fn in fns:
                times[(name, v)] += time_blocks(fn, ours.barrier, iters, 1, 0)
        for (name, v), ts in times.items():
            out.setdefault(name, {}).setdefault(str(nbytes), {})[v] = ts
    for impl in reversed(impls):
        impl.close()
    if args.rank == 0:
        with open(args.result, "w") as f:
            json.dump(out, f)


# ---------------------------------------------------------------- driver
def busbw(nbytes, seconds):
    return 2 * (NRANKS - 1) / NRANKS * nbytes / seconds / 1e9


def human(nbytes):
    for unit, k in (("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= k and nbytes % k == 0:
            return "%d %s" % (nbytes // k, unit)
    return "%d B" % nbytes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=",".join(str(s) for s in SIZES), help="bytes, comma separated")
    p.add_argument("--gpu", action="store_true", help="NCCL through CuPy against torch NCCL, one rank per GPU")
    p.add_argument("--transport", choices=["auto", "shm", "zmq"], default="auto",
                   help="fluidist's CPU transport (FLUIDIST_COLLECTIVE_TRANSPORT)")
    p.add_argument("--no-torch", action="store_true", help="time fluidist only")
    p.add_argument("--out", default=os.path.join("bench_results", "allreduce.json"),
                   help="JSON results file ('' for none)")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--rounds", type=int, default=5,
                   help="timed blocks per implementation and size, taken in turns (median and spread reported)")
    # worker mode (internal)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--endpoints", default="", help=argparse.SUPPRESS)
    p.add_argument("--torch-port", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--result", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)

    no_torch = args.no_torch
    if not no_torch:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("torch is not installed: timing fluidist only (pip install torch==2.13.0 for the comparison)")
            no_torch = True
    ports = free_ports(NRANKS + 1)
    endpoints = ",".join("127.0.0.1:%d" % q for q in ports[:NRANKS])
    env = dict(os.environ, FLUIDIST_COLLECTIVE_TRANSPORT=args.transport, OMP_NUM_THREADS="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "result.json")
        procs = []
        for r in range(NRANKS):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--rank", str(r), "--endpoints", endpoints,
                   "--torch-port", str(ports[-1]), "--result", result, "--sizes", args.sizes,
                   "--rounds", str(args.rounds)]
            if args.gpu:
                cmd.append("--gpu")
            if no_torch:
                cmd.append("--no-torch")
            procs.append(subprocess.Popen(cmd, env=env, start_new_session=True))
        deadline = time.monotonic() + args.timeout
        try:
            for pr in procs:
                pr.wait(max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        finally:
            for pr in procs:
                if pr.poll() is None:
                    pr.kill()
                    pr.wait()
        codes = [pr.returncode for pr in procs]
        if any(codes) or not os.path.exists(result):
            sys.exit("benchmark workers failed (exit codes %s)" % codes)
        with open(result) as f:
            data = json.load(f)

    sizes = [int(s) for s in args.sizes.split(",")]
    theirs = "torch NCCL" if args.gpu else "torch gloo"
    ours = "fluidist NCCL" if args.gpu else "fluidist (%s)" % data["fluidist"]["transport"]
    copy_name = "cupy copy (GPU 0)" if args.gpu else "np.copyto"
    rows = []
    for nbytes in sizes:
        f = data["fluidist"][str(nbytes)]
        row = {"bytes": nbytes,
               "fluidist_inplace_s": statistics.median(f["inplace"]),
               "fluidist_fresh_s": statistics.median(f["fresh"]),
               "memcpy_s": statistics.median(data["memcpy"][str(nbytes)]["copy"])}
        t = data.get("torch", {}).get(str(nbytes))
        if t:
            row["torch_s"] = statistics.median(t["inplace"])
        for k in list(row):
            if k.endswith("_s"):
                row[k[:-2] + "_busbw_GBps"] = busbw(nbytes, row[k])
        row["memcpy_GBps"] = nbytes / row.pop("memcpy_s") / 1e9
        row.pop("memcpy_busbw_GBps")
        if "torch_s" in row:
            row["busbw_ratio_vs_torch"] = row["fluidist_inplace_busbw_GBps"] / row["torch_busbw_GBps"]
        row["busbw_over_memcpy"] = row["fluidist_inplace_busbw_GBps"] / row["memcpy_GBps"]
        # per round (one block each, taken in turns): the spread of the times and of the ratio
        row["fluidist_inplace_rounds_s"] = spread.spread(f["inplace"])
        if t:
            row["torch_rounds_s"] = spread.spread(t["inplace"])
            row["busbw_ratio_vs_torch_rounds"] = spread.spread([b / a for a, b in zip(f["inplace"], t["inplace"])])
        rows.append(row)

    print()
    print("all-reduce, float32, %d processes on %s (%d CPUs); %s vs %s; median of %s" % (
        NRANKS, platform.node() or "this machine", os.cpu_count(), ours, theirs, "blocks taken in turns"))
    w = 24
    head = "%-7s | %-*s | %-*s | %-*s | %-9s | %s" % ("size", w, ours + " in place", w, ours + " new array", w, theirs,
                                                     "ours/them", copy_name + " GB/s")
    print(head)
    print("-" * len(head))
    for row in rows:
        def cell(k):
            if k + "_s" not in row:
                return "%-*s" % (w, "-")
            return "%9.1f us %7.2f GB/s" % (row[k + "_s"] * 1e6, row[k + "_busbw_GBps"])
        ratio = "%.2fx" % row["busbw_ratio_vs_torch"] if "busbw_ratio_vs_torch" in row else "-"
        print("%-7s | %s | %s | %s | %-9s | %.2f" % (human(row["bytes"]), cell("fluidist_inplace"),
                                                     cell("fluidist_fresh"), cell("torch"), ratio, row["memcpy_GBps"]))
    print("(times: per all-reduce; GB/s: bus bandwidth 2*(n-1)/n*bytes/time; the copy column: bytes/time of one copy)")
    print()
    print("per round (one timed block per implementation, in turns; %d rounds): median [min-max]; load average %.1f"
          % (args.rounds, os.getloadavg()[0]))
    for row in rows:
        print("%-7s | %s in place: %s us | %s: %s us | busbw ours/them: %s" % (
            human(row["bytes"]), ours, spread.fmt(row["fluidist_inplace_rounds_s"], "%.1f", 1e6), theirs,
            spread.fmt(row.get("torch_rounds_s"), "%.1f", 1e6), spread.fmt(row.get("busbw_ratio_vs_torch_rounds"))))
    big = next((r for r in rows if r["bytes"] == 64 << 20), None)
    if big is not None:
        print("64 MB: fluidist in-place busbw / copy bandwidth = %.2f (goal >= 0.5); busbw vs %s = %s (goal >= 2)"
              % (big["busbw_over_memcpy"], theirs,
                 "%.2fx" % big["busbw_ratio_vs_torch"] if "busbw_ratio_vs_torch" in big else "-"))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        doc = {"benchmark": "allreduce", "nranks": NRANKS, "gpu": args.gpu, "dtype": "float32",
               "fluidist_transport": data["fluidist"]["transport"], "compared_with": theirs,
               "torch": data.get("torch", {}).get("version") or data.get("torch", {}).get("error"),
               "numpy": np.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
               "rows": rows, "raw": data}
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote", args.out)


if __name__ == "__main__":
    main()
