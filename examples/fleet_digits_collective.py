"""Digits trained by a collective job written with the Fleet API (Paddle 1.x style): every process
is a worker, gradients are all-reduced among them.

    python examples/fleet_digits_collective.py                   # a local job of 2 workers
    python examples/fleet_digits_collective.py --workers 4 --mode local_sgd
    python -m fluidist.distributed.launch --nproc_per_node 2 examples/fleet_digits_collective.py

Run without the launcher's variables (PADDLE_TRAINER_ENDPOINTS, PADDLE_TRAINER_ID, ...), the script
starts ``--workers`` copies of itself on free 127.0.0.1 ports, setting those variables as the
launcher would, waits for them and fails if any fails. Each worker reads its share of every batch
(``--batch_size`` is the global batch); with ``--mode nccl2`` (the default) or ``grad_allreduce``
the workers end every step with the same parameters as one process on the whole batch. Worker 0
saves the inference model to ``--save_dir`` when given.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
from digits import MODELS, make_optimizer, train_share  # noqa: E402
from fluidist.incubate.fleet.base import role_maker  # noqa: E402
from fluidist.incubate.fleet.collective import DistributedStrategy, fleet  # noqa: E402
from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: E402
from local_procs import Child, phase_logger, python_cmd, stop_on_interrupt  # noqa: E402

log = phase_logger("fleet_digits_collective")


def build(args, strategy):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = args.seed
    with fluid.program_guard(main, startup):
        img = fluid.data(name="img", shape=[None, 1, 8, 8], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        logits = MODELS[args.model](img)
        avg_loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits=logits, label=label))
        acc = fluid.layers.accuracy(input=logits, label=label)
        test_program = main.clone(for_test=True)
        opt = fleet.distributed_optimizer(make_optimizer(args.optimizer, args.lr), strategy=strategy)
        opt.minimize(avg_loss)
    return test_program, img, logits, avg_loss, acc


def worker(args):
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    if args.mode == "grad_allreduce":
        strategy.mode, strategy.collective_mode = "collective", "grad_allreduce"
    elif args.mode == "local_sgd":
        strategy.use_local_sgd = True
        strategy.local_sgd_steps = args.local_sgd_steps
    test_program, img, logits, avg_loss, acc = build(args, strategy)
    rank, n = fleet.worker_index(), fleet.worker_num()
    log.info("worker %d: connecting to the other %d worker(s)", rank, n - 1)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    t0 = time.time()
    test_acc = train_share(exe, fleet.main_program, test_program, avg_loss, acc, rank, n, args.epochs,
                           args.batch_size, seed=args.seed)
    if args.save_dir and fleet.is_first_worker():
        fleet.save_inference_model(exe, args.save_dir, [img.name], [logits])
        print("worker 0 saved the inference model to %s" % args.save_dir, flush=True)
    print("worker %d test accuracy: %.4f (%.1f s)" % (rank, test_acc, time.time() - t0), flush=True)


def local_job(args, argv):
    """Start ``args.workers`` copies of this script as a local job; return their exit codes."""
    eps = ["127.0.0.1:%d" % p for p in free_ports(args.workers)]
    procs = []
    log.info("starting %d worker(s) (%s), %s mode", args.workers, ",".join(eps), args.mode)
    try:
        for rank, ep in enumerate(eps):
            env = dict(os.environ, PADDLE_TRAINER_ENDPOINTS=",".join(eps), PADDLE_TRAINER_ID=str(rank),
                       PADDLE_CURRENT_ENDPOINT=ep, PADDLE_TRAINERS_NUM=str(len(eps)))
            procs.append(Child("worker %d" % rank, python_cmd(os.path.abspath(__file__), argv), env=env))
        deadline = time.monotonic() + args.timeout
        codes = []
        for p in procs:
            codes.append(p.wait(timeout=max(1.0, deadline - time.monotonic())))
        return codes
    finally:
        for p in procs:
            p.kill()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--workers", type=int, default=2, help="size of the local job (without a launcher)")
    ap.add_argument("--mode", choices=["nccl2", "grad_allreduce", "local_sgd"], default="nccl2",
                    help="the collective strategy: all-reduce gradients every step (nccl2, grad_allreduce) or average "
                         "parameters every --local_sgd_steps steps (local_sgd)")
    ap.add_argument("--local_sgd_steps", type=int, default=1, help="steps between parameter averages (local_sgd)")
    ap.add_argument("--model", choices=sorted(MODELS), default="mlp", help="the network")
    ap.add_argument("--optimizer", choices=["adam", "momentum", "sgd"], default="adam", help="the optimizer")
    ap.add_argument("--lr", type=float, default=0.003, help="learning rate")
    ap.add_argument("--epochs", type=int, default=8, help="passes over the training set")
    ap.add_argument("--batch_size", type=int, default=64, help="the global batch, split over the workers")
    ap.add_argument("--seed", type=int, default=1, help="seed of the initial parameters and the batch order")
    ap.add_argument("--save_dir", default="", help="worker 0 saves the inference model here after training")
    ap.add_argument("--timeout", type=float, default=900, help="seconds the local job may take before it is killed")
    args = ap.parse_args(argv)
    if os.environ.get("PADDLE_TRAINER_ENDPOINTS"):
        worker(args)
        return
    with stop_on_interrupt("the local job (%d workers)" % args.workers):
        codes = local_job(args, argv)
    if any(codes):
        sys.exit("local job failed: worker exit codes %s" % codes)


if __name__ == "__main__":
    main()
