"""The thread transport: several places of one process as the ranks of a ring (``c_comm_init_all``)."""
import math
import threading

import numpy as np

from ...core.tensor import SelectedRows
from .base import _DTYPE_CODE, _OP_CODE, CollectiveError, _CPUCommunicator, _reduce_into
from .common import CollectiveTimeout, collective_wait_limit, describe_seconds, plural as _plural


class ThreadGroup:
    """What the threads of a single-process ring share: per-rank deposits (two sets, used by
    alternate calls, so a fast thread may start the next call while others still read) and a
    barrier that names the threads that did not arrive."""

    def __init__(self, nranks, ring_id, timeout=None):
        self.nranks = nranks
        self.ring_id = ring_id
        self.timeout = collective_wait_limit(timeout)
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
            ok = self.cond.wait_for(lambda: self.failed is not None or min(self.arrived) >= k,
                                        None if math.isinf(self.timeout) else self.timeout)
            if self.failed is not None:
                raise CollectiveError("ring %d: %s" % (self.ring_id, self.failed))
            if not ok:
                missing = [j for j in range(self.nranks) if self.arrived[j] < k]
                msg = "%s of ring %d did not reach %s #%d within %s (seen from thread rank %d)" % (
                    _plural("thread rank", missing), self.ring_id, opname, seq, describe_seconds(self.timeout), rank)
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
        if out.size == x.size and out.ctypes.data == x.ctypes.data:
            return self._allreduce_in_place(seq, sig, x, uf)
        if r == 0:
            g.results[p] = np.empty_like(x)
        xs = self._deposit(seq, sig, x, "allreduce")
        res = g.results[p]
        a, b = r * x.size // n, (r + 1) * x.size // n
        if b > a:
            _reduce_into(uf, [v[a:b] for v in xs], res[a:b])
        self._barrier_wait("allreduce", seq)
        np.copyto(out, res)

    def _allreduce_in_place(self, seq, sig, x, uf):
        """In place (a fused gradient buffer): rank r reduces chunk r of every rank's array into its
        own chunk r, then copies the other ranks' reduced chunks from their arrays. No rank writes a
        region another reads in the same phase, and the last barrier keeps every array unchanged
        until all ranks have copied from it. Half the memory traffic of reducing into a shared result."""
        n, r = self.nranks, self.rank
        xs = self._deposit(seq, sig, x, "allreduce")
        bounds = [j * x.size // n for j in range(n + 1)]
        a, b = bounds[r], bounds[r + 1]
        if b > a:
            _reduce_into(uf, [v[a:b] for v in xs], x[a:b])
        self._barrier_wait("allreduce", seq)
        for j in range(n):
            if j != r and bounds[j + 1] > bounds[j]:
                x[bounds[j]:bounds[j + 1]] = xs[j][bounds[j]:bounds[j + 1]]
        self._barrier_wait("allreduce", seq)

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

    def allgather_rows(self, x):
        """Every rank's SelectedRows ``x`` as one SelectedRows, rows and values in rank order (the sum
        of row-sparse gradients: repeated rows add up when it is merged)."""
        if not isinstance(x, SelectedRows):
            raise TypeError("allgather_rows on ring %d takes a SelectedRows, got %s" % (self.ring_id, type(x).__name__))
        dtype_code = _DTYPE_CODE.get(self._value_dtype(x.value), 0)
        sig = (_OP_CODE["allgather"], dtype_code, -1, 0)   # row counts differ by rank
        got = []
        self._run("allgather_rows", sig, self._allgather_rows, x, got)
        return got[0]

    def _value_dtype(self, value):
        """The dtype of a SelectedRows' values (read without moving them: a device ring's override)."""
        return np.asarray(value).dtype

    def _allgather_rows(self, seq, sig, x, got):
        xs = self._deposit(seq, sig, x, "allgather_rows")
        heights = {v.height for v in xs}
        if len(heights) > 1:
            raise CollectiveError("ring %d: allgather_rows of SelectedRows of heights %s" % (self.ring_id, sorted(heights)))
        got.append(SelectedRows(np.concatenate([np.asarray(v.rows) for v in xs]),
                                np.concatenate([np.asarray(v.value) for v in xs]), x.height))


def thread_group(nranks, ring_id, timeout=None):
    """The communicators of a single-process ring of ``nranks`` threads, one per thread."""
    g = ThreadGroup(nranks, ring_id, timeout)
    return [ThreadCommunicator(g, r) for r in range(nranks)]
