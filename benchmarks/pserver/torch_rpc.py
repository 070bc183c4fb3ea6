"""PyTorch's side of the benchmark: a parameter server on ``torch.distributed.rpc`` (TensorPipe
backend), written as PyTorch's own RPC parameter-server benchmark and its batch-updating
parameter-server tutorial write it.

    python benchmarks/pserver/torch_rpc.py --ntrainer 2 --nserver 2 --model mlp_1m \
        --data synthetic_1000 --batch-size 32 --epochs 1 --out torch.json

Roles, as in PyTorch's launcher: ``ntrainer`` trainers (ranks 0..), ``nserver`` servers, and a
master (the last rank), all started by ``torch.multiprocessing.spawn``. The master creates one
``BatchParameterServer`` per server with ``rpc.remote`` (each holding the parameter blocks dealt to
it, cut and dealt exactly as fluidist's transpiler does: see ``workload.shard_plan``), runs the
trainers with ``rpc_async`` and collects their metrics and the servers'.

The server answers asynchronously: ``update_and_fetch`` is an ``@rpc.functions.async_execution``
function that returns a ``torch.futures.Future`` at once. In sync mode the server adds the gradient
to its running sum and, once every trainer's gradient for the step is in, applies SGD with the mean
and completes every trainer's future with the new parameter blocks; in async mode it applies the
gradient at once and completes that trainer's future. No RPC thread ever blocks waiting for the other
trainers (which would make PyTorch look slower than it is).

Each step of a trainer: forward and backward (compute), one ``rpc_async`` per server carrying that
server's gradient blocks (send), waiting for all the futures (wait), copying the answered blocks
into the model's parameters (recv). The gradient blocks are row slices (views) of the gradients, as
fluidist's ``split_byref`` makes them; PyTorch's RPC copies such views out of their storage while
serializing (fluidist sends them without a copy). Every process uses one intra-op thread, as every
fluidist process uses one BLAS thread. TensorPipe runs with its default transports and channels
(shared memory on one machine) unless ``--transports``/``--channels`` say otherwise.
"""
import argparse
import json
import os
import sys
import threading
import time

import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed.rpc import TensorPipeRpcBackendOptions
from torch.futures import wait_all

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import metrics  # noqa: E402
import workload  # noqa: E402
from fluidist.launch.cluster import find_free_ports  # noqa: E402


def get_name(rank, args):
    if rank < args.ntrainer:
        return "trainer%d" % rank
    if rank < args.ntrainer + args.nserver:
        return "server%d" % rank
    return "master"


def server_rank(args, index):
    return args.ntrainer + index


