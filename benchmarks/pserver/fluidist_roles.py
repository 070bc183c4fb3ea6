"""One role of fluidist's side of the benchmark (a pserver or a trainer), as its own process.

The launcher starts ``--nserver`` pservers and ``--ntrainer`` trainers of this script on 127.0.0.1.
The job is written with fluidist's public API only, as a Paddle 1.x user writes it: build the MLP,
``DistributeTranspiler.transpile``, then ``get_pserver_program`` / ``get_startup_program`` on a
pserver, ``get_trainer_program`` and ``exe.run`` per batch on a trainer, ``exe.close()`` at the end.

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
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, model.input_dim], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        h = x
        for i, size in enumerate(model.sizes):
            last = i == len(model.sizes) - 1
            h = fluid.layers.fc(h, size, act=None if last else "relu",
                                param_attr=fluid.ParamAttr(name="fc_%d.w_0" % i),
                                bias_attr=fluid.ParamAttr(name="fc_%d.b_0" % i))
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits=h, label=label))
        fluid.optimizer.SGD(learning_rate=model.learning_rate).minimize(loss)
    return main, startup, loss


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
            sent += sum(var_bytes(block, n) for n in op.input_arg_names)
        elif op.type == "recv":
            recv += sum(var_bytes(block, n) for n in op.output_arg_names)
    return sent, recv


def optimize_ops_per_step(pserver_program):
    """Ops the pserver runs once per sync step: those of its sub-blocks (LR block, optimize blocks)."""
    return sum(len(pserver_program.block(i).ops) for i in range(1, pserver_program.num_blocks))


def pserver_param_bytes(pserver_program):
    """Bytes of the parameter blocks this pserver updates (the ``Param`` of each optimizer op)."""
    total = 0
    for i in range(1, pserver_program.num_blocks):
        blk = pserver_program.block(i)
        for op in blk.ops:
            if "Param" in op.inputs and op.inputs["Param"]:
                total += sum(var_bytes(blk, n) for n in op.inputs["Param"])
    return total


def run_pserver(a, t):
    prog = t.get_pserver_program(a.current_endpoint)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(t.get_startup_program(a.current_endpoint, prog))
    per_step = optimize_ops_per_step(prog)
    profiler.start_profiler("CPU")
    t0 = time.perf_counter()
    exe.run(prog)                       # serves until every trainer has closed
    serve = time.perf_counter() - t0
    events = [e for e in profiler.op_events() if e[0] != "listen_and_serv"]
    with contextlib.redirect_stdout(io.StringIO()):
        profiler.stop_profiler(profile_path=None)
    opt_total = sum(e[3] for e in events)
    if events:   # from the first optimize op to the end of the last: the rounds, not the start-up
        serve = max(e[2] + e[3] for e in events) - min(e[2] for e in events)
    rec = {"rank": a.server_id, "endpoint": a.current_endpoint, "serve_seconds": serve,
           "optimize_ops_per_step": per_step, "optimize_seconds_total": opt_total,
           "busy_fraction": opt_total / serve if serve > 0 else None}
    pbytes = pserver_param_bytes(prog)
    rec["bytes_recv_per_step"] = pbytes * a.trainers      # one gradient block per param block per trainer
    rec["bytes_sent_per_step"] = pbytes * a.trainers      # each trainer fetches every param block
    if not a.async_mode and per_step:
        steps = [sum(e[3] for e in events[i:i + per_step]) for i in range(0, len(events), per_step)]
        rec["steps"] = len(steps)
        rec["optimize"] = metrics.summarize(steps[a.warmup:])
    else:
        # async: optimize blocks run per arriving gradient, not per step; only the mean is meaningful
        rec["steps"] = None
        rec["optimize"] = {"mean_per_trainer_step": opt_total / max(1, a.trainers * a.steps_hint)}
    by_op = {}
    for op_type, _, _, dt in events:
        d = by_op.setdefault(op_type, [0, 0.0])
        d[0] += 1
        d[1] += dt
    rec["ops"] = {k: {"calls": c, "total": s} for k, (c, s) in by_op.items()}
    if a.trace_out:
        timeline.write_trace(a.trace_out, name="pserver%d" % a.server_id)
    return rec


def run_trainer(a, t, startup, loss):
    prog = t.get_trainer_program()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)                    # receives the initial parameters from the pservers
    data = workload.load_data(a.data, a.data_config_path)
    batches = workload.trainer_batches(data, a.batch_size, a.trainers, a.trainer_id, a.epochs)
    if len(batches) <= a.warmup:
        raise ValueError("trainer %d has %d steps, not more than the %d warmup steps"
                         % (a.trainer_id, len(batches), a.warmup))
    sent, recv = trainer_bytes_per_step(prog)
    steps, losses, by_op = [], [], {}
    profiler.start_profiler("CPU")
    perf = time.perf_counter
    t_first = None
    for i, (x, y) in enumerate(batches):
        profiler.reset_profiler()
        t0 = perf()
        out, = exe.run(prog, feed={"x": x, "label": y}, fetch_list=[loss], use_program_cache=True)
        t1 = perf()
        if i < a.warmup:
            continue
        if t_first is None:
            t_first = t0
        events = profiler.op_events()
        steps.append(metrics.fluidist_step_phases(events, t1 - t0))
        losses.append(float(np.asarray(out).reshape(-1)[0]))
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
    extra = {"ops": {k: {"calls": c, "total": s} for k, (c, s) in by_op.items()}}
    if a.trace_out:
        timeline.write_trace(a.trace_out, name="trainer%d" % a.trainer_id)
    return metrics.trainer_record(a.trainer_id, steps, sent, recv, wall, losses, extra=extra)


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
        rec = run_trainer(a, t, startup, loss)
    with open(a.metrics_out, "w") as f:
        json.dump(rec, f)


if __name__ == "__main__":
    main()
