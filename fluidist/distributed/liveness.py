"""Is the peer alive? ZeroMQ heartbeats on every connection, and socket monitors that say when a
peer's connection went down, instead of long deadlines.

ZeroMQ's own I/O thread pings every peer (``HEARTBEAT_IVL``) and closes a connection that stays
silent for half the peer timeout (``HEARTBEAT_TIMEOUT``). The pongs come from the peer's I/O thread,
which runs whatever its Python code does, so a peer that is merely slow (a 20-minute evaluation, a
huge step) stays connected for ever, while one that was killed (its socket closes at once) or stopped
(``SIGSTOP``: it answers no ping) loses its connection. A peer whose connection has been down for
another half of the timeout, without a new handshake, is dead.

``FLUIDIST_PEER_TIMEOUT`` (seconds, default 8; ``0`` or ``off`` turns heartbeats off and leaves only
the deadlines): a dead peer is noticed within about this long by every peer that talks to it.

:class:`Link` follows one connecting socket (a trainer's DEALER to a pserver, a rank's PUSH to
another rank); :class:`PeerTable` follows the connections a bound socket accepted (a pserver's
ROUTER), by file descriptor, and maps them to the peers that sent on them.
"""
import os
import time

import zmq
from zmq.utils.monitor import parse_monitor_message

PEER_TIMEOUT_ENV = "FLUIDIST_PEER_TIMEOUT"
DEFAULT_PEER_TIMEOUT = 8.0

_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
_LINK_EVENTS = zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | _HANDSHAKE_FAILED
_TABLE_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED


def peer_timeout(env=None):
    """Seconds after which a silent peer is dead, or None when heartbeats are off."""
    env = os.environ if env is None else env
    raw = env.get(PEER_TIMEOUT_ENV, "").strip().lower()
    if not raw:
        return DEFAULT_PEER_TIMEOUT
    if raw in ("0", "off", "no", "false"):
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("%s must be a number of seconds (or 0 / off), got %r" % (PEER_TIMEOUT_ENV, raw)) from None
    if value < 0.5:
        raise ValueError("%s must be at least 0.5 s (or 0 / off), got %r" % (PEER_TIMEOUT_ENV, raw))
    return value


def configure(sock, timeout=None):
    """Heartbeats on ``sock`` (before it binds or connects); returns the peer timeout (None: off)."""
    t = peer_timeout() if timeout is None else timeout
    if t is None:
        return None
    ms = int(t * 1000)
    sock.setsockopt(zmq.HEARTBEAT_IVL, max(100, min(1000, ms // 8)))
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, ms // 2)
    sock.setsockopt(zmq.HEARTBEAT_TTL, ms // 2)
    sock.setsockopt(zmq.HANDSHAKE_IVL, max(10000, 2 * ms))
    return t


def _stop_monitor(sock, mon):
    try:
        sock.disable_monitor()
    except zmq.ZMQError:
        pass
    mon.close(0)


def _drain(mon):
    """The pending events of a monitor socket, without blocking."""
    out = []
    while True:
        try:
            frames = mon.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return out
        except zmq.ZMQError:
            return out
        try:
            out.append(parse_monitor_message(frames))
        except Exception:  # a frame pair the monitor protocol does not define: skip it
            continue


class Link:
    """The connection of one connecting socket to its one peer, as its monitor reports it."""

    def __init__(self, sock, timeout):
        self.timeout = timeout
        self.grace = timeout / 2.0
        self._sock = sock
        self._mon = sock.get_monitor_socket(_LINK_EVENTS)
        self.started = time.monotonic()
        self.up = False
        self.ever_up = False
        self.down_since = self.started
        self.losses = 0           # connections lost after a handshake (each loses what was in flight)
        self.refusals = 0         # handshakes that failed (another secret, or none)
        self.last_refusal = None

    def update(self):
        for ev in _drain(self._mon):
            e = ev["event"]
            if e == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.up = self.ever_up = True
                self.down_since = None
            elif e == zmq.EVENT_DISCONNECTED:
                if self.up:
                    self.losses += 1
                    self.down_since = time.monotonic()
                self.up = False
            elif e & _HANDSHAKE_FAILED:
                self.refusals += 1
                self.last_refusal = e
        return self

    def dead_for(self, now=None):
        """Seconds the peer has been dead (down longer than the grace after having been up), else 0."""
        if self.up or not self.ever_up or self.down_since is None:
            return 0.0
        down = (time.monotonic() if now is None else now) - self.down_since
        return down if down > self.grace else 0.0

    def refused(self):
        """Why the peer keeps refusing our handshakes (never up, two refusals or more), or None."""
        if self.ever_up or self.refusals < 2:
            return None
        if self.last_refusal == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            return "it refused this process's key"
        return "the secure handshake failed"

    def close(self):
        _stop_monitor(self._sock, self._mon)


class PeerTable:
    """The connections a bound socket accepted, by file descriptor, and the peers seen on them.

    ``seen(fd, peer)`` records that a message from ``peer`` (e.g. a trainer id) came on ``fd``
    (``zmq.Frame.get(zmq.SRCFD)``); call :meth:`update` first, so that a descriptor closed and reused
    by a new connection is not taken for the old one. A peer whose descriptors are all closed has been
    gone since the last one closed."""

    def __init__(self, sock, timeout):
        self.timeout = timeout
        self.grace = timeout / 2.0
        self._sock = sock
        self._mon = sock.get_monitor_socket(_TABLE_EVENTS)
        self.peer_of = {}        # fd -> peer
        self.fds_of = {}         # peer -> set of open fds
        self.gone_since = {}     # peer -> when its last connection closed

    def update(self):
        for ev in _drain(self._mon):
            fd = int(ev["value"])
            if ev["event"] == zmq.EVENT_DISCONNECTED:
                peer = self.peer_of.pop(fd, None)
                if peer is not None:
                    fds = self.fds_of.get(peer, set())
                    fds.discard(fd)
                    if not fds:
                        self.gone_since[peer] = time.monotonic()
            elif ev["event"] == zmq.EVENT_ACCEPTED:
                self.peer_of.pop(fd, None)   # a reused descriptor: nobody's until a message says whose
        return self

    def seen(self, fd, peer):
        if fd is None or fd < 0:
            return
        old = self.peer_of.get(fd)
        if old == peer:
            return
        if old is not None:
            self.fds_of.get(old, set()).discard(fd)
        self.peer_of[fd] = peer
        self.fds_of.setdefault(peer, set()).add(fd)
        self.gone_since.pop(peer, None)

    def connected(self, peer):
        return bool(self.fds_of.get(peer))

    def dead(self, now=None):
        """``{peer: seconds}`` of the peers gone for longer than the grace."""
        now = time.monotonic() if now is None else now
        return {p: now - t for p, t in self.gone_since.items() if now - t > self.grace}

    def close(self):
        _stop_monitor(self._sock, self._mon)


def describe_timeout(timeout):
    return "%s=%g s" % (PEER_TIMEOUT_ENV, timeout)
