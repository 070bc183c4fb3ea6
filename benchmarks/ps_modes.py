"""Parameter-server modes side by side: 2 pservers x 2 trainers on 127.0.0.1, each mode trained for
the same steps on the same data; the trainers' step time and the held-out loss the parameters reach.

    python benchmarks/ps_modes.py                      # every mode, 3 rounds, prints a table
    python benchmarks/ps_modes.py --modes async,geo --steps 100 --rounds 5 --out ''

Modes: ``sync`` (barriers every step), ``async`` (the trainer program's own sends and receives, every
step), ``async_comm`` (Paddle 1.8's async communicator: queued gradients merged and sent, parameters
received, from background threads), ``half_async`` (the communicator's barrier ends each step),
``geo`` (GEO-SGD, pushing every ``--geo_every`` steps). The model: 64 features -> fc 256 tanh -> fc 1,
square error, SGD 0.05 (its 64 x 256 weight is sliced over both pservers), 32 samples per trainer
and step. Reported per mode: the median over rounds of the trainers' median step time (and the
rounds' min-max), and the held-out loss of trainer 0's last parameters (median, min-max). The modes
take turns within each round, so that load from elsewhere hits them alike.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["sync", "async", "async_comm", "half_async", "geo"]
FEATURES, BATCH = 64, 32


def build(fluid):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, FEATURES])
        y = fluid.data("y", [None, 1])
        h = fluid.layers.fc(x, 256, act="tanh", param_attr=fluid.ParamAttr(name="fc_w"),
                            bias_attr=fluid.ParamAttr(name="fc_b"))
        pred = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="out_w"), bias_attr=fluid.ParamAttr(name="out_b"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        test = main.clone(for_test=True)
        fluid.optimizer.SGD(0.05).minimize(loss)
    return main, startup, test, loss


def batch(step, n, seed=500):
    rng = np.random.RandomState(seed + step)
    w = np.random.RandomState(3).normal(0, 0.25, (FEATURES, 1)).astype("float32")
    x = rng.uniform(-1, 1, (n, FEATURES)).astype("float32")
    return {"x": x, "y": np.tanh(x @ w).astype("float32")}


def config_for(fluid, mode, geo_every):
    config = fluid.DistributeTranspilerConfig()
    if mode != "sync":
        config.sync_mode = False
    if mode in ("async_comm", "half_async"):
        config.runtime_split_send_recv = True
        config.half_async = mode == "half_async"
    if mode == "geo":
        config.geo_sgd_mode = True
        config.geo_sgd_need_push_nums = geo_every
    return config


def role(a):
    sys.path.insert(0, ROOT)
    import fluidist as fluid
    from fluidist.transpiler import DistributedMode
    main, startup, _, loss = build(fluid)
    t = fluid.DistributeTranspiler(config_for(fluid, a.mode, a.geo_every))
    t.transpile(a.trainer_id, program=main, pservers=a.endpoints, trainers=2, sync_mode=a.mode == "sync",
                startup_program=startup, current_endpoint=a.current_endpoint)
    exe = fluid.Executor(fluid.CPUPlace())
    if a.role == "pserver":
        prog = t.get_pserver_program(a.current_endpoint)
        exe.run(t.get_startup_program(a.current_endpoint, prog))
        exe.run(prog)
        return
    trainer = t.get_trainer_program()
    exe.run(startup)
    comm = None
    if a.mode in ("async_comm", "half_async"):
        from fluidist.communicator import Communicator
        comm = Communicator(trainer, DistributedMode.HALF_ASYNC if a.mode == "half_async" else DistributedMode.ASYNC)
        comm.start()
    times, params = [], ["fc_w", "fc_b", "out_w", "out_b"]
    for step in range(a.steps):
        full = batch(step, 2 * BATCH)
        feed = {k: v[a.trainer_id * BATCH:(a.trainer_id + 1) * BATCH] for k, v in full.items()}
        t0 = time.perf_counter()
        out = exe.run(trainer, feed=feed, fetch_list=params)
        times.append(time.perf_counter() - t0)
    if comm is not None:
        comm.stop()
    exe.close()
    _, fresh_startup, fresh_test, fresh_loss = build(fluid)      # not transpiled
    scope = fluid.Scope()
    exe2 = fluid.Executor(fluid.CPUPlace())
    exe2.run(fresh_startup, scope=scope)
    for name, value in zip(params, out):
        scope.var(name).set_value(value)
    held_out = exe2.run(fresh_test, feed=batch(0, 1024, seed=99), fetch_list=[fresh_loss], scope=scope)[0].item()
    skip = min(10, a.steps // 5)
    print("RESULT " + json.dumps({"step_ms": 1000 * float(np.median(times[skip:])), "loss": held_out}), flush=True)


def run_mode(mode, steps, geo_every, tmp):
    from fluidist.launch.cluster import find_free_ports
    eps = ",".join("127.0.0.1:%d" % p for p in find_free_ports(2))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    common = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--endpoints", eps, "--steps", str(steps),
              "--geo_every", str(geo_every)]
    procs, logs = [], []
    for i, ep in enumerate(eps.split(",")):
        log = os.path.join(tmp, "%s_pserver%d.log" % (mode, i))
        with open(log, "w") as f:
            procs.append(subprocess.Popen(common + ["--role", "pserver", "--current_endpoint", ep], env=env,
                                          stdout=f, stderr=subprocess.STDOUT))
    for k in range(2):
        log = os.path.join(tmp, "%s_trainer%d.log" % (mode, k))
        logs.append(log)
        with open(log, "w") as f:
            procs.append(subprocess.Popen(common + ["--role", "trainer", "--trainer_id", str(k)], env=env,
                                          stdout=f, stderr=subprocess.STDOUT))
    try:
        for p, log in zip(procs, [os.path.join(tmp, "%s_pserver%d.log" % (mode, i)) for i in range(2)] + logs):
            if p.wait(timeout=600) != 0:
                raise RuntimeError("%s: %s failed\n%s" % (mode, log, open(log).read()[-3000:]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    results = []
    for log in logs:
        line = [x for x in open(log).read().splitlines() if x.startswith("RESULT ")][-1]
        results.append(json.loads(line[len("RESULT "):]))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--geo_every", type=int, default=10)
    ap.add_argument("--out", default="bench_results/ps_modes.json")
    ap.add_argument("--role", choices=["pserver", "trainer"], help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    ap.add_argument("--endpoints", help=argparse.SUPPRESS)
    ap.add_argument("--current_endpoint", default="", help=argparse.SUPPRESS)
    ap.add_argument("--trainer_id", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.role:
        return role(a)
    import tempfile
    modes = a.modes.split(",")
    per_mode = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            for m in modes:
                per_mode[m].append(run_mode(m, a.steps, a.geo_every, tmp))
    table = {}
    print("%-11s %24s %30s" % ("mode", "step ms (median, min-max)", "held-out loss (median, min-max)"))
    for m, rounds in per_mode.items():
        step = [float(np.median([r["step_ms"] for r in rs])) for rs in rounds]
        loss = [rs[0]["loss"] for rs in rounds]
        table[m] = {"step_ms": step, "loss": loss}
        print("%-11s %8.2f (%6.2f-%6.2f) %14.4f (%.4f-%.4f)" % (m, np.median(step), min(step), max(step),
                                                               np.median(loss), min(loss), max(loss)))
    if a.out:
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "w") as f:
            json.dump({"steps": a.steps, "rounds": a.rounds, "geo_every": a.geo_every, "modes": table}, f, indent=1)


if __name__ == "__main__":
    main()