class BatchParameterServer:
    """The parameter blocks dealt to one server, updated by SGD on the trainers' gradients."""

    def __init__(self, rank, trainer_count, blocks, lr, sync, table=None):
        """``table``: None, or (shard rows, width, init scale, seed) of this server's shard of a
        distributed embedding table (global row ``i`` is row ``i // nserver`` of server ``i % nserver``,
        as fluidist's transpiler deals them), made here rather than shipped."""
        self.rank = rank
        self.table = None
        if table is not None:
            rows, width, scale, seed = table
            gen = torch.Generator().manual_seed(seed)
            self.table = torch.empty(rows, width).uniform_(-scale, scale, generator=gen)
        self.sparse_parts = []         # sync: (local rows, gradient rows) of the step's trainers so far
        self.trainer_count = trainer_count
        self.names = [n for n, _ in blocks]
        self.params = [t for _, t in blocks]
        self.lr = lr
        self.sync = sync
        self.lock = threading.Lock()
        self.grad_sum = [torch.zeros_like(p) for p in self.params]
        self.arrived = 0
        self.futures = []
        self.optimize_times = []       # per step (sync) or per gradient (async)
        self.bytes_in = 0
        self.bytes_out = 0
        self.t_first = None
        self.t_last = None
        self.lookup_time = 0.0

    @staticmethod
    def get_params(server_rref):
        self = server_rref.local_value()
        with self.lock:
            return [p.clone() for p in self.params]

    @staticmethod
    def lookup(server_rref, rows):
        """Rows ``rows`` (local indices) of this server's table shard, copied."""
        self = server_rref.local_value()
        t0 = time.perf_counter()
        with self.lock:
            out = self.table.index_select(0, rows)
            self.lookup_time += time.perf_counter() - t0
            return out

    @staticmethod
    @rpc.functions.async_execution
    def update_and_fetch(server_rref, trainer_rank, step, grads, sparse_rows=None, sparse_grad=None):
        """Take one trainer's gradient blocks (and the gradient rows of the table's rows it looked
        up); the returned future completes with the new blocks."""
        self = server_rref.local_value()
        fut = torch.futures.Future()
        done = None
        with self.lock:
            now = time.perf_counter()
            if self.t_first is None:
                self.t_first = now
            self.bytes_in += sum(g.numel() * g.element_size() for g in grads)
            if self.sync:
                t0 = time.perf_counter()
                for acc, g in zip(self.grad_sum, grads):
                    acc.add_(g)
                if sparse_rows is not None:
                    self.sparse_parts.append((sparse_rows, sparse_grad))
                self.arrived += 1
                self.futures.append(fut)
                if self.arrived == self.trainer_count:
                    scale = -self.lr / self.trainer_count
                    for p, acc in zip(self.params, self.grad_sum):
                        p.add_(acc, alpha=scale)
                        acc.zero_()
                    if self.sparse_parts:   # row-wise SGD with the mean of the trainers' row gradients
                        rows = torch.cat([r for r, _ in self.sparse_parts])
                        vals = torch.cat([v for _, v in self.sparse_parts])
                        self.table.index_add_(0, rows, vals, alpha=scale)
                        self.sparse_parts = []
                    done, self.futures, self.arrived = self.futures, [], 0
                    result = self.params   # not modified again before every trainer has answered
                self.optimize_times.append(time.perf_counter() - t0)
            else:
                t0 = time.perf_counter()
                for p, g in zip(self.params, grads):
                    p.add_(g, alpha=-self.lr)
                if sparse_rows is not None:
                    self.table.index_add_(0, sparse_rows, sparse_grad, alpha=-self.lr)
                # later gradients update in place while this answer may still be on the wire
                result = [p.clone() for p in self.params]
                self.optimize_times.append(time.perf_counter() - t0)
                done = [fut]
            if done:
                self.bytes_out += len(done) * sum(p.numel() * p.element_size() for p in self.params)
            self.t_last = time.perf_counter()
        if done:
            for f in done:
                f.set_result(result)
        return fut

    @staticmethod
    def get_metrics(server_rref):
        self = server_rref.local_value()
        with self.lock:
            return {"optimize_times": list(self.optimize_times), "bytes_in": self.bytes_in,
                    "bytes_out": self.bytes_out, "lookup_seconds_total": self.lookup_time,
                    "peak_rss": metrics.peak_rss_bytes(),
                    "serve_seconds": (self.t_last - self.t_first) if self.t_first is not None else None}




class TorchMLP(torch.nn.Module):
    """The benchmark's MLP with fluid's parameter layout (weights (in, out)), so blocks match."""

    def __init__(self, model):
        super().__init__()
        self.names = [n for n, _ in model.param_shapes()]
        self.params = torch.nn.ParameterDict()
        for name, shape in model.param_shapes():
            self.params[name.replace(".", "_")] = torch.nn.Parameter(torch.zeros(shape))
        self.nlayers = len(model.sizes)

    def param(self, name):
        return self.params[name.replace(".", "_")]

    def forward(self, x):
        h = x
        for i in range(self.nlayers):
            h = torch.addmm(self.param("fc_%d.b_0" % i), h, self.param("fc_%d.w_0" % i))
            if i < self.nlayers - 1:
                h = F.relu(h)
        return h


