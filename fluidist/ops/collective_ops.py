"""Collective ops (Paddle's ``c_*`` family, ``gen_nccl_id`` and ``barrier``): communicator set-up
in the startup program, all-reduce / broadcast / all-gather / reduce-scatter in the main program.

Set-up: ``c_gen_nccl_id`` (rank 0 makes the ring's id and sends it to the other ranks' endpoints)
then ``c_comm_init`` (every rank joins the ring) -- or ``c_comm_init_all`` for one process driving
several places as threads; in nccl2 mode ``gen_nccl_id`` makes the ids of ``nccl_comm_num`` rings
and ``CompiledProgram`` creates them (``registry.init_comms_from_nccl_id``). The backend follows the
executor's place: NCCL through CuPy on a CUDAPlace, fluidist's CPU backend on a CPUPlace.

Every op here has a side effect (never pruned). Kernels return new arrays; ``use_calc_stream``
only matters on the GPU (see ``distributed/collective/nccl.py``).
"""
import os
import warnings

import numpy as np

from ..distributed.collective import registry
from ..distributed.collective.rendezvous import (CommId, new_comm_id, receive_on_endpoint, send_to_endpoints,
                                                 split_endpoint)
from ..core.placement import to_host_value, to_place
from ..core.tensor import SelectedRows
from .tensor import is_fused_buffer
from ..framework.registry import register_op, same_shape

_HOST = "fluidist's CPU collectives take host buffers (NCCL, on a CUDAPlace, takes device arrays)"
# places whose collectives take device arrays: NCCL's, and the ring of stand-in places of one process
# (the kernel crosses through the place itself where such a place meets a CPU ring: ``_with_buffers``)
_DEVICE_KINDS = ("cuda", "standin")


def _is_cuda(ctx):
    return registry.backend_for(ctx.place) == "nccl"


def _new_id(ctx, ring_id, endpoint):
    """Rank 0's id for a ring on this executor's place (with an NCCL unique id on a GPU)."""
    if _is_cuda(ctx):
        from ..distributed.collective.nccl import new_unique_id
        return new_comm_id(ring_id, "nccl", endpoint, new_unique_id())
    return new_comm_id(ring_id, "cpu", endpoint)


# ---------------------------------------------------------------- set-up
@register_op("c_gen_nccl_id", outputs=["Out"],
             attrs={"rank": 0, "endpoint": "", "other_endpoints": [], "ring_id": 0}, side_effect=True, communicates=True)
def c_gen_nccl_id(ctx, ins, attrs):
    """Rank 0 creates the ring's id and sends it to ``other_endpoints``; every other rank listens on
    its ``endpoint`` until it arrives. Out (a RAW variable) holds the id."""
    rank, ring_id = int(attrs["rank"]), int(attrs["ring_id"])
    endpoint = attrs["endpoint"]
    others = list(attrs["other_endpoints"] or [])
    what = "c_gen_nccl_id (ring %d, rank %d)" % (ring_id, rank)
    if not endpoint:
        raise ValueError("%s: attr endpoint (this rank's ip:port) is required" % what)
    split_endpoint(endpoint, "%s: attr endpoint" % what)
    if rank == 0:
        cid = _new_id(ctx, ring_id, endpoint)
        try:
            send_to_endpoints({"kind": "c_gen_nccl_id", "ring_id": ring_id, "id": cid.to_json()}, others, what)
        except BaseException:
            cid.close()
            raise
    else:
        sender = "rank 0 (%s)" % others[0] if others else "rank 0"
        msg = receive_on_endpoint(endpoint, what, {"kind": "c_gen_nccl_id", "ring_id": ring_id}, sender,
                                  parse=lambda m: CommId.from_json(m.get("id")))
        cid = msg["parsed"]
    cid.endpoint = endpoint
    return {"Out": cid}


def _ids_of(msg, num):
    ids = msg.get("ids")
    if not isinstance(ids, list) or len(ids) != num:
        raise ValueError("'ids' must list %d ids" % num)
    return [CommId.from_json(d) for d in ids]


@register_op("c_comm_init", inputs=["X"], attrs={"nranks": 0, "rank": 0, "ring_id": 0, "device_id": -1},
             side_effect=True, communicates=True)
