"""Real parameter-server training started by the launcher: each process learns its role from
TRAINING_ROLE and transpiles itself from PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINERS_NUM,
PADDLE_TRAINER_ID and POD_IP:PADDLE_PORT (sync mode). A pserver serves until its trainers are done;
a trainer saves its parameters after every step to $OUT_DIR/trainer_<id>.npz."""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "distributed"))

import fluidist as fluid  # noqa: E402
from dist_models import batch_for, build  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="fc")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4, help="per-trainer batch")
    a = ap.parse_args()
    role = os.environ["TRAINING_ROLE"]
    pservers = os.environ["PADDLE_PSERVERS_IP_PORT_LIST"]
    trainers = int(os.environ["PADDLE_TRAINERS_NUM"])
    trainer_id = int(os.environ.get("PADDLE_TRAINER_ID", "0"))
    current = "%s:%s" % (os.environ["POD_IP"], os.environ["PADDLE_PORT"])
    main_prog, startup, loss, params = build(a.model, a.optimizer)
    t = fluid.DistributeTranspiler()
    t.transpile(trainer_id, program=main_prog, pservers=pservers, trainers=trainers, sync_mode=True,
                startup_program=startup, current_endpoint=current)
    exe = fluid.Executor(fluid.CPUPlace())
    if role == "PSERVER":
        prog = t.get_pserver_program(current)
        exe.run(t.get_startup_program(current, prog))
        exe.run(prog)
        return
    trainer = t.get_trainer_program(wait_port=True)
    exe.run(startup)
    history = {}
    for step in range(a.steps):
        feed = batch_for(a.model, step, a.batch * trainers, trainer_id, trainers)
        out = exe.run(trainer, feed=feed, fetch_list=[loss] + params)
        history["loss_%d" % step] = out[0]
        for name, v in zip(params, out[1:]):
            history["%s_%d" % (name, step)] = v
        print("trainer %d step %d loss %.6f" % (trainer_id, step, float(np.mean(out[0]))), flush=True)
    exe.close()
    np.savez(os.path.join(os.environ["OUT_DIR"], "trainer_%d.npz" % trainer_id), **history)


if __name__ == "__main__":
    main()
