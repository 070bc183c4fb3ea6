"""Digits trained by 2 parameter servers and 2 trainers, on this machine, over loopback.

    python examples/dist_digits.py                 # starts the whole local cluster and reports
    python examples/dist_digits.py --async_mode    # trainers apply gradients without barriers

Run without ``--role``, the script starts two pserver processes and two trainer processes (itself,
with ``--role``), on free 127.0.0.1 ports, waits for them and prints each trainer's test accuracy.
Under ``python -m fluidist.distributed.launch --server_num 2 --worker_num 2`` the launcher sets
TRAINING_ROLE and the PADDLE_* variables instead, and each process takes its role from them.

Each trainer reads its own half of every batch; in sync mode the pservers average the two halves'
gradients, which is one step of training on the whole batch.

Each process says what it is doing as it starts each phase (an INFO line: starting the job, serving,
connecting, loading the data, training); a long epoch also prints a progress line every 10 s
(``FLUIDIST_PROGRESS=0`` turns those off, ``FLUIDIST_PROGRESS=2`` makes it every 2 s). ctrl-C stops the
whole local cluster with one line and exit status 130.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: E402
from digits import build, train_share  # noqa: E402
from local_procs import Child, phase_logger, python_cmd, stop_on_interrupt  # noqa: E402

log = phase_logger("dist_digits")


def run_role(args):
    main, startup, test_program, avg_loss, acc = build(args.model, args.optimizer, args.lr, seed=1)
    t = fluid.DistributeTranspiler()
    t.transpile(args.trainer_id, program=main, pservers=args.endpoints, trainers=args.trainers,
                sync_mode=not args.async_mode, startup_program=startup, current_endpoint=args.current_endpoint)
    exe = fluid.Executor(fluid.CPUPlace())
    if args.role == "pserver":
        prog = t.get_pserver_program(args.current_endpoint)
        exe.run(t.get_startup_program(args.current_endpoint, prog))
        log.info("pserver %s: serving %d trainer(s)", args.current_endpoint, args.trainers)
        exe.run(prog)           # serves until both trainers have closed
        return
    log.info("trainer %d: connecting to the pservers %s", args.trainer_id, args.endpoints)
    trainer = t.get_trainer_program()
    exe.run(startup)            # receives the initial parameters from the pservers
    t0 = time.time()
    test_acc = train_share(exe, trainer, test_program, avg_loss, acc, args.trainer_id, args.trainers, args.epochs,
                           args.batch_size, seed=0, who="trainer")
    exe.close()                 # tells the pservers this trainer is done
    print("trainer %d test accuracy: %.4f (%.1f s)" % (args.trainer_id, test_acc, time.time() - t0), flush=True)


def from_env(args):
    """Take the role from the launcher's environment variables, when it set them."""
    role = os.environ.get("TRAINING_ROLE")
    if not role:
        return False
    args.endpoints = os.environ["PADDLE_PSERVERS_IP_PORT_LIST"]
    args.trainers = int(os.environ["PADDLE_TRAINERS_NUM"])
    if role == "PSERVER":
        args.role = "pserver"
        args.current_endpoint = "%s:%s" % (os.environ["POD_IP"], os.environ["PADDLE_PORT"])
    else:
        args.role = "trainer"
        args.trainer_id = int(os.environ["PADDLE_TRAINER_ID"])
    return True


def local_cluster(args):
    """Start 2 pservers and 2 trainers as child processes; return the trainers' exit codes."""
    eps = ",".join("127.0.0.1:%d" % p for p in free_ports(args.pservers))
    me = os.path.abspath(__file__)
    common = ["--endpoints", eps, "--trainers", str(args.trainers), "--epochs", str(args.epochs),
              "--model", args.model, "--optimizer", args.optimizer, "--lr", str(args.lr),
              "--batch_size", str(args.batch_size)] + (["--async_mode"] if args.async_mode else [])
    log.info("starting %d pserver(s) (%s) and %d trainer(s), %s mode, %d epoch(s)", args.pservers, eps, args.trainers,
             "async" if args.async_mode else "sync", args.epochs)
    procs = []
    try:
        for k, ep in enumerate(eps.split(",")):
            procs.append(Child("pserver %d" % k, python_cmd(me, ["--role", "pserver", "--current_endpoint", ep]
                                                              + common)))
        trainers = [Child("trainer %d" % k, python_cmd(me, ["--role", "trainer", "--trainer_id", str(k)] + common))
                    for k in range(args.trainers)]
        procs += trainers
        deadline = time.monotonic() + args.timeout
        for p in trainers:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
        for p in procs[:args.pservers]:
            p.wait(timeout=60)
        accs = [line.split("test accuracy:")[1].split()[0] for p in trainers for line in p.lines
                if "test accuracy:" in line and "epoch" not in line]
        print("test accuracy: %s (%d pservers, %d trainers, %s mode)"
              % (" / ".join(accs), args.pservers, args.trainers, "async" if args.async_mode else "sync"))
        return [p.returncode for p in trainers] + [p.returncode for p in procs[:args.pservers]]
    finally:
        for p in procs:
            p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--role", choices=["pserver", "trainer"],
                    help="run one process of the job (set by the local cluster, or by TRAINING_ROLE under a launcher); "
                         "without it, start the whole local cluster")
    ap.add_argument("--endpoints", default="", help="the pservers' ip:port list (with --role)")
    ap.add_argument("--current_endpoint", default="", help="this pserver's ip:port (with --role pserver)")
    ap.add_argument("--trainer_id", type=int, default=0, help="this trainer's id (with --role trainer)")
    ap.add_argument("--trainers", type=int, default=2, help="number of trainers")
    ap.add_argument("--pservers", type=int, default=2, help="number of parameter servers of the local cluster")
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp", help="the network")
    ap.add_argument("--optimizer", choices=["adam", "momentum", "sgd"], default="adam", help="the optimizer")
    ap.add_argument("--lr", type=float, default=0.003, help="learning rate")
    ap.add_argument("--epochs", type=int, default=10, help="passes over the training set")
    ap.add_argument("--batch_size", type=int, default=64, help="the global batch, split over the trainers")
    ap.add_argument("--async_mode", action="store_true", help="asynchronous training: no barriers between trainers")
    ap.add_argument("--timeout", type=float, default=600, help="seconds the local cluster may take before it is killed")
    args = ap.parse_args()
    if args.role or from_env(args):
        run_role(args)
        return
    with stop_on_interrupt("the local cluster (%d pservers, %d trainers)" % (args.pservers, args.trainers)):
        codes = local_cluster(args)
    if any(codes):
        sys.exit("local cluster failed: exit codes %s" % codes)


if __name__ == "__main__":
    main()
