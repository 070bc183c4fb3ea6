"""One worker of a collective job training with one of fleet_extras.KINDS; writes its parameters and
optimizer state after every step to --out (.npz)."""
import argparse

import numpy as np

import fluidist as fluid
from fleet_extras import MERGE_K, hidden_var, minimize_for
from fleet_models import PARAMS, batch_for, build
from fluidist.incubate.fleet.base import role_maker
from fluidist.incubate.fleet.collective import DistributedStrategy, fleet


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["nccl2", "grad_allreduce"], default="grad_allreduce")
    ap.add_argument("--what", required=True)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    if a.mode == "grad_allreduce":
        strategy.mode, strategy.collective_mode = "collective", "grad_allreduce"
    if a.what == "gradient_merge":
        strategy.gradient_merge = True
        strategy.gradient_merge_configs = {"k_steps": MERGE_K, "avg": True}

    def wrap(opt):
        if a.what == "recompute":
            strategy.forward_recompute = True
            strategy.recompute_checkpoints = [hidden_var(fluid.default_main_program())]
        return fleet.distributed_optimizer(opt, strategy=strategy)
    minimize, state = minimize_for(a.what, wrap)
    main_prog, startup, loss = build(minimize)
    if a.what == "recompute":
        assert any("@RECOMPUTE@" in n for op in main_prog.global_block().ops for n in op.output_arg_names)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    history = {}
    names = PARAMS + state
    for step in range(a.steps):
        feed = batch_for(step, a.batch, fleet.worker_index(), fleet.worker_num())
        out = exe.run(fleet.main_program, feed=feed, fetch_list=names)
        for name, v in zip(names, out):
            history["%s_%d" % (name, step)] = v
    np.savez(a.out, **history)


if __name__ == "__main__":
    main()
