"""ZeroMQ transport between trainers and parameter servers.

A pserver binds one ROUTER socket; a trainer talks to each pserver through one DEALER socket per
endpoint and thread (``get_client``), reused for every request. Requests carry ids; a client waits
for the reply with that id with ``poll`` and a deadline, so a dead or unreachable peer ends in an
``RPCTimeout`` that names the endpoint and what was awaited, never in a hang (no REQ/REP: a REQ
socket whose peer died waits forever).

Security: every socket is a CURVE socket keyed by the job secret (``security``); a peer without it
never completes the handshake, and a client that keeps failing to authenticate gets an error saying so.

Liveness: ZeroMQ heartbeats on every connection and a monitor on every client socket (``liveness``).
A request whose connection is lost while it waits (the pserver died, or dropped a message over its
size limit) fails at once, naming the pserver; a pserver whose connection closed is dead for every
later request. A pserver that is connected but silent (stopped, frozen) is warned about after
``FLUIDIST_PEER_WARN`` seconds and dead after ``FLUIDIST_PEER_TIMEOUT``. A pserver that is alive but
slow to answer is waited for without limit, unless a deadline was asked for.

Deadlines: ``FLAGS_rpc_deadline`` (milliseconds, Paddle's name), read when a wait starts, or an
explicit ``deadline_ms`` given to the client or server, bound every wait when set (unset: only when
heartbeats are off, 180 s). A pserver that never answered is given up on sooner, with an error naming
it and why it cannot be reached: after ``FLUIDIST_CONNECT_TIMEOUT`` (10 s; see ``reach``).

Messages are ``wire`` messages: a JSON header plus raw array buffers, sent and received without
copying the payload.
"""
import itertools
import json
import logging
import os
import threading
import time

import zmq

from . import liveness, outgoing, reach, security, shm_payload, wire
from .. import timeline as _timeline
from .rpc_common import (  # noqa: F401  (rpc.<name> is where the rest of fluidist finds them)
    DEFAULT_DEADLINE_MS, DEFAULT_RETRY_TIMES, RETRIED_KINDS, SERVER_LINGER_MS, PeerLost, PserverUnreachable,
    RPCError, RPCTimeout, _tcp, deadline_seconds, explicit_deadline_seconds, retry_times, split_endpoint,
    wait_limit)
from .rpc_server import Request, Server  # noqa: F401  (rpc.Server: the pserver's side)
from .wire import WireError

logger = logging.getLogger("fluidist.distributed.rpc")

_lost_hooks: list = []


def on_peer_lost(callback):
    """Call ``callback(endpoint, reason)`` when a request of this process fails because its pserver
    was lost (the trainer session tells the other pservers why this trainer stops)."""
    if callback not in _lost_hooks:
        _lost_hooks.append(callback)


def _peer_lost(endpoint, reason):
    for hook in list(_lost_hooks):
        try:
            hook(endpoint, reason)
        except Exception:   # a notice to the others is best effort; the error itself is raised anyway
            pass


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


