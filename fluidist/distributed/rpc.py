"""ZeroMQ transport between trainers and parameter servers.

A pserver binds one ROUTER socket; a trainer talks to each pserver through one DEALER socket per
endpoint and thread (``get_client``), reused for every request. Requests carry ids; a client waits
for the reply with that id with ``poll`` and a deadline, so a dead or unreachable peer ends in an
``RPCTimeout`` that names the endpoint and what was awaited, never in a hang (no REQ/REP: a REQ
socket whose peer died waits forever).

Deadlines: ``FLAGS_rpc_deadline`` (milliseconds, Paddle's name, default 180000), read when a wait
starts, or an explicit ``deadline_ms`` given to the client or server.

Messages are ``wire`` messages: a JSON header plus raw array buffers, sent and received without
copying the payload.
"""
import itertools
import os
import socket as _socket
import threading
import time

import zmq

from . import shm_payload, wire
from .. import timeline as _timeline
from .wire import WireError

DEFAULT_DEADLINE_MS = 180000
SERVER_LINGER_MS = 3000   # a closing server still delivers its last replies for this long


class RPCError(RuntimeError):
    """A request failed: the peer answered with an error, or the exchange broke the protocol."""


class RPCTimeout(RPCError, TimeoutError):
    """A deadline passed while waiting for a peer."""


def deadline_seconds(deadline_ms=None):
    """The deadline in seconds: ``deadline_ms`` if given, else ``FLAGS_rpc_deadline`` (ms), else 180 s."""
    if deadline_ms is None:
        raw = os.environ.get("FLAGS_rpc_deadline", "").strip()
        if raw:
            try:
                deadline_ms = float(raw)
            except ValueError:
                raise ValueError("FLAGS_rpc_deadline must be a number of milliseconds, got %r" % raw) from None
        else:
            deadline_ms = DEFAULT_DEADLINE_MS
    deadline_ms = float(deadline_ms)
    if deadline_ms <= 0:
        raise ValueError("the rpc deadline must be > 0 ms, got %g" % deadline_ms)
    return deadline_ms / 1000.0


def split_endpoint(endpoint):
    """``"host:port"`` -> (host, port), with an error naming a malformed endpoint."""
    if not isinstance(endpoint, str) or ":" not in endpoint:
        raise ValueError("endpoint %r must be 'host:port' (e.g. '127.0.0.1:6174')" % (endpoint,))
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port)
    except ValueError:
        raise ValueError("endpoint %r: port %r is not a number" % (endpoint, port)) from None
    if not host or not 0 <= port <= 65535:
        raise ValueError("endpoint %r must be 'host:port' with a port in 0..65535" % (endpoint,))
    return host, port


def _tcp(endpoint, for_bind=False):
    host, port = split_endpoint(endpoint)
    if for_bind and host not in ("*", "0.0.0.0"):
        try:
            host = _socket.gethostbyname(host)
        except OSError as e:
            raise RPCError("cannot listen on %s: host %r does not resolve (%s)" % (endpoint, host, e)) from None
    return "tcp://%s:%s" % (host, "*" if for_bind and port == 0 else port)


# ------------------------------------------------------------------------------------ the context
_ctx_lock = threading.Lock()
_ctx = None
_ctx_pid = None


def context():
    """This process's ZeroMQ context (a fresh one after fork: contexts do not survive a fork)."""
    global _ctx, _ctx_pid
    pid = os.getpid()
    if _ctx is None or _ctx_pid != pid:
        with _ctx_lock:
            if _ctx is None or _ctx_pid != pid:
                _ctx = zmq.Context()
                _ctx_pid = pid
    return _ctx


def _describe(what, trainer, step):
    parts = []
    if trainer is not None:
        parts.append("trainer %d" % trainer)
    if step is not None:
        parts.append("step %d" % step)
    return "'%s'%s" % (what, " (%s)" % ", ".join(parts) if parts else "")


