"""Digits trained by parameter servers with the Fleet API (Paddle 1.x style): 2 servers hold the
parameters and run the optimizer, 2 workers compute gradients.

    python examples/fleet_digits_ps.py                        # a local job: 2 servers, 2 workers
    python examples/fleet_digits_ps.py --strategy async
    python examples/fleet_digits_ps.py --save_dir /tmp/digits_ps         # worker 0 saves
    python examples/fleet_digits_ps.py --model_dir /tmp/digits_ps        # servers start from it
    python -m fluidist.distributed.launch --server_num 2 --worker_num 2 examples/fleet_digits_ps.py

Run without the launcher's variables (TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST, ...), the script
starts ``--servers`` server and ``--workers`` worker copies of itself on free 127.0.0.1 ports,
setting those variables as the launcher would, waits for the workers (the servers stop once every
worker has called ``fleet.stop_worker()``) and fails if any process fails.

``fleet.save_persistables`` saves the parameters (as the workers last received them) and the
optimizer's accumulators the servers keep (Adam's moments and beta powers); a job started with
``--model_dir`` gives its servers both, so it continues where the saved one stopped, under any
strategy.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
from digits import MODELS, make_optimizer, train_share  # noqa: E402
from fluidist.incubate.fleet.base import role_maker  # noqa: E402
from fluidist.incubate.fleet.parameter_server.distribute_transpiler import StrategyFactory, fleet  # noqa: E402
from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: E402
from local_procs import Child, phase_logger, python_cmd, stop_on_interrupt  # noqa: E402

log = phase_logger("fleet_digits_ps")


def build(args):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = args.seed
    strategy = {"sync": StrategyFactory.create_sync_strategy, "async": StrategyFactory.create_async_strategy,
                "half_async": StrategyFactory.create_half_async_strategy}[args.strategy]()
    with fluid.program_guard(main, startup):
        img = fluid.data(name="img", shape=[None, 1, 8, 8], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        logits = MODELS[args.model](img)
        avg_loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits=logits, label=label))
        acc = fluid.layers.accuracy(input=logits, label=label)
        test_program = main.clone(for_test=True)
        opt = fleet.distributed_optimizer(make_optimizer(args.optimizer, args.lr), strategy)
        opt.minimize(avg_loss)          # servers and workers alike: fleet gives each its programs
    return test_program, avg_loss, acc


def run(args):
    fleet.init(role_maker.PaddleCloudRoleMaker())
    test_program, avg_loss, acc = build(args)
    if fleet.is_server():
        fleet.init_server(args.model_dir or None)
        log.info("server %d: serving %d worker(s)", fleet.server_index(), fleet.worker_num())
        fleet.run_server()              # serves until every worker has stopped
        return
    log.info("worker %d: connecting to the servers", fleet.worker_index())
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)      # ends by receiving the servers' parameters
    fleet.init_worker()
    rank, n = fleet.worker_index(), fleet.worker_num()
    t0 = time.time()
    test_acc = train_share(exe, fleet.main_program, test_program, avg_loss, acc, rank, n, args.epochs,
                           args.batch_size, seed=args.seed)
    if args.save_dir and fleet.is_first_worker():
        fleet.save_persistables(exe, args.save_dir)
        print("worker 0 saved the parameters to %s" % args.save_dir, flush=True)
    fleet.stop_worker()
    print("worker %d test accuracy: %.4f (%.1f s)" % (rank, test_acc, time.time() - t0), flush=True)


def local_job(args, argv):
    """Start the servers and workers as child processes; return the exit codes (workers first)."""
    servers = ["127.0.0.1:%d" % p for p in free_ports(args.servers)]
    me = python_cmd(os.path.abspath(__file__), argv)
    common = dict(os.environ, PADDLE_PSERVERS_IP_PORT_LIST=",".join(servers), PADDLE_TRAINERS_NUM=str(args.workers))
    server_procs, worker_procs = [], []
    log.info("starting %d server(s) (%s) and %d worker(s), %s strategy", args.servers, ",".join(servers), args.workers,
             args.strategy)
    try:
        for ep in servers:
            ip, port = ep.split(":")
            server_procs.append(Child("server %d" % len(server_procs), me,
                                      env=dict(common, TRAINING_ROLE="PSERVER", POD_IP=ip, PADDLE_PORT=port)))
        for rank in range(args.workers):
            worker_procs.append(Child("worker %d" % rank, me, env=dict(common, TRAINING_ROLE="TRAINER",
                                                                       PADDLE_TRAINER_ID=str(rank))))
        deadline = time.monotonic() + args.timeout
        codes = [p.wait(timeout=max(1.0, deadline - time.monotonic())) for p in worker_procs]
        if any(codes):
            return codes
        codes += [p.wait(timeout=60) for p in server_procs]
        return codes
    finally:
        for p in server_procs + worker_procs:
            p.kill()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--servers", type=int, default=2, help="servers of the local job (without a launcher)")
    ap.add_argument("--workers", type=int, default=2, help="workers of the local job (without a launcher)")
    ap.add_argument("--strategy", choices=["sync", "async", "half_async"], default="sync",
                    help="the parameter-server strategy (StrategyFactory)")
    ap.add_argument("--model", choices=sorted(MODELS), default="mlp", help="the network")
    ap.add_argument("--optimizer", choices=["adam", "momentum", "sgd"], default="adam", help="the optimizer")
    ap.add_argument("--lr", type=float, default=0.003, help="learning rate")
    ap.add_argument("--epochs", type=int, default=8, help="passes over the training set")
    ap.add_argument("--batch_size", type=int, default=64, help="the global batch, split over the workers")
    ap.add_argument("--seed", type=int, default=1, help="seed of the initial parameters and the batch order")
    ap.add_argument("--save_dir", default="", help="worker 0 saves the parameters here after training")
    ap.add_argument("--model_dir", default="", help="the servers start from the parameters saved here")
    ap.add_argument("--timeout", type=float, default=900, help="seconds the local job may take before it is killed")
    args = ap.parse_args(argv)
    if os.environ.get("TRAINING_ROLE"):
        run(args)
        return
    with stop_on_interrupt("the local job (%d servers, %d workers)" % (args.servers, args.workers)):
        codes = local_job(args, argv)
    if any(codes):
        sys.exit("local job failed: exit codes %s (workers, then servers)" % codes)


if __name__ == "__main__":
    main()
