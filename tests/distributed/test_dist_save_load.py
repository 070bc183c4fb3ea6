"""Paddle 1.8's distributed checkpoint: ``fluid.io.save_persistables`` on a transpiled trainer program
saves the pservers' optimizer state too, and ``fluid.io.load_persistables`` on a pserver program takes
that pserver's blocks out of the whole variables saved (``program._parameters_on_pservers``)."""
import gc
import weakref

import numpy as np
import pytest

from cluster import Cluster, free_ports
from dist_models import build
import fluidist as fluid

pytestmark = pytest.mark.timeout(180)


def _transpile(eps, optimizer="adam"):
    main, startup, loss, params = build("fc", optimizer)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=",".join(eps), trainers=2, startup_program=startup)
    return t, main, startup


def test_a_placement_record_filled_on_first_read_keeps_its_order_and_survives_a_failed_fill():
    """``VarsDistributed(fill=...)`` (the transpiler's record is made when first read): ``fill`` runs
    once, before anything else is read or added; when it raises, nothing of it stays and the next
    read runs it again."""
    from fluidist.transpiler.details import VarsDistributed, VarStruct

    def var(name, shape):
        return VarStruct(name, shape, "float32", "LOD_TENSOR", 0, True)

    calls = []

    def fill(record):
        calls.append(1)
        record.add_distributed_var(var("w", [4, 2]), var("w.block0", [2, 2]), True, 0, 0, "Param", "a:1")
        if len(calls) == 1:
            raise RuntimeError("first fill fails")
        record.add_distributed_var(var("w", [4, 2]), var("w.block1", [2, 2]), True, 1, 4, "Param", "b:1")

    record = VarsDistributed(fill=fill)
    with pytest.raises(RuntimeError, match="first fill fails"):
        record.get_distributed_vars_by_ep("a:1")
    record.add_distributed_var(var("m", [1]), var("m", [1]), vtype="Optimizer", endpoint="a:1")   # runs fill first
    assert [v.slice.name for v in record.distributed_vars] == ["w.block0", "w.block1", "m"] and len(calls) == 2
    assert record.get_distributed_var_by_slice("w.block1").offset == 4 and not record.distributed_vars[2].is_slice
    assert [v.slice.name for v in VarsDistributed().distributed_vars] == []


def test_placement_records_each_block_with_its_offset():
    eps = ["127.0.0.1:6174", "127.0.0.1:6175"]
    t, main, _ = _transpile(eps)
    overview = t.get_pserver_program(eps[0])._parameters_on_pservers
    assert overview is main._parameters_on_pservers
    params = overview.get_distributed_vars_by_vtypes(["Param"], groupby=True)
    fc_w = sorted(params["fc_w"], key=lambda v: v.block_id)
    assert [(v.slice.name, v.offset) for v in fc_w] == [("fc_w.block0", 0), ("fc_w.block1", 32 * 256)]
    assert sorted(v.endpoint for v in fc_w) == eps
    assert all(v.is_slice and v.slice.shape == [32, 256] and v.origin.shape == [64, 256] for v in fc_w)
    assert [v.is_slice for v in params["out_b"]] == [False]
    # Adam's moments are cut like their parameter, the beta powers are held whole by each pserver
    moments = overview.get_distributed_vars_by_vtypes(["Optimizer"], groupby=True)
    m1 = [n for n in moments if n.startswith("fc_w_moment1")][0]
    assert sorted((v.endpoint, v.offset, v.slice.shape[0]) for v in moments[m1]) == sorted(
        (v.endpoint, v.offset, 32) for v in fc_w)
    beta = [n for n in moments if n.startswith("fc_w_beta1_pow")][0]
    assert {(v.endpoint, v.is_slice) for v in moments[beta]} == {(eps[0], False), (eps[1], False)}
    for ep in eps:   # what each pserver loads is what its program declares
        block = t.get_pserver_program(ep).global_block()
        for v in overview.get_distributed_vars_by_ep(ep):
            assert list(block.var(v.slice.name).shape) == list(v.slice.shape)


def test_pserver_loads_its_rows_of_a_local_checkpoint(tmp_path):
    main, startup, _, _ = build("fc", "adam")
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    fluid.io.save_persistables(exe, str(tmp_path), main, scope=scope)
    saved_w = np.array(scope.find_var("fc_w").get_tensor())
    eps = ["127.0.0.1:6174", "127.0.0.1:6175"]
    t, _, _ = _transpile(eps)
    ep = t.vars_overview.get_distributed_var_by_slice("fc_w.block1").endpoint
    prog = t.get_pserver_program(ep)
    ps_scope = fluid.Scope()
    exe.run(t.get_startup_program(ep, prog), scope=ps_scope)
    fluid.io.load_persistables(exe, str(tmp_path), prog, scope=ps_scope)
    np.testing.assert_array_equal(np.array(ps_scope.find_var("fc_w.block1").get_tensor()), saved_w[32:])
    loaded = {v.slice.name for v in prog._parameters_on_pservers.get_distributed_vars_by_ep(ep)}
    assert "fc_w.block1" in loaded and "fc_w.block0" not in loaded


