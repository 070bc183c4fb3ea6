"""The ZeroMQ transport: ranks on several hosts exchange messages in a pipelined ring (see ``cpu.py``).

Its sockets are CURVE sockets of the job with heartbeats: a rank whose connection has been down for
half of ``FLUIDIST_PEER_TIMEOUT`` (killed, stopped, unreachable) fails the collective with its name,
while a slow rank is waited for. Frames for later calls wait in a bounded box: at most
``MAX_CALLS_AHEAD`` calls ahead and ``FLUIDIST_ZMQ_BOX_BYTES`` bytes (default 1 GiB), from ranks of
the ring; frames of calls already finished are dropped.
"""
import os
import struct
import time

import numpy as np
import zmq

from .. import liveness
from .base import CollectiveError, _CPUCommunicator, _reduce_into
from .common import CollectiveTimeout, describe_seconds, new_socket as _new_socket, pid_alive

_HEAD = struct.Struct("<qiiiiiiqq")   # seq, phase, step, chunk, src, opcode, dtype, count, aux
_ABORT_PHASE = 99
_ZMQ_CHUNK = 1 << 20                # bytes per pipelined message
_ZMQ_DIRECT = 64 * 1024             # allreduce below this: every rank sends everything to everyone
_ZMQ_ZERO_COPY = 64 * 1024          # larger messages are sent from the array itself (tracked)
MAX_CALLS_AHEAD = 4096              # a peer may be this many calls ahead (broadcast roots never wait)
BOX_BYTES_ENV = "FLUIDIST_ZMQ_BOX_BYTES"
_PHASES = frozenset([1, 2, 3, 4, 5, 6])