def _shorten(text, limit=300):
    return text if len(text) <= limit else text[:limit] + "..."


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
        connect_limit = reach.connect_timeout()     # a bad setting raises before any socket exists
        self._sock = context().socket(zmq.DEALER)
        self._sock.linger = 0          # every request waits for its reply: nothing is worth lingering for
        self._link = None
        try:
            security.secure_client(self._sock)
            timeout = liveness.configure(self._sock)
            if timeout is not None:
                self._link = liveness.Link(self._sock, timeout)
                self._silence = liveness.SilenceWatch(timeout)
                self._said_refused = False
            self._sock.connect(addr)
        except zmq.ZMQError as e:
            self._close_socket()
            raise RPCError("cannot connect to pserver %s: %s" % (endpoint, e)) from None
        except BaseException:          # a bad secret or heartbeat setting: no half-made socket is left
            self._close_socket()
            raise
        self._ids = itertools.count(1)
        self._pending = {}             # rid -> description, for requests sent and not yet answered
        self._losses_at = {}           # rid -> connections lost before it was sent
        self._early = {}               # rid -> Message that arrived while waiting for another rid
        self._answered = False         # has this endpoint ever answered this socket?
        self._reach = reach.ReachWatch(endpoint, self._link.started if self._link is not None else None,
                                      connect_limit)
        self.closed = False
        # same host: big payloads through shared memory (shm_payload); rid -> the slot a request holds
        self._shm = shm_payload.use_for(split_endpoint(endpoint)[0])
        self._slots = {}
        self._parts = {}               # rid of a batch -> the descriptions of its requests

    def request(self, kind, name=None, value=None, trainer=0, step=0, lod=None, what=None, **fields):
        """Send one request; returns its id for ``wait``."""
        if self.closed:
            raise RPCError("client of %s is closed" % self.endpoint)
        rid = next(self._ids)
        t0 = time.perf_counter()
        frames = wire.encode(kind, rid, name, value, trainer, step, lod, **fields)
        self._send(rid, frames, (self.endpoint, kind, name), 1.0)
        self._pending[rid] = _describe(what or ("%s %s" % (kind, name or "")).strip(), trainer, step)
        if _timeline.enabled:
            _timeline.complete("rpc", "send %s" % kind, t0, time.perf_counter() - t0, peer=self.endpoint,
                               var=name, bytes=_timeline.frame_bytes(frames), kind=kind, trainer=trainer, step=step)
        return rid

    def request_parts(self, parts):
        """Send the requests ``parts`` (``request``'s keyword arguments or ``outgoing.Part`` objects, one
        trainer's) as one message: a batch, or a lone request itself. Returns the id for ``wait``,
        whose reply to a batch is a batch of the parts' replies (an error part raises, naming it)."""
        if len(parts) == 1 and isinstance(parts[0], dict):
            return self.request(**parts[0])
        if self.closed:
            raise RPCError("client of %s is closed" % self.endpoint)
        rid = next(self._ids)
        t0 = time.perf_counter()
        parts = [p if isinstance(p, outgoing.Part) else outgoing.Part(p) for p in parts]
        trainer = parts[0].trainer
        if any(p.trainer != trainer for p in parts):
            raise RPCError("a batch to pserver %s mixes trainer ids" % self.endpoint)
        frames = wire.encode_batch(rid, trainer, parts[0].header["step"], [(p.header, []) for p in parts])
        self._before_send(rid)
        desc, segments = [], []
        for p in parts:
            if self._shm and p.segment is None and not p.desc:
                p.copy_to_slot(self.endpoint, rid)     # not posted ahead: copied now
            p.finish()                                 # (a copy still in flight: waited for)
            desc.extend([len(frames) + i] + rest for i, *rest in p.desc)
            frames.extend(p.buffers)
            if p.segment is not None:
                segments.append(p.segment)
        self._send_frames(rid, frames, desc)
        self._slots[rid] = segments
        whats = [_describe(p.what, trainer, p.header["step"]) for p in parts]
        self._pending[rid] = "%d requests (%s)" % (len(parts), _shorten(", ".join(whats)))
        self._parts[rid] = [None if p.optional else w for p, w in zip(parts, whats)]   # None: may be refused
        if _timeline.enabled:
            _timeline.complete("rpc", "send batch", t0, time.perf_counter() - t0, peer=self.endpoint, var=None,
                               bytes=_timeline.frame_bytes(frames), kind="batch", parts=len(parts), trainer=trainer,
                               step=parts[0].header["step"])
        return rid

    def _send(self, rid, frames, slot_key, headroom):
        self._before_send(rid)
        if self._shm:
            frames, seg = shm_payload.pack(frames, slot_key, rid, headroom=headroom)
            if seg is not None:
                self._slots[rid] = [seg]
        self._send_frames(rid, frames, None)

    def _before_send(self, rid):
        if self._link is not None:
            self._check_link(None, silence=False)   # a pserver known to be dead or refusing us: fail first
            self._losses_at[rid] = self._link.losses

    def _send_frames(self, rid, frames, desc):
        """Send ``frames``; to a pserver on this host with the descriptor of the buffers already in
        shared memory (``desc``, possibly empty: it tells the pserver this trainer reads it too)."""
        if self._shm and (desc is not None or not shm_payload.is_packed(frames)):
            frames = [shm_payload.MAGIC, json.dumps(desc or [], separators=(",", ":")).encode()] + frames
        self._sock.send_multipart(frames, copy=False)

    def _check_parts(self, rid, msg, desc):
        """A batch's reply: one part per request, and the first error part raised, naming its request."""
        whats = self._parts.pop(rid, None)
        if whats is None:
            if msg.parts is not None:
                raise RPCError("pserver %s answered %s with %d parts" % (self.endpoint, desc, len(msg.parts)))
            return
        if msg.kind == "error":
            return          # the whole batch refused: raised below
        if msg.parts is None or len(msg.parts) != len(whats):
            raise RPCError("pserver %s sent a malformed reply to %s: %s instead of %d parts"
                           % (self.endpoint, desc, "%d parts" % len(msg.parts) if msg.parts else "one reply",
                              len(whats)))
        for part, what in zip(msg.parts, whats):
            if part.kind == "error" and what is not None:
                raise RPCError("pserver %s answered %s with an error: %s" % (self.endpoint, what, part.get("msg", "")))

    def wait(self, rid, timeout_s=None, until=None):
        """The reply to request ``rid``; raises ``RPCError`` on an error reply, ``PeerLost`` when the
        pserver's connection is lost meanwhile, ``RPCTimeout`` when the deadline (``timeout_s``, or the
        absolute ``time.monotonic()`` value ``until``; default: ``wait_limit``) passes."""
        start = time.monotonic()
        if until is None:
            until = start + (timeout_s if timeout_s is not None else wait_limit(self.deadline_ms))
        t0 = time.perf_counter()
        msg = self._early.pop(rid, None)
        nbytes = 0
        while msg is None:
            left = until - time.monotonic()
            slice_s = min(left, 0.25) if self._link is not None or self._unreached() else left
            if left <= 0 or not self._sock.poll(max(1, int(min(slice_s, 3.6e6) * 1000) + 1), zmq.POLLIN):
                if self._link is not None:
                    self._check_link(rid)
                if self._unreached():
                    self._check_reach(rid)
                if time.monotonic() >= until:
                    self._timeout(rid, until - start)
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
                    desc = self._forget(rid)
                    raise RPCError("pserver %s sent a malformed reply to %s: %s" % (self.endpoint, desc, e)) from None
                if got.rid == rid:
                    msg = got
                    nbytes = _timeline.frame_bytes(frames) if _timeline.enabled else 0
                    break
                if got.rid in self._pending:
                    self._early[got.rid] = got
                # else: a reply to a request that already timed out; drop it
        desc = self._forget(rid, keep_parts=True)
        self._free_slot(rid)
        if _timeline.enabled:
            _timeline.complete("wait", "wait %s" % desc, t0, time.perf_counter() - t0, peer=self.endpoint,
                               bytes=nbytes)
        self._check_parts(rid, msg, desc)
        if msg.kind == "error":
            raise RPCError("pserver %s answered %s with an error: %s" % (self.endpoint, desc, msg.get("msg", "")))
        return msg

    def _free_slot(self, rid):
        for seg in self._slots.pop(rid, ()):
            seg.busy = None     # answered: the pserver has read the payload

    def _forget(self, rid, keep_parts=False):
        self._losses_at.pop(rid, None)
        if not keep_parts:
            self._parts.pop(rid, None)
        return self._pending.pop(rid, "")

    def _check_link(self, rid, silence=True):
        """Raise when the heartbeats say the pserver is gone, or when it keeps refusing our handshake;
        with ``silence``, also when its open connection has been silent too long (a kernel query:
        the waits ask it, a request does not)."""
        link = self._link.update()
        refused = link.refused()
        if refused is not None:
            desc = self._forget(rid) if rid is not None else "any request"
            why = reach.probe(self.endpoint)
            if why.startswith(reach.NOT_ACCEPTING):    # its process takes no connection: not a matter of secrets
                raise PserverUnreachable("cannot talk to pserver %s (%s, %d times) for %s: %s"
                                         % (self.endpoint, refused, link.refusals, desc, why))
            raise RPCError("cannot talk to pserver %s (%s, %d times) for %s: every process of the job needs the same "
                           "job secret (%s or %s, the launcher's --secret_file), or %s=1 on all of them"
                           % (self.endpoint, refused, link.refusals, desc, security.SECRET_ENV,
                              security.SECRET_FILE_ENV, security.INSECURE_ENV))
        if rid is not None and link.losses > self._losses_at.get(rid, link.losses):
            reason = ("the connection to pserver %s was lost while waiting for %s: the pserver died, was stopped, "
                      "or dropped a message over its size limit (%s)"
                      % (self.endpoint, self._pending.get(rid, ""), liveness.describe_timeout(link.timeout)))
            self._forget(rid)
            _peer_lost(self.endpoint, reason)
            raise PeerLost(reason)
        dead = link.dead_for()
        if dead:
            desc = self._forget(rid) if rid is not None else "the next request"
            reason = ("pserver %s is gone: its connection closed %.1f s ago and did not come back (the process died "
                      "or closed it); cannot send %s" % (self.endpoint, dead, desc))
            _peer_lost(self.endpoint, reason)
            raise PeerLost(reason)
        refused = link.refused_for()
        if refused and self._silence.warn is not None and refused > self._silence.warn and not self._said_refused:
            self._said_refused = True
            explicit = explicit_deadline_seconds(self.deadline_ms)
            bound = self._reach.limit if explicit is None else min(self._reach.limit, explicit)
            logger.warning("pserver %s has refused every connection for %.1f s (nothing listens there: not started "
                           "yet, or gone); waiting for its first answer up to %.0f s after this client started "
                           "(FLUIDIST_CONNECT_TIMEOUT, FLAGS_rpc_deadline)", self.endpoint, refused, bound)
        if not silence:
            return
        silent = link.silent_for()
        if self._silence.check(self.endpoint, silent, lambda: "pserver %s" % self.endpoint):
            desc = self._forget(rid) if rid is not None else "the next request"
            reason = ("pserver %s is connected but has been silent for %.1f s (stopped, frozen, or cut off; %s); "
                      "cannot finish %s" % (self.endpoint, silent, liveness.describe_timeout(link.timeout), desc))
            _peer_lost(self.endpoint, reason)
            raise PeerLost(reason)

    def _unreached(self):
        """No connection to the pserver was ever made (heartbeats on), or it never answered (off)."""
        return not self._link.ever_up if self._link is not None else not self._answered

    def _check_reach(self, rid):
        """Warn that the pserver cannot be reached yet, or fail once ``FLUIDIST_CONNECT_TIMEOUT`` passed."""
        if time.monotonic() >= self._reach.give_up_at():
            desc = self._forget(rid)
            self._early.pop(rid, None)
            raise PserverUnreachable(self._reach.failure(desc))
        self._reach.tick()

    def _timeout(self, rid, total):
        desc = self._forget(rid)
        self._early.pop(rid, None)
        if not self._answered:
            raise RPCTimeout("pserver %s is unreachable or not answering: no reply to %s within %.1f s "
                             "(deadline FLAGS_rpc_deadline)" % (self.endpoint, desc, total))
        raise RPCTimeout("pserver %s did not answer %s within %.1f s (deadline FLAGS_rpc_deadline)"
                         % (self.endpoint, desc, total))

    def call(self, kind, name=None, value=None, trainer=0, step=0, timeout_s=None, **kw):
        return self.wait(self.request(kind, name, value, trainer, step, **kw), timeout_s)

    def _close_socket(self):
        if self._link is not None:
            self._link.close()
            self._link = None
        self._sock.close(0)

    def close(self):
        if not self.closed:
            self.closed = True
            self._close_socket()