def c_comm_init(ctx, ins, attrs):
    """Join ring ``ring_id`` as ``rank`` of ``nranks`` with the id in X; registers the communicator."""
    cid = ins["X"]
    name = ctx.input_name("X")
    nranks, rank, ring_id = int(attrs["nranks"]), int(attrs["rank"]), int(attrs["ring_id"])
    if not isinstance(cid, CommId):
        raise TypeError("c_comm_init: input %r should hold the id written by c_gen_nccl_id, got %s"
                        % (name, type(cid).__name__))
    if nranks < 1 or not 0 <= rank < nranks:
        raise ValueError("c_comm_init: attrs nranks=%d, rank=%d are not a valid rank of a ring" % (nranks, rank))
    cid.ring_id = ring_id
    comm = registry.create_communicator(cid, nranks, rank, ctx.place, attrs.get("device_id", -1))
    registry.register(ring_id, comm)
    return {}


@register_op("c_comm_init_all", attrs={"ring_id": 0, "devices": []}, side_effect=True, communicates=True)
def c_comm_init_all(ctx, ins, attrs):
    """One process, several places as threads: a communicator per place for ring ``ring_id``. On
    GPUs ``devices`` are the GPU ids (default: all); on the CPU (and on stand-in places, whose ring
    reduces on their devices), ``len(devices)`` threads (default ``CPU_NUM``). Each thread then finds
    its own via ``thread_rank(i)`` or its CUDAPlace."""
    ring_id = int(attrs["ring_id"])
    devices = [int(d) for d in attrs.get("devices") or []]
    if _is_cuda(ctx):
        from ..distributed.collective.device_ring import gpu_thread_group
        from ..distributed.collective.nccl import _cupy
        if not devices:
            devices = list(range(_cupy()[0].cuda.runtime.getDeviceCount()))
        registry.register_group(ring_id, gpu_thread_group(ring_id, devices), devices)
    elif getattr(ctx.place, "kind", None) == "standin":     # stand-in places: reduced on their devices
        from ..distributed.collective.device_ring import standin_thread_group
        registry.register_group(ring_id, standin_thread_group(len(devices) or int(os.environ.get("CPU_NUM", "1")),
                                                              ring_id), None)
    else:
        from ..distributed.collective.cpu import thread_group
        n = len(devices) or int(os.environ.get("CPU_NUM", "1"))
        registry.register_group(ring_id, thread_group(n, ring_id), None)
    return {}


@register_op("gen_nccl_id", outputs=["NCCLID"],
             attrs={"trainers": [], "trainer_id": 0, "nccl_comm_num": 1, "use_hierarchical_allreduce": False,
                    "hierarchical_allreduce_inter_nranks": 0},
             side_effect=True, communicates=True)
def gen_nccl_id(ctx, ins, attrs):
    """nccl2 mode: trainer 0 makes the ids of ``nccl_comm_num`` rings and sends them to every other
    trainer endpoint; NCCLID holds ring 0's id, ``NCCLID_<i>`` (written to the scope) ring i's."""
    trainers = attrs["trainers"] or []
    trainers = trainers.split(",") if isinstance(trainers, str) else list(trainers)
    tid, num = int(attrs["trainer_id"]), int(attrs["nccl_comm_num"])
    what = "gen_nccl_id (trainer %d)" % tid
    if not 0 <= tid < len(trainers):
        raise ValueError("%s: trainer_id %d is out of range for trainers %s" % (what, tid, trainers))
    if num < 1:
        raise ValueError("%s: nccl_comm_num must be >= 1, got %d" % (what, num))
    if attrs.get("use_hierarchical_allreduce"):
        warnings.warn("gen_nccl_id: hierarchical all-reduce is not implemented; flat rings are used")
    endpoint = trainers[tid]
    if tid == 0:
        ids = []
        try:
            for i in range(num):
                ids.append(_new_id(ctx, i, endpoint))
            send_to_endpoints({"kind": "gen_nccl_id", "nccl_comm_num": num, "ids": [c.to_json() for c in ids]},
                              trainers[1:], what)
        except BaseException:
            for c in ids:
                c.close()
            raise
    else:
        msg = receive_on_endpoint(endpoint, what, {"kind": "gen_nccl_id", "nccl_comm_num": num},
                                  "trainer 0 (%s)" % trainers[0], parse=lambda m: _ids_of(m, num))
        ids = msg["parsed"]
    for c in ids:
        c.endpoint = endpoint
    base = ctx.output_name("NCCLID")
    for i in range(1, num):
        ctx.scope._set_value("%s_%d" % (base, i), ids[i])
    return {"NCCLID": ids[0]}


# ---------------------------------------------------------------- collectives
def _dense(ctx, x, op):
    if isinstance(x, SelectedRows):
        raise TypeError("%s: %r is a SelectedRows (row-sparse) value; collectives take dense tensors"
                        % (op, ctx.input_name("X")))
    if x is None:
        raise ValueError("%s: input %r has no value" % (op, ctx.input_name("X")))
    return x


