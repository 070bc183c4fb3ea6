"""Every program a set of configurations builds and transpiles, in ``to_dict`` form: to show that a
change to the framework or the transpiler leaves them unchanged (a refactoring, a speed-up).

    PYTHONPATH=$PWD python tools/transpile_outputs.py --out /tmp/before.json     # on the code before
    PYTHONPATH=$PWD python tools/transpile_outputs.py --against /tmp/before.json  # on the code after

``--against`` builds them again and compares program by program; it prints the configurations whose
programs differ, with the first path where they part (the order of a dict's keys counts: an op's
attrs keep the order they were given in), and exits 1 if any does. The dump is large
(tens of MB): keep it outside the repository.

Configurations:

- ``bench/``: the two programs of ``benchmarks/transpile.py`` (fc stack with Adam, CTR-like with a
  distributed table) at 20, 200 and 1,000 parameters, for 8 trainers sync, 1 trainer sync and 2 async,
  on 4 pservers;
- ``fc/``: the transpiler tests' fc model (``tests/transpiler/models.py``) with SGD, Adam and Momentum,
  with and without LR decay, sliced or not, sync and async; ``opt/``: every optimizer of
  ``tests/transpiler/test_pserver_transpile.py`` with LR decay, sync and async; ``table/``: its
  embedding model, local or distributed table, three optimizers, sync and async;
- ``geo/``: GEO-SGD; ``collective/``: nccl2 and the collective modes;
- ``zoo/``: every model of ``tests/models/zoo`` as built (main, startup, test and inference programs),
  and the sparse ones transpiled for 2 pservers x 2 trainers.

Each configuration records its programs as built (``main``, ``startup``) and what the transpiler gives
(``trainer``, the startup it rewrote, and every pserver's program, startup and parameter overview).
"""
import argparse
import json
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for sub in ("", "benchmarks", os.path.join("tests", "transpiler"), os.path.join("tests", "models")):
    sys.path.insert(0, os.path.join(ROOT, sub))

import fluidist as fluid  # noqa: E402
from fluidist.framework.program_forms import to_dict  # noqa: E402

EPS2 = ["127.0.0.1:6174", "127.0.0.1:6175"]


def _plain(o):
    """A parameter overview (objects with ``__dict__``) as JSON-ready data."""
    if isinstance(o, (list, tuple)):
        return [_plain(x) for x in o]
    if isinstance(o, dict):
        return {str(k): _plain(v) for k, v in o.items()}
    if hasattr(o, "distributed_vars"):    # a VarsDistributed (its entries may be made when first read)
        return {type(o).__name__: {"distributed_vars": _plain(o.distributed_vars)}}
    if hasattr(o, "__dict__"):
        return {type(o).__name__: _plain(vars(o))}
    return o


def pserver_job(main, startup, trainers, sync, config=None, eps=EPS2, trainer_id=0):
    """The programs of a pserver-mode job: the origin ones, the trainer's, every pserver's."""
    out = {"main": to_dict(main), "startup": to_dict(startup)}
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(trainer_id, program=main, pservers=",".join(eps), trainers=trainers, sync_mode=sync,
                startup_program=startup)
    out["trainer"] = to_dict(t.get_trainer_program(wait_port=False))
    out["trainer_startup"] = to_dict(startup)
    for ep in eps:
        prog = t.get_pserver_program(ep)
        out[ep] = to_dict(prog)
        out[ep + "/startup"] = to_dict(t.get_startup_program(ep, prog))
        out[ep + "/overview"] = _plain(prog._parameters_on_pservers)
    return out


def bench_configs():
    import transpile as bench
    for model in ("fc_adam", "ctr_sparse"):
        for n in (20, 200, 1000):
            for trainers, sync in ((8, True), (1, True), (2, False)):
                main, startup = bench.MODELS[model](n)
                yield "bench/%s/%d/%d/%s" % (model, n, trainers, sync), \
                    pserver_job(main, startup, trainers, sync, eps=bench.PSERVERS)


