"""What every CPU communicator shares: argument checks, the reduce ops, the output pool, and the
base class that runs one collective with its sequence number, deadline and error reporting."""
import logging
import sys
import threading
import time
from typing import Optional

import numpy as np

from ... import timeline as _timeline
from .common import collective_wait_limit

logger = logging.getLogger(__name__)

REDUCE_OPS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}
_REDOP_CODE = {"sum": 1, "max": 2, "min": 3, "prod": 4}
_DTYPES = [np.dtype(d) for d in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                 "uint8", "bool")]
_DTYPE_CODE = {d: i + 1 for i, d in enumerate(_DTYPES)}
_CODE_DTYPE = {i + 1: d for i, d in enumerate(_DTYPES)}
_OPS = ["allreduce", "broadcast", "allgather", "reducescatter", "barrier"]
_OP_CODE = {n: i + 1 for i, n in enumerate(_OPS)}


class CollectiveError(RuntimeError):
    """A collective failed on this rank or on a peer (the message says which and why)."""


def check_reduce(dtype, op, what="allreduce"):
    """The ufunc for reduction ``op`` on ``dtype``; clear errors for what is not supported."""
    uf = REDUCE_OPS.get(op)
    if uf is None:
        raise ValueError("%s: unknown reduction %r (use one of %s)" % (what, op, ", ".join(REDUCE_OPS)))
    dtype = np.dtype(dtype)
    if dtype not in _DTYPE_CODE:
        raise TypeError("%s: dtype %s is not supported (supported: %s)"
                        % (what, dtype, ", ".join(d.name for d in _DTYPES)))
    if dtype == np.bool_ and op not in ("max", "min"):
        raise TypeError("%s: bool tensors support only the max and min reductions, not %r" % (what, op))
    return uf


def _check_dtype(dtype, what):
    dtype = np.dtype(dtype)
    if dtype not in _DTYPE_CODE:
        raise TypeError("%s: dtype %s is not supported (supported: %s)"
                        % (what, dtype, ", ".join(d.name for d in _DTYPES)))
    return dtype


def _describe(sig):
    """'allreduce of float32[1024] (sum)' for a signature (opcode, dtype code, count, aux)."""
    op, dcode, count, aux = (int(v) for v in sig)
    name = _OPS[op - 1] if 0 < op <= len(_OPS) else "op %d" % op
    if name == "barrier":
        return "barrier"
    d = _CODE_DTYPE.get(dcode)
    text = "%s of %s[%d]" % (name, d.name if d is not None else "dtype %d" % dcode, count)
    if name in ("allreduce", "reducescatter"):
        text += " (%s)" % next((k for k, v in _REDOP_CODE.items() if v == aux), aux)
    elif name == "broadcast":
        text += " from root %d" % aux
    return text


class OutputPool:
    """Result arrays of large collectives, reused once nothing else references them.

    A fresh 64 MB result costs as much in page faults as the all-reduce itself. A buffer handed
    out earlier is taken again only when its reference count shows that no array (nor any view of
    it, nor any buffer export) is left outside the pool, so reuse is never visible to a caller."""

    MIN_BYTES = 1 << 20

    def __init__(self, max_buffers=8, max_bytes=512 << 20):
        self.max_buffers = max_buffers
        self.max_bytes = max_bytes
        self._bufs = []    # uint8 owners, most recently used last
        probe = [np.empty(1)]
        self._free_refs = sys.getrefcount(probe[0])   # references of a buffer only the list holds

    def empty(self, shape, dtype):
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes < self.MIN_BYTES:
            return np.empty(shape, dtype)
        bufs = self._bufs
        for i in range(len(bufs)):
            if bufs[i].nbytes == nbytes and sys.getrefcount(bufs[i]) == self._free_refs:
                owner = bufs.pop(i)
                bufs.append(owner)
                return owner.view(dtype).reshape(shape)
        owner = np.empty(nbytes, np.uint8)
        bufs.append(owner)
        while len(bufs) > self.max_buffers or (len(bufs) > 1 and sum(b.nbytes for b in bufs) > self.max_bytes):
            del bufs[0]    # forgotten here; freed when its last user lets go
        return owner.view(dtype).reshape(shape)


