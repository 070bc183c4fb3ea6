"""Real collective training under the elastic launcher, resuming from a checkpoint.

Each generation transpiles itself (collective grad_allreduce) from the PADDLE_* variables of its
membership, loads $OUT_DIR/ckpt.npz if there is one (parameters and the next global step), trains
--steps steps on its shard of each global batch, and saves the parameters after every step to
$OUT_DIR/g<gen>_trainer_<rank>.npz. Rank 0 then writes the checkpoint. Generation 1 then waits
(to be interrupted by the test's membership change); later generations exit 0."""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "distributed"))

import fluidist as fluid  # noqa: E402
from dist_models import batch_for, build  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4, help="per-trainer batch")
    a = ap.parse_args()
    out = os.environ["OUT_DIR"]
    gen = int(os.environ["FLUIDIST_ELASTIC_GENERATION"])
    rank = int(os.environ["PADDLE_TRAINER_ID"])
    n = int(os.environ["PADDLE_TRAINERS_NUM"])
    main_prog, startup, loss, params = build("fc", "sgd")
    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    config.collective_mode = "grad_allreduce"
    t = fluid.DistributeTranspiler(config)
    t.transpile(rank, trainers=os.environ["PADDLE_TRAINER_ENDPOINTS"],
                current_endpoint=os.environ["PADDLE_CURRENT_ENDPOINT"], startup_program=startup, program=main_prog)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    first = 0
    ckpt = os.path.join(out, "ckpt.npz")
    if os.path.exists(ckpt):
        saved = np.load(ckpt)
        first = int(saved["next_step"])
        for name in params:
            fluid.global_scope().find_var(name).get_tensor().set(saved[name], fluid.CPUPlace())
    history = {"first_step": np.array(first)}
    for step in range(first, first + a.steps):
        feed = batch_for("fc", step, a.batch * n, rank, n)
        res = exe.run(main_prog, feed=feed, fetch_list=[loss] + params)
        for name, v in zip(params, res[1:]):
            history["%s_%d" % (name, step)] = v
        print("generation %d rank %d step %d loss %.6f" % (gen, rank, step, float(np.mean(res[0]))), flush=True)
    if rank == 0:
        last = first + a.steps - 1
        np.savez(ckpt + ".tmp.npz", next_step=np.array(first + a.steps),
                 **{name: history["%s_%d" % (name, last)] for name in params})
        os.replace(ckpt + ".tmp.npz", ckpt)
    path = os.path.join(out, "g%d_trainer_%d.npz" % (gen, rank))
    np.savez(path + ".tmp.npz", **history)
    os.replace(path + ".tmp.npz", path)
    if gen == 1:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.1)


if __name__ == "__main__":
    main()
