"""How the ranks of a ring find each other, over ZeroMQ, with a deadline on every wait.

Two steps, as in Paddle (``c_gen_nccl_id`` then ``c_comm_init``):

1. **Id broadcast.** Rank 0 makes a :class:`CommId` (a fresh session token, the address of a
   rendezvous socket it binds now, and for NCCL the unique id) and sends it to every other rank's
   ``endpoint``; each of those listens on its own endpoint until the id arrives and acknowledges it
   (:func:`send_to_endpoints`, :func:`receive_on_endpoint`).
2. **Rendezvous.** Every rank registers with rank 0's rendezvous socket (host id, pid, device, its
   data address); rank 0 checks the group (distinct GPUs, one token) and answers everyone with the
   table of all ranks (:class:`RendezvousServer`, :class:`RendezvousClient`).

Messages are JSON over DEALER/ROUTER sockets (never pickle, never bare REQ/REP), CURVE-secured with
the job secret: a process without it cannot hand a rank an id, nor join a ring. A received id is
checked field by field before anything uses it. Every wait ends after ``FLUIDIST_COLLECTIVE_TIMEOUT``
seconds (default 300) with an error naming the ring, the ranks or endpoints that were missing and
what was awaited.
"""
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Optional

import zmq

from ... import bounded_json

from .common import (CollectiveTimeout, collective_timeout, host_id, pid_alive,  # noqa: F401 (re-exported)
                     split_endpoint, zmq_context)
from .common import bind_random as _bind_random, new_socket as _new_socket, plural as _plural

PROTOCOL = 1
MAX_MESSAGE_BYTES = 1 << 20     # a rendezvous message: a rank's address, pid, host and flags
_TOKEN = re.compile(r"[0-9a-f]{16}\Z")
_ADDRESS = re.compile(r"tcp://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}\Z")


# ---------------------------------------------------------------- the id
@dataclass
class CommId:
    """What rank 0 creates for one ring and sends to the others (the value of the RAW ``nccl_id``
    variable in the scope). Rank 0's copy also holds the bound rendezvous socket."""
    ring_id: int
    backend: str               # "cpu" or "nccl"
    token: str                 # fresh per ring: a rank of another session cannot join by mistake
    rendezvous: str            # tcp://ip:port of rank 0's rendezvous socket
    nccl_id: object = None     # NCCL unique id (bytes or tuple, as CuPy gives it), or None
    # local only, never sent: rank 0's bound rendezvous socket, and this rank's own endpoint
    server: object = field(default=None, repr=False, compare=False)
    endpoint: Optional[str] = field(default=None, compare=False)

    def to_json(self):
        nid = self.nccl_id
        if isinstance(nid, (bytes, bytearray)):
            nid = {"bytes": bytes(nid).hex()}
        elif nid is not None:
            nid = {"tuple": [int(v) for v in nid]}
        return {"ring_id": self.ring_id, "backend": self.backend, "token": self.token,
                "rendezvous": self.rendezvous, "nccl_id": nid}

    @classmethod
    def from_json(cls, d):
        """The id in ``d`` (as ``to_json`` wrote it); ValueError naming the first field that is not."""
        if not isinstance(d, dict):
            raise ValueError("an id must be a JSON object")
        ring_id, backend, token, addr = d.get("ring_id"), d.get("backend"), d.get("token"), d.get("rendezvous")
        if type(ring_id) is not int or not 0 <= ring_id < 1 << 31:
            raise ValueError("ring_id %r is not a ring id" % (ring_id,))
        if backend not in ("cpu", "nccl"):
            raise ValueError("backend %r is not 'cpu' or 'nccl'" % (backend,))
        if not isinstance(token, str) or not _TOKEN.match(token):
            raise ValueError("token %r is not a session token" % (token,))
        if not isinstance(addr, str) or not _ADDRESS.match(addr):
            raise ValueError("rendezvous %r is not tcp://host:port" % (addr,))
        nid = d.get("nccl_id")
        if isinstance(nid, dict):
            raw = nid.get("bytes")
            if isinstance(raw, str) and len(raw) <= 1024 and re.fullmatch(r"[0-9a-f]*", raw):
                nid = bytes.fromhex(raw)
            elif isinstance(nid.get("tuple"), list) and len(nid["tuple"]) <= 1024 and \
                    all(type(v) is int for v in nid["tuple"]):
                nid = tuple(nid["tuple"])
            else:
                raise ValueError("nccl_id %r is not an NCCL unique id" % (nid,))
        elif nid is not None:
            raise ValueError("nccl_id %r is not an NCCL unique id" % (nid,))
        return cls(ring_id=ring_id, backend=backend, token=token, rendezvous=addr, nccl_id=nid)

    def close(self):
        if self.server is not None:
            self.server.close()
            self.server = None