def _contiguous(x):
    """x as a C-contiguous ndarray (np.ascontiguousarray would turn a 0-d array into 1-d)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(x.shape)


def _reduce_into(uf, srcs, dst):
    """dst = srcs[0] op srcs[1] op ... in that order. dst may be one of the sources (an in-place
    all-reduce): when it is not among the first two, the sum is built aside so it is read first."""
    if len(srcs) > 2 and any(np.may_share_memory(s, dst) for s in srcs[2:]):
        tmp = np.empty_like(dst)
        _reduce_into(uf, srcs, tmp)
        np.copyto(dst, tmp)
        return
    uf(srcs[0], srcs[1], out=dst)
    for s in srcs[2:]:
        uf(dst, s, out=dst)


class _CPUCommunicator:
    """The API and argument checks shared by the CPU transports; subclasses move the bytes."""

    backend = "cpu"
    transport: Optional[str] = None
    stream = None    # no streams on the CPU: work is done when the call returns

    def __init__(self, ring_id, rank, nranks, timeout=None):
        if not 0 <= rank < nranks:
            raise ValueError("rank %d is out of range for %d ranks" % (rank, nranks))
        self.ring_id = int(ring_id)
        self.rank = int(rank)
        self.nranks = int(nranks)
        self.timeout = collective_wait_limit(timeout)   # math.inf: live peers are waited for
        self._seq = 0
        self._broken = None
        self._lock = threading.Lock()
        self._pool = OutputPool()
        self._queued = []     # (x, reduction, out) of queue_allreduce, run at sync_comm_stream

    def __repr__(self):
        return "<%s ring %d rank %d of %d>" % (type(self).__name__, self.ring_id, self.rank, self.nranks)

    # ------------------------------------------------------------ public API
    def allreduce(self, x, op="sum", out=None, use_calc_stream=False):
        """The element-wise reduction (sum|max|min|prod) of ``x`` over all ranks. ``out`` may be
        ``x`` itself (in place) or a preallocated array; otherwise a new array is returned."""
        if self._queued:
            self.sync_comm_stream()
        x = self._flat_source(x)
        uf = check_reduce(x.dtype, op, "allreduce on ring %d" % self.ring_id)
        out = self._out(out, x.shape, x.dtype, "allreduce")
        sig = (_OP_CODE["allreduce"], _DTYPE_CODE[x.dtype], x.size, _REDOP_CODE[op])
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("allreduce", sig, self._allreduce, x.reshape(-1), self._ufunc(uf), out.reshape(-1))
        return out

    def broadcast(self, x, root=0, out=None, use_calc_stream=False):
        """Rank ``root``'s ``x`` on every rank (the others pass an array of the same shape and dtype)."""
        if self._queued:
            self.sync_comm_stream()
        x = self._flat_source(x)
        _check_dtype(x.dtype, "broadcast on ring %d" % self.ring_id)
        if not 0 <= int(root) < self.nranks:
            raise ValueError("broadcast on ring %d: root %r is out of range for %d ranks"
                             % (self.ring_id, root, self.nranks))
        out = self._out(out, x.shape, x.dtype, "broadcast")
        sig = (_OP_CODE["broadcast"], _DTYPE_CODE[x.dtype], x.size, int(root))
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("broadcast", sig, self._broadcast, x.reshape(-1), int(root), out.reshape(-1))
        return out

    def allgather(self, x, out=None, use_calc_stream=False):
        """Every rank's ``x`` concatenated along dim 0 in rank order (a scalar counts as shape [1])."""
        if self._queued:
            self.sync_comm_stream()
        x = self._flat_source(x)
        _check_dtype(x.dtype, "allgather on ring %d" % self.ring_id)
        shape = (self.nranks * x.shape[0],) + tuple(x.shape[1:]) if x.ndim else (self.nranks,)
        out = self._out(out, shape, x.dtype, "allgather")
        sig = (_OP_CODE["allgather"], _DTYPE_CODE[x.dtype], x.size, 0)
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("allgather", sig, self._allgather, x.reshape(-1), out.reshape(-1))
        return out

    def reducescatter(self, x, op="sum", out=None, use_calc_stream=False):
        """This rank's 1/n of the reduction of ``x`` over all ranks, cut along dim 0."""
        if self._queued:
            self.sync_comm_stream()
        x = self._flat_source(x)
        uf = check_reduce(x.dtype, op, "reducescatter on ring %d" % self.ring_id)
        if x.ndim == 0 or x.shape[0] % self.nranks:
            raise ValueError("reducescatter on ring %d: dim 0 of shape %s is not divisible by the %d ranks"
                             % (self.ring_id, list(x.shape), self.nranks))
        shape = (x.shape[0] // self.nranks,) + tuple(x.shape[1:])
        out = self._out(out, shape, x.dtype, "reducescatter")
        sig = (_OP_CODE["reducescatter"], _DTYPE_CODE[x.dtype], x.size, _REDOP_CODE[op])
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("reducescatter", sig, self._reducescatter, x.reshape(-1), self._ufunc(uf), out.reshape(-1))
        return out

    def barrier(self):
        """Return once every rank has called barrier."""
        if self._queued:
            self.sync_comm_stream()
        sig = (_OP_CODE["barrier"], 0, 0, 0)
        if self.nranks == 1:
            self._seq += 1
            return
        self._run("barrier", sig, self._barrier)

    def queue_allreduce(self, x, op="sum", out=None):
        """The all-reduce of ``x`` into ``out`` (a new array when None; returned), done at the next
        ``sync_comm_stream`` or collective call of this ring: the CPU's comm stream. The queued
        all-reduces of one dtype and reduction run then as one, over a fused buffer; each element is
        reduced as alone (same ranks, same order), so the results are the same to the bit. ``x`` is
        read then: the caller (the Executor's plan) lets nothing touch it before."""
        x = _contiguous(x)
        check_reduce(x.dtype, op, "allreduce on ring %d" % self.ring_id)
        out = self._out(out, x.shape, x.dtype, "allreduce")
        self._queued.append((x, op, out))
        return out

    def sync_comm_stream(self):
        """Run the all-reduces ``queue_allreduce`` queued (those of one dtype and reduction fused
        into one); other collectives are complete when they return."""
        queued, self._queued = self._queued, []
        groups = {}
        for x, op, out in queued:    # first-queued order: the same on every rank
            groups.setdefault((x.dtype.str, op), []).append((x, out))
        for (_, op), items in groups.items():
            if len(items) == 1:
                self.allreduce(items[0][0], op, out=items[0][1])
                continue
            sizes = [x.size for x, _ in items]
            buf = self._pool.empty((sum(sizes),), items[0][0].dtype)
            bounds = np.cumsum([0] + sizes)
            for (x, _), a, b in zip(items, bounds[:-1], bounds[1:]):
                buf[a:b] = x.reshape(-1)
            self.allreduce(buf, op, out=buf)
            for (_, out), a, b in zip(items, bounds[:-1], bounds[1:]):
                out.reshape(-1)[...] = buf[a:b]

    def close(self):
        self._queued = []

    # ------------------------------------------------------------ helpers
    # The collectives above are written once for every ring; a ring of other arrays (the device
    # ring's) overrides these hooks: how the source is taken, how the result array is made or
    # checked, the reduction's function on its arrays, and the single-rank copy.
    def _flat_source(self, x):
        """``x`` as a C-contiguous array of this ring's kind (any array-like, on the CPU)."""
        return _contiguous(x)

    def _out(self, out, shape, dtype, opname):
        """The result array of collective ``opname``: ``out`` once checked, a new one when None."""
        if out is None:
            return self._pool.empty(shape, dtype)
        if not isinstance(out, np.ndarray) or out.shape != tuple(shape) or out.dtype != dtype \
                or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("%s: out must be a writeable C-contiguous %s array of shape %s, got %s"
                             % (opname, np.dtype(dtype).name, list(shape),
                                "%s%s" % (getattr(out, "dtype", type(out).__name__), list(getattr(out, "shape", [])))))
        return out

    def _ufunc(self, uf):
        """The reduction ``uf`` (a NumPy ufunc of :data:`REDUCE_OPS`) as the algorithms apply it."""
        return uf

    def _solo(self, x, out, sig):
        self._seq += 1
        if out is not x:
            np.copyto(out.reshape(-1), x.reshape(-1))
        return out

    def _run(self, opname, sig, fn, *args):
        with self._lock:
            if self._broken is not None:
                raise CollectiveError("ring %d (rank %d) is unusable after an earlier failure: %s"
                                      % (self.ring_id, self.rank, self._broken))
            self._seq += 1
            seq = self._seq
            t0 = time.perf_counter()
            try:
                fn(seq, sig, *args)
                self._finish(seq, opname)
            except BaseException as e:
                self._broken = str(e)
                self._abort(seq, str(e))
                raise
            told = self.__dict__.setdefault("_told", set())
            if opname not in told:   # the story of a job: the first of each kind, nothing per step
                told.add(opname)
                logger.info("ring %d: rank %d of %d did its first %s (%.3f s)", self.ring_id, self.rank, self.nranks,
                            opname, time.perf_counter() - t0)
            if _timeline.enabled:
                _timeline.complete("collective", opname, t0, time.perf_counter() - t0, ring=self.ring_id,
                                   rank=self.rank, nranks=self.nranks, bytes=int(getattr(args[0], "nbytes", 0))
                                   if args else 0)

    def _abort(self, seq, reason):
        """Tell the peers this rank failed (best effort)."""

    def _finish(self, seq, opname):
        """Called when a collective's algorithm returned: nothing may still read the caller's arrays."""

    def _mismatch(self, seq, sig, peer, peer_sig):
        return CollectiveError("ring %d: call #%d does not match across ranks: rank %d calls %s but rank %d calls %s"
                               % (self.ring_id, seq, self.rank, _describe(sig), peer, _describe(peer_sig)))


class SoloCommunicator(_CPUCommunicator):
    """A ring of one rank: every collective is a copy (handled by the base class)."""

    transport = "solo"


# ====================================================================== shared memory