def fc_configs():
    import models
    import test_pserver_transpile as tp
    opts = {"sgd": None, "adam": lambda lr: fluid.optimizer.Adam(lr),
            "momentum": lambda lr: fluid.optimizer.Momentum(lr, 0.9)}
    for name, opt in opts.items():
        for decay in (False, True):
            for slice_up in (True, False):
                for sync in (True, False):
                    with fluid.unique_name.guard():
                        main, startup, _ = models.fc_model(optimizer=opt, lr_decay=decay)
                    cfg = fluid.DistributeTranspilerConfig()
                    cfg.slice_var_up = slice_up
                    yield "fc/%s/%s/%s/%s" % (name, decay, slice_up, sync), pserver_job(main, startup, 2, sync, cfg)
    for name, opt in tp.OPTIMIZERS.items():
        for sync in (True, False):
            with fluid.unique_name.guard():
                main, startup, _ = models.fc_model(optimizer=opt, lr_decay=True)
            yield "opt/%s/%s" % (name, sync), pserver_job(main, startup, 2, sync, trainer_id=1)
    for dist in (True, False):
        for oname, opt in (("sgd", lambda: fluid.optimizer.SGD(0.01)), ("adagrad", lambda: fluid.optimizer.Adagrad(0.01)),
                           ("adam_lazy", lambda: fluid.optimizer.Adam(0.01, lazy_mode=True))):
            for sync in (True, False):
                with fluid.unique_name.guard():
                    main, startup = tp._table_model(dist, opt)
                yield "table/%s/%s/%s" % (dist, oname, sync), pserver_job(main, startup, 2, sync)


def geo_and_collective_configs():
    import models
    with fluid.unique_name.guard():
        main, startup, _ = models.fc_model()
    cfg = fluid.DistributeTranspilerConfig()
    cfg.geo_sgd_mode = True
    cfg.geo_sgd_need_push_nums = 4
    yield "geo/fc", pserver_job(main, startup, 2, False, cfg)
    eps = "127.0.0.1:6170,127.0.0.1:6171"
    for mode, collective_mode in (("nccl2", None), ("collective", "grad_allreduce"), ("collective", "local_sgd")):
        with fluid.unique_name.guard():
            main, startup, _ = models.fc_model(size=16)
        cfg = fluid.DistributeTranspilerConfig()
        cfg.mode, cfg.collective_mode, cfg.wait_port, cfg.nccl_comm_num = mode, collective_mode, False, 2
        fluid.DistributeTranspiler(cfg).transpile(1, trainers=eps, current_endpoint="127.0.0.1:6171",
                                                  startup_program=startup, program=main)
        yield "collective/%s/%s" % (mode, collective_mode), {"main": to_dict(main), "startup": to_dict(startup)}


def zoo_configs():
    import harness
    for case, (model, options, _, _) in sorted(harness.CASES.items()):
        module = harness.load_model(model)
        with fluid.unique_name.guard():
            built = module.build(**options)
        out = {k: to_dict(built[k]) for k in ("main", "startup", "test_program")}
        if built.get("infer"):
            out["infer"] = to_dict(built["infer"]["program"])
        yield "zoo/%s" % case, out
        if "sparse" in case or "dtable" in case or case == "ctr":
            with fluid.unique_name.guard():
                built = module.build(**options)
            yield "zoo/%s/pserver" % case, pserver_job(built["main"], built["startup"], 2, True)


def all_outputs():
    out = {}
    for configs in (bench_configs, fc_configs, geo_and_collective_configs, zoo_configs):
        for name, programs in configs():
            out[name] = json.loads(json.dumps(programs, default=repr))
    return out


def first_difference(a, b, path=""):
    """The first path at which ``a`` and ``b`` differ, or None."""
    if type(a) is not type(b):
        return "%s: %r != %r" % (path, a, b)
    if isinstance(a, dict):
        if list(a) != list(b) and set(a) == set(b):
            return "%s: keys in another order: %s before, %s after" % (path, list(a)[:12], list(b)[:12])
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s/%s: only in %s" % (path, k, "before" if k in a else "after")
            d = first_difference(a[k], b[k], "%s/%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d items before, %d after" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r before, %r after" % (path, a, b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", help="write the programs here (JSON)")
    group.add_argument("--against", help="compare with the programs written by --out")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    now = all_outputs()
    nprog = sum(len(v) for v in now.values())
    if a.out:
        with open(a.out, "w") as f:
            json.dump(now, f)
        print("%d configurations, %d programs written to %s" % (len(now), nprog, a.out))
        return 0
    with open(a.against) as f:
        before = json.load(f)
    differ = []
    for name in sorted(set(before) | set(now)):
        d = first_difference(before.get(name), now.get(name), name)
        if d:
            differ.append(d)
    for d in differ:
        print("DIFFERS", d[:400])
    print("%d configurations, %d programs: %s" % (len(now), nprog,
                                                  "%d differ" % len(differ) if differ else "all identical"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
