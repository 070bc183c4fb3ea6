"""The NCCL backend, through CuPy (``cupy.cuda.nccl``): tensors stay on the device.

One :class:`NcclCommunicator` per ring and process, on the device of the executor's place, with
its own non-blocking CUDA stream (the ring's comm stream). Before a collective starts, the comm
stream waits (on the GPU, through an event) for the work already queued on the calc stream, so the
inputs are ready; afterwards, with ``use_calc_stream=False`` (the ops' default, as in Paddle) the
calc stream does not wait: ``c_sync_comm_stream`` is where it does, and the inputs and outputs are
kept alive until then. The Python API defaults to ``use_calc_stream=True`` (ordered on the current
stream), which needs no synchronisation by the caller.

Set-up: rank 0's ``c_gen_nccl_id`` makes the NCCL unique id and sends it (with a rendezvous address)
to the others; ``c_comm_init`` meets at rank 0's rendezvous, which refuses a group in which two
ranks would drive the same GPU (compared by PCI bus id on the same host, so CUDA_VISIBLE_DEVICES
remapping does not fool it), and only then calls ``ncclCommInitRank``.
"""
import os
import time

from ... import timeline as _timeline
from .base import CollectiveError, check_reduce
from ...device.places import GPU_INSTALL
from .common import collective_timeout, host_id
from .rendezvous import RendezvousClient, RendezvousServer

_NCCL_DTYPE = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
               "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "int64": "NCCL_INT64",
               "bool": "NCCL_UINT8"}
_NCCL_OP = {"sum": "NCCL_SUM", "prod": "NCCL_PROD", "max": "NCCL_MAX", "min": "NCCL_MIN"}


def _cupy():
    try:
        import cupy
        from cupy.cuda import nccl
    except ImportError as e:
        raise RuntimeError("the NCCL backend needs CuPy built with NCCL (%s): %s" % (GPU_INSTALL, e)) from None
    if not getattr(nccl, "available", True):
        raise RuntimeError("the NCCL backend needs CuPy built with NCCL, but cupy.cuda.nccl is not available")
    return cupy, nccl


def nccl_available():
    """True when CuPy with NCCL and at least one GPU are present."""
    try:
        cupy, _ = _cupy()
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def new_unique_id():
    _, nccl = _cupy()
    return nccl.get_unique_id()


def _nccl_dtype(nccl, dtype, what):
    name = _NCCL_DTYPE.get(str(dtype))
    if name is None:
        raise TypeError("%s: NCCL has no dtype %s (supported: %s)" % (what, dtype, ", ".join(_NCCL_DTYPE)))
    return getattr(nccl, name)