def new_comm_id(ring_id, backend, endpoint, nccl_id=None):
    """Rank 0's id for ``ring_id``: binds the rendezvous socket now (on ``endpoint``'s host, a free
    port) so that it already exists when the other ranks come to register."""
    host, _ = split_endpoint(endpoint, "endpoint of rank 0")
    server = _new_socket(zmq.ROUTER, role="server")
    try:
        addr = _bind_random(server, host)
    except Exception:
        server.close()
        raise
    cid = CommId(ring_id=int(ring_id), backend=backend, token=secrets.token_hex(8), rendezvous=addr,
                 nccl_id=nccl_id)
    cid.server = server
    return cid


# ---------------------------------------------------------------- id broadcast
def send_to_endpoints(payload, endpoints, what, timeout=None):
    """Rank 0: send the JSON ``payload`` to every endpoint and wait until each acknowledged it.

    Raises :class:`CollectiveTimeout` naming the endpoints that never took it, or RuntimeError
    with the reason an endpoint refused it."""
    timeout = collective_timeout() if timeout is None else timeout
    if not endpoints:
        return
    data = json.dumps(dict(payload, protocol=PROTOCOL)).encode()
    socks = {}
    try:
        poller = zmq.Poller()
        for ep in endpoints:
            host, port = split_endpoint(ep, "%s: endpoint" % what)
            s = _new_socket(zmq.DEALER, role="client")
            s.connect("tcp://%s:%d" % (host, port))
            s.send(data)
            socks[s] = ep
            poller.register(s, zmq.POLLIN)
        pending = dict(socks)
        deadline = time.monotonic() + timeout
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                late = [e for e in endpoints if e in pending.values()]
                raise CollectiveTimeout(
                    "%s: %s did not take the id within %g s (is that trainer running and listening on "
                    "its endpoint?)" % (what, _plural("endpoint", late), timeout))
            for s, _ in poller.poll(min(left, 0.5) * 1000):
                raw = _recv_ready(s)
                if raw is None:
                    continue
                reply = _loads(raw[0], "%s: reply from %s" % (what, socks[s]))
                if reply.get("error"):
                    raise RuntimeError("%s: endpoint %s refused the id: %s" % (what, socks[s], reply["error"]))
                pending.pop(s, None)
                poller.unregister(s)
    finally:
        for s in socks:
            s.close()


def receive_on_endpoint(endpoint, what, expect, sender="rank 0", timeout=None, parse=None):
    """Rank k: listen on ``endpoint`` until rank 0's message whose fields include ``expect`` arrives;
    acknowledge it and return it (with ``parse(msg)``'s result under ``"parsed"``). Other messages, and
    those ``parse`` raises ValueError for, are answered with an error and ignored."""
    timeout = collective_timeout() if timeout is None else timeout
    host, port = split_endpoint(endpoint, "%s: endpoint" % what)
    s = _new_socket(zmq.ROUTER, linger=2000, role="server")
    try:
        _bind_endpoint(s, host, port, endpoint, what, min(timeout, 5.0))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CollectiveTimeout("%s: nothing arrived on %s from %s within %g s (%s never sent the id)"
                                        % (what, endpoint, sender, timeout, sender))
            if not s.poll(min(left, 0.5) * 1000):
                continue
            frames = _recv_ready(s)
            if frames is None or len(frames) != 2:
                continue
            ident, raw = frames
            try:
                msg = bounded_json.loads(raw, "a rendezvous message", MAX_MESSAGE_BYTES, 8)
                if not isinstance(msg, dict):
                    raise ValueError("not an object")
            except ValueError:
                s.send_multipart([ident, json.dumps({"error": "malformed message"}).encode()])
                continue
            wrong = {k: msg.get(k) for k, v in expect.items() if msg.get(k) != v}
            if wrong:
                s.send_multipart([ident, json.dumps(
                    {"error": "%s expected %s but got %s" % (endpoint, expect, wrong)}).encode()])
                continue
            if parse is not None:
                try:
                    msg["parsed"] = parse(msg)
                except (ValueError, TypeError, KeyError) as e:
                    s.send_multipart([ident, json.dumps({"error": "%s: malformed id: %s" % (endpoint, e)}).encode()])
                    continue
            s.send_multipart([ident, b'{"ok": true}'])
            return msg
    finally:
        s.close()


def _bind_endpoint(sock, host, port, endpoint, what, patience):
    """Bind to ``host:port`` (every interface when ``host`` is not ours). A port that is still held
    for a moment (ZeroMQ closes sockets in the background: the previous ring's listener) is tried
    again for up to ``patience`` seconds."""
    give_up = time.monotonic() + patience
    addr = "tcp://%s:%d" % (host, port)
    while True:
        try:
            sock.bind(addr)
            return
        except zmq.ZMQError as e:
            if e.errno == zmq.EADDRINUSE and time.monotonic() < give_up:
                time.sleep(0.05)
                continue
            raise RuntimeError("%s: cannot listen on endpoint %s: %s" % (what, endpoint, e)) from None


