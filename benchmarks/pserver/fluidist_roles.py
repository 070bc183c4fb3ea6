"""One role of fluidist's side of the benchmark (a pserver or a trainer), as its own process.

The launcher starts ``--nserver`` pservers and ``--ntrainer`` trainers of this script on 127.0.0.1.
The job is written with fluidist's public API only, as a Paddle 1.x user writes it: build the MLP,
``DistributeTranspiler.transpile``, then ``get_pserver_program`` / ``get_startup_program`` on a
pserver, ``get_trainer_program`` and ``exe.run`` per batch on a trainer, ``exe.close()`` at the end. With
``--feed loader`` a trainer's batches come through an iterable ``fluid.io.DataLoader`` (``for data in
loader(): exe.run(prog, feed=data)``): a step can then see the next batch, and a distributed table's
trainer asks for its rows with the step's message (``fluidist.distributed.prefetch_ahead``;
``FLUIDIST_PREFETCH_AHEAD=0`` turns that off).

Timing: ``fluidist.profiler`` is on for the whole run; it times every kernel the Executor calls.
A trainer reads the kernels' times after each step and sums them into phases (compute, send, wait,
recv; see metrics.py); what is left of the step's wall time is ``other``. A pserver's
``listen_and_serv`` runs the optimize blocks through the Executor, so their ops are timed too: the
server's per-step ``optimize`` time is the sum of one step's optimize ops. Each role writes its
metrics as JSON to ``--metrics-out``; with ``--trace-out`` it also writes its Chrome trace through
:mod:`fluidist.timeline` (ops, RPC spans with peer and bytes, waits; trainers add a ``step`` span per
step), which the launcher merges into one timeline with ``fluidist.timeline.merge``.
"""
import argparse
import contextlib
import io
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import fluidist as fluid  # noqa: E402
import fluidist.profiler as profiler  # noqa: E402
from fluidist import timeline  # noqa: E402
import metrics  # noqa: E402
import workload  # noqa: E402

_NP_DTYPES = {"float32": 4, "float64": 8, "float16": 2, "int64": 8, "int32": 4}


def build_program(model, seed=1):
    """The model as a fluid program: fc layers (relu between), softmax cross entropy, SGD."""
    if isinstance(model, workload.CTR):
        return build_ctr_program(model, seed)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, model.input_dim], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        loss = mlp_loss(x, label, model)
    return main, startup, loss