def compute_step(model, x, y, nserver, model_spec, lookup):
    """One trainer step's compute: for a CTR batch, the batch's distinct ids, their rows from the servers
    that hold them (``lookup(local ids of each server)``: a row tensor per server, id ``i`` being row
    ``i // nserver`` of server ``i % nserver``), the embeddings gathered and concatenated with the dense
    features; then the model's loss, ``backward()`` and the loss's value. Returns (loss value, (local
    ids, gradient rows) or (None, None) per server, distinct ids, seconds spent in ``lookup``)."""
    y = torch.from_numpy(y).view(-1)
    if not isinstance(model_spec, workload.CTR):
        h, sparse, distinct_ids, t_lookup = torch.from_numpy(x), [(None, None)] * nserver, 0, 0.0
    else:
        ids = torch.from_numpy(x["ids"])
        uniq, inverse = torch.unique(ids, return_inverse=True)
        owner = uniq % nserver
        masks = [owner == s for s in range(nserver)]
        locals_ = [uniq[m] // nserver for m in masks]
        tl = time.perf_counter()
        rows = lookup(locals_)
        t_lookup = time.perf_counter() - tl
        emb = torch.empty(len(uniq), model_spec.embedding_dim)
        for m, r in zip(masks, rows):
            emb[m] = r
        emb.requires_grad_()
        h = torch.cat([emb[inverse].reshape(len(y), -1), torch.from_numpy(x["dense"])], dim=1)
        distinct_ids = len(uniq)
    for p in model.parameters():
        p.grad = None
    loss = F.cross_entropy(model(h), y)
    loss.backward()
    loss_value = loss.item()
    if isinstance(model_spec, workload.CTR):
        sparse = [(loc, emb.grad[m]) for loc, m in zip(locals_, masks)]
    return loss_value, sparse, distinct_ids, t_lookup


def run_trainer(args, rank, server_rrefs):
    model_spec = workload.load_model(args.model, args.model_config_path)
    plan = workload.shard_plan(model_spec, args.nserver)
    data = workload.load_data(args.data, args.data_config_path)
    batches = workload.trainer_batches(data, args.batch_size, args.ntrainer, rank, args.epochs)
    del data
    ctr = isinstance(model_spec, workload.CTR)
    model = TorchMLP(model_spec)
    by_server = [[b for b in plan if b["server"] == s] for s in range(args.nserver)]
    names = [get_name(server_rank(args, s), args) for s in range(args.nserver)]
    nserver = args.nserver

    def put(blocks_of_servers):
        with torch.no_grad():
            for blocks, values in zip(by_server, blocks_of_servers):
                for b, v in zip(blocks, values):
                    model.param(b["param"])[b["row_begin"]:b["row_begin"] + b["rows"]].copy_(v)

    # start from the servers' parameters, as fluidist trainers do
    put(wait_all([rpc.rpc_async(names[s], BatchParameterServer.get_params, args=(server_rrefs[s],))
                  for s in range(args.nserver)]))
    sent = sum(4 * int(torch.Size(b["shape"]).numel()) for b in plan)

    def lookup(locals_):
        return wait_all([rpc.rpc_async(names[s], BatchParameterServer.lookup, args=(server_rrefs[s], locals_[s]),
                                       timeout=args.rpc_timeout) for s in range(nserver)])

    steps, losses, traffic = [], [], []
    perf = time.perf_counter
    t_first = None
    for i, (x, y) in enumerate(batches):
        t0 = perf()
        loss_value, sparse, distinct_ids, t_lookup = compute_step(model, x, y, nserver, model_spec, lookup)
        t1 = perf()
        futs = []
        for s in range(nserver):
            grads = [model.param(b["param"]).grad[b["row_begin"]:b["row_begin"] + b["rows"]] for b in by_server[s]]
            futs.append(rpc.rpc_async(names[s], BatchParameterServer.update_and_fetch,
                                      args=(server_rrefs[s], rank, i, grads) + sparse[s], timeout=args.rpc_timeout))
        t2 = perf()
        answers = wait_all(futs)
        t3 = perf()
        put(answers)
        t4 = perf()
        if i < args.warmup:
            continue
        if t_first is None:
            t_first = t0
        steps.append({"compute": t1 - t0 - t_lookup, "send": t2 - t1, "wait": t3 - t2, "recv": t4 - t3 + t_lookup,
                      "other": 0.0, "step": t4 - t0})
        losses.append(loss_value)
        if ctr:
            traffic.append(distinct_ids)
    wall = perf() - t_first
    extra = {"peak_rss": metrics.peak_rss_bytes()}
    sent_total, recv_total = sent, sent
    if traffic:
        rows = sum(traffic) / len(traffic)
        width = model_spec.embedding_dim
        extra["rows_in_per_step"] = extra["rows_out_per_step"] = rows
        # out: the ids asked for, the gradient rows and their indices; in: the rows
        sent_total += rows * (8 + 4 * width + 8)
        recv_total += rows * 4 * width
    return metrics.trainer_record(rank, steps, sent_total, recv_total, wall, losses, extra=extra,
                                  examples_per_step=args.batch_size)


def run_master(args):
    model_spec = workload.load_model(args.model, args.model_config_path)
    plan = workload.shard_plan(model_spec, args.nserver)
    init = model_spec.initial_params(seed=1)
    server_rrefs = []
    for s in range(args.nserver):
        blocks = [(b["block"], torch.from_numpy(init[b["param"]][b["row_begin"]:b["row_begin"] + b["rows"]].copy()))
                  for b in plan if b["server"] == s]
        table = None
        if isinstance(model_spec, workload.CTR):
            table = (len(range(s, model_spec.table_rows, args.nserver)), model_spec.embedding_dim,
                     model_spec.init_scale, 100 + s)
        server_rrefs.append(rpc.remote(get_name(server_rank(args, s), args), BatchParameterServer,
                                       args=(server_rank(args, s), args.ntrainer, blocks,
                                             model_spec.learning_rate, not args.async_mode, table)))
    futs = [rpc.rpc_async(get_name(r, args), run_trainer, args=(args, r, server_rrefs), timeout=args.run_timeout)
            for r in range(args.ntrainer)]
    trainers = wait_all(futs)
    servers = []
    n_steps = trainers[0]["steps"] + args.warmup
    for s, rref in enumerate(server_rrefs):
        m = rpc.rpc_sync(get_name(server_rank(args, s), args), BatchParameterServer.get_metrics, args=(rref,))
        opt = m["optimize_times"]
        if not args.async_mode:
            # one entry per arriving gradient; a step's optimize time is the sum over its trainers
            per_step = [sum(opt[i:i + args.ntrainer]) for i in range(0, len(opt), args.ntrainer)]
            optimize = metrics.summarize(per_step[args.warmup:])
        else:
            optimize = {"mean_per_trainer_step": sum(opt) / max(1, len(opt))}   # one entry per gradient
        serve = m["serve_seconds"]
        servers.append({"rank": s, "steps": None if args.async_mode else n_steps, "optimize": optimize,
                        "serve_seconds": serve, "peak_rss": m["peak_rss"],
                        "lookup_seconds_total": m["lookup_seconds_total"],
                        "busy_fraction": (sum(opt) + m["lookup_seconds_total"]) / serve if serve else None,
                        "bytes_recv_per_step": m["bytes_in"] / n_steps,
                        "bytes_sent_per_step": m["bytes_out"] / n_steps})
    return {"trainers": trainers, "servers": servers}


def run_process(rank, args):
    torch.set_num_threads(1)
    world_size = args.ntrainer + args.nserver + 1
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.master_port)
    extra = {}
    if args.transports:
        extra["_transports"] = args.transports.split(",")
    if args.channels:
        extra["_channels"] = args.channels.split(",")
    options = TensorPipeRpcBackendOptions(rpc_timeout=args.rpc_timeout, **extra)
    rpc.init_rpc(get_name(rank, args), rank=rank, world_size=world_size, rpc_backend_options=options)
    if rank == world_size - 1:
        result = run_master(args)
        with open(args.out, "w") as f:
            json.dump(result, f)
    rpc.shutdown()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ntrainer", type=int, default=2)
    ap.add_argument("--nserver", type=int, default=2)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--data-config-path", default=workload.DATA_CONFIGS)
    ap.add_argument("--model-config-path", default=workload.MODEL_CONFIGS)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--async-mode", action="store_true")
    ap.add_argument("--rpc-timeout", type=float, default=120, help="deadline of each step's RPC (s)")
    ap.add_argument("--run-timeout", type=float, default=600, help="deadline of a trainer's whole run (s)")
    ap.add_argument("--transports", default="", help="TensorPipe transports, e.g. 'uv' (default: TensorPipe's own)")
    ap.add_argument("--channels", default="", help="TensorPipe channels, e.g. 'basic' (default: TensorPipe's own)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    args.master_port, = find_free_ports(1)
    mp.spawn(run_process, args=(args,), nprocs=args.ntrainer + args.nserver + 1, join=True)


if __name__ == "__main__":
    main()