class _ThreadClients(dict):
    """endpoint -> Client of one thread; closes them when the thread's storage goes away."""

    def __del__(self):
        for c in self.values():
            try:
                c.close()
            except Exception:
                pass


class _ThreadState(threading.local):
    """This thread's pooled clients and queued / posted requests, each with the process it belongs to;
    unset ones read None (class defaults), so that a look costs no AttributeError."""
    pool = pid = queued = queued_pid = posted = posted_pid = None


_local = _ThreadState()
_ever_queued = False    # whether any thread of this process queued a request (pending()'s quick answer)


def _thread_pool():
    """This thread's pooled clients (a new pool after a fork: the parent's sockets are not the child's)."""
    pool = getattr(_local, "pool", None)
    if pool is None or _local.pid != os.getpid():
        pool = _local.pool = _ThreadClients()
        _local.pid = os.getpid()
    return pool


def get_client(endpoint):
    """The pooled client of ``endpoint`` for this thread (and process): made once, then reused."""
    pool = _thread_pool()
    c = pool.get(endpoint)
    if c is None or c.closed:
        c = pool[endpoint] = Client(endpoint)
    return c


def release_clients(endpoints):
    """Close this thread's pooled clients of ``endpoints`` (pservers whose job this process finished): an
    idle client of a pserver that has gone would keep reconnecting, each attempt a monitor event. A later
    ``get_client`` makes a new one."""
    pool = _thread_pool()
    for endpoint in endpoints:
        c = pool.pop(endpoint, None)
        if c is not None:
            c.close()


