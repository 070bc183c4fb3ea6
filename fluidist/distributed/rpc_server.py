"""The pserver's side of the ZeroMQ transport (``rpc``): one ROUTER bound to an endpoint, which answers
malformed requests with an error and keeps serving. ``rpc.Server`` and ``rpc.Request`` are these.

A batch (``wire``: several requests of one trainer as one message) is handed to the serving loop part by
part, in order, as if each had come alone, before any later message; the loop answers each part with
``reply`` or ``error`` as it would a request, whenever it likes (a sync pserver holds a trainer's gets
until its round), and the batch's one reply leaves once every part is answered (``BatchReply``)."""
import collections
import json
import time

import zmq

from . import handshake_guard, liveness, ports, security, shm_payload, wire
from .. import timeline as _timeline
from .rpc_common import SERVER_LINGER_MS, RPCError, _tcp, deadline_seconds, split_endpoint
from .wire import WireError


class Request:
    """A received request: the peer's routing identity, the decoded message, and the file descriptor
    of the connection it came on (``peers`` maps descriptors to senders); a part of a batch also has
    the batch's ``BatchReply`` and its index there."""

    __slots__ = ("peer", "msg", "fd", "batch", "index")

    def __init__(self, peer, msg, fd=None, batch=None, index=0):
        self.peer = peer
        self.msg = msg
        self.fd = fd
        self.batch = batch
        self.index = index


class BatchReply:
    """The reply to one batch, filled part by part with ``(part header, buffers, snapshot)`` (the pair of
    ``wire.encode_part`` and whether the value may change once answered) and sent by the server once
    every part is answered. Until then a part's buffers may be views of the pserver's parameters (in
    its resident segments or not): ``detach`` copies them before a sync round writes them."""

    __slots__ = ("request", "parts", "left")

    def __init__(self, request):
        self.request = request
        self.parts = [None] * len(request.msg.parts)
        self.left = len(self.parts)

    def answer(self, index, part):
        if self.parts[index] is not None:
            raise RuntimeError("part %d of a batch was answered twice" % index)
        self.parts[index] = part
        self.left -= 1
        return self.left == 0

    def detach(self):
        """Copy the buffers of the parts answered so far (the arrays they view may change next)."""
        for i, part in enumerate(self.parts):
            if part is not None and any(type(b) is not bytes for b in part[1]):
                self.parts[i] = (part[0], [b if type(b) is bytes else bytes(memoryview(b).cast("B"))
                                           for b in part[1]], part[2])


