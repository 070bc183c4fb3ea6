"""The shared-memory transport: ranks on one host share a ``/dev/shm`` segment (see ``cpu.py``).

A rank maps only the segment its own ring names (``cpu.shm_path``: the job's prefix, the session
token, the ring), only if it is a regular file of this user that nobody else may read or write, and
only if it holds the ring's token. Peers are watched through their pids: one that exits, or that
stays stopped (``SIGSTOP``) for ``FLUIDIST_PEER_TIMEOUT``, fails the collective with its name.
"""
import errno
import mmap
import os
import platform
import stat
import time

import numpy as np

from .base import CollectiveError, _CPUCommunicator, _describe, _reduce_into
from .. import liveness
from .common import CollectiveTimeout, describe_seconds, pid_alive, pid_state, plural as _plural

SHM_DIR = "/dev/shm"
SHM_PREFIX = "fluidist-coll-"
_S = 4                      # slots in flight per rank (pipelining depth; 8 measured no better)
_CTRL = 1024                # control bytes per rank
_POSTED, _REDUCED, _GATHERED, _ABORT, _PID = 0, 8, 16, 24, 32   # int64 word offsets in a rank's control
_HDR = 40                   # headers: 8 words per slot from word 40
_ERR_BYTE = 40 * 8 + _S * 64  # error text of a failed rank
_ERR_LEN = _CTRL - _ERR_BYTE
_MAGIC_LEN = 64


def shm_chunk_bytes():
    """Bytes each rank reduces per pipeline step, whatever the number of ranks: 512 KiB, or the env
    ``FLUIDIST_SHM_CHUNK_BYTES`` (rounded down to 64 bytes, at least 4 KiB)."""
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
        self._stopped_since = {}          # rank -> when its process was first seen stopped
        self._peer_timeout = liveness.peer_timeout()
        self._silence = liveness.SilenceWatch(self._peer_timeout) if self._peer_timeout is not None else None
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
            self._check_stopped(j, opname, seq)
        if expired:
            late = [j for j in pending if c[cw[j] + _POSTED] < t0]
            verb = "did not reach" if late == pending else "did not finish"
            raise CollectiveTimeout("%s of ring %d %s %s #%d within %s (seen from rank %d)"
                                    % (_plural("rank", pending), self.ring_id, verb, opname, seq,
                                       describe_seconds(self.timeout), self.rank))

    def _check_stopped(self, j, opname, seq):
        """A peer stopped (SIGSTOP, a debugger) is warned about after ``FLUIDIST_PEER_WARN`` s and taken for
        hung after the peer timeout."""
        if self._peer_timeout is None:
            return
        now = time.monotonic()
        if pid_state(self._pids[j]) not in ("T", "t"):
            self._stopped_since.pop(j, None)
            return
        since = self._stopped_since.setdefault(j, now)
        if self._silence.check(j, now - since, lambda: "rank %d (pid %d, stopped) of ring %d, seen from rank %d"
                               % (j, self._pids[j], self.ring_id, self.rank)):
            raise CollectiveError("rank %d (pid %d) of ring %d has been stopped for %.1f s (SIGSTOP or a debugger), so "
                                  "%s #%d cannot finish (%s)" % (j, self._pids[j], self.ring_id, now - since, opname,
                                                                 seq, liveness.describe_timeout(self._peer_timeout)))

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
        r, L = self.rank, x.size
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


class SegmentSpaceError(OSError):
    """The shared-memory file system has no room for a segment (a container's /dev/shm is often 64 MiB)."""


def _no_room(path, size, free):
    where = os.path.dirname(path)
    return SegmentSpaceError(
        errno.ENOSPC, "%s has %.1f MiB free, a shared-memory segment of %.1f MiB does not fit (a container's "
        "default %s is 64 MiB: give it more, e.g. docker --shm-size, or keep the traffic on TCP)"
        % (where, free / 2.0 ** 20, size / 2.0 ** 20, where))


def free_bytes(directory):
    """Bytes an unprivileged process may still allocate in ``directory``'s file system (None: unknown)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def create_segment(path, size, token=None):
    """Create ``path`` (a new file, mode 0600) of ``size`` bytes and map it read-write; ``token``, if
    given, is written at its start. On failure the file is closed and removed.

    The pages are allocated now (``posix_fallocate``): on a full tmpfs this raises
    ``SegmentSpaceError`` here, where a sparse file would kill the process with SIGBUS at its first
    write past the free space."""
    free = free_bytes(os.path.dirname(path))
    if free is not None and free < size:
        raise _no_room(path, size, free)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise _no_room(path, size, free_bytes(os.path.dirname(path)) or 0) from None
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            os.ftruncate(fd, size)     # a file system without fallocate: sparse, as before
        mm = mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    if token:
        magic = token.encode()[:_MAGIC_LEN]
        mm[:len(magic)] = magic
    return mm


def open_segment(path, size, token):
    """Map rank 0's segment ``path``: a regular file (no symbolic link) in ``SHM_DIR`` with this job's
    prefix, owned by this user, mode 0600, of ``size`` bytes, holding ``token``."""
    if os.path.dirname(path) != SHM_DIR or not os.path.basename(path).startswith(SHM_PREFIX):
        raise CollectiveError("segment %r is not a fluidist segment in %s" % (path, SHM_DIR))
    fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
            raise CollectiveError("segment %s is not a private file of this user (uid %d, mode %04o; expected uid %d, "
                                  "mode 0600)" % (path, st.st_uid, stat.S_IMODE(st.st_mode), os.getuid()))
        if st.st_size != size:
            raise CollectiveError("segment %s has %d bytes, expected %d" % (path, st.st_size, size))
        mm = mmap.mmap(fd, size)
    finally:
        os.close(fd)
    magic = token.encode()[:_MAGIC_LEN]
    if mm[:len(magic)] != magic:
        mm.close()
        raise CollectiveError("segment %s does not hold this ring's token: not the same shared memory" % path)
    return mm