def build_ctr_program(model, seed=1):
    """Paddle's CTR-DNN: one int64 input per slot, every slot looked up in the one shared table
    (``embedding(is_sparse=True, is_distributed=True)``), the embeddings concatenated with the dense
    features, fc layers (relu) and softmax cross entropy over click / no click, SGD."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        dense = fluid.data(name="dense", shape=[None, model.num_dense], dtype="float32")
        slots = [fluid.data(name="C%d" % i, shape=[None, 1], dtype="int64") for i in range(model.num_slots)]
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        table = fluid.ParamAttr(name=model.TABLE,
                                initializer=fluid.initializer.Uniform(-model.init_scale, model.init_scale))
        embs = [fluid.layers.embedding(ids, size=[model.table_rows, model.embedding_dim], is_sparse=True,
                                       is_distributed=True, param_attr=table) for ids in slots]
        loss = mlp_loss(fluid.layers.concat(embs + [dense], axis=1), label, model)
    return main, startup, loss


def mlp_loss(h, label, model):
    """fc layers of ``model.sizes`` on ``h`` (relu between, fluid's names fc_<i>.w_0 / .b_0), softmax
    cross entropy against ``label``, minimized by SGD; returns the mean loss."""
    for i, size in enumerate(model.sizes):
        last = i == len(model.sizes) - 1
        h = fluid.layers.fc(h, size, act=None if last else "relu", param_attr=fluid.ParamAttr(name="fc_%d.w_0" % i),
                            bias_attr=fluid.ParamAttr(name="fc_%d.b_0" % i))
    loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits=h, label=label))
    if getattr(model, "optimizer", "sgd") == "adagrad":
        fluid.optimizer.Adagrad(learning_rate=model.learning_rate).minimize(loss)
    else:
        fluid.optimizer.SGD(learning_rate=model.learning_rate).minimize(loss)
    return loss


def feed_of(model, x, y):
    """The feed dict of one batch (``x`` as ``workload.trainer_batches`` gives it)."""
    if isinstance(model, workload.CTR):
        feed = {"C%d" % i: x["ids"][:, i:i + 1] for i in range(model.num_slots)}
        feed["dense"] = x["dense"]
        feed["label"] = y
        return feed
    return {"x": x, "label": y}


class SparseTraffic:
    """What a trainer of a distributed-table model moved in its last step, read from its scope: the
    rows it prefetched (the values of the ``prefetch`` outputs) and the gradient rows it sent (the
    row-sparse inputs of the table's ``send``)."""

    def __init__(self, program):
        block = program.global_block()
        self.prefetched = [n for op in block.ops if op.type == "prefetch" for n in op.output_arg_names]
        self.asked = [n for op in block.ops if op.type == "prefetch" for n in op.input_arg_names]
        self.sent = [n for op in block.ops if op.type == "send" for n in op.input_arg_names
                     if str(block.var(n).type).upper().endswith("SELECTED_ROWS")]

    def step(self, scope):
        """(rows in, rows out, bytes in, bytes out) of the last step."""
        rows_in = rows_out = bytes_in = bytes_out = 0
        for n in self.prefetched:
            v = np.asarray(scope.find_var(n).get_tensor())
            rows_in += v.shape[0]
            bytes_in += v.nbytes
        for n in self.asked:
            bytes_out += np.asarray(scope.find_var(n).get_tensor()).nbytes
        for n in self.sent:
            sr = scope.find_var(n).get_selected_rows()
            rows_out += len(sr.rows())
            bytes_out += np.asarray(sr.get_tensor()).nbytes + 8 * len(sr.rows())
        return rows_in, rows_out, bytes_in, bytes_out




def var_bytes(block, name):
    v = block._find_var_recursive(name)
    if v is None or v.shape is None or any(d < 0 for d in v.shape):
        raise ValueError("cannot count the bytes of %r: its shape is unknown" % name)
    return int(np.prod(v.shape)) * _NP_DTYPES.get(str(v.dtype), 4)


def trainer_bytes_per_step(program):
    """(bytes sent, bytes received) per step: the inputs of ``send`` ops, the outputs of ``recv`` ops."""
    block = program.global_block()
    sent = recv = 0
    for op in block.ops:
        if op.type == "send":
            sent += sum(var_bytes(block, n) for n in op.input_arg_names
                        if not str(block.var(n).type).upper().endswith("SELECTED_ROWS"))
        elif op.type == "recv":
            recv += sum(var_bytes(block, n) for n in op.output_arg_names)
    return sent, recv


def _on_request_blocks(pserver_program):
    """Sub-blocks run per request, not per step: the prefetch blocks and the checkpoint block."""
    serv = pserver_program.global_block().ops[0]
    out = {int(str(e).rpartition(":")[2]) for e in serv.attr("prefetch_var_name_to_block_id") or []}
    ckpt = serv.attr("checkpint_block_id")
    if ckpt is not None and int(ckpt) >= 0:
        out.add(int(ckpt))
    return out


def on_request_op_types(pserver_program):
    return {op.type for i in _on_request_blocks(pserver_program) for op in pserver_program.block(i).ops}


def round_times(pserver_program, events):
    """Seconds of each sync round (LR block and optimize blocks). A round ends with the last op of
    its last block; it is the c-th op of that type in the round, c counted over the round's blocks
    (rounds may skip a block's ``sum``, of gradients already summed as they arrived: never that op)."""
    serv = pserver_program.global_block().ops[0]
    skip = _on_request_blocks(pserver_program)
    blocks = [b.idx for b in serv.attr("optimize_blocks") or [] if b.idx not in skip]
    lr = int(serv.attr("lr_decay_block_id") if serv.attr("lr_decay_block_id") is not None else -1)
    if lr >= 0 and lr not in blocks:
        blocks.insert(0, lr)
    blocks = [i for i in blocks if pserver_program.block(i).ops]
    if not blocks:
        return []
    closing = pserver_program.block(blocks[-1]).ops[-1].type
    per_round = sum(1 for i in blocks for op in pserver_program.block(i).ops if op.type == closing)
    steps, acc, seen = [], 0.0, 0
    for op_type, _, _, dt in events:
        acc += dt
        if op_type == closing:
            seen += 1
            if seen == per_round:
                steps.append(acc)
                acc, seen = 0.0, 0
    return steps


def optimize_ops_per_step(pserver_program):
    """Ops the pserver runs once per sync step: those of its LR and optimize blocks."""
    skip = _on_request_blocks(pserver_program)
    return sum(len(pserver_program.block(i).ops) for i in range(1, pserver_program.num_blocks) if i not in skip)


def pserver_param_bytes(pserver_program):
    """Bytes of the dense parameter blocks this pserver updates (the ``Param`` of each optimizer op
    whose gradient is dense: a distributed table's rows travel by prefetch, counted by the trainers)."""
    total = 0
    for i in range(1, pserver_program.num_blocks):
        blk = pserver_program.block(i)
        for op in blk.ops:
            if "Param" in op.inputs and op.inputs["Param"]:
                grads = op.inputs.get("Grad") or []
                if any(str(blk._find_var_recursive(g).type).upper().endswith("SELECTED_ROWS") for g in grads):
                    continue
                total += sum(var_bytes(blk, n) for n in op.inputs["Param"])
    return total


def run_pserver(a, t):
    prog = t.get_pserver_program(a.current_endpoint)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(t.get_startup_program(a.current_endpoint, prog))
    per_step = optimize_ops_per_step(prog)
    profiler.start_profiler("CPU")
    t0, cpu0 = time.perf_counter(), time.process_time()
    exe.run(prog)                       # serves until every trainer has closed
    serve, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    on_request = on_request_op_types(prog)
    all_events = [e for e in profiler.op_events() if e[0] != "listen_and_serv"]
    events = [e for e in all_events if e[0] not in on_request]
    with contextlib.redirect_stdout(io.StringIO()):
        profiler.stop_profiler(profile_path=None)
    opt_total = sum(e[3] for e in events)
    lookup_total = sum(e[3] for e in all_events if e[0] in on_request)
    if all_events:   # from the first op to the end of the last: the rounds, not the start-up
        serve = max(e[2] + e[3] for e in all_events) - min(e[2] for e in all_events)
    rec = {"rank": a.server_id, "endpoint": a.current_endpoint, "serve_seconds": serve, "cpu_seconds": cpu,
           "optimize_ops_per_step": per_step, "optimize_seconds_total": opt_total,
           "lookup_seconds_total": lookup_total,
           "busy_fraction": (opt_total + lookup_total) / serve if serve > 0 else None}
    pbytes = pserver_param_bytes(prog)
    rec["bytes_recv_per_step"] = pbytes * a.trainers      # one gradient block per param block per trainer
    rec["bytes_sent_per_step"] = pbytes * a.trainers      # each trainer fetches every param block
    if not a.async_mode and per_step:
        steps = round_times(prog, events)
        rec["steps"] = len(steps)
        rec["optimize"] = metrics.summarize(steps[a.warmup:])
    else:
        # async: optimize blocks run per arriving gradient, not per step; only the mean is meaningful
        rec["steps"] = None
        rec["optimize"] = {"mean_per_trainer_step": opt_total / max(1, a.trainers * a.steps_hint)}
    by_op = {}
    for op_type, _, _, dt in all_events:
        d = by_op.setdefault(op_type, [0, 0.0])
        d[0] += 1
        d[1] += dt
    rec["ops"] = {k: {"calls": c, "total": s} for k, (c, s) in by_op.items()}
    rec["peak_rss"] = metrics.peak_rss_bytes()
    if a.trace_out:
        timeline.write_trace(a.trace_out, name="pserver%d" % a.server_id)
    return rec


def trainer_feeds(a, prog, model, batches):
    """The feed of each step: the batches' dicts (``--feed run``), or what an iterable DataLoader over
    them yields (``--feed loader``; its queue holds 4 batches)."""
    feeds = [feed_of(model, x, y) for x, y in batches]
    if a.feed == "run":
        return feeds
    names = list(feeds[0])
    loader = fluid.io.DataLoader.from_generator(feed_list=[prog.global_block().var(n) for n in names], capacity=4)
    loader.set_batch_generator(lambda: ([f[n] for n in names] for f in feeds), places=fluid.cpu_places(1))
    return loader()


def run_trainer(a, t, startup, loss, model):
    prog = t.get_trainer_program()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)                    # receives the initial parameters from the pservers
    data = workload.load_data(a.data, a.data_config_path)
    batches = workload.trainer_batches(data, a.batch_size, a.trainers, a.trainer_id, a.epochs)
    del data
    if len(batches) <= a.warmup:
        raise ValueError("trainer %d has %d steps, not more than the %d warmup steps"
                         % (a.trainer_id, len(batches), a.warmup))
    sent, recv = trainer_bytes_per_step(prog)
    sparse = SparseTraffic(prog) if isinstance(model, workload.CTR) else None
    scope = fluid.global_scope()
    traffic = []
    steps, losses, by_op, cpu = [], [], {}, []
    profiler.start_profiler("CPU")
    perf = time.perf_counter
    t_first = None
    for i, feed in enumerate(trainer_feeds(a, prog, model, batches)):
        profiler.reset_profiler()
        t0, cpu0 = perf(), time.process_time()
        out, = exe.run(prog, feed=feed, fetch_list=[loss], use_program_cache=True)
        t1, cpu1 = perf(), time.process_time()
        if i < a.warmup:
            continue
        if t_first is None:
            t_first = t0
        events = profiler.op_events()
        steps.append(metrics.fluidist_step_phases(events, t1 - t0))
        cpu.append(cpu1 - cpu0)
        losses.append(float(np.asarray(out).reshape(-1)[0]))
        if sparse is not None:
            traffic.append(sparse.step(scope))
        if a.trace_out:
            timeline.complete("step", "step %d" % i, t0, t1 - t0)
        for op_type, role, _, dt in events:
            key = "%s/%s" % (op_type, metrics.fluidist_phase(op_type, role))
            d = by_op.setdefault(key, [0, 0.0])
            d[0] += 1
            d[1] += dt
    wall = perf() - t_first
    with contextlib.redirect_stdout(io.StringIO()):
        profiler.stop_profiler(profile_path=None)
    exe.close()                         # tells the pservers this trainer is done
    from fluidist.distributed import prefetch_ahead
    extra = {"ops": {k: {"calls": c, "total": s} for k, (c, s) in by_op.items()},
             "peak_rss": metrics.peak_rss_bytes(), "feed": a.feed, "prefetch_ahead": prefetch_ahead.counters(),
             "cpu_per_step": metrics.summarize(cpu)}   # this process's CPU time in a step (all its threads)
    if traffic:
        n = len(traffic)
        extra["rows_in_per_step"] = sum(r[0] for r in traffic) / n
        extra["rows_out_per_step"] = sum(r[1] for r in traffic) / n
        sent += sum(r[3] for r in traffic) / n
        recv += sum(r[2] for r in traffic) / n
    if a.trace_out:
        timeline.write_trace(a.trace_out, name="trainer%d" % a.trainer_id)
    return metrics.trainer_record(a.trainer_id, steps, sent, recv, wall, losses, extra=extra,
                                  examples_per_step=a.batch_size)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--role", choices=["pserver", "trainer"], required=True)
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--current-endpoint", default="")
    ap.add_argument("--server-id", type=int, default=0)
    ap.add_argument("--trainer-id", type=int, default=0)
    ap.add_argument("--trainers", type=int, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--data-config-path", default=workload.DATA_CONFIGS)
    ap.add_argument("--model-config-path", default=workload.MODEL_CONFIGS)
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps-hint", type=int, default=1, help="steps per trainer (the pserver's async mean)")
    ap.add_argument("--async-mode", action="store_true")
    ap.add_argument("--feed", choices=["run", "loader"], default="run",
                    help="trainers' batches: exe.run(feed=dict) per batch, or through an iterable DataLoader")
    ap.add_argument("--trace-out", default="", help="write this role's Chrome trace here (fluidist.timeline)")
    ap.add_argument("--metrics-out", required=True)
    a = ap.parse_args()
    model = workload.load_model(a.model, a.model_config_path)
    main_prog, startup, loss = build_program(model)
    t = fluid.DistributeTranspiler()
    t.transpile(a.trainer_id, program=main_prog, pservers=a.endpoints, trainers=a.trainers,
                sync_mode=not a.async_mode, startup_program=startup,
                current_endpoint=a.current_endpoint or a.endpoints.split(",")[0])
    if a.role == "pserver":
        rec = run_pserver(a, t)
    else:
        rec = run_trainer(a, t, startup, loss, model)
    with open(a.metrics_out, "w") as f:
        json.dump(rec, f)


if __name__ == "__main__":
    main()
