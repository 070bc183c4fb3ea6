"""Real collective training started by the launcher: the script transpiles itself from the
PADDLE_* variables the launcher sets (collective grad_allreduce mode), trains a few steps on its
shard of each global batch, and saves its parameters after every step to
$OUT_DIR/trainer_<rank>.npz, for comparison with one process training on the whole batches."""
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
    rank = int(os.environ["PADDLE_TRAINER_ID"])
    endpoints = os.environ["PADDLE_TRAINER_ENDPOINTS"]
    current = os.environ["PADDLE_CURRENT_ENDPOINT"]
    n = int(os.environ["PADDLE_TRAINERS_NUM"])
    assert len(endpoints.split(",")) == n
    main_prog, startup, loss, params = build(a.model, a.optimizer)
    config = fluid.DistributeTranspilerConfig()
    config.mode = "collective"
    config.collective_mode = "grad_allreduce"
    t = fluid.DistributeTranspiler(config)
    t.transpile(rank, trainers=endpoints, current_endpoint=current, startup_program=startup, program=main_prog)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    history = {}
    for step in range(a.steps):
        feed = batch_for(a.model, step, a.batch * n, rank, n)
        out = exe.run(main_prog, feed=feed, fetch_list=[loss] + params)
        history["loss_%d" % step] = out[0]
        for name, v in zip(params, out[1:]):
            history["%s_%d" % (name, step)] = v
        print("rank %d step %d loss %.6f" % (rank, step, float(np.mean(out[0]))), flush=True)
    np.savez(os.path.join(os.environ["OUT_DIR"], "trainer_%d.npz" % rank), **history)


if __name__ == "__main__":
    main()
