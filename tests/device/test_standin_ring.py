"""The ring of stand-in places of one process (``fluidist/distributed/collective/device_ring.py``):
collectives on device arrays, values moved between devices (counted device-to-device copies), never
read back to the host, with the CPU thread ring's results to the bit."""
import numpy as np
import pytest

from fluidist.core.tensor import SelectedRows
from fluidist.device.standin import StandinPlace, count_transfers, xp
from fluidist.distributed.collective.base import CollectiveError
from fluidist.distributed.collective.device_ring import standin_thread_group
from fluidist.distributed.collective.threads import thread_group
from rank_threads import on_each_rank  # tests/rank_threads.py

pytestmark = pytest.mark.timeout(60)
N = 3


def _on_each_rank(comms, fn):
    """``fn(rank, comm)`` in one thread per rank, each with its place's device current."""
    return on_each_rank(comms, fn, context=lambda r: StandinPlace(r).device_context())


def _inputs(shape=(5, 7), dtype="float32"):
    rng = np.random.RandomState(3)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(N)]


def _on_device(r, host):
    return StandinPlace(r).to_device(host)


def test_an_all_reduce_moves_between_devices_only_and_sums_as_the_cpu_ring():
    hosts = _inputs()
    cpu = _on_each_rank(thread_group(N, 90), lambda r, c: c.allreduce(hosts[r].copy(), "sum"))
    for in_place in (False, True):
        comms = standin_thread_group(N, 91)
        with count_transfers() as log:
            def reduce(r, c):
                x = _on_device(r, hosts[r])
                out = c.allreduce(x, "sum", out=x if in_place else None)
                assert (out is x) == in_place and out.device.id == r
                return out
            outs = _on_each_rank(comms, reduce)
        assert not log.syncs and len(log.d2d) == 2 * N * (N - 1), str(log)
        for r in range(N):
            assert outs[r].get().tobytes() == cpu[r].tobytes(), (in_place, r)


def test_broadcast_allgather_reducescatter_and_rows_on_the_devices():
    hosts = _inputs((6, 2))
    comms = standin_thread_group(N, 92)

    def collectives(r, c):
        x = _on_device(r, hosts[r])
        rows = SelectedRows(_on_device(r, np.array([r, 0])), _on_device(r, hosts[r][:2]), 10)
        return (c.broadcast(x, root=1).get(), c.allgather(x).get(), c.reducescatter(x, "max").get(),
                c.allgather_rows(rows))
    with count_transfers() as log:
        got = _on_each_rank(comms, collectives)
    assert not [e for e in log.syncs if e.what != "get"], str(log)
    for r in range(N):
        bcast, gathered, scattered, rows = got[r]
        np.testing.assert_array_equal(bcast, hosts[1])
        np.testing.assert_array_equal(gathered, np.concatenate(hosts))
        np.testing.assert_array_equal(scattered, np.maximum.reduce(hosts)[2 * r:2 * r + 2])
        assert rows.rows.device.id == r and rows.rows.get().tolist() == [0, 0, 1, 0, 2, 0]
        np.testing.assert_array_equal(rows.value.get(), np.concatenate([h[:2] for h in hosts]))


def test_ranks_that_disagree_are_named_and_host_arrays_refused():
    comms = standin_thread_group(2, 93)

    def mismatched(r, c):
        return c.allreduce(xp.zeros(4 + r, dtype="float32"), "sum")
    with pytest.raises(CollectiveError, match="does not match across ranks"):
        _on_each_rank(comms, mismatched)
    with pytest.raises(TypeError, match="takes device arrays"):
        standin_thread_group(2, 94)[0].allreduce(np.zeros(3, "float32"))


def test_a_device_ring_checks_its_arguments_as_the_cpu_rings_do():
    comm = standin_thread_group(2, 95)[0]
    x = xp.zeros((3, 2), dtype="float32")
    with pytest.raises(TypeError, match="ring 95 of standin places takes device arrays, got list"):
        comm.allreduce([1.0, 2.0])
    with pytest.raises(ValueError, match=r"allreduce on ring 95: unknown reduction 'mean'"):
        comm.allreduce(x, "mean")
    with pytest.raises(TypeError, match="bool tensors support only the max and min reductions"):
        comm.allreduce(xp.zeros(3, dtype="bool"))
    with pytest.raises(TypeError, match="allgather on ring 95: dtype complex64 is not supported"):
        comm.allgather(xp.zeros(3, dtype="complex64"))
    with pytest.raises(ValueError, match="broadcast on ring 95: root 2 is out of range for 2 ranks"):
        comm.broadcast(x, root=2)
    with pytest.raises(ValueError, match=r"reducescatter on ring 95: dim 0 of shape \[3, 2\] is not divisible"):
        comm.reducescatter(x)
    with pytest.raises(ValueError, match=r"allgather on ring 95: out must be a C-contiguous float32 device array "
                                         r"of shape \[6, 2\]"):
        comm.allgather(x, out=xp.zeros((3, 2), dtype="float32"))
    with pytest.raises(TypeError, match="allgather_rows on ring 95 takes a SelectedRows"):
        comm.allgather_rows(x)
    assert comm._seq == 0       # refused before the call was counted: the ring is still usable
