"""The CPU collective backend: communicators for processes (and threads) without GPUs.

Three transports behind one API (``allreduce``, ``broadcast``, ``allgather``, ``reducescatter``,
``barrier``):

* :class:`ShmCommunicator` -- ranks on one host share a memory segment (a ``/dev/shm`` file that
  rank 0 creates and unlinks as soon as everyone has mapped it, so nothing is left behind even if a
  process is killed). Large all-reduces are a chunked, pipelined reduce-scatter + all-gather: each
  rank reduces its own 1/n of every chunk and the others copy the result, so every rank moves about
  2x the tensor through memory, in cache-sized chunks; small ones are a direct exchange (one
  round). Ranks signal progress through counters in the segment; a waiting rank spins briefly
  (yielding the core), then sleeps in growing steps, so an idle wait costs no CPU.
* :class:`ZmqCommunicator` -- ranks on different hosts (or when ``FLUIDIST_COLLECTIVE_TRANSPORT=zmq``)
  exchange messages over ZeroMQ: a pipelined ring reduce-scatter + all-gather for large tensors, a
  direct exchange for small ones.
* :class:`ThreadCommunicator` -- several places used as threads of one process
  (``c_comm_init_all``): shared Python buffers and a barrier that names the missing threads.

Every wait has a deadline (``FLUIDIST_COLLECTIVE_TIMEOUT``, default 300 s); the error names the
ring, the rank(s) missing and the op, e.g. ``rank 1 of ring 0 did not reach allreduce #12 within
30 s``. A rank that dies is noticed (its pid, on the same host) or timed out; a rank that fails tells
the others, which then fail with its reason instead of waiting out the deadline.

Results are bit-identical on every rank: each element is reduced once, in rank order 0..n-1 on the
shared-memory and thread transports, and then copied to everyone.
"""
import mmap
import os
import platform
import socket
import struct
import sys
import threading
import time

import numpy as np
import zmq

from ... import timeline as _timeline

from .rendezvous import (CollectiveTimeout, RendezvousClient, RendezvousServer, _bind_random, _new_socket,
                         _plural, collective_timeout, host_id, pid_alive, split_endpoint)

REDUCE_OPS = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}
_REDOP_CODE = {"sum": 1, "max": 2, "min": 3, "prod": 4}
_DTYPES = [np.dtype(d) for d in ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                                 "uint8", "bool")]
_DTYPE_CODE = {d: i + 1 for i, d in enumerate(_DTYPES)}
_CODE_DTYPE = {i + 1: d for i, d in enumerate(_DTYPES)}
_OPS = ["allreduce", "broadcast", "allgather", "reducescatter", "barrier"]
_OP_CODE = {n: i + 1 for i, n in enumerate(_OPS)}

