"""One worker of the synchronised batch norm tests: Fleet's collective mode with
DistributedStrategy.sync_batch_norm; writes the batch norms' outputs, the gradients (one per place)
and the state after every step to --out."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
import fluidist.device  # noqa: E402
from fluidist.incubate.fleet.base import role_maker  # noqa: E402
from fluidist.incubate.fleet.collective import DistributedStrategy, fleet  # noqa: E402
import sync_bn_model as m  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["nccl2", "grad_allreduce"], default="nccl2")
    ap.add_argument("--places", type=int, default=1)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    fluidist.device.use_from_env()   # the test suite's device (FLUIDIST_TEST_DEVICE), as in the test process
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    strategy = DistributedStrategy()
    strategy.sync_batch_norm = True
    if a.mode == "grad_allreduce":
        strategy.mode, strategy.collective_mode = "collective", "grad_allreduce"
    main_prog, startup, loss = m.build(lambda opt: fleet.distributed_optimizer(opt, strategy=strategy))
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    out, rank, n = {}, fleet.worker_index(), fleet.worker_num()
    names = m.BN_OUT + m.GRADS
    for step in range(a.steps):
        feed = m.part(m.batch(step), rank, n)
        if a.mode == "nccl2":
            got = exe.run(fleet.main_program, feed=feed, fetch_list=names, return_merged=False)
            values = [np.concatenate([got[p][j] for p in range(a.places)]) if name in m.BN_OUT else
                      np.stack([got[p][j] for p in range(a.places)]) for j, name in enumerate(names)]
        else:
            values = exe.run(fleet.main_program, feed=feed, fetch_list=names)
        out.update({"%s_%d" % (k, step): v for k, v in zip(names, values)})
        scope = fluid.global_scope()
        out.update({"%s_%d" % (k, step): np.array(scope.find_var(k).get_tensor()) for k in m.STATE})
    np.savez(a.out, **out)


if __name__ == "__main__":
    main()
