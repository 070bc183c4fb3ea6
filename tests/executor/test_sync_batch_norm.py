"""Synchronised batch norm (BuildStrategy / DistributedStrategy.sync_batch_norm): 2 places of one
process, 2 processes, and 2 processes of 2 places each equal one process's batch norm on the
concatenated batch: the batch norms' outputs, the gradients, and after each step the parameters and
running statistics."""
import os
import sys

import numpy as np
import pytest

import fluidist as fluid
from fluidist.passes.sync_batch_norm import convert_sync_batch_norm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sync_bn_model import BN_OUT, GRADS, STATE, batch, build, reference  # noqa: E402

pytestmark = pytest.mark.timeout(240)
STEPS = 3


def rel_err(got, want):
    return float(np.abs(np.asarray(got) - np.asarray(want)).max() / max(np.abs(want).max(), 1e-12))


def assert_matches(results, ref, places_per_result=1, tol=1e-5):
    """``results``: one dict per process (in rank order), each with its places' fetched values."""
    for step in range(STEPS):
        for name in BN_OUT:
            got = np.concatenate([r["%s_%d" % (name, step)] for r in results])
            assert rel_err(got, ref["%s_%d" % (name, step)]) < tol, (step, name)
        for name in GRADS + STATE:
            want = ref["%s_%d" % (name, step)]
            for k, r in enumerate(results):
                got = r["%s_%d" % (name, step)]
                for p in range(places_per_result):
                    value = got[p] if places_per_result > 1 and name in GRADS else got
                    assert rel_err(value, want) < tol, (step, name, k, p, rel_err(value, want))


def run_places(sync, nplaces=2, places=None):
    main, startup, loss = build()
    places = places or fluid.cpu_places(nplaces)
    nplaces = len(places)
    exe = fluid.Executor(places[0])
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    bs = fluid.BuildStrategy()
    bs.sync_batch_norm = sync
    prog = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs, places=places)
    out = {}
    for step in range(STEPS):
        per_place = exe.run(prog, feed=batch(step), fetch_list=BN_OUT + GRADS, scope=scope, return_merged=False)
        for j, name in enumerate(BN_OUT):
            out["%s_%d" % (name, step)] = np.concatenate([per_place[p][j] for p in range(nplaces)])
        for j, name in enumerate(GRADS, len(BN_OUT)):
            out["%s_%d" % (name, step)] = np.stack([per_place[p][j] for p in range(nplaces)])
        out.update({"%s_%d" % (k, step): np.array(scope.find_var(k).get_tensor()) for k in STATE})
    return out, prog


def test_two_places_equal_one_process_on_the_concatenated_batch():
    ref = reference(STEPS)
    got, prog = run_places(True)
    assert_matches([got], ref, places_per_result=2)
    types = [op.type for op in prog._runner.programs[1].global_block().ops]
    assert types.count("sync_batch_norm") == 2 and types.count("sync_batch_norm_grad") == 2
    assert "batch_norm" not in types


def _gpu_count():
    try:
        import cupy
        from cupy.cuda import nccl  # noqa: F401
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


@pytest.mark.gpu
@pytest.mark.parametrize("ngpus", [1, 2])
def test_cuda_places_over_nccl(ngpus):
    """The same kernels on CuPy arrays, summing over the NCCL ring of the places (2 GPUs)."""
    if _gpu_count() < ngpus:
        pytest.skip("needs CuPy with NCCL and %d GPUs" % ngpus)
    got, _ = run_places(True, places=[fluid.CUDAPlace(i) for i in range(ngpus)])
    assert_matches([got], reference(STEPS), places_per_result=ngpus, tol=1e-4)


def test_without_it_each_place_normalises_its_own_half():
    ref = reference(1)
    got, _ = run_places(False)
    assert rel_err(got["bn1_out_0"], ref["bn1_out_0"]) > 1e-3


def test_the_pass_keeps_batch_norms_that_use_running_statistics():
    main, startup, loss = build()
    test = main.clone(for_test=True)
    assert convert_sync_batch_norm(test) == 0
    assert convert_sync_batch_norm(main) == 2
    types = [op.type for op in main.global_block().ops]
    assert "batch_norm" not in types and "batch_norm_grad" not in types
    main.lint()
    # alone (no other device), sync_batch_norm is batch_norm
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    ref = reference(1)
    out = exe.run(main, feed=batch(0), fetch_list=BN_OUT + GRADS, scope=scope)
    for name, value in zip(BN_OUT + GRADS, out):
        assert rel_err(value, ref["%s_0" % name]) < 1e-5, name


def test_use_global_stats_is_refused_as_in_paddle():
    main, startup, loss = build()
    convert_sync_batch_norm(main)
    for op in main.global_block().ops:
        if op.type == "sync_batch_norm":
            op._set_attr("use_global_stats", True)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    with pytest.raises(ValueError, match="use_global_stats"):
        exe.run(main, feed=batch(0), scope=scope)


@pytest.mark.slow
@pytest.mark.parametrize("mode,places", [("nccl2", 1), ("nccl2", 2), ("grad_allreduce", 1)])
def test_two_processes_equal_one_process(tmp_path, mode, places):
    """Fleet's DistributedStrategy.sync_batch_norm over 2 worker processes (the CPU collective
    backend): nccl2 mode (CompiledProgram, 1 or 2 places per process) and collective mode (the
    program's c_allreduce ops; the statistics summed over ring 0)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fleet"))
    from fleet_cluster import Procs, endpoints
    eps = endpoints(2)
    outs = []
    with Procs(tmp_path) as procs:
        procs.script_dir = HERE
        for rank in range(2):
            out = str(tmp_path / ("w%d.npz" % rank))
            outs.append(out)
            procs.start("w%d" % rank, "sync_bn_child.py", ["--mode", mode, "--places", places, "--steps", STEPS,
                                                           "--out", out],
                        {"PADDLE_TRAINER_ENDPOINTS": ",".join(eps), "PADDLE_TRAINER_ID": rank,
                         "PADDLE_CURRENT_ENDPOINT": eps[rank], "PADDLE_TRAINERS_NUM": 2, "CPU_NUM": places})
        procs.check(timeout=200)
    results = [dict(np.load(o)) for o in outs]
    assert_matches(results, reference(STEPS), places_per_result=places)