TRANSPORT_ENV = "FLUIDIST_COLLECTIVE_TRANSPORT"  # auto (default) | shm | zmq
SHM_DIR = "/dev/shm"
SHM_PREFIX = "fluidist-coll-"


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
    transport = None
    stream = None    # no streams on the CPU: work is done when the call returns

    def __init__(self, ring_id, rank, nranks, timeout=None):
        if not 0 <= rank < nranks:
            raise ValueError("rank %d is out of range for %d ranks" % (rank, nranks))
        self.ring_id = int(ring_id)
        self.rank = int(rank)
        self.nranks = int(nranks)
        self.timeout = collective_timeout() if timeout is None else float(timeout)
        self._seq = 0
        self._broken = None
        self._lock = threading.Lock()
        self._pool = OutputPool()

    def __repr__(self):
        return "<%s ring %d rank %d of %d>" % (type(self).__name__, self.ring_id, self.rank, self.nranks)

    # ------------------------------------------------------------ public API
    def allreduce(self, x, op="sum", out=None, use_calc_stream=False):
        """The element-wise reduction (sum|max|min|prod) of ``x`` over all ranks. ``out`` may be
        ``x`` itself (in place) or a preallocated array; otherwise a new array is returned."""
        x = _contiguous(x)
        uf = check_reduce(x.dtype, op, "allreduce on ring %d" % self.ring_id)
        out = self._check_out(out, x.shape, x.dtype, "allreduce")
        sig = (_OP_CODE["allreduce"], _DTYPE_CODE[x.dtype], x.size, _REDOP_CODE[op])
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("allreduce", sig, self._allreduce, x.reshape(-1), uf, out.reshape(-1))
        return out

    def broadcast(self, x, root=0, out=None, use_calc_stream=False):
        """Rank ``root``'s ``x`` on every rank (the others pass an array of the same shape and dtype)."""
        x = _contiguous(x)
        _check_dtype(x.dtype, "broadcast on ring %d" % self.ring_id)
        if not 0 <= int(root) < self.nranks:
            raise ValueError("broadcast on ring %d: root %r is out of range for %d ranks"
                             % (self.ring_id, root, self.nranks))
        out = self._check_out(out, x.shape, x.dtype, "broadcast")
        sig = (_OP_CODE["broadcast"], _DTYPE_CODE[x.dtype], x.size, int(root))
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("broadcast", sig, self._broadcast, x.reshape(-1), int(root), out.reshape(-1))
        return out

    def allgather(self, x, out=None, use_calc_stream=False):
        """Every rank's ``x`` concatenated along dim 0 in rank order (a scalar counts as shape [1])."""
        x = _contiguous(x)
        _check_dtype(x.dtype, "allgather on ring %d" % self.ring_id)
        shape = (self.nranks * x.shape[0],) + x.shape[1:] if x.ndim else (self.nranks,)
        out = self._check_out(out, shape, x.dtype, "allgather")
        sig = (_OP_CODE["allgather"], _DTYPE_CODE[x.dtype], x.size, 0)
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("allgather", sig, self._allgather, x.reshape(-1), out.reshape(-1))
        return out

    def reducescatter(self, x, op="sum", out=None, use_calc_stream=False):
        """This rank's 1/n of the reduction of ``x`` over all ranks, cut along dim 0."""
        x = _contiguous(x)
        uf = check_reduce(x.dtype, op, "reducescatter on ring %d" % self.ring_id)
        if x.ndim == 0 or x.shape[0] % self.nranks:
            raise ValueError("reducescatter on ring %d: dim 0 of shape %s is not divisible by the %d ranks"
                             % (self.ring_id, list(x.shape), self.nranks))
        shape = (x.shape[0] // self.nranks,) + x.shape[1:]
        out = self._check_out(out, shape, x.dtype, "reducescatter")
        sig = (_OP_CODE["reducescatter"], _DTYPE_CODE[x.dtype], x.size, _REDOP_CODE[op])
        if self.nranks == 1:
            return self._solo(x, out, sig)
        self._run("reducescatter", sig, self._reducescatter, x.reshape(-1), uf, out.reshape(-1))
        return out

    def barrier(self):
        """Return once every rank has called barrier."""
        sig = (_OP_CODE["barrier"], 0, 0, 0)
        if self.nranks == 1:
            self._seq += 1
            return
        self._run("barrier", sig, self._barrier)

    def sync_comm_stream(self):
        """Nothing to wait for on the CPU: collectives are complete when they return."""

    def close(self):
        pass

    # ------------------------------------------------------------ helpers
    def _solo(self, x, out, sig):
        self._seq += 1
        if out is not x:
            np.copyto(out.reshape(-1), x.reshape(-1))
        return out

    def _check_out(self, out, shape, dtype, what):
        if out is None:
            return self._pool.empty(shape, dtype)
        if not isinstance(out, np.ndarray) or out.shape != tuple(shape) or out.dtype != dtype \
                or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("%s: out must be a writeable C-contiguous %s array of shape %s, got %s"
                             % (what, np.dtype(dtype).name, list(shape),
                                "%s%s" % (getattr(out, "dtype", type(out).__name__), list(getattr(out, "shape", [])))))
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
_S = 4                      # slots in flight per rank (pipelining depth; 8 measured no better)
_CTRL = 1024                # control bytes per rank
_POSTED, _REDUCED, _GATHERED, _ABORT, _PID = 0, 8, 16, 24, 32   # int64 word offsets in a rank's control
_HDR = 40                   # headers: 8 words per slot from word 40
_ERR_BYTE = 40 * 8 + _S * 64  # error text of a failed rank
_ERR_LEN = _CTRL - _ERR_BYTE
_MAGIC_LEN = 64


def shm_chunk_bytes(nranks):
    """Bytes each rank reduces per pipeline step: 512 KiB, or the env ``FLUIDIST_SHM_CHUNK_BYTES``."""
    raw = os.environ.get("FLUIDIST_SHM_CHUNK_BYTES")
    c = int(raw) if raw else 512 * 1024
    return max(4096, c // 64 * 64)


class ShmLayout:
    """Byte offsets in the segment: a magic token, per-rank control blocks, per-rank stage slots.

    Stage slot (rank r, slot s) has ``nranks`` parts of ``chunk`` bytes: in the chunked algorithms
    rank r writes there the parts the others reduce, and its own reduced part in part r."""

    def __init__(self, nranks, chunk):
        self.nranks = nranks
        self.chunk = chunk
        self.stage = nranks * chunk
        self.ctrl = 4096
        self.data = -(-(self.ctrl + nranks * _CTRL) // 4096) * 4096
        self.size = self.data + nranks * _S * self.stage

    def ctrl_word(self, rank):
        return (self.ctrl + rank * _CTRL) // 8

    def stage_off(self, rank, slot):
        return self.data + (rank * _S + slot) * self.stage


def shm_supported():
    """Shared memory needs /dev/shm and x86's ordered stores (counters are plain 8-byte writes)."""
    return os.path.isdir(SHM_DIR) and platform.machine().lower() in ("x86_64", "amd64", "i686", "x86")


class ShmCommunicator(_CPUCommunicator):
    transport = "shm"

    def __init__(self, ring_id, rank, nranks, mm, layout, pids, timeout=None):
        super().__init__(ring_id, rank, nranks, timeout)
        self._mm = mm
        self.layout = layout
        self._pids = list(pids)
        self._c = memoryview(mm).cast("q")
        self._u8 = np.frombuffer(mm, dtype=np.uint8)
        self._cw = [layout.ctrl_word(j) for j in range(nranks)]
        self._my = self._cw[rank]
        self._peers = tuple(j for j in range(nranks) if j != rank)
        self._t = int(self._c[self._my + _POSTED])
        self._views = {}
        self._c[self._my + _PID] = os.getpid()
        # small tensors: one exchange round; each rank reduces the whole tensor
        self._direct_max = min(layout.stage, int(os.environ.get("FLUIDIST_SHM_DIRECT_BYTES", 128 * 1024)))

    def close(self):
        if self._mm is None:
            return
        self._views = {}
        self._u8 = None
        self._c.release()
        try:
            self._mm.close()
        except BufferError:   # a view handed out earlier is still alive; the OS unmaps at exit
            pass
        self._mm = None

    # ------------------------------------------------------------ primitives
    def _slot(self, j, slot, dtype):
        """Rank j's stage slot as a typed array (cached)."""
        key = (j, slot, dtype.char)
        v = self._views.get(key)
        if v is None:
            off = self.layout.stage_off(j, slot)
            v = self._views[key] = self._u8[off:off + self.layout.stage].view(dtype)
        return v

    def _next_step(self):
        self._t += 1
        return self._t

    def _post(self, which, t):
        self._c[self._my + which] = t

    def _post_done(self, t):
        c, my = self._c, self._my
        c[my + _REDUCED] = t
        c[my + _GATHERED] = t

    def _write_header(self, slot, sig, seq):
        c, i = self._c, self._my + _HDR + 8 * slot
        c[i] = seq
        c[i + 1], c[i + 2], c[i + 3], c[i + 4] = sig

    def _check_headers(self, slot, sig, seq, ranks):
        c = self._c
        for j in ranks:
            i = self._cw[j] + _HDR + 8 * slot
            got = (c[i + 1], c[i + 2], c[i + 3], c[i + 4])
            if c[i] != seq or got != sig:
                if c[i] != seq:
                    raise CollectiveError("ring %d: rank %d is at call #%d (%s) while rank %d is at call #%d (%s)"
                                          % (self.ring_id, j, c[i], _describe(got), self.rank, seq, _describe(sig)))
                raise self._mismatch(seq, sig, j, got)

    def _wait(self, which, target, ranks, seq, opname, t0):
        c, cw = self._c, self._cw
        for j in ranks:
            if c[cw[j] + which] < target:
                self._wait_slow(which, target, ranks, seq, opname, t0)
                return

    def _wait_slow(self, which, target, ranks, seq, opname, t0):
        c, cw = self._c, self._cw
        start = time.monotonic()
        deadline = start + self.timeout
        spin_until = start + 0.002
        next_check = start + 0.05
        nap = 2e-5
        sched_yield = getattr(os, "sched_yield", None)
        while True:
            for j in ranks:
                if c[cw[j] + which] < target:
                    break
            else:
                return
            now = time.monotonic()
            if now < spin_until:
                if sched_yield is not None:
                    sched_yield()
                continue
            if now >= next_check:
                self._check_peers(ranks, which, target, seq, opname, t0, now >= deadline)
                next_check = now + 0.05
            time.sleep(nap)
            nap = min(nap * 2, 1e-3)

    def _check_peers(self, ranks, which, target, seq, opname, t0, expired):
        c, cw = self._c, self._cw
        for j in range(self.nranks):
            if j != self.rank and c[cw[j] + _ABORT]:
                raise CollectiveError("rank %d of ring %d failed in call #%d, so %s #%d cannot finish: %s"
                                      % (j, self.ring_id, c[cw[j] + _ABORT], opname, seq, self._error_text(j)))
        pending = [j for j in ranks if c[cw[j] + which] < target]
        for j in pending:
            if not pid_alive(self._pids[j]):
                raise CollectiveError("rank %d (pid %d) of ring %d exited before finishing %s #%d"
                                      % (j, self._pids[j], self.ring_id, opname, seq))
        if expired:
            late = [j for j in pending if c[cw[j] + _POSTED] < t0]
            verb = "did not reach" if late == pending else "did not finish"
            raise CollectiveTimeout("%s of ring %d %s %s #%d within %g s (seen from rank %d)"
                                    % (_plural("rank", pending), self.ring_id, verb, opname, seq, self.timeout,
                                       self.rank))

    def _error_text(self, j):
        off = self.layout.ctrl + j * _CTRL + _ERR_BYTE
        return bytes(self._u8[off:off + _ERR_LEN]).split(b"\0", 1)[0].decode("utf-8", "replace")

    def _abort(self, seq, reason):
        if self._mm is None:
            return
        off = self.layout.ctrl + self.rank * _CTRL + _ERR_BYTE
        text = reason.encode("utf-8", "replace")[:_ERR_LEN - 1]
        self._u8[off:off + _ERR_LEN] = 0
        self._u8[off:off + len(text)] = np.frombuffer(text, np.uint8)
        self._c[self._my + _ABORT] = seq

    def _free(self, t, seq, opname, t0):
        """Wait until every peer is done with what this rank wrote to slot ``t % S`` at step t - S."""
        if t > _S:
            self._wait(_GATHERED, t - _S, self._peers, seq, opname, t0)

    # ------------------------------------------------------------ algorithms
    def _allreduce(self, seq, sig, x, uf, out):
        if x.nbytes <= self._direct_max:
            return self._allreduce_direct(seq, sig, x, uf, out)
        return self._allreduce_chunked(seq, sig, x, uf, out)

    def _allreduce_direct(self, seq, sig, x, uf, out):
        r, n, L = self.rank, self.nranks, x.size
        t = self._next_step()
        slot = t % _S
        self._free(t, seq, "allreduce", t)
        self._slot(r, slot, x.dtype)[:L] = x
        self._write_header(slot, sig, seq)
        self._post(_POSTED, t)
        self._wait(_POSTED, t, self._peers, seq, "allreduce", t)
        self._check_headers(slot, sig, seq, self._peers)
        _reduce_into(uf, [x if j == r else self._slot(j, slot, x.dtype)[:L] for j in range(n)], out)
        self._post_done(t)

    def _allreduce_chunked(self, seq, sig, x, uf, out, scatter_only=False):
        """Reduce-scatter + all-gather in pipeline steps. Step k: every rank copies piece k of the
        blocks the others own into its slot (A), reduces piece k of its own block from everyone's
        slots into out and into part r of its slot (B), then copies the others' reduced pieces (C).
        Iteration k runs A(k), C(k-1), B(k): each wait has a phase of slack behind it (B(k) waits for
        the peers' A(k), done before their C(k-1); C(k-1) for their B(k-1), done before their A(k)).
        A deeper lag (A(k), B(k-1), C(k-2)) measured ~5% slower here: more data out of cache."""
        r, n, L = self.rank, self.nranks, x.size
        ce = self.layout.chunk // x.itemsize
        bounds = [j * L // n for j in range(n + 1)]
        nsteps = max(1, -(-max(bounds[j + 1] - bounds[j] for j in range(n)) // ce))
        peers = self._peers
        dtype = x.dtype
        t0 = self._t + 1
        name = "reducescatter" if scatter_only else "allreduce"
        in_place = np.may_share_memory(x, out)

        def piece(j, k):
            a = bounds[j] + k * ce
            return a, min(a + ce, bounds[j + 1])

        def stage(k, t):
            slot = t % _S
            self._free(t, seq, name, t0)
            buf = self._slot(r, slot, dtype)
            for j in peers:
                a, b = piece(j, k)
                if b > a:
                    buf[j * ce:j * ce + b - a] = x[a:b]
            if k == 0:
                self._write_header(slot, sig, seq)
            self._post(_POSTED, t)

        def reduce(k, t):
            slot = t % _S
            self._wait(_POSTED, t, peers, seq, name, t0)
            if k == 0:
                self._check_headers(slot, sig, seq, peers)
            a, b = piece(r, k)
            if b > a:
                m = b - a
                srcs = [x[a:b] if j == r else self._slot(j, slot, dtype)[r * ce:r * ce + m] for j in range(n)]
                if scatter_only:
                    _reduce_into(uf, srcs, out[a - bounds[r]:b - bounds[r]])
                elif in_place and r >= 2:    # out[a:b] is x[a:b], needed after the first two sources
                    dst = self._slot(r, slot, dtype)[r * ce:r * ce + m]
                    _reduce_into(uf, srcs, dst)
                    out[a:b] = dst
                else:
                    # reduce into this rank's own memory, then publish: writing the shared slot in
                    # one copy is cheaper than from inside the reduction (the peers hold its lines)
                    _reduce_into(uf, srcs, out[a:b])
                    self._slot(r, slot, dtype)[r * ce:r * ce + m] = out[a:b]
            if scatter_only:
                self._post_done(t)
            else:
                self._post(_REDUCED, t)

        def gather(k, t):
            slot = t % _S
            self._wait(_REDUCED, t, peers, seq, name, t0)
            for j in peers:
                a, b = piece(j, k)
                if b > a:
                    out[a:b] = self._slot(j, slot, dtype)[j * ce:j * ce + b - a]
            self._post(_GATHERED, t)

        first = self._t + 1
        self._t += nsteps
        for k in range(nsteps + 1):
            if k < nsteps:
                stage(k, first + k)
            if k >= 1 and not scatter_only:
                gather(k - 1, first + k - 1)
            if k < nsteps:
                reduce(k, first + k)

    def _reducescatter(self, seq, sig, x, uf, out):
        self._allreduce_chunked(seq, sig, x, uf, out, scatter_only=True)

    def _allgather(self, seq, sig, x, out):
        r, n, L = self.rank, self.nranks, x.size
        ce = self.layout.stage // x.itemsize
        nsteps = max(1, -(-L // ce))
        t0 = self._t + 1
        out[r * L:(r + 1) * L] = x
        for k in range(nsteps):
            t = self._next_step()
            slot = t % _S
            a, b = k * ce, min(L, (k + 1) * ce)
            self._free(t, seq, "allgather", t0)
            self._slot(r, slot, x.dtype)[:b - a] = x[a:b]
            if k == 0:
                self._write_header(slot, sig, seq)
            self._post(_POSTED, t)
            self._wait(_POSTED, t, self._peers, seq, "allgather", t0)
            if k == 0:
                self._check_headers(slot, sig, seq, self._peers)
            for j in self._peers:
                out[j * L + a:j * L + b] = self._slot(j, slot, x.dtype)[:b - a]
            self._post_done(t)

    def _broadcast(self, seq, sig, x, root, out):
        r, L = self.rank, x.size
        ce = self.layout.stage // x.itemsize
        nsteps = max(1, -(-L // ce))
        t0 = self._t + 1
        for k in range(nsteps):
            t = self._next_step()
            slot = t % _S
            a, b = k * ce, min(L, (k + 1) * ce)
            if r == root:
                self._free(t, seq, "broadcast", t0)
                self._slot(r, slot, x.dtype)[:b - a] = x[a:b]
                if k == 0:
                    self._write_header(slot, sig, seq)
                self._post(_POSTED, t)
            else:
                self._post(_POSTED, t)
                self._wait(_POSTED, t, (root,), seq, "broadcast", t0)
                if k == 0:
                    self._check_headers(slot, sig, seq, (root,))
                out[a:b] = self._slot(root, slot, x.dtype)[:b - a]
            self._post_done(t)
        if r == root and out is not x:
            np.copyto(out, x)

    def _barrier(self, seq, sig):
        t = self._next_step()
        slot = t % _S
        self._free(t, seq, "barrier", t)
        self._write_header(slot, sig, seq)
        self._post(_POSTED, t)
        self._wait(_POSTED, t, self._peers, seq, "barrier", t)
        self._check_headers(slot, sig, seq, self._peers)
        self._post_done(t)


# ====================================================================== ZeroMQ
_HEAD = struct.Struct("<qiiiiiiqq")   # seq, phase, step, chunk, src, opcode, dtype, count, aux
_ABORT_PHASE = 99
_ZMQ_CHUNK = 1 << 20                # bytes per pipelined message
_ZMQ_DIRECT = 64 * 1024             # allreduce below this: every rank sends everything to everyone
_ZMQ_ZERO_COPY = 64 * 1024          # larger messages are sent from the array itself (tracked)


class ZmqCommunicator(_CPUCommunicator):
    transport = "zmq"

    def __init__(self, ring_id, rank, nranks, pull, addrs, pids=None, same_host=None, timeout=None):
        super().__init__(ring_id, rank, nranks, timeout)
        self._pull = pull
        self._push = {}
        for j, addr in enumerate(addrs):
            if j != rank:
                s = _new_socket(zmq.PUSH)
                s.setsockopt(zmq.SNDHWM, 0)
                s.connect(addr)
                self._push[j] = s
        self._addrs = list(addrs)
        self._pids = list(pids or [])
        self._same_host = list(same_host or [False] * nranks)
        self._box = {}
        self._trackers = {}
        self._chunk = int(os.environ.get("FLUIDIST_ZMQ_CHUNK_BYTES", _ZMQ_CHUNK))

    def close(self):
        for s in self._push.values():
            s.close()
        self._push = {}
        if self._pull is not None:
            self._pull.close()
            self._pull = None

    # ------------------------------------------------------------ messages
    def _send(self, j, seq, sig, phase, step, chunk, data, block=None):
        """Queue a message to rank j. Large arrays are sent without a copy: ZeroMQ reads them while
        this rank goes on, so their trackers are kept (by ``block``) and waited for before that
        block is overwritten (:meth:`_sent`) and before the collective returns."""
        head = _HEAD.pack(seq, phase, step, chunk, self.rank, *sig)
        if isinstance(data, np.ndarray) and data.nbytes >= _ZMQ_ZERO_COPY:
            tracker = self._push[j].send_multipart([head, data], copy=False, track=True)
            self._trackers.setdefault(block, []).append((tracker, j))
        else:
            self._push[j].send_multipart([head, data], copy=True)

    def _sent(self, seq, opname, block=None):
        """Wait until ZeroMQ is done with the arrays sent from ``block`` (every block when None)."""
        keys = list(self._trackers) if block is None else [block]
        for key in keys:
            for tracker, j in self._trackers.pop(key, ()):
                if tracker.done:
                    continue
                try:
                    tracker.wait(self.timeout)
                except zmq.NotDone:
                    raise CollectiveTimeout("rank %d of ring %d did not take the data of %s #%d within %g s "
                                            "(seen from rank %d)" % (j, self.ring_id, opname, seq, self.timeout,
                                                                     self.rank)) from None

    def _finish(self, seq, opname):
        self._sent(seq, opname)

    def _recv(self, j, seq, sig, phase, step, chunk, opname):
        """The payload (a read-only buffer) of message (seq, phase, step, chunk) from rank j."""
        key = (j, seq, phase, step, chunk)
        hit = self._box.pop(key, None)
        if hit is not None:
            return self._checked(hit, j, seq, sig)
        start = time.monotonic()
        deadline = start + self.timeout
        next_check = start + 0.25
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CollectiveTimeout("rank %d of ring %d did not reach %s #%d within %g s (seen from rank %d, "
                                        "waiting for its data)" % (j, self.ring_id, opname, seq, self.timeout,
                                                                   self.rank))
            if self._pull.poll(min(left, 0.25) * 1000):
                frames = self._pull.recv_multipart(copy=False)
                if len(frames) != 2 or len(frames[0].bytes) != _HEAD.size:
                    continue
                h = _HEAD.unpack(frames[0].bytes)
                if h[1] == _ABORT_PHASE:
                    raise CollectiveError("rank %d of ring %d failed in call #%d, so %s #%d cannot finish: %s"
                                          % (h[4], self.ring_id, h[0], opname, seq,
                                             frames[1].bytes.decode("utf-8", "replace")))
                got = (h[4], h[0], h[1], h[2], h[3])
                if got == key:
                    return self._checked((h, frames[1]), j, seq, sig)
                if h[0] < seq and h[0] != 0:
                    continue    # left over from a call that already failed here
                self._box[got] = (h, frames[1])
            elif time.monotonic() >= next_check:
                next_check = time.monotonic() + 0.25
                if self._pids and self._same_host[j] and not pid_alive(self._pids[j]):
                    raise CollectiveError("rank %d (pid %d) of ring %d exited before finishing %s #%d"
                                          % (j, self._pids[j], self.ring_id, opname, seq))

    def _checked(self, msg, j, seq, sig):
        h, frame = msg
        peer_sig = tuple(h[5:9])
        if peer_sig != tuple(sig):
            raise self._mismatch(seq, sig, j, peer_sig)
        return frame.buffer

    def _abort(self, seq, reason):
        self._trackers = {}
        head = _HEAD.pack(seq, _ABORT_PHASE, 0, 0, self.rank, 0, 0, 0, 0)
        for s in self._push.values():
            try:
                s.send_multipart([head, reason.encode("utf-8", "replace")[:2000]], flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    def _arr(self, buf, dtype):
        return np.frombuffer(buf, dtype=dtype)

    def _chunks(self, a, b, ce):
        return [(s, min(s + ce, b)) for s in range(a, b, ce)]

    # ------------------------------------------------------------ algorithms
    def _allreduce(self, seq, sig, x, uf, out):
        n, r = self.nranks, self.rank
        if x.nbytes <= _ZMQ_DIRECT:
            for j in self._push:
                self._send(j, seq, sig, 1, 0, 0, x)
            srcs = [x if j == r else self._arr(self._recv(j, seq, sig, 1, 0, 0, "allreduce"), x.dtype)
                    for j in range(n)]
            _reduce_into(uf, srcs, out)
            return
        self._ring_reduce_scatter(seq, sig, x, uf, out, "allreduce")
        self._ring_all_gather(seq, sig, out, "allreduce")

    def _bounds(self, L):
        n = self.nranks
        return [j * L // n for j in range(n + 1)]

    def _ring_reduce_scatter(self, seq, sig, x, uf, acc, opname):
        """Pipelined ring: afterwards ``acc`` holds, in block r, the reduction of block r over all
        ranks (other blocks of ``acc`` hold partial sums). Step s sends block r-s-1 and receives
        block r-s-2, chunk by chunk, forwarding each reduced chunk at once."""
        n, r = self.nranks, self.rank
        right, left = (r + 1) % n, (r - 1) % n
        bounds = self._bounds(x.size)
        ce = max(1, self._chunk // x.itemsize)
        b0 = (r - 1) % n
        for c, (a, b) in enumerate(self._chunks(bounds[b0], bounds[b0 + 1], ce)):
            self._send(right, seq, sig, 2, 0, c, x[a:b], b0)
        for s in range(n - 1):
            blk = (r - s - 2) % n
            for c, (a, b) in enumerate(self._chunks(bounds[blk], bounds[blk + 1], ce)):
                got = self._arr(self._recv(left, seq, sig, 2, s, c, opname), x.dtype)
                uf(got, x[a:b], out=acc[a:b])
                if s < n - 2:
                    self._send(right, seq, sig, 2, s + 1, c, acc[a:b], blk)

    def _ring_all_gather(self, seq, sig, out, opname):
        """Pipelined ring all-gather of the blocks (block r of ``out`` is this rank's)."""
        n, r = self.nranks, self.rank
        right, left = (r + 1) % n, (r - 1) % n
        bounds = self._bounds(out.size)
        ce = max(1, self._chunk // out.itemsize)
        for c, (a, b) in enumerate(self._chunks(bounds[r], bounds[r + 1], ce)):
            self._send(right, seq, sig, 3, 0, c, out[a:b])
        for s in range(n - 1):
            blk = (r - s - 1) % n
            self._sent(seq, opname, blk)    # what the reduce-scatter sent from blk must be out first
            for c, (a, b) in enumerate(self._chunks(bounds[blk], bounds[blk + 1], ce)):
                got = self._arr(self._recv(left, seq, sig, 3, s, c, opname), out.dtype)
                out[a:b] = got
                if s < n - 2:
                    self._send(right, seq, sig, 3, s + 1, c, out[a:b])

    def _reducescatter(self, seq, sig, x, uf, out):
        acc = np.empty_like(x)
        self._ring_reduce_scatter(seq, sig, x, uf, acc, "reducescatter")
        a, b = self._bounds(x.size)[self.rank:self.rank + 2]
        if b > a:
            out[:] = acc[a:b]
        if x.size == 0:
            # nothing moved: still meet once so that mismatched calls are noticed
            self._exchange_empty(seq, sig, "reducescatter")

    def _exchange_empty(self, seq, sig, opname):
        for j in self._push:
            self._send(j, seq, sig, 5, 0, 0, b"")
        for j in self._push:
            self._recv(j, seq, sig, 5, 0, 0, opname)

    def _allgather(self, seq, sig, x, out):
        n, r, L = self.nranks, self.rank, x.size
        out[r * L:(r + 1) * L] = x
        if L == 0:
            return self._exchange_empty(seq, sig, "allgather")
        self._ring_all_gather_blocks(seq, sig, out, L, "allgather")

    def _ring_all_gather_blocks(self, seq, sig, out, L, opname):
        n, r = self.nranks, self.rank
        right, left = (r + 1) % n, (r - 1) % n
        ce = max(1, self._chunk // out.itemsize)
        for c, (a, b) in enumerate(self._chunks(r * L, (r + 1) * L, ce)):
            self._send(right, seq, sig, 4, 0, c, out[a:b])
        for s in range(n - 1):
            blk = (r - s - 1) % n
            for c, (a, b) in enumerate(self._chunks(blk * L, (blk + 1) * L, ce)):
                out[a:b] = self._arr(self._recv(left, seq, sig, 4, s, c, opname), out.dtype)
                if s < n - 2:
                    self._send(right, seq, sig, 4, s + 1, c, out[a:b])

    def _broadcast(self, seq, sig, x, root, out):
        """Chain root -> root+1 -> ... in chunks, each rank forwarding a chunk as soon as it has it."""
        n, r, L = self.nranks, self.rank, x.size
        pos = (r - root) % n
        right, left = (r + 1) % n, (r - 1) % n
        ce = max(1, self._chunk // x.itemsize)
        chunks = self._chunks(0, L, ce) or [(0, 0)]
        for c, (a, b) in enumerate(chunks):
            if pos == 0:
                self._send(right, seq, sig, 6, 0, c, x[a:b])
            else:
                got = self._arr(self._recv(left, seq, sig, 6, 0, c, "broadcast"), x.dtype)
                out[a:b] = got
                if pos < n - 1:
                    self._send(right, seq, sig, 6, 0, c, out[a:b])
        if pos == 0 and out is not x:
            np.copyto(out, x)

    def _barrier(self, seq, sig):
        self._exchange_empty(seq, sig, "barrier")


# ====================================================================== threads of one process
class ThreadGroup:
    """What the threads of a single-process ring share: per-rank deposits (two sets, used by
    alternate calls, so a fast thread may start the next call while others still read) and a
    barrier that names the threads that did not arrive."""

    def __init__(self, nranks, ring_id, timeout=None):
        self.nranks = nranks
        self.ring_id = ring_id
        self.timeout = collective_timeout() if timeout is None else float(timeout)
        self.deposits = [[None] * nranks, [None] * nranks]
        self.results = [None, None]
        self.arrived = [0] * nranks
        self.failed = None
        self.cond = threading.Condition()

    def wait(self, rank, k, opname, seq):
        """Barrier number k of thread ``rank``."""
        with self.cond:
            self.arrived[rank] = k
            self.cond.notify_all()
            ok = self.cond.wait_for(lambda: self.failed is not None or min(self.arrived) >= k, self.timeout)
            if self.failed is not None:
                raise CollectiveError("ring %d: %s" % (self.ring_id, self.failed))
            if not ok:
                missing = [j for j in range(self.nranks) if self.arrived[j] < k]
                msg = "%s of ring %d did not reach %s #%d within %g s (seen from thread rank %d)" % (
                    _plural("thread rank", missing), self.ring_id, opname, seq, self.timeout, rank)
                self.failed = msg
                self.cond.notify_all()
                raise CollectiveTimeout(msg)

    def fail(self, reason):
        with self.cond:
            if self.failed is None:
                self.failed = reason
            self.cond.notify_all()


class ThreadCommunicator(_CPUCommunicator):
    """Rank ``rank`` of a :class:`ThreadGroup`; call it from that rank's thread only."""

    transport = "threads"

    def __init__(self, group, rank):
        super().__init__(group.ring_id, rank, group.nranks, group.timeout)
        self.group = group
        self._k = 0

    def _barrier_wait(self, opname, seq):
        self._k += 1
        self.group.wait(self.rank, self._k, opname, seq)

    def _deposit(self, seq, sig, value, opname):
        g, p = self.group, seq % 2
        g.deposits[p][self.rank] = (seq, sig, value)
        self._barrier_wait(opname, seq)
        for j in range(self.nranks):
            s, psig, _ = g.deposits[p][j]
            if s != seq or psig != sig:
                raise self._mismatch(seq, sig, j, psig)
        return [g.deposits[p][j][2] for j in range(self.nranks)]

    def _abort(self, seq, reason):
        self.group.fail("thread rank %d failed in call #%d: %s" % (self.rank, seq, reason))

    def _allreduce(self, seq, sig, x, uf, out):
        g, p, n, r = self.group, seq % 2, self.nranks, self.rank
        if r == 0:
            g.results[p] = np.empty_like(x)
        xs = self._deposit(seq, sig, x, "allreduce")
        res = g.results[p]
        a, b = r * x.size // n, (r + 1) * x.size // n
        if b > a:
            _reduce_into(uf, [v[a:b] for v in xs], res[a:b])
        self._barrier_wait("allreduce", seq)
        np.copyto(out, res)

    def _reducescatter(self, seq, sig, x, uf, out):
        xs = self._deposit(seq, sig, x, "reducescatter")
        a, b = self.rank * x.size // self.nranks, (self.rank + 1) * x.size // self.nranks
        if b > a:
            _reduce_into(uf, [v[a:b] for v in xs], out)

    def _allgather(self, seq, sig, x, out):
        xs = self._deposit(seq, sig, x, "allgather")
        L = x.size
        for j, v in enumerate(xs):
            out[j * L:(j + 1) * L] = v

    def _broadcast(self, seq, sig, x, root, out):
        xs = self._deposit(seq, sig, x, "broadcast")
        if out is not xs[root]:
            np.copyto(out, xs[root])

    def _barrier(self, seq, sig):
        self._deposit(seq, sig, None, "barrier")


def thread_group(nranks, ring_id, timeout=None):
    """The communicators of a single-process ring of ``nranks`` threads, one per thread."""
    g = ThreadGroup(nranks, ring_id, timeout)
    return [ThreadCommunicator(g, r) for r in range(nranks)]


# ====================================================================== set-up
def _transport_choice():
    v = os.environ.get(TRANSPORT_ENV, "auto").strip().lower() or "auto"
    if v not in ("auto", "shm", "zmq"):
        raise ValueError("%s must be auto, shm or zmq, got %r" % (TRANSPORT_ENV, v))
    return v


def _local_ip_towards(addr):
    """This host's IP on the route to ``tcp://ip:port`` (no packet is sent)."""
    host, port = split_endpoint(addr.replace("tcp://", ""), "rendezvous address")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, port))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def create_cpu_communicator(comm_id, nranks, rank, endpoint=None, timeout=None):
    """Join ring ``comm_id.ring_id`` as ``rank`` of ``nranks``: rendezvous with rank 0, then shared
    memory when every rank is on this host (and the segment is proven shared), else ZeroMQ."""
    what = "c_comm_init (ring %d, rank %d of %d)" % (comm_id.ring_id, rank, nranks)
    timeout = collective_timeout() if timeout is None else timeout
    if not 0 <= rank < nranks:
        raise ValueError("%s: rank is out of range" % what)
    if nranks == 1:
        comm_id.close()
        return SoloCommunicator(comm_id.ring_id, 0, 1, timeout)
    host = split_endpoint(endpoint)[0] if endpoint else _local_ip_towards(comm_id.rendezvous)
    pull = _new_socket(zmq.PULL)
    pull.setsockopt(zmq.RCVHWM, 0)
    keep_pull = False
    try:
        addr = _bind_random(pull, host)
        me = {"host": host_id(), "pid": os.getpid(), "addr": addr, "shm": shm_supported(),
              "transport": _transport_choice()}
        if rank == 0:
            comm = _rank0_setup(comm_id, nranks, me, pull, what, timeout)
        else:
            comm = _rankk_setup(comm_id, nranks, rank, me, pull, what, timeout)
        keep_pull = comm.transport == "zmq"
        return comm
    finally:
        if not keep_pull:
            pull.close()


def _rank0_setup(comm_id, nranks, me, pull, what, timeout):
    server = RendezvousServer(comm_id, nranks, what)
    try:
        infos = server.gather("hello", me, timeout)
        table = [infos[j] for j in range(nranks)]
        wishes = {t["transport"] for t in table}
        same_host = all(t["host"] == me["host"] for t in table)
        want_shm = "zmq" not in wishes and same_host and all(t["shm"] for t in table)
        if "shm" in wishes and not want_shm:
            reason = ("%s=shm asks for shared memory, but the ranks are not all on one host with /dev/shm "
                      "(hosts: %s)" % (TRANSPORT_ENV, ", ".join(sorted({t['host'] for t in table}))))
            server.fail(reason)
            raise CollectiveError("%s: %s" % (what, reason))
        pids = [t["pid"] for t in table]
        if want_shm:
            layout = ShmLayout(nranks, shm_chunk_bytes(nranks))
            path = os.path.join(SHM_DIR, "%s%s-r%d" % (SHM_PREFIX, comm_id.token, comm_id.ring_id))
            mm = _create_segment(path, layout.size, comm_id.token)
            try:
                server.reply_all({"transport": "shm", "path": path, "size": layout.size,
                                  "chunk": layout.chunk, "table": table})
                acks = server.gather("attached", {"ok": True}, timeout)
            finally:
                try:
                    os.unlink(path)   # everyone has mapped it (or failed): the name is not needed any more
                except FileNotFoundError:
                    pass
            bad = {j: a.get("error") for j, a in acks.items() if not a.get("ok")}
            if not bad:
                server.reply_all({"go": "shm"})
                return ShmCommunicator(comm_id.ring_id, 0, nranks, mm, layout, pids, timeout)
            mm.close()
            if "shm" in wishes:
                reason = "shared memory segment %s could not be mapped by %s" % (
                    path, "; ".join("rank %d: %s" % kv for kv in bad.items()))
                server.fail(reason)
                raise CollectiveError("%s: %s" % (what, reason))
            server.reply_all({"go": "zmq"})
        else:
            server.reply_all({"transport": "zmq", "table": table})
        return ZmqCommunicator(comm_id.ring_id, 0, nranks, pull, [t["addr"] for t in table], pids,
                               [t["host"] == me["host"] for t in table], timeout)
    except Exception as e:
        try:
            server.fail(str(e))
        except Exception:
            pass
        raise
    finally:
        server.close()


def _rankk_setup(comm_id, nranks, rank, me, pull, what, timeout):
    client = RendezvousClient(comm_id, rank, what)
    try:
        reply = client.exchange("hello", me, timeout)
        table = reply["table"]
        pids = [t["pid"] for t in table]
        same = [t["host"] == me["host"] for t in table]
        if reply["transport"] == "shm":
            mm, error = None, None
            try:
                mm = _open_segment(reply["path"], int(reply["size"]), comm_id.token)
            except Exception as e:  # report it to rank 0, which decides
                error = "%s: %s" % (type(e).__name__, e)
            go = client.exchange("attached", {"ok": error is None, "error": error}, timeout)
            if go.get("go") == "shm":
                layout = ShmLayout(nranks, int(reply["chunk"]))
                return ShmCommunicator(comm_id.ring_id, rank, nranks, mm, layout, pids, timeout)
            if mm is not None:
                mm.close()
        return ZmqCommunicator(comm_id.ring_id, rank, nranks, pull, [t["addr"] for t in table], pids, same,
                               timeout)
    finally:
        client.close()


def _create_segment(path, size, token):
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, size)
        mm = mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    magic = token.encode()[:_MAGIC_LEN]
    mm[:len(magic)] = magic
    return mm


def _open_segment(path, size, token):
    fd = os.open(path, os.O_RDWR)
    try:
        if os.fstat(fd).st_size != size:
            raise CollectiveError("segment %s has %d bytes, expected %d" % (path, os.fstat(fd).st_size, size))
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    magic = token.encode()[:_MAGIC_LEN]
    if mm[:len(magic)] != magic:
        mm.close()
        raise CollectiveError("segment %s does not hold this ring's token: not the same shared memory" % path)
    return mm