class NcclCommunicator:
    backend = "nccl"
    transport = "nccl"

    def __init__(self, comm, ring_id, rank, nranks, device_id):
        cupy, _ = _cupy()
        self._comm = comm
        self.ring_id = int(ring_id)
        self.rank = int(rank)
        self.nranks = int(nranks)
        self.device_id = int(device_id)
        with cupy.cuda.Device(self.device_id):
            self.stream = cupy.cuda.Stream(non_blocking=True)
        self._pending = []
        self._seq = 0

    def __repr__(self):
        return "<NcclCommunicator ring %d rank %d of %d on GPU %d>" % (self.ring_id, self.rank, self.nranks,
                                                                        self.device_id)

    # ------------------------------------------------------------ helpers
    def _array(self, x, what):
        cupy, _ = _cupy()
        if not isinstance(x, cupy.ndarray):
            raise TypeError("%s on ring %d: NCCL works on device arrays (cupy.ndarray), got %s; run the program "
                            "with a CUDAPlace executor" % (what, self.ring_id, type(x).__name__))
        if x.device.id != self.device_id:
            raise ValueError("%s on ring %d: the tensor lives on GPU %d but this ring's communicator is on GPU %d"
                             % (what, self.ring_id, x.device.id, self.device_id))
        return cupy.ascontiguousarray(x)

    def _out(self, out, shape, dtype, what):
        cupy, _ = _cupy()
        if out is None:
            return cupy.empty(shape, dtype)
        if not isinstance(out, cupy.ndarray) or out.shape != tuple(shape) or out.dtype != dtype \
                or not out.flags.c_contiguous or out.device.id != self.device_id:
            raise ValueError("%s: out must be a C-contiguous %s cupy array of shape %s on GPU %d"
                             % (what, dtype, list(shape), self.device_id))
        return out

    def _launch(self, what, keep, fn, use_calc_stream):
        cupy, nccl = _cupy()
        self._seq += 1
        with cupy.cuda.Device(self.device_id):
            cur = cupy.cuda.get_current_stream()
            stream = cur if use_calc_stream else self.stream
            if stream is not cur:
                stream.wait_event(cur.record())   # the inputs are produced on the calc stream
            t0 = time.perf_counter()
            try:
                fn(stream.ptr)
            except nccl.NcclError as e:
                raise CollectiveError("NCCL %s #%d on ring %d (rank %d of %d, GPU %d) failed: %s"
                                      % (what, self._seq, self.ring_id, self.rank, self.nranks, self.device_id,
                                         e)) from None
            if _timeline.enabled:  # the launch only: NCCL runs asynchronously on the stream
                _timeline.complete("collective", "nccl " + what, t0, time.perf_counter() - t0, ring=self.ring_id,
                                   rank=self.rank, nranks=self.nranks, gpu=self.device_id)
            if stream is not cur:
                # the memory pool must not hand these to the calc stream before the comm stream is done
                self._pending.append(keep)
                if len(self._pending) > 4096:
                    self.sync_comm_stream()

    # ------------------------------------------------------------ API
    def allreduce(self, x, op="sum", out=None, use_calc_stream=True):
        _, nccl = _cupy()
        what = "allreduce"
        x = self._array(x, what)
        check_reduce(x.dtype, op, "%s on ring %d" % (what, self.ring_id))
        out = self._out(out, x.shape, x.dtype, what)
        dt = _nccl_dtype(nccl, x.dtype, what)
        nop = getattr(nccl, _NCCL_OP[op])
        self._launch(what, (x, out), lambda s: self._comm.allReduce(x.data.ptr, out.data.ptr, x.size, dt, nop, s),
                     use_calc_stream)
        return out

    def broadcast(self, x, root=0, out=None, use_calc_stream=True):
        _, nccl = _cupy()
        what = "broadcast"
        x = self._array(x, what)
        if not 0 <= int(root) < self.nranks:
            raise ValueError("broadcast on ring %d: root %r is out of range for %d ranks"
                             % (self.ring_id, root, self.nranks))
        out = self._out(out, x.shape, x.dtype, what)
        dt = _nccl_dtype(nccl, x.dtype, what)
        self._launch(what, (x, out),
                     lambda s: self._comm.broadcast(x.data.ptr, out.data.ptr, x.size, dt, int(root), s),
                     use_calc_stream)
        return out

    def allgather(self, x, out=None, use_calc_stream=True):
        _, nccl = _cupy()
        what = "allgather"
        x = self._array(x, what)
        shape = (self.nranks * x.shape[0],) + x.shape[1:] if x.ndim else (self.nranks,)
        out = self._out(out, shape, x.dtype, what)
        dt = _nccl_dtype(nccl, x.dtype, what)
        self._launch(what, (x, out), lambda s: self._comm.allGather(x.data.ptr, out.data.ptr, x.size, dt, s),
                     use_calc_stream)
        return out

    def reducescatter(self, x, op="sum", out=None, use_calc_stream=True):
        _, nccl = _cupy()
        what = "reducescatter"
        x = self._array(x, what)
        check_reduce(x.dtype, op, "%s on ring %d" % (what, self.ring_id))
        if x.ndim == 0 or x.shape[0] % self.nranks:
            raise ValueError("reducescatter on ring %d: dim 0 of shape %s is not divisible by the %d ranks"
                             % (self.ring_id, list(x.shape), self.nranks))
        shape = (x.shape[0] // self.nranks,) + x.shape[1:]
        out = self._out(out, shape, x.dtype, what)
        dt = _nccl_dtype(nccl, x.dtype, what)
        nop = getattr(nccl, _NCCL_OP[op])
        self._launch(what, (x, out),
                     lambda s: self._comm.reduceScatter(x.data.ptr, out.data.ptr, out.size, dt, nop, s),
                     use_calc_stream)
        return out

    def barrier(self):
        """Return once every rank has reached the barrier (a one-element all-reduce, waited for)."""
        cupy, _ = _cupy()
        with cupy.cuda.Device(self.device_id):
            token = cupy.zeros(1, dtype="int32")
            self.allreduce(token, "sum", out=token, use_calc_stream=False)
            self.sync_comm_stream()

    def sync_calc_stream(self):
        cupy, _ = _cupy()
        with cupy.cuda.Device(self.device_id):
            cupy.cuda.get_current_stream().synchronize()

    def sync_comm_stream(self):
        """Wait until everything queued on this ring's comm stream is done."""
        self.stream.synchronize()
        self._pending = []

    def close(self):
        if self._comm is not None:
            try:
                self.stream.synchronize()
            finally:
                self._comm.destroy()
                self._comm = None
                self._pending = []


def _device_identity(cupy, device_id):
    try:
        return str(cupy.cuda.Device(device_id).pci_bus_id)
    except Exception:
        return "device-%d" % device_id


def create_nccl_communicator(comm_id, nranks, rank, device_id, timeout=None):
    """Join ring ``comm_id.ring_id`` on GPU ``device_id``: rendezvous (distinct GPUs checked), then
    ``ncclCommInitRank`` with the unique id rank 0 sent."""
    cupy, nccl = _cupy()
    what = "c_comm_init (ring %d, rank %d of %d, GPU %d)" % (comm_id.ring_id, rank, nranks, device_id)
    timeout = collective_timeout() if timeout is None else timeout
    if comm_id.backend != "nccl" or comm_id.nccl_id is None:
        raise RuntimeError("%s: the id was made for the %r backend (c_gen_nccl_id ran on a CPUPlace?), but this "
                           "executor runs on a CUDAPlace" % (what, comm_id.backend))
    ndev = cupy.cuda.runtime.getDeviceCount()
    if not 0 <= device_id < ndev:
        raise ValueError("%s: GPU %d does not exist (this process sees %d)" % (what, device_id, ndev))
    me = {"host": host_id(), "pid": os.getpid(), "device": int(device_id),
          "bus": _device_identity(cupy, device_id)}
    if nranks > 1:
        if rank == 0:
            server = RendezvousServer(comm_id, nranks, what)
            try:
                infos = server.gather("hello", me, timeout)
                seen = {}
                for r in range(nranks):
                    key = (infos[r]["host"], infos[r]["bus"])
                    if key in seen:
                        reason = ("ranks %d and %d would both drive GPU %s on host %s: give each rank its own "
                                  "device (FLAGS_selected_gpus / CUDAPlace(id))"
                                  % (seen[key], r, infos[r]["bus"], infos[r]["host"].split("/")[0]))
                        server.fail(reason)
                        raise CollectiveError("%s: %s" % (what, reason))
                    seen[key] = r
                server.reply_all({"ok": True})
            finally:
                server.close()
        else:
            client = RendezvousClient(comm_id, rank, what)
            try:
                client.exchange("hello", me, timeout)
            finally:
                client.close()
    else:
        comm_id.close()
    with cupy.cuda.Device(device_id):
        try:
            comm = nccl.NcclCommunicator(nranks, comm_id.nccl_id, rank)
        except nccl.NcclError as e:
            raise CollectiveError("%s: ncclCommInitRank failed: %s" % (what, e)) from None
    return NcclCommunicator(comm, comm_id.ring_id, rank, nranks, device_id)


def nccl_thread_group(ring_id, devices):
    """Communicators over several GPUs of this process (one per device, ``ncclCommInitAll``)."""
    cupy, nccl = _cupy()
    devices = [int(d) for d in devices]
    if len(set(devices)) != len(devices):
        raise ValueError("c_comm_init_all: devices %s list a GPU twice" % devices)
    try:
        comms = nccl.NcclCommunicator.initAll(devices)
    except nccl.NcclError as e:
        raise CollectiveError("c_comm_init_all (ring %d, GPUs %s): ncclCommInitAll failed: %s"
                              % (ring_id, devices, e)) from None
    return [NcclCommunicator(c, ring_id, i, len(devices), d) for i, (c, d) in enumerate(zip(comms, devices))]


__all__ = ["NcclCommunicator", "create_nccl_communicator", "nccl_thread_group", "nccl_available",
           "new_unique_id"]