def test_a_clone_of_a_pserver_program_keeps_no_program_of_the_job_alive_and_loads_as_it(tmp_path):
    """The placement record a clone shares (not yet read: it is filled when first read) keeps neither
    the transpiled programs nor, once the transpiler is dropped too, its copies of the origin programs
    alive; a load on the clone then takes this pserver's rows, as on the program it was cloned from."""
    main, startup, _, _ = build("fc", "adam")
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    fluid.io.save_persistables(exe, str(tmp_path), main, scope=scope)
    saved = {n: np.array(scope.find_var(n).get_tensor()) for n in ("fc_w", "fc_b", "out_w")}
    eps = ["127.0.0.1:6174", "127.0.0.1:6175"]
    t, trainer, trainer_startup = _transpile(eps)
    programs = {ep: t.get_pserver_program(ep) for ep in eps}
    ep = next(ep for ep, p in programs.items() if "fc_w.block1" in p.global_block().vars)
    ps_scope = fluid.Scope()
    exe.run(t.get_startup_program(ep, programs[ep]), scope=ps_scope)
    clone = programs[ep].clone()
    job = [trainer, trainer_startup, t, t._plan.origin_main, t._plan.origin_startup] + list(programs.values())
    refs = [weakref.ref(o) for o in job]
    del t, trainer, trainer_startup, programs, job
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)
    fluid.io.load_persistables(exe, str(tmp_path), clone, scope=ps_scope)
    np.testing.assert_array_equal(np.array(ps_scope.find_var("fc_w.block1").get_tensor()), saved["fc_w"][32:])
    entries = clone._parameters_on_pservers.get_distributed_vars_by_ep(ep)
    for v in entries:   # each piece as the pserver program declares it, of its whole variable's shape
        assert list(clone.global_block().var(v.slice.name).shape) == list(v.slice.shape)
        assert v.origin.shape == list(main.global_block().var(v.origin.name).shape)
        assert np.array(ps_scope.find_var(v.slice.name).get_tensor()).shape == tuple(v.slice.shape)
    here = {v.origin.name for v in entries}
    for name in set(saved) & here - {"fc_w"}:       # held whole by this pserver
        np.testing.assert_array_equal(np.array(ps_scope.find_var(name).get_tensor()), saved[name])
    assert "fc_w" in here and any(v.vtype == "Optimizer" for v in entries)


def _entries(record):
    return [(v.origin.name, v.origin.shape, v.origin.dtype, v.origin.persistable, v.slice.name, v.slice.shape,
             v.is_slice, v.block_id, v.offset, v.vtype, v.endpoint) for v in record.distributed_vars]


def test_a_clone_of_a_trainer_program_read_after_the_job_is_dropped_gives_its_placement():
    """What a trainer's distributed save reads from a clone (its record filled after the transpiler
    and the transpiled program are gone) is what the transpiled program itself gives."""
    eps = ["127.0.0.1:6174", "127.0.0.1:6175"]
    t, trainer, _ = _transpile(eps)
    clone = trainer.clone(for_test=True)
    ref = weakref.ref(trainer)
    del t, trainer
    gc.collect()
    assert ref() is None
    _, again, _ = _transpile(eps)
    want = _entries(again._parameters_on_pservers)
    assert _entries(clone._parameters_on_pservers) == want and len(want) == 25
    assert clone._parameters_on_pservers is clone.clone()._parameters_on_pservers     # shared by clones


def _job(tmp_path, name, eps, steps, extra_ps=(), extra_tr=()):
    common = ["--endpoints", ",".join(eps), "--trainers", 2, "--model", "fc", "--optimizer", "adam",
              "--steps", steps, "--batch", 4]
    outs = []
    with Cluster(tmp_path) as c:
        for i, ep in enumerate(eps):
            c.start("%s_ps%d" % (name, i), "pserver_model.py",
                    ["--role", "pserver", "--current_endpoint", ep] + common + list(extra_ps))
        for k in range(2):
            out = str(tmp_path / ("%s_tr%d.npz" % (name, k)))
            outs.append(out)
            c.start("%s_tr%d" % (name, k), "pserver_model.py",
                    ["--role", "trainer", "--trainer_id", k, "--out", out] + common + list(extra_tr))
        c.check(names=["%s_tr%d" % (name, k) for k in range(2)], timeout=120)
        c.check(names=["%s_ps%d" % (name, i) for i in range(2)], timeout=30)
    return [dict(np.load(o)) for o in outs]


def test_a_job_resumed_from_a_distributed_checkpoint_goes_on_as_the_saved_one(tmp_path):
    """2 pservers x 2 trainers with Adam: trainer 0 saves after step 1; a new job whose pservers load
    that directory trains steps 2..4 exactly as the first job did (the moments and beta powers came
    from the pservers, and each pserver took its rows back)."""
    ckpt = str(tmp_path / "ckpt")
    first = _job(tmp_path, "a", ["127.0.0.1:%d" % p for p in free_ports(2)], 5,
                 extra_tr=["--save_dir", ckpt, "--save_after", 1])
    resumed = _job(tmp_path, "b", ["127.0.0.1:%d" % p for p in free_ports(2)], 5,
                   extra_ps=["--load_dir", ckpt], extra_tr=["--first_step", 2])
    for k in range(2):
        for step in range(2, 5):
            for key in ["loss"] + ["fc_w", "fc_b", "out_w", "out_b"]:
                name = "%s_%d" % (key, step)
                np.testing.assert_allclose(resumed[k][name], first[k][name], rtol=1e-6, atol=1e-7, err_msg=name)
    # the saved moments are the pservers' (not the trainer's zeros), whole
    main, _, _, _ = build("fc", "adam")
    m1 = [v for v in main.list_vars() if v.name.startswith("fc_w_moment1")][0]
    scope = fluid.Scope()
    fluid.io.load_vars(fluid.Executor(fluid.CPUPlace()), ckpt, main, vars=[m1], scope=scope)
    moment = np.array(scope.find_var(m1.name).get_tensor())
    assert moment.shape == (64, 256) and np.abs(moment[:32]).sum() > 0 and np.abs(moment[32:]).sum() > 0