# ------------------------------------------------------------------------------------ client
class Client:
    """A DEALER connected to one pserver. Not thread-safe by itself: ``get_client`` keeps one per
    thread and endpoint. Replies are matched to requests by id; stale replies are dropped."""

    def __init__(self, endpoint, deadline_ms=None):
        self.endpoint = endpoint
        self.deadline_ms = deadline_ms
        addr = _tcp(endpoint)
        self._sock = context().socket(zmq.DEALER)
        self._sock.linger = 0          # every request waits for its reply: nothing is worth lingering for
        try:
            self._sock.connect(addr)
        except zmq.ZMQError as e:
            self._sock.close(0)
            raise RPCError("cannot connect to pserver %s: %s" % (endpoint, e)) from None
        self._ids = itertools.count(1)
        self._pending = {}             # rid -> description, for requests sent and not yet answered
        self._early = {}               # rid -> Message that arrived while waiting for another rid
        self._answered = False         # has this endpoint ever answered this socket?
        self.closed = False
        # same host: big payloads through shared memory (shm_payload); rid -> the slot a request holds
        self._shm = shm_payload.use_for(split_endpoint(endpoint)[0])
        self._slots = {}

    def request(self, kind, name=None, value=None, trainer=0, step=0, lod=None, what=None, **fields):
        """Send one request; returns its id for ``wait``."""
        if self.closed:
            raise RPCError("client of %s is closed" % self.endpoint)
        rid = next(self._ids)
        t0 = time.perf_counter()
        frames = wire.encode(kind, rid, name, value, trainer, step, lod, **fields)
        if self._shm:
            frames, seg = shm_payload.pack(frames, (self.endpoint, kind, name), rid, announce=True)
            if seg is not None:
                self._slots[rid] = seg
        self._sock.send_multipart(frames, copy=False)
        self._pending[rid] = _describe(what or ("%s %s" % (kind, name or "")).strip(), trainer, step)
        if _timeline.enabled:
            _timeline.complete("rpc", "send %s" % kind, t0, time.perf_counter() - t0, peer=self.endpoint,
                               var=name, bytes=_timeline.frame_bytes(frames))
        return rid

    def wait(self, rid, timeout_s=None, until=None):
        """The reply to request ``rid``; raises ``RPCError`` on an error reply, ``RPCTimeout`` when the
        deadline (``timeout_s``, or the absolute ``time.monotonic()`` value ``until``) passes."""
        if until is None:
            until = time.monotonic() + (timeout_s if timeout_s is not None else deadline_seconds(self.deadline_ms))
        total = max(0.0, until - time.monotonic())
        t0 = time.perf_counter()
        msg = self._early.pop(rid, None)
        nbytes = 0
        while msg is None:
            left = until - time.monotonic()
            if left <= 0 or not self._sock.poll(max(1, int(left * 1000) + 1), zmq.POLLIN):
                if time.monotonic() >= until:
                    self._timeout(rid, total)
                continue
            while True:
                try:
                    frames = self._sock.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                self._answered = True
                try:
                    got = wire.decode(shm_payload.unpack(frames))
                except (WireError, shm_payload.ShmError) as e:
                    desc = self._pending.pop(rid, "")
                    raise RPCError("pserver %s sent a malformed reply to %s: %s" % (self.endpoint, desc, e)) from None
                if got.rid == rid:
                    msg = got
                    nbytes = _timeline.frame_bytes(frames) if _timeline.enabled else 0
                    break
                if got.rid in self._pending:
                    self._early[got.rid] = got
                # else: a reply to a request that already timed out; drop it
        desc = self._pending.pop(rid, "")
        self._free_slot(rid)
        if _timeline.enabled:
            _timeline.complete("wait", "wait %s" % desc, t0, time.perf_counter() - t0, peer=self.endpoint,
                               bytes=nbytes)
        if msg.kind == "error":
            raise RPCError("pserver %s answered %s with an error: %s" % (self.endpoint, desc, msg.get("msg", "")))
        return msg

    def _free_slot(self, rid):
        seg = self._slots.pop(rid, None)
        if seg is not None:
            seg.busy = None     # answered: the pserver has read the payload

    def _timeout(self, rid, total):
        desc = self._pending.pop(rid, "")
        self._early.pop(rid, None)
        if not self._answered:
            raise RPCTimeout("pserver %s is unreachable or not answering: no reply to %s within %.1f s "
                             "(deadline FLAGS_rpc_deadline)" % (self.endpoint, desc, total))
        raise RPCTimeout("pserver %s did not answer %s within %.1f s (deadline FLAGS_rpc_deadline)"
                         % (self.endpoint, desc, total))

    def call(self, kind, name=None, value=None, trainer=0, step=0, timeout_s=None, **kw):
        return self.wait(self.request(kind, name, value, trainer, step, **kw), timeout_s)

    def close(self):
        if not self.closed:
            self.closed = True
            self._sock.close(0)


class _ThreadClients(dict):
    """endpoint -> Client of one thread; closes them when the thread's storage goes away."""

    def __del__(self):
        for c in self.values():
            try:
                c.close()
            except Exception:
                pass