def _in_place(ctx, x):
    """Reduce into X itself when X is a buffer ``coalesce_tensor`` made (and Out is X): its parts are
    the gradients, views that must see the result. Any other X gets a new array, since it may be a
    fed array or a value the caller still holds."""
    return ctx.op.outputs.get("Out") == ctx.op.inputs.get("X") and is_fused_buffer(x)


def _with_buffers(ctx, comm, x, call, in_place=False):
    """``call(x, out)`` with the buffers ``comm`` takes: a CPU ring takes host arrays, so a value of
    a device place crosses to the host and back through the place (into X's own device array when
    the op works in place, for the views of a fused buffer to see the result), as the plan's copies
    of a host op would; NCCL and a ring of stand-in places take the device's arrays as they are."""
    place = ctx.place
    if not getattr(place, "is_device", False) or getattr(comm, "backend", "cpu") != "cpu":
        return call(x, x if in_place else None)
    host = to_host_value(x)
    res = call(host, host if in_place else None)
    if in_place and isinstance(res, np.ndarray) and place.owns(x):
        return place.to_device(res, into=x)
    return to_place(res, place)


def _allreduce_rows(ctx, comm, x, red):
    """A row-sparse X: gathered (it stays row-sparse) on a ring of threads, which can exchange
    SelectedRows; made dense and summed across processes."""
    if red != "sum":
        raise TypeError("c_allreduce_%s: %r is a SelectedRows (row-sparse) value; only a sum is defined for it"
                        % (red, ctx.input_name("X")))
    gather = getattr(comm, "allgather_rows", None)
    if gather is not None:
        return gather(x)
    return comm.allreduce(x.to_dense(), "sum")     # (on the module of its values: they may have crossed to the host)


def _make_allreduce(red):
    def kernel(ctx, ins, attrs):
        op = "c_allreduce_" + red
        comm = registry.get_communicator(attrs["ring_id"], ctx.place)
        if isinstance(ins["X"], SelectedRows):
            return {"Out": _with_buffers(ctx, comm, ins["X"], lambda x, _: _allreduce_rows(ctx, comm, x, red))}
        x = _dense(ctx, ins["X"], op)
        if ctx.until_sync:     # the plan found nothing touching Out before the ring's c_sync_comm_stream
            return {"Out": comm.queue_allreduce(x, red, out=x if _in_place(ctx, x) else None)}
        calc = bool(attrs["use_calc_stream"])
        return {"Out": _with_buffers(ctx, comm, x, lambda v, out: comm.allreduce(v, red, out=out, use_calc_stream=calc),
                                     _in_place(ctx, x))}
    kernel.__name__ = "c_allreduce_" + red
    kernel.__doc__ = "Out = the element-wise %s of X over the ranks of ring ``ring_id``." % red
    return kernel


for _red in ("sum", "max", "min", "prod"):
    register_op("c_allreduce_" + _red, host=_HOST, host_except=_DEVICE_KINDS, inputs=["X"], outputs=["Out"],
                attrs={"ring_id": 0, "use_calc_stream": False}, infer=same_shape("X", "Out"),
                side_effect=True, communicates=True, share_lod=("X", "Out"), comm_stream="queue")(_make_allreduce(_red))


@register_op("c_broadcast", host=_HOST, host_except=_DEVICE_KINDS, inputs=["X"], outputs=["Out"], attrs={"ring_id": 0, "root": 0, "use_calc_stream": False},
             infer=same_shape("X", "Out"), side_effect=True, communicates=True, share_lod=("X", "Out"))
def c_broadcast(ctx, ins, attrs):
    """Out = rank ``root``'s X on every rank of ring ``ring_id``."""
    x = ins["X"]
    comm = registry.get_communicator(attrs["ring_id"], ctx.place)
    if isinstance(x, SelectedRows) and comm.rank != int(attrs["root"]):
        x = x.to_dense(ctx.xp)     # receives the root's (dense) value: only its shape matters here
    x = _dense(ctx, x, "c_broadcast")
    root, calc = int(attrs["root"]), bool(attrs["use_calc_stream"])
    return {"Out": _with_buffers(ctx, comm, x, lambda v, out: comm.broadcast(v, root, out=out, use_calc_stream=calc),
                                 _in_place(ctx, x))}