# ---------------------------------------------------------------- rendezvous
class RendezvousServer:
    """Rank 0's side: gather one message per rank, answer all of them."""

    def __init__(self, comm_id, nranks, what):
        if comm_id.server is None:
            raise RuntimeError("%s: this id was not created by this process's rank 0 (or was already used); "
                               "run c_gen_nccl_id again" % what)
        self.sock = comm_id.server
        self.cid = comm_id
        self.nranks = nranks
        self.what = what
        self.idents = {}

    def gather(self, phase, own, timeout=None):
        """{rank: message} of every rank for ``phase`` (rank 0's own message is ``own``)."""
        timeout = collective_timeout() if timeout is None else timeout
        got = {0: own}
        deadline = time.monotonic() + timeout
        while len(got) < self.nranks:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [r for r in range(self.nranks) if r not in got]
                raise CollectiveTimeout("%s: %s of ring %d did not reach the rendezvous (%s) at %s within %g s"
                                        % (self.what, _plural("rank", missing), self.cid.ring_id, phase,
                                           self.cid.rendezvous, timeout))
            if not self.sock.poll(min(left, 0.5) * 1000):
                continue
            frames = _recv_ready(self.sock)
            if frames is None or len(frames) != 2:
                continue
            ident, raw = frames
            try:
                msg = bounded_json.loads(raw, "a rendezvous message", MAX_MESSAGE_BYTES, 8)
                rank = int(msg["rank"])
            except (ValueError, KeyError, TypeError):
                self._send(ident, {"error": "malformed rendezvous message"})
                continue
            if msg.get("token") != self.cid.token:
                self._send(ident, {"error": "rank %d holds the id of another session (token %r, expected %r)"
                                   % (rank, msg.get("token"), self.cid.token)})
                continue
            if msg.get("phase") != phase:
                self._send(ident, {"error": "rendezvous is in phase %r, got %r" % (phase, msg.get("phase"))})
                continue
            if not 0 < rank < self.nranks:
                self._send(ident, {"error": "rank %d is out of range for %d ranks" % (rank, self.nranks)})
                continue
            if rank in got:
                self._send(ident, {"error": "rank %d registered twice" % rank})
                continue
            got[rank] = msg
            self.idents[rank] = ident
        return got

    def _send(self, ident, msg):
        self.sock.send_multipart([ident, json.dumps(msg).encode()])

    def reply_all(self, msg):
        for ident in self.idents.values():
            self._send(ident, msg)

    def fail(self, error):
        """Tell every registered rank why the set-up failed."""
        self.reply_all({"error": error})

    def close(self):
        # give the last replies a moment to leave, then release the port
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.cid.close()


class RendezvousClient:
    """Rank k's side: send one message per phase to rank 0 and wait for its answer."""

    def __init__(self, comm_id, rank, what):
        self.cid = comm_id
        self.rank = rank
        self.what = what
        self.sock = _new_socket(zmq.DEALER, role="client")
        self.sock.connect(comm_id.rendezvous)

    def exchange(self, phase, msg, timeout=None):
        timeout = collective_timeout() if timeout is None else timeout
        self.sock.send(json.dumps(dict(msg, rank=self.rank, token=self.cid.token, phase=phase)).encode())
        deadline = time.monotonic() + timeout
        frames = None
        while frames is None:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sock.poll(min(left, 0.5) * 1000):
                if time.monotonic() >= deadline:
                    raise CollectiveTimeout("%s: rank 0 of ring %d did not answer the rendezvous (%s) at %s within %g s"
                                            % (self.what, self.cid.ring_id, phase, self.cid.rendezvous, timeout))
                continue
            frames = _recv_ready(self.sock)
        reply = _loads(frames[0], "%s: rendezvous answer" % self.what)
        if reply.get("error"):
            raise RuntimeError("%s: set-up of ring %d failed: %s" % (self.what, self.cid.ring_id, reply["error"]))
        return reply

    def close(self):
        self.sock.close()


def _recv_ready(sock):
    """The frames waiting on ``sock``, or None: never blocks (a poll may wake without a message)."""
    try:
        return sock.recv_multipart(zmq.NOBLOCK)
    except zmq.Again:
        return None


def _loads(raw, what):
    try:
        msg = bounded_json.loads(raw, what, MAX_MESSAGE_BYTES, 8)
    except ValueError as e:
        raise RuntimeError("%s is not JSON: %r (%s)" % (what, raw[:80], e)) from None
    if not isinstance(msg, dict):
        raise RuntimeError("%s is not a JSON object: %r" % (what, raw[:80]))
    return msg
