"""The CPU's comm stream: all-reduces queued until their ring's ``c_sync_comm_stream`` and run there
fused (``Communicator.queue_allreduce``), and the plan's choice of which ops may be queued
(``executor.plan.queue_until_sync``)."""
import os
import sys

import numpy as np
import pytest

import fluidist as fluid
from fluidist.distributed.collective.cpu import thread_group
from fluidist.executor.plan import Plan
from rank_threads import on_each_rank  # tests/rank_threads.py


def _inputs(rank):
    rng = np.random.RandomState(rank)
    return [rng.rand(5, 3).astype(np.float32), rng.rand(7).astype(np.float32), rng.rand(4).astype(np.float64),
            rng.rand(2, 2).astype(np.float32)]


@pytest.mark.parametrize("n", [2, 3])
def test_queued_all_reduces_run_at_the_sync_one_per_dtype_and_equal_separate_ones(n):
    comms = thread_group(n, 61, timeout=20)

    def work(rank, comm):
        xs = _inputs(rank)
        outs = [comm.queue_allreduce(x, "sum") for x in xs[:3]]
        outs.append(comm.queue_allreduce(xs[3], "max"))
        before = comm._seq
        comm.sync_comm_stream()
        calls = comm._seq - before
        alone = [comm.allreduce(x, "sum") for x in xs[:3]] + [comm.allreduce(xs[3], "max")]
        return calls, outs, alone
    res = on_each_rank(comms, work)
    every = [_inputs(r) for r in range(n)]
    for calls, outs, alone in res:
        assert calls == 3      # float32 sums fused, the float64 sum, the max
        for got, want in zip(outs, alone):
            np.testing.assert_array_equal(got, want)      # fused or not, the same bits
        np.testing.assert_allclose(outs[0], sum(x[0] for x in every), rtol=1e-6)
        np.testing.assert_array_equal(outs[3], np.maximum.reduce([x[3] for x in every]))


def test_any_other_collective_of_the_ring_runs_the_queue_first():
    comms = thread_group(2, 62, timeout=20)

    def work(rank, comm):
        out = comm.queue_allreduce(np.full(3, rank + 1.0, np.float32))
        got = comm.broadcast(np.full(2, 10.0 * rank, np.float32), root=1)
        return out.copy(), got
    for out, got in on_each_rank(comms, work):
        np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])
        np.testing.assert_array_equal(got, [10.0, 10.0])


def _program(between=None, ring_of_sync=0, calc_stream=False):
    """x -> g (scale) -> c_allreduce_sum(g) -> [between] -> c_sync_comm_stream -> y = g * 2."""
    main = fluid.Program()
    b = main.global_block()
    for name in ("x", "g", "h", "y"):
        b.create_var(name=name, shape=[3], dtype="float32")
    b.append_op("scale", inputs={"X": ["x"]}, outputs={"Out": ["g"]}, attrs={"scale": 1.0})
    b.append_op("c_allreduce_sum", inputs={"X": ["g"]}, outputs={"Out": ["g"]},
                attrs={"ring_id": 0, "use_calc_stream": calc_stream})
    if between:
        b.append_op("scale", inputs={"X": [between]}, outputs={"Out": ["h"]}, attrs={"scale": 3.0})
    b.append_op("c_sync_comm_stream", inputs={"X": ["x"]}, outputs={"Out": ["x"]}, attrs={"ring_id": ring_of_sync})
    b.append_op("scale", inputs={"X": ["g"]}, outputs={"Out": ["y"]}, attrs={"scale": 2.0})
    return main


def _queued(main, place=None):
    plan = Plan(fluid.Executor(place or fluid.CPUPlace()), main, 0)
    return [st.op.type for st in plan.steps if st.ctx.until_sync]


@pytest.mark.cpu_only("the CPU's comm-stream queue: a device place's collectives run on its ring at once")
def test_the_plan_queues_an_all_reduce_nothing_reads_before_its_rings_sync():
    assert _queued(_program()) == ["c_allreduce_sum", "c_sync_comm_stream"]
    assert _queued(_program(between="x")) == ["c_allreduce_sum", "c_sync_comm_stream"]   # another variable
    assert _queued(_program(between="g")) == []           # read before the sync: run at once
    assert _queued(_program(ring_of_sync=1)) == []        # no sync of its ring
    assert _queued(_program(calc_stream=True)) == []      # on the calc stream: done when it returns


@pytest.mark.cpu_only("the CPU's comm-stream queue: a device place's collectives run on its ring at once")
def test_grad_allreduce_programs_queue_every_gradient_until_the_syncs():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "transpiler"))
    from models import fc_model      # tests/transpiler/models.py
    main, startup, _ = fc_model(size=16)
    config = fluid.DistributeTranspilerConfig()
    config.mode, config.collective_mode, config.nccl_comm_num, config.wait_port = "collective", "grad_allreduce", 2, False
    eps = "127.0.0.1:6170,127.0.0.1:6171"
    fluid.DistributeTranspiler(config).transpile(0, trainers=eps, current_endpoint="127.0.0.1:6170",
                                                 startup_program=startup, program=main)
    block = main.global_block()
    reduces = sum(op.type == "c_allreduce_sum" for op in block.ops)
    assert reduces == 2      # the weight and the bias
    assert _queued(main) == ["c_allreduce_sum"] * reduces + ["c_sync_comm_stream"] * 2