def call_all(requests, timeout_s=None):
    """Send every request first, then wait for all replies under one deadline.

    ``requests``: a list of ``(endpoint, kwargs for Client.request)``. Returns the replies in order.
    Sending all before waiting lets the pservers work in parallel (one round trip, not N). The
    requests to one pserver (of one trainer id) go as one message, after what this thread ``post``-ed
    to it and has not sent yet; the acknowledgements of everything posted are awaited here too (and
    the replies of posted requests that asked for theirs handed over)."""
    groups = _take_queued()
    for i, (endpoint, kw) in enumerate(requests):
        groups.setdefault((endpoint, kw.get("trainer", 0)), []).append((kw, i))     # (a lone dict: a plain request)
    sent = []
    for (endpoint, _), items in groups.items():
        c = get_client(endpoint)
        kws = [kw for kw, _ in items]
        sent.append((c, c.request_parts(kws), kws, [i for _, i in items]))
    span = timeout_s if timeout_s is not None else wait_limit()
    until = [time.monotonic() + span]
    posted = _take_posted()
    out, first_error = [None] * len(requests), None
    for c, rid, t, kws, where in [(c, rid, t, None, sinks) for c, rid, t, sinks in posted] + \
            [(c, rid, None, kws, where) for c, rid, kws, where in sent]:
        try:
            # a posted request keeps the deadline it was sent with, until an error cuts the drain short
            limit = until[0] if t is None else (t if first_error is None else min(t, until[0]))
            got = _wait_retrying(c, rid, limit, kws, span)
        except RPCError as e:
            # keep draining the other replies (briefly) so they do not linger as stale
            if first_error is None:
                first_error = e
                until[0] = min(until[0], time.monotonic() + 1.0)
            continue
        for i, reply in zip(where, got.parts if got.parts is not None else [got]):
            if type(i) is int:
                out[i] = reply
            elif i is not None:
                _hand_over(i, reply)
    if first_error is not None:
        raise first_error
    return out


