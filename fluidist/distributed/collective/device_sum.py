"""Summing a few numbers over every device of a data-parallel job, from inside a kernel (what a
synchronised batch norm needs for its statistics).

The data-parallel runner of ``CompiledProgram.with_data_parallel`` runs every place in a thread and
binds it to its plan (:func:`plan`): the same collectives its gradients go through (the ring of the
places' threads, then, across processes, place 0 on ring 0 and a broadcast back to its siblings).
Without a plan (a program run by a plain Executor in the collective mode, one process per device)
the sum is over ring 0 when this process has one, else it is this device's own.
"""
import contextlib
import threading

from . import registry

_tls = threading.local()


@contextlib.contextmanager
def plan(steps):
    """Within this block, :func:`device_sum` on this thread runs ``steps``: a list of
    ``("allreduce", ring_id)`` and ``("broadcast", ring_id, root)``, in order."""
    old = getattr(_tls, "steps", None)
    _tls.steps = list(steps)
    try:
        yield
    finally:
        _tls.steps = old


def device_sum(x, place):
    """``x`` summed over every device of the job (every device must call it, in the same order)."""
    steps = getattr(_tls, "steps", None)
    if steps is None:
        if not registry.has_communicator(0):
            return x
        steps = [("allreduce", 0)]
    for step in steps:
        comm = registry.get_communicator(step[1], place)
        # the CPU transports take host arrays (as the plan gives the c_* ops on a device place); NCCL
        # takes the device's: the few numbers cross to the host and back through the place that owns them
        crosses = place.is_device and getattr(comm, "backend", "cpu") == "cpu"
        value = place.to_host(x) if crosses else x
        value = comm.allreduce(value, "sum") if step[0] == "allreduce" else comm.broadcast(value, step[2])
        x = place.to_device(value) if crosses else value
    return x