class Server:
    """A ROUTER bound to ``endpoint``. ``recv`` returns well-formed requests only: a malformed one
    is answered with an error reply right there and the server keeps serving. With
    ``max_message_bytes``, a peer that sends a larger frame is disconnected by ZeroMQ before the
    payload is buffered (``MAXMSGSIZE``). The socket is a CURVE server of the job (``security``) and
    pings its peers; ``peers`` (a ``liveness.PeerTable``, None with heartbeats off) follows their
    connections."""

    def __init__(self, endpoint, deadline_ms=None, max_message_bytes=None):
        self.deadline_ms = deadline_ms
        self.max_message_bytes = max_message_bytes
        addr = _tcp(endpoint, for_bind=True)
        # a context of its own: close() terms it, which returns once the last replies have left
        # (or SERVER_LINGER_MS passed), so a pserver that exits right after serving loses no reply
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.linger = SERVER_LINGER_MS
        if max_message_bytes:
            self._sock.setsockopt(zmq.MAXMSGSIZE, int(max_message_bytes))
        self.peers = None
        self.guard = None
        try:
            self.secure = security.secure_server(self._sock)
            timeout = liveness.configure(self._sock)
            self.guard = handshake_guard.HandshakeGuard(self._sock, endpoint, self.secure)
            if timeout is not None:
                self.peers = liveness.PeerTable(self._sock, timeout, events=self.guard.update)
            self._sock.bind(addr)
        except zmq.ZMQError as e:
            self._release(0)
            why = "address already in use" if e.errno == zmq.EADDRINUSE else str(e)
            raise RPCError("pserver cannot listen on %s: %s" % (endpoint, why)) from None
        except BaseException:          # a bad secret or heartbeat setting: no half-made server is left
            self._release(0)
            raise
        host, port = split_endpoint(endpoint)
        if port == 0:
            port = ports.split_endpoint(self._sock.getsockopt_string(zmq.LAST_ENDPOINT).split("://", 1)[-1])[1]
        self.endpoint = self.guard.endpoint = "%s:%d" % (host, port)
        self.guard.listening_on(port)
        self._poller = zmq.Poller()
        self._poller.register(self._sock, zmq.POLLIN)
        self._poller.register(self.guard.socket, zmq.POLLIN)
        self.closed = False
        self.malformed = 0   # count of rejected messages (for tests and logs)
        self._shm_peers = set()   # peers that sent shared-memory payloads: replies go back the same way
        self._parts = collections.deque()    # parts of a received batch not yet handed to the loop
        self._open = set()                   # BatchReply objects with parts still unanswered

    def deadline(self):
        return deadline_seconds(self.deadline_ms)

    def recv(self, timeout_s):
        """The next well-formed request, or None when ``timeout_s`` passes (every wait has a deadline)."""
        if timeout_s is None:
            raise ValueError("Server.recv needs a timeout")
        if self._parts:
            return self._parts.popleft()
        until = time.monotonic() + timeout_s
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return None
            ready = dict(self._poller.poll(max(1, int(left * 1000) + 1)))
            if self._sock not in ready:    # a timeout, or the monitor's events only (connections accepted, closed)
                self._watch_connections()
                if time.monotonic() >= until:
                    return None
                continue
            try:   # never block after a poll: with CURVE and heartbeats a poll may wake without a message
                frames = self._sock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                continue
            t0 = time.perf_counter()
            peer, body = frames[0], frames[1:]
            fd = None
            self._watch_connections()  # closed descriptors first: this one may be a reused number
            if self.peers is not None:
                fd = frames[0].get(zmq.SRCFD)
            try:
                if shm_payload.is_packed(body):
                    body = shm_payload.unpack(body)
                    self._shm_peers.add(peer.bytes)
                msg = wire.decode(body)
                first = msg.parts[0] if msg.parts is not None else msg
                if first.kind in wire.REPLY_KINDS:
                    raise WireError("a %r reply is not a request" % first.kind)
            except (WireError, shm_payload.ShmError) as e:
                self.malformed += 1
                self._send(peer, wire.encode("error", wire.peek_request_id(body) if body else -1,
                                             msg="malformed request rejected by %s: %s" % (self.endpoint, e)))
                continue
            if _timeline.enabled:
                _timeline.complete("rpc", "recv %s" % msg.kind, t0, time.perf_counter() - t0, var=msg.name,
                                   peer="trainer %s" % msg.trainer, bytes=_timeline.frame_bytes(body),
                                   kind=msg.kind, trainer=msg.trainer, step=msg.step, endpoint=self.endpoint)
            if msg.parts is None:
                return Request(peer, msg, fd)
            return self._unpack_batch(Request(peer, msg, fd))

    def _unpack_batch(self, req):
        """The first part of a batch as a request; the others wait in ``_parts``."""
        batch = BatchReply(req)
        self._open.add(batch)
        self._parts.extend(Request(req.peer, part, req.fd, batch, i) for i, part in enumerate(req.msg.parts))
        return self._parts.popleft()

    def _watch_connections(self):
        """Read the socket's monitor: the liveness table follows the connections, the handshake guard
        closes those past its cap (``handshake_guard``)."""
        if self.peers is not None:
            self.peers.update()        # (it reads the events through the guard)
        elif self.guard is not None:
            self.guard.update()

    def _send(self, peer, frames):
        try:
            self._sock.send_multipart([peer] + frames, copy=False)
        except zmq.ZMQError:
            pass   # the peer is gone; ROUTER drops what it cannot route

    def shares_memory_with(self, req):
        """Whether the sender of ``req`` is on this host and gets big payloads through shared memory."""
        return req.peer.bytes in self._shm_peers

    def reply(self, req, value=None, name=None, lod=None, snapshot=False, **fields):
        """An ``ok`` reply to ``req`` (with a value for gets and prefetches). ``snapshot``: the value
        may change right after this call (a shared-memory peer then gets a copy; others must be
        given a copy by the caller). To a shared-memory peer, arrays in resident segments go as
        references (see ``shm_payload``)."""
        m = req.msg
        if req.batch is not None:
            part = wire.encode_part("ok", name if name is not None else m.name, value, m.step, lod, **fields)
            if snapshot and part[1] and req.batch.left > 1:    # sent later: the value may change meanwhile
                part = (part[0], [bytes(memoryview(b).cast("B")) for b in part[1]])
            self._answer_part(req, part + (snapshot,))
            return
        frames = wire.encode("ok", m.rid, name if name is not None else m.name, value, m.trainer, m.step, lod,
                             **fields)
        if value is not None and self.shares_memory_with(req):
            frames, _ = shm_payload.pack(frames, ("reply", req.peer.bytes, name if name is not None else m.name), None,
                                         resident_ok=not snapshot, snapshot=snapshot)
        self._send(req.peer, frames)

    def error(self, req, text):
        m = req.msg
        if req.batch is not None:
            self._answer_part(req, wire.encode_part("error", m.name, None, m.step, msg=text) + (False,))
            return
        self._send(req.peer, wire.encode("error", m.rid, m.name, None, m.trainer, m.step, msg=text))

    def _answer_part(self, req, part):
        batch = req.batch
        if batch.answer(req.index, part):
            self._open.discard(batch)
            self._send_batch(batch)

    def _send_batch(self, batch):
        """The one reply of a batch: its parts in order, big buffers through shared memory to a peer
        that reads it (each part's in the slot of its variable, as a lone reply's)."""
        req = batch.request
        peer = req.peer.bytes
        shm = self.shares_memory_with(req)
        buffers, desc = [], []
        for header, bufs, snapshot in batch.parts:
            if shm and bufs:
                packed, entries, _ = shm_payload.pack_buffers([None] + bufs, ("reply", peer, header.get("name")),
                                                              None, resident_ok=not snapshot, snapshot=snapshot)
                desc.extend([len(buffers) + i, *rest] for i, *rest in entries)
                bufs = packed[1:]
            buffers.extend(bufs)
        frames = wire.encode_batch(req.msg.rid, req.msg.trainer, req.msg.step, [(p[0], []) for p in batch.parts])
        frames.extend(buffers)
        if shm:
            frames = [shm_payload.MAGIC, json.dumps(desc, separators=(",", ":")).encode()] + frames
        self._send(req.peer, frames)

    def values_will_change(self):
        """The served arrays are about to be written in place (a sync round): batches still waiting
        for other parts keep copies of what they hold."""
        for batch in self._open:
            batch.detach()

    def _answer_open_batches(self, text):
        """Every unanswered part of every open batch gets the error ``text`` (the server is closing)."""
        for batch in list(self._open):
            for i, part in enumerate(batch.parts):
                if part is None:
                    m = batch.request.msg.parts[i]
                    batch.answer(i, wire.encode_part("error", m.name, None, m.step, msg=text) + (False,))
            self._send_batch(batch)
        self._open.clear()
        self._parts.clear()

    def _release(self, linger_ms):
        if self.peers is not None:
            self.peers.close()
        if self.guard is not None:
            self.guard.close()
        security.release_context(self._ctx)
        self._sock.close(linger_ms)
        self._ctx.term()

    def close(self, linger_ms=None):
        if not self.closed:
            self.closed = True
            if self._open:
                self._answer_open_batches("pserver %s closed before answering this part" % self.endpoint)
            self._release(SERVER_LINGER_MS if linger_ms is None else linger_ms)

