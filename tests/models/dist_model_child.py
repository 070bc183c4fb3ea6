"""One process of a distributed run of ``zoo`` models, started by ``test_models_dist.py``: a pserver
or a trainer of pserver mode (sync or async), or a worker of nccl2 mode (the CPU collective backend).
Trainers and workers train on their share of every batch and write their per-step losses, and the
loss of the test program on a fixed batch after training, to ``--out`` (JSON).

A pserver-mode process runs several cases one after the other (``--cases``, each with its own
endpoints: ``--endpoints`` lists them per case, ``;``-separated), so that a table of models costs
one start of each process, not one per model; each case builds its model afresh (its own programs,
names and scope), and a case that fails is reported in its own result (``{"error": ...}``) while
the next one runs. A trainer writes ``<out>/<case>.json``."""
import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fluidist as fluid  # noqa: E402
import fluidist.device  # noqa: E402
import harness  # noqa: E402


def transpiled(a, net, endpoints, current_endpoint):
    config = fluid.DistributeTranspilerConfig()
    if a.role == "nccl2":
        config.mode = "nccl2"
    t = fluid.DistributeTranspiler(config=config)
    if a.role == "nccl2":
        t.transpile(a.trainer_id, program=net["main"], startup_program=net["startup"], trainers=endpoints,
                    current_endpoint=current_endpoint)
    else:
        t.transpile(a.trainer_id, program=net["main"], pservers=endpoints, trainers=a.trainers,
                    sync_mode=not a.async_mode, startup_program=net["startup"], current_endpoint=current_endpoint)
    return t


def run_case(a, case, endpoints, batch):
    """Serve (pserver) or train (trainer, nccl2 worker) one case; a trainer's result, else None."""
    model, options, _, _ = harness.case_model(case)
    net = model.build(**options)
    # a pserver's own endpoint, or (nccl2) a worker's: trainer k is the k-th of the workers
    current = endpoints.split(",")[a.pserver_index if a.role == "pserver" else a.trainer_id] \
        if a.role != "trainer" else ""
    t = transpiled(a, net, endpoints, current)
    place = fluid.CPUPlace()
    if a.role == "nccl2" and fluidist.device.active() == "cuda":
        place = fluid.CUDAPlace(a.trainer_id)     # NCCL: one GPU per worker
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    if a.role == "pserver":
        prog = t.get_pserver_program(current)
        exe.run(t.get_startup_program(current, prog), scope=scope)
        exe.run(prog, scope=scope)
        return None
    try:
        if a.role == "nccl2":
            exe.run(net["startup"], scope=scope)
            strategy = fluid.BuildStrategy()
            strategy.num_trainers = a.trainers
            strategy.trainer_id = a.trainer_id
            program = fluid.CompiledProgram(net["main"]).with_data_parallel(
                loss_name=net["loss"].name, build_strategy=strategy, places=[place])
        else:
            program = t.get_trainer_program(wait_port=True)
            exe.run(net["startup"], scope=scope)
        result = harness.run_steps(fluid, exe, net, model, options, a.steps, batch, scope, place,
                                   part=a.trainer_id, parts=a.trainers, program=program)
        result["place_kind"] = place.kind   # the suite's device (test_models_dist checks it)
        if a.evaluate:
            # a distributed lookup table lives on the pservers, out of reach of the test program: there
            # the trainer program itself computes the loss (its update, the run's last, comes after)
            on_pservers = options.get("is_distributed", False) and a.role == "trainer"
            result["eval_after"] = harness.evaluate(fluid, exe, net, model, options, scope, place,
                                                    program=program if on_pservers else None)
        return result
    finally:
        exe.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", required=True, help="comma-separated cases, run one after the other")
    ap.add_argument("--role", choices=["pserver", "trainer", "nccl2"], required=True)
    ap.add_argument("--endpoints", required=True,
                    help="per case (';'-separated, in the order of --cases): the pserver endpoints, or (nccl2) "
                         "the workers' endpoints")
    ap.add_argument("--pserver_index", type=int, default=0, help="which of each case's pservers this one is")
    ap.add_argument("--trainer_id", type=int, default=0)
    ap.add_argument("--trainers", type=int, default=2)
    ap.add_argument("--async_mode", action="store_true")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", default="8", help="the global batch, split over the trainers (one, or one per case)")
    ap.add_argument("--evaluate", action="store_true", help="test-program loss after training")
    ap.add_argument("--out", default="", help="a trainer's or worker's directory of <case>.json results")
    a = ap.parse_args()
    fluidist.device.use_from_env()   # the test suite's device (FLUIDIST_TEST_DEVICE), as in the test process
    cases, endpoints = a.cases.split(","), a.endpoints.split(";")
    batches = [int(b) for b in a.batch.split(",")]
    batches = batches * len(cases) if len(batches) == 1 else batches
    if not len(cases) == len(endpoints) == len(batches):
        raise SystemExit("%d cases need as many --endpoints groups (got %d) and --batch sizes (got %d)"
                         % (len(cases), len(endpoints), len(batches)))
    for case, eps, batch in zip(cases, endpoints, batches):
        try:
            result = run_case(a, case, eps, batch)
        except Exception:
            traceback.print_exc()
            result = {"error": traceback.format_exc()}
        print("case %s done" % case, flush=True)
        if a.out and a.role != "pserver":
            with open(os.path.join(a.out, case + ".json"), "w") as f:
                json.dump(result, f)


if __name__ == "__main__":
    main()
