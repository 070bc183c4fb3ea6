"""One process (server or worker) of a parameter-server job written the Paddle 1.x Fleet way; its
role comes from the launcher's variables. Workers write their loss and parameters after every step
to --out (.npz); worker 0 saves the parameters to --save_dir after training; servers start from
--model_dir when given."""
import argparse
import warnings

import numpy as np

import fluidist as fluid
from fleet_models import PARAMS, base_optimizer, batch_for, build
from fluidist.incubate.fleet.base import role_maker
from fluidist.incubate.fleet.parameter_server.distribute_transpiler import StrategyFactory, fleet


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strategy", choices=["sync", "async", "half_async", "geo", "config_sync", "config_geo"],
                    default="sync")
    ap.add_argument("--geo_every", type=int, default=5, help="GEO-SGD: steps between pushes")
    ap.add_argument("--optimizer", default="sgd")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--first_step", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8, help="the global batch, split over the workers")
    ap.add_argument("--out", default="")
    ap.add_argument("--save_dir", default="")
    ap.add_argument("--model_dir", default="")
    ap.add_argument("--infer_dir", default="", help="worker 0 saves the inference model (feeds x, y; fetch loss)")
    ap.add_argument("--init_worker_twice", action="store_true",
                    help="call fleet.init_worker() a second time (Paddle warns and skips); history gets "
                         "'second_init_warned'")
    ap.add_argument("--role_maker", choices=["cloud", "mpi"], default="cloud",
                    help="mpi: MPISymetricRoleMaker under mpirun (--out may hold {} for the worker index)")
    a = ap.parse_args()

    if a.strategy == "config_sync":
        strategy = fluid.DistributeTranspilerConfig()       # a config works as a strategy too
    elif a.strategy == "config_geo":
        strategy = fluid.DistributeTranspilerConfig()
        strategy.sync_mode = False
        strategy.geo_sgd_mode = True
        strategy.geo_sgd_need_push_nums = a.geo_every
    elif a.strategy == "geo":
        strategy = StrategyFactory.create_geo_strategy(a.geo_every)
    else:
        strategy = getattr(StrategyFactory, "create_%s_strategy" % a.strategy)()
    fleet.init(role_maker.MPISymetricRoleMaker() if a.role_maker == "mpi" else role_maker.PaddleCloudRoleMaker())
    _, _, loss = build(lambda l: fleet.distributed_optimizer(base_optimizer(a.optimizer), strategy).minimize(l))
    if fleet.is_server():
        fleet.init_server(a.model_dir or None)
        fleet.run_server()
        return
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fleet.startup_program)
    fleet.init_worker()
    history = {}
    if a.init_worker_twice:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fleet.init_worker()
        history["second_init_warned"] = np.array(any("already running" in str(w.message) for w in caught))
    for step in range(a.first_step, a.first_step + a.steps):
        feed = batch_for(step, a.batch, fleet.worker_index(), fleet.worker_num())
        out = exe.run(fleet.main_program, feed=feed, fetch_list=[loss] + PARAMS)
        history["loss_%d" % step] = out[0]
        for name, v in zip(PARAMS, out[1:]):
            history["%s_%d" % (name, step)] = v
    if a.save_dir and fleet.is_first_worker():
        fleet.save_persistables(exe, a.save_dir)
    if a.infer_dir and fleet.is_first_worker():
        fleet.save_inference_model(exe, a.infer_dir, ["x", "y"], [loss])
    fleet.stop_worker()
    if a.out:
        np.savez(a.out.format(fleet.worker_index()), **history)


if __name__ == "__main__":
    main()