class ZmqCommunicator(_CPUCommunicator):
    transport = "zmq"

    def __init__(self, ring_id, rank, nranks, pull, addrs, pids=None, same_host=None, timeout=None):
        super().__init__(ring_id, rank, nranks, timeout)
        self._pull = pull
        self._push = {}
        self._links = {}
        peer_timeout = liveness.peer_timeout()
        self._silence = liveness.SilenceWatch(peer_timeout) if peer_timeout is not None else None
        for j, addr in enumerate(addrs):
            if j != rank:
                s = _new_socket(zmq.PUSH, role="client")
                s.setsockopt(zmq.SNDHWM, 0)
                if peer_timeout is not None:
                    self._links[j] = liveness.Link(s, peer_timeout)
                s.connect(addr)
                self._push[j] = s
        self._addrs = list(addrs)
        self._pids = list(pids or [])
        self._same_host = list(same_host or [False] * nranks)
        self._box = {}
        self._box_bytes = 0
        self._box_limit = int(os.environ.get(BOX_BYTES_ENV, 1 << 30))
        self._trackers = {}
        self._chunk = int(os.environ.get("FLUIDIST_ZMQ_CHUNK_BYTES", _ZMQ_CHUNK))

    def close(self):
        for link in self._links.values():
            link.close()
        self._links = {}
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
                give_up = time.monotonic() + self.timeout
                while not tracker.done:
                    try:
                        tracker.wait(min(0.25, max(0.0, give_up - time.monotonic())))
                    except zmq.NotDone:
                        self._check_links(seq, opname)
                        if time.monotonic() >= give_up:
                            raise CollectiveTimeout("rank %d of ring %d did not take the data of %s #%d within %s "
                                                    "(seen from rank %d)" % (j, self.ring_id, opname, seq,
                                                                             describe_seconds(self.timeout),
                                                                             self.rank)) from None

    def _finish(self, seq, opname):
        self._sent(seq, opname)

    def _recv(self, j, seq, sig, phase, step, chunk, opname):
        """The payload (a read-only buffer) of message (seq, phase, step, chunk) from rank j."""
        key = (j, seq, phase, step, chunk)
        hit = self._box.pop(key, None)
        if hit is not None:
            self._box_bytes -= len(hit[1])
            return self._checked(hit, j, seq, sig)
        start = time.monotonic()
        deadline = start + self.timeout
        next_check = start + 0.25
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CollectiveTimeout("rank %d of ring %d did not reach %s #%d within %s (seen from rank %d, "
                                        "waiting for its data)" % (j, self.ring_id, opname, seq,
                                                                   describe_seconds(self.timeout), self.rank))
            if self._pull.poll(min(left, 0.25) * 1000):
                try:   # never block after a poll: with CURVE and heartbeats a poll may wake without a message
                    frames = self._pull.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    continue
                if len(frames) != 2 or len(frames[0].bytes) != _HEAD.size:
                    continue
                h = _HEAD.unpack(frames[0].bytes)
                src = h[4]
                if not 0 <= src < self.nranks or src == self.rank:
                    continue    # not a rank of this ring
                if h[1] == _ABORT_PHASE:
                    raise CollectiveError("rank %d of ring %d failed in call #%d, so %s #%d cannot finish: %s"
                                          % (src, self.ring_id, h[0], opname, seq,
                                             frames[1].bytes[:2000].decode("utf-8", "replace")))
                got = (src, h[0], h[1], h[2], h[3])
                if got == key:
                    return self._checked((h, frames[1]), j, seq, sig)
                if h[0] < seq or h[0] > seq + MAX_CALLS_AHEAD or h[1] not in _PHASES:
                    continue    # left over from a call that already failed here, or no call of ours
                self._keep(got, h, frames[1], opname, seq)
            elif time.monotonic() >= next_check:
                next_check = time.monotonic() + 0.25
                if self._pids and self._same_host[j] and not pid_alive(self._pids[j]):
                    raise CollectiveError("rank %d (pid %d) of ring %d exited before finishing %s #%d"
                                          % (j, self._pids[j], self.ring_id, opname, seq))
                self._check_links(seq, opname)

    def _keep(self, key, h, frame, opname, seq):
        """Box a frame of a later step or call, within the box's bounds."""
        old = self._box.pop(key, None)
        if old is not None:
            self._box_bytes -= len(old[1])
        size = len(frame)
        if self._box_bytes + size > self._box_limit:
            raise CollectiveError("ring %d: rank %d sent %d bytes for later calls than %s #%d, more than the %d this rank "
                                  "keeps (%s)" % (self.ring_id, key[0], self._box_bytes + size, opname, seq,
                                                  self._box_limit, BOX_BYTES_ENV))
        self._box[key] = (h, frame)
        self._box_bytes += size

    def _check_links(self, seq, opname):
        """Raise naming a rank whose connection the heartbeats say is gone, or that refuses our key."""
        for j, link in self._links.items():
            link.update()
            refused = link.refused()
            if refused is not None:
                raise CollectiveError("ring %d: cannot reach rank %d (%s, %d times): every rank needs the same job secret "
                                      "(FLUIDIST_JOB_SECRET / FLUIDIST_SECRET_FILE, the launcher's --secret_file)"
                                      % (self.ring_id, j, refused, link.refusals))
            dead = link.dead_for()
            if dead:
                raise CollectiveError("rank %d of ring %d is gone: its connection closed %.1f s ago and did not come "
                                      "back (the process died or closed it), so %s #%d cannot finish (seen from rank %d)"
                                      % (j, self.ring_id, dead, opname, seq, self.rank))
            silent = link.silent_for()
            if self._silence.check(j, silent, lambda: "rank %d of ring %d (seen from rank %d)"
                                   % (j, self.ring_id, self.rank)):
                raise CollectiveError("rank %d of ring %d is connected but has been silent for %.1f s (stopped, frozen, "
                                      "or cut off; %s), so %s #%d cannot finish (seen from rank %d)"
                                      % (j, self.ring_id, silent, liveness.describe_timeout(link.timeout),
                                         opname, seq, self.rank))

    def _checked(self, msg, j, seq, sig):
        h, frame = msg
        peer_sig = tuple(h[5:9])
        if peer_sig != tuple(sig):
            raise self._mismatch(seq, sig, j, peer_sig)
        return frame.buffer

    def _abort(self, seq, reason):
        self._trackers = {}
        self._box, self._box_bytes = {}, 0
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
        r, L = self.rank, x.size
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
