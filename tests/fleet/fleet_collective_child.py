"""One worker of a collective job written the Paddle 1.x Fleet way; its role comes from the
launcher's variables (PADDLE_TRAINER_ENDPOINTS, PADDLE_TRAINER_ID, PADDLE_CURRENT_ENDPOINT). It
writes its loss, parameters and optimizer state after every step to --out (.npz). --optimizer is
sgd, momentum, adam or one of fleet_extras.KINDS (recompute and gradient merge through the
strategy)."""
import argparse

import numpy as np

import fluidist as fluid
from fleet_extras import MERGE_K, hidden_var, minimize_for
from fleet_models import PARAMS, batch_for, build
from fluidist.incubate.fleet.base import role_maker
from fluidist.incubate.fleet.collective import DistributedStrategy, fleet


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["nccl2", "grad_allreduce", "local_sgd"], default="nccl2")
    ap.add_argument("--local_sgd_steps", type=int, default=1)
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8, help="the global batch, split over the workers")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    if a.mode == "grad_allreduce":
        strategy.mode, strategy.collective_mode = "collective", "grad_allreduce"
    elif a.mode == "local_sgd":
        strategy.use_local_sgd = True
        strategy.local_sgd_steps = a.local_sgd_steps
    if a.optimizer == "gradient_merge":
        strategy.gradient_merge = True
        strategy.gradient_merge_configs = {"k_steps": MERGE_K, "avg": True}

    def wrap(opt):
        if a.optimizer == "recompute":
            strategy.forward_recompute = True
            strategy.recompute_checkpoints = [hidden_var(fluid.default_main_program())]
        return fleet.distributed_optimizer(opt, strategy=strategy)
    minimize, state = minimize_for(a.optimizer, wrap)
    main_prog, startup, loss = build(minimize)
    if a.optimizer == "recompute":
        assert any("@RECOMPUTE@" in n for op in main_prog.global_block().ops for n in op.output_arg_names)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    history = {}
    names = PARAMS + state
    for step in range(a.steps):
        feed = batch_for(step, a.batch, fleet.worker_index(), fleet.worker_num())
        out = exe.run(fleet.main_program, feed=feed, fetch_list=[loss] + names)
        history["loss_%d" % step] = out[0]
        for name, v in zip(names, out[1:]):
            history["%s_%d" % (name, step)] = v
    np.savez(a.out, **history)


if __name__ == "__main__":
    main()
