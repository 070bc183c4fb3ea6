"""The pserver's side of the ZeroMQ transport (``rpc``): one ROUTER bound to an endpoint, which answers
malformed requests with an error and keeps serving. ``rpc.Server`` and ``rpc.Request`` are these."""
import time

import zmq

from . import handshake_guard, liveness, ports, security, shm_payload, wire
from .. import timeline as _timeline
from .rpc_common import SERVER_LINGER_MS, RPCError, _tcp, deadline_seconds, split_endpoint
from .wire import WireError


class Request:
    """A received request: the peer's routing identity, the decoded message, and the file descriptor
    of the connection it came on (``peers`` maps descriptors to senders)."""

    __slots__ = ("peer", "msg", "fd")

    def __init__(self, peer, msg, fd=None):
        self.peer = peer
        self.msg = msg
        self.fd = fd


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

    def deadline(self):
        return deadline_seconds(self.deadline_ms)

    def recv(self, timeout_s):
        """The next well-formed request, or None when ``timeout_s`` passes (every wait has a deadline)."""
        if timeout_s is None:
            raise ValueError("Server.recv needs a timeout")
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
                if msg.kind in ("ok", "error"):
                    raise WireError("a %r reply is not a request" % msg.kind)
            except (WireError, shm_payload.ShmError) as e:
                self.malformed += 1
                self._send(peer, wire.encode("error", wire.peek_request_id(body) if body else -1,
                                             msg="malformed request rejected by %s: %s" % (self.endpoint, e)))
                continue
            if _timeline.enabled:
                _timeline.complete("rpc", "recv %s" % msg.kind, t0, time.perf_counter() - t0, var=msg.name,
                                   peer="trainer %s" % msg.trainer, bytes=_timeline.frame_bytes(body),
                                   kind=msg.kind, trainer=msg.trainer, step=msg.step, endpoint=self.endpoint)
            return Request(peer, msg, fd)

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
        frames = wire.encode("ok", m.rid, name if name is not None else m.name, value, m.trainer, m.step, lod,
                             **fields)
        if value is not None and self.shares_memory_with(req):
            frames, _ = shm_payload.pack(frames, ("reply", req.peer.bytes, name if name is not None else m.name), None,
                                         resident_ok=not snapshot, snapshot=snapshot)
        self._send(req.peer, frames)

    def error(self, req, text):
        m = req.msg
        self._send(req.peer, wire.encode("error", m.rid, m.name, None, m.trainer, m.step, msg=text))

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
            self._release(SERVER_LINGER_MS if linger_ms is None else linger_ms)