def _wait_retrying(client, rid, until, kws, span):
    """``client.wait(rid)``; requests that are all ``get`` / ``prefetch`` (reads) and timed out are sent
    again (``retry_times``)."""
    attempt = 0
    while True:
        try:
            return client.wait(rid, until=until)
        except PserverUnreachable:
            raise
        except RPCTimeout as e:
            if not kws or any((kw.kw if isinstance(kw, outgoing.Part) else kw).get("kind") not in RETRIED_KINDS
                              for kw in kws) or attempt >= retry_times():
                raise
            attempt += 1
            logger.warning("%s; sending it again (retry %d of %d, FLAGS_rpc_retry_times)", e, attempt, retry_times())
            rid = client.request_parts([outgoing.Part(kw.kw, kw.optional) if isinstance(kw, outgoing.Part) else kw
                                        for kw in kws])
            until = time.monotonic() + span


MAX_POSTED = 256


def post(requests, on_reply=None):
    """Queue requests whose replies are mere acknowledgements (``send``, ``send_barrier``): they go with
    this thread's next ``call_all`` to the same pserver, as parts of its one message, or at the end of
    the executor's run (``dispatch``), and that call (or ``flush``) waits for their acknowledgements.
    A trainer's step thus costs each pserver one message: its gradient blocks, its barrier and its
    gets. The arrays must not change afterwards (kernels never write their inputs in place).

    ``on_reply``: one callable per request, called with its reply (a ``wire.Message``) when the
    message's reply arrives; such requests are optional (``outgoing.Part``): a pserver's refusal of
    one is handed to its callable and fails nothing (``prefetch_ahead``'s look-ahead rows)."""
    queued = _queued()
    sinks = on_reply if on_reply is not None else [None] * len(requests)
    if len(sinks) != len(requests):
        raise ValueError("post: %d requests but %d reply callables" % (len(requests), len(sinks)))
    for (endpoint, kw), sink in zip(requests, sinks):
        part = outgoing.Part(kw, optional=sink is not None)
        c = get_client(endpoint)
        if c._shm and part.big() and outgoing.copies_in_background():
            part.copy_to_slot(endpoint, part, background=True)    # while the backward pass goes on
        queued.setdefault((endpoint, part.trainer), []).append((part, sink))
    if sum(len(v) for v in queued.values()) > MAX_POSTED:
        dispatch()