def _check_nranks(op, attrs, comm):
    n = int(attrs.get("nranks") or 0)
    if n and n != comm.nranks:
        raise ValueError("%s: attr nranks=%d but ring %d has %d ranks" % (op, n, comm.ring_id, comm.nranks))


def _allgather_infer(ctx):
    shape, n = ctx.input_shape("X"), int(ctx.attr("nranks") or 0)
    if shape is None or n <= 0:
        return
    if not shape:
        ctx.set_output("Out", [n], ctx.input_dtype("X"))
        return
    d0 = shape[0] * n if shape[0] >= 0 else -1
    ctx.set_output("Out", [d0] + list(shape[1:]), ctx.input_dtype("X"))


@register_op("c_allgather", host=_HOST, host_except=_DEVICE_KINDS, inputs=["X"], outputs=["Out"], attrs={"ring_id": 0, "nranks": 0, "use_calc_stream": False},
             infer=_allgather_infer, side_effect=True, communicates=True)
def c_allgather(ctx, ins, attrs):
    """Out = the X of every rank, concatenated along dim 0 in rank order."""
    x = _dense(ctx, ins["X"], "c_allgather")
    comm = registry.get_communicator(attrs["ring_id"], ctx.place)
    _check_nranks("c_allgather", attrs, comm)
    calc = bool(attrs["use_calc_stream"])
    return {"Out": _with_buffers(ctx, comm, x, lambda v, _: comm.allgather(v, use_calc_stream=calc))}


def _reducescatter_infer(ctx):
    shape, n = ctx.input_shape("X"), int(ctx.attr("nranks") or 0)
    if shape is None or n <= 0:
        return
    if not shape:
        raise ValueError("X is a scalar: reduce-scatter cuts dim 0 over the ranks")
    if shape[0] >= 0 and shape[0] % n:
        raise ValueError("dim 0 of X's shape %s is not divisible by nranks %d" % (list(shape), n))
    d0 = shape[0] // n if shape[0] >= 0 else -1
    ctx.set_output("Out", [d0] + list(shape[1:]), ctx.input_dtype("X"))


@register_op("c_reducescatter", host=_HOST, host_except=_DEVICE_KINDS, inputs=["X"], outputs=["Out"],
             attrs={"ring_id": 0, "nranks": 0, "use_calc_stream": False}, infer=_reducescatter_infer,
             side_effect=True, communicates=True)
def c_reducescatter(ctx, ins, attrs):
    """Out = this rank's 1/nranks (along dim 0) of the sum of X over the ranks."""
    x = _dense(ctx, ins["X"], "c_reducescatter")
    comm = registry.get_communicator(attrs["ring_id"], ctx.place)
    _check_nranks("c_reducescatter", attrs, comm)
    calc = bool(attrs["use_calc_stream"])
    return {"Out": _with_buffers(ctx, comm, x, lambda v, _: comm.reducescatter(v, "sum", use_calc_stream=calc))}


@register_op("barrier", host=_HOST, host_except=_DEVICE_KINDS, inputs=["X?"], outputs=["Out?"], attrs={"ring_id": 0}, side_effect=True, communicates=True)
def barrier(ctx, ins, attrs):
    """Wait until every rank of ring ``ring_id`` got here; Out = X."""
    registry.get_communicator(attrs["ring_id"], ctx.place).barrier()
    return {"Out": ins.get("X")}


@register_op("c_sync_calc_stream", inputs=["X"], outputs=["Out"], attrs={"ring_id": 0},
             infer=same_shape("X", "Out"), side_effect=True, communicates=True, share_lod=("X", "Out"))
def c_sync_calc_stream(ctx, ins, attrs):
    """GPU: wait for the calc stream (the work producing X). CPU: nothing to wait for. Out = X."""
    if _is_cuda(ctx):
        from ..distributed.collective.nccl import _cupy
        with ctx.place.device_context():
            _cupy()[0].cuda.get_current_stream().synchronize()
    return {"Out": ins["X"]}


@register_op("c_sync_comm_stream", inputs=["X*"], outputs=["Out*"], attrs={"ring_id": 0}, side_effect=True,
             communicates=True, comm_stream="sync")
def c_sync_comm_stream(ctx, ins, attrs):
    """Wait for ring ``ring_id``'s comm stream: on a GPU, NCCL's stream; on the CPU, the all-reduces
    the plan queued (run here, fused). Out = X."""
    if _is_cuda(ctx) or ctx.until_sync:    # (the plan marks a CPU sync that closes a queue)
        registry.get_communicator(attrs["ring_id"], ctx.place).sync_comm_stream()
    return {"Out": list(ins["X"])}
