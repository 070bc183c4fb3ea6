"""One process of a distributed run of a ``zoo`` model, started by ``test_models_dist.py``:
a pserver or a trainer of pserver mode (sync or async), or a worker of nccl2 mode (the CPU
collective backend). Trainers and workers train on their share of every batch and write their
per-step losses, and the loss of the test program on a fixed batch after training, to ``--out``
(JSON)."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
import harness  # noqa: E402


def transpiled(a, net):
    config = fluid.DistributeTranspilerConfig()
    if a.role == "nccl2":
        config.mode = "nccl2"
    t = fluid.DistributeTranspiler(config=config)
    if a.role == "nccl2":
        t.transpile(a.trainer_id, program=net["main"], startup_program=net["startup"], trainers=a.endpoints,
                    current_endpoint=a.current_endpoint)
    else:
        t.transpile(a.trainer_id, program=net["main"], pservers=a.endpoints, trainers=a.trainers,
                    sync_mode=not a.async_mode, startup_program=net["startup"], current_endpoint=a.current_endpoint)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True)
    ap.add_argument("--role", choices=["pserver", "trainer", "nccl2"], required=True)
    ap.add_argument("--endpoints", required=True, help="pserver endpoints, or (nccl2) the workers' endpoints")
    ap.add_argument("--current_endpoint", default="")
    ap.add_argument("--trainer_id", type=int, default=0)
    ap.add_argument("--trainers", type=int, default=2)
    ap.add_argument("--async_mode", action="store_true")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8, help="the global batch, split over the trainers")
    ap.add_argument("--evaluate", action="store_true", help="test-program loss after training")
    ap.add_argument("--out", default="")
    a = ap.parse_args()

    model, options, _, _ = harness.case_model(a.case)
    net = model.build(**options)
    t = transpiled(a, net)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.global_scope()
    if a.role == "pserver":
        prog = t.get_pserver_program(a.current_endpoint)
        exe.run(t.get_startup_program(a.current_endpoint, prog))
        exe.run(prog)
        return
    if a.role == "nccl2":
        exe.run(net["startup"])
        strategy = fluid.BuildStrategy()
        strategy.num_trainers = a.trainers
        strategy.trainer_id = a.trainer_id
        program = fluid.CompiledProgram(net["main"]).with_data_parallel(
            loss_name=net["loss"].name, build_strategy=strategy, places=[place])
    else:
        program = t.get_trainer_program(wait_port=True)
        exe.run(net["startup"])
    result = harness.run_steps(fluid, exe, net, model, options, a.steps, a.batch, scope, place,
                               part=a.trainer_id, parts=a.trainers, program=program)
    if a.evaluate:
        # a distributed lookup table lives on the pservers, out of reach of the test program: there the
        # trainer program itself computes the loss (its update, the run's last, comes after)
        on_pservers = options.get("is_distributed", False) and a.role == "trainer"
        result["eval_after"] = harness.evaluate(fluid, exe, net, model, options, scope, place,
                                                program=program if on_pservers else None)
    exe.close()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