_local = threading.local()


def get_client(endpoint):
    """The pooled client of ``endpoint`` for this thread (and process): made once, then reused."""
    pool = getattr(_local, "pool", None)
    if pool is None or _local.pid != os.getpid():
        pool = _local.pool = _ThreadClients()
        _local.pid = os.getpid()
    c = pool.get(endpoint)
    if c is None or c.closed:
        c = pool[endpoint] = Client(endpoint)
    return c


def call_all(requests, timeout_s=None):
    """Send every request first, then wait for all replies under one deadline.

    ``requests``: a list of ``(endpoint, kwargs for Client.request)``. Returns the replies in order.
    Sending all before waiting lets the pservers work in parallel (one round trip, not N). The
    acknowledgements of this thread's ``post``-ed requests are awaited here too (first)."""
    sent = []
    for endpoint, kw in requests:
        c = get_client(endpoint)
        sent.append((c, c.request(**kw)))
    until = time.monotonic() + (timeout_s if timeout_s is not None else deadline_seconds())
    posted = _take_posted()
    waits = [(c, rid, t) for c, rid, t in posted] + [(c, rid, until) for c, rid in sent]
    out, first_error = [], None
    for c, rid, t in waits:
        try:
            out.append(c.wait(rid, until=t))
        except RPCError as e:
            # keep draining the other replies (briefly) so they do not linger as stale
            if first_error is None:
                first_error = e
                until = min(until, time.monotonic() + 1.0)
            out.append(None)
    if first_error is not None:
        raise first_error
    return out[len(posted):]


MAX_POSTED = 256


def post(requests):
    """Send requests whose replies are mere acknowledgements without waiting for them: the next
    ``call_all`` (or ``flush``) of this thread waits for them, each under the deadline it had when
    sent. ``send`` ops use this so that gradients travel while the backward pass goes on; the
    arrays must not change afterwards (kernels never write their inputs in place)."""
    if getattr(_local, "posted", None) is None or _local.posted_pid != os.getpid():
        _local.posted = []
        _local.posted_pid = os.getpid()
    until = time.monotonic() + deadline_seconds()
    for endpoint, kw in requests:
        c = get_client(endpoint)
        _local.posted.append((c, c.request(**kw), until))
    if len(_local.posted) > MAX_POSTED:
        flush()


def _take_posted():
    posted = getattr(_local, "posted", None)
    if not posted or _local.posted_pid != os.getpid():
        return []
    _local.posted = []
    return posted


def flush():
    """Wait for the acknowledgements of every request this thread ``post``-ed."""
    call_all([])


# ------------------------------------------------------------------------------------ server
class Request:
    """A received request: the peer's routing identity and the decoded message."""

    __slots__ = ("peer", "msg")

    def __init__(self, peer, msg):
        self.peer = peer
        self.msg = msg


class Server:
    """A ROUTER bound to ``endpoint``. ``recv`` returns well-formed requests only: a malformed one
    is answered with an error reply right there and the server keeps serving."""

    def __init__(self, endpoint, deadline_ms=None):
        self.deadline_ms = deadline_ms
        addr = _tcp(endpoint, for_bind=True)
        # a context of its own: close() terms it, which returns once the last replies have left
        # (or SERVER_LINGER_MS passed), so a pserver that exits right after serving loses no reply
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.linger = SERVER_LINGER_MS
        try:
            self._sock.bind(addr)
        except zmq.ZMQError as e:
            self._sock.close(0)
            self._ctx.term()
            why = "address already in use" if e.errno == zmq.EADDRINUSE else str(e)
            raise RPCError("pserver cannot listen on %s: %s" % (endpoint, why)) from None
        host, port = split_endpoint(endpoint)
        if port == 0:
            port = int(self._sock.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(":", 1)[1])
        self.endpoint = "%s:%d" % (host, port)
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
            if not self._sock.poll(max(1, int(left * 1000) + 1), zmq.POLLIN):
                if time.monotonic() >= until:
                    return None
                continue
            frames = self._sock.recv_multipart(copy=False)
            t0 = time.perf_counter()
            peer, body = frames[0], frames[1:]
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
                                   peer="trainer %s" % msg.trainer, bytes=_timeline.frame_bytes(body))
            return Request(peer, msg)

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

    def close(self, linger_ms=None):
        if not self.closed:
            self.closed = True
            self._sock.close(SERVER_LINGER_MS if linger_ms is None else linger_ms)
            self._ctx.term()
