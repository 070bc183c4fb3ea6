"""A ring of device places of one process (a data-parallel runner's places, ``c_comm_init_all``)
that reduces on their devices, as ``nccl_thread_group`` does for the GPUs of one process: the
stand-in device's NCCL, and the ring of CUDA places that share a GPU (NCCL puts one rank on a GPU;
``[CUDAPlace(0)] * 2`` on a one-GPU machine is such a ring). Values move from device to device
(on the stand-in each copy a counted ``d2d`` transfer, no synchronisation) and never through the
host. The ring is written once against the array module of its places (``xp``).

Each place's thread is rank i of a :class:`~.threads.ThreadGroup` (the barrier and the deposits of
the CPU thread ring). An all-reduce is NCCL's ring in two phases: rank r reduces chunk r of every
rank's array, in rank order 0..n-1 (the CPU thread ring's order: the same sums to the bit), the
other ranks' chunks copied onto its device first; then it copies the other ranks' reduced chunks
from their devices. The collectives are whole when they return (there is no comm stream to wait
for: ``queue_allreduce`` runs at once and ``sync_comm_stream`` has nothing left).
"""
from ...core.tensor import SelectedRows
from ...device import standin
from .threads import ThreadCommunicator, ThreadGroup


def _chunks(size, n):
    return [j * size // n for j in range(n + 1)]


class DeviceRingCommunicator(ThreadCommunicator):
    """Rank ``rank`` of a ring of device places of one process: collectives on the device arrays of
    the array module ``xp`` (the stand-in's, or CuPy)."""

    transport = "devices of one process"

    def __init__(self, group, rank, xp, backend):
        super().__init__(group, rank)
        self.xp = xp
        self.backend = backend

    def _here(self, v):
        """``v`` (an array of any device) on the current device: a peer copy when it lives on
        another one (CuPy's ``asarray``), itself when it lives here."""
        return self.xp.asarray(v)

    # ------------------------------------------------------------ public API
    # allreduce, broadcast, allgather, reducescatter and allgather_rows are the base classes'
    # (their checks, signatures and single-rank copy), on this ring's hooks and algorithms below.
    def queue_allreduce(self, x, op="sum", out=None):
        """The all-reduce, at once (a device ring has no queue to keep)."""
        return self.allreduce(x, op, out=out)

    def sync_comm_stream(self):
        """Nothing to wait for: each collective was whole when it returned."""

    # ------------------------------------------------------------ the algorithms
    def _allreduce(self, seq, sig, x, uf, out):
        n, r = self.nranks, self.rank
        deposits = self._deposit(seq, sig, (x, out), "allreduce")
        bounds = _chunks(x.size, n)
        a, b = bounds[r], bounds[r + 1]
        if b > a:
            srcs = [x[a:b] if j == r else self._here(v[0][a:b]) for j, v in enumerate(deposits)]
            if r >= 2 and self.xp.may_share_memory(out, x):     # (this rank's chunk is read after the sum starts)
                srcs[r] = srcs[r].copy()
            uf(srcs[0], srcs[1], out=out[a:b])
            for s in srcs[2:]:
                uf(out[a:b], s, out=out[a:b])
        self._barrier_wait("allreduce", seq)
        for j in range(n):
            if j != r and bounds[j + 1] > bounds[j]:
                out[bounds[j]:bounds[j + 1]] = self._here(deposits[j][1][bounds[j]:bounds[j + 1]])
        self._barrier_wait("allreduce", seq)     # (the others copy from this rank's out until here)

    def _broadcast(self, seq, sig, x, root, out):
        deposits = self._deposit(seq, sig, x, "broadcast")
        if self.rank != root:
            out[...] = self._here(deposits[root])
        elif out is not x:
            out[...] = x
        self._barrier_wait("broadcast", seq)

    def _allgather(self, seq, sig, x, out):
        deposits = self._deposit(seq, sig, x, "allgather")
        size = x.size
        for j, v in enumerate(deposits):
            out[j * size:(j + 1) * size] = v if j == self.rank else self._here(v)
        self._barrier_wait("allgather", seq)

    def _reducescatter(self, seq, sig, x, uf, out):
        deposits = self._deposit(seq, sig, x, "reducescatter")
        a, b = _chunks(x.size, self.nranks)[self.rank:self.rank + 2]
        if b > a:
            srcs = [x[a:b] if j == self.rank else self._here(v[a:b]) for j, v in enumerate(deposits)]
            uf(srcs[0], srcs[1], out=out)
            for s in srcs[2:]:
                uf(out, s, out=out)
        self._barrier_wait("reducescatter", seq)

    def _allgather_rows(self, seq, sig, x, got):
        deposits = self._deposit(seq, sig, x, "allgather_rows")
        heights = {v.height for v in deposits}
        if len(heights) > 1:
            raise ValueError("ring %d: allgather_rows of SelectedRows of heights %s" % (self.ring_id, sorted(heights)))
        got.append(SelectedRows(self.xp.concatenate([self._here(v.rows).reshape(-1) for v in deposits]),
                                self.xp.concatenate([self._here(v.value) for v in deposits]), x.height))
        self._barrier_wait("allgather_rows", seq)

    # ------------------------------------------------------------ helpers
    def _flat_source(self, x):
        if not isinstance(x, self.xp.ndarray):
            raise TypeError("ring %d of %s places takes device arrays, got %s"
                            % (self.ring_id, self.backend, type(x).__name__))
        return x if x.flags.c_contiguous else self.xp.ascontiguousarray(x)

    def _out(self, out, shape, dtype, opname):
        what = "%s on ring %d" % (opname, self.ring_id)
        if out is None:
            return self.xp.empty(shape, dtype=dtype)
        if not isinstance(out, self.xp.ndarray) or tuple(out.shape) != tuple(shape) or out.dtype != dtype \
                or not out.flags.c_contiguous:
            raise ValueError("%s: out must be a C-contiguous %s device array of shape %s, got %r"
                             % (what, dtype, list(shape), out))
        return out

    def _ufunc(self, uf):
        return getattr(self.xp, uf.__name__)

    def _value_dtype(self, value):
        return value.dtype

    def _solo(self, x, out, sig):
        self._seq += 1
        if out is not x:
            out[...] = x
        return out


def device_thread_group(nranks, ring_id, xp, backend, timeout=None):
    """The communicators of a ring of ``nranks`` device places of this process (arrays of the array
    module ``xp``), one per thread."""
    group = ThreadGroup(nranks, ring_id, timeout)
    return [DeviceRingCommunicator(group, r, xp, backend) for r in range(nranks)]


def standin_thread_group(nranks, ring_id, timeout=None):
    """The ring of ``nranks`` stand-in places of this process."""
    return device_thread_group(nranks, ring_id, standin.xp, "standin", timeout)


def shared_gpu_thread_group(nranks, ring_id, timeout=None):
    """The ring of ``nranks`` CUDA places of this process on one GPU (where NCCL, one rank per GPU,
    cannot serve): reduced through CuPy on that GPU."""
    from ...device.places import cupy_module
    return device_thread_group(nranks, ring_id, cupy_module(), "cuda", timeout)


def gpu_thread_group(ring_id, devices, timeout=None):
    """The ring of CUDA places of this process on GPUs ``devices`` (one per place): NCCL's
    (``ncclCommInitAll``) when each GPU is listed once, else the ring through CuPy on the GPU they
    share (NCCL takes one rank per GPU)."""
    devices = [int(d) for d in devices]
    if len(set(devices)) == len(devices):
        from .nccl import nccl_thread_group
        return nccl_thread_group(ring_id, devices)
    return shared_gpu_thread_group(len(devices), ring_id, timeout)


__all__ = ["DeviceRingCommunicator", "device_thread_group", "standin_thread_group", "shared_gpu_thread_group",
           "gpu_thread_group"]