def dispatch():
    """Send what this thread queued (one message per pserver) without waiting: the acknowledgements
    are awaited by its next ``call_all`` or ``flush``."""
    groups = _take_queued()
    if not groups:
        return
    if getattr(_local, "posted", None) is None or _local.posted_pid != os.getpid():
        _local.posted = []
        _local.posted_pid = os.getpid()
    until = time.monotonic() + wait_limit()
    for (endpoint, _), items in groups.items():
        c = get_client(endpoint)
        _local.posted.append((c, c.request_parts([kw for kw, _ in items]), until, [sink for _, sink in items]))


def _hand_over(sink, reply):
    """A posted request's reply to the callable that asked for it; what it raises is logged, never raised
    (the step whose message carried the request does not depend on it)."""
    try:
        sink(reply)
    except Exception as e:
        logger.warning("a reply handler failed on %r: %s: %s", reply, type(e).__name__, e)


def pending():
    """Whether this thread queued requests it has not sent yet (asked after every executor run)."""
    if not _ever_queued:
        return False
    queued = _local.queued
    return bool(queued) and _local.queued_pid == os.getpid()


def _queued():
    global _ever_queued
    _ever_queued = True
    if _local.queued is None or _local.queued_pid != os.getpid():
        _local.queued = {}            # (endpoint, trainer id) -> [(outgoing.Part, None)], in the order posted
        _local.queued_pid = os.getpid()
    return _local.queued


def _take_queued():
    queued = _queued()
    _local.queued = {}
    return queued


def _take_posted():
    posted = getattr(_local, "posted", None)
    if not posted or _local.posted_pid != os.getpid():
        return []
    _local.posted = []
    return posted


def flush():
    """Send what this thread queued and wait for the acknowledgements of everything it ``post``-ed."""
    call_all([])
