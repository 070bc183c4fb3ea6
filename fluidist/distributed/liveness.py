"""Is the peer alive, slow, or gone? ZeroMQ heartbeats on every connection, socket monitors that say
when a peer's connection closed, and the kernel's count of how long a connection has been silent.

Three cases, told apart:

- **gone**: the peer's process died (or closed its socket): its kernel closes the TCP connection, the
  monitor reports it at once, and the peer is dead once ``CLOSED_GRACE`` (0.5 s) passed without a new
  connection of it. Named within about 2 s by every peer that talks to it.
- **silent**: the connection is open but nothing at all arrives on it, not even the pongs that the peer's
  ZeroMQ I/O thread sends whatever its Python code does: the peer is stopped (``SIGSTOP``, a debugger), its
  host froze, or the network between is cut. After ``FLUIDIST_PEER_WARN`` seconds (default 10) a warning
  names it; after ``FLUIDIST_PEER_TIMEOUT`` seconds (default 300) it is taken for dead. Silence is read
  from the kernel (``TCP_INFO``'s time since the last data received; Linux); elsewhere ZeroMQ's own
  heartbeat timeout, set to the same bound, closes the connection then.
- **slow**: it answers pings, so it is waited for without limit (unless a deadline was asked for).

``FLUIDIST_PEER_TIMEOUT=0`` (or ``off``) turns heartbeats off and leaves only the deadlines.

:class:`Link` follows one connecting socket (a trainer's DEALER to a pserver, a rank's PUSH to
another rank); :class:`PeerTable` follows the connections a bound socket accepted (a pserver's
ROUTER), by file descriptor and routing id, and maps them to the peers that sent on them.
"""
import itertools
import logging
import os
import socket
import struct
import time
import weakref
from collections import OrderedDict

import zmq

PEER_TIMEOUT_ENV = "FLUIDIST_PEER_TIMEOUT"
PEER_WARN_ENV = "FLUIDIST_PEER_WARN"
HANDSHAKE_TIMEOUT_ENV = "FLUIDIST_HANDSHAKE_TIMEOUT"
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_PEER_TIMEOUT = 300.0
DEFAULT_PEER_WARN = 10.0
CLOSED_GRACE = 0.5          # a peer whose connections all closed, and none came back within this, is gone
_MAX_TTL_MS = 6553000       # ZMTP carries the heartbeat TTL in deciseconds, 16 bits
_TCP_INFO_BYTES = 232        # room for the fields read here (tcpi_bytes_received ends at 136)
_LAST_DATA_RECV = 52        # offset of tcpi_last_data_recv (ms, u32) in Linux's struct tcp_info

_HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                     | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
_LINK_EVENTS = (zmq.EVENT_CONNECTED | zmq.EVENT_CONNECT_RETRIED | zmq.EVENT_HANDSHAKE_SUCCEEDED
                | zmq.EVENT_DISCONNECTED | _HANDSHAKE_FAILED)
_TABLE_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED

logger = logging.getLogger("fluidist.distributed.liveness")


def _seconds(env, name, default, minimum):
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("0", "off", "no", "false"):
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("%s must be a number of seconds (or 0 / off), got %r" % (name, raw)) from None
    if value < minimum:
        raise ValueError("%s must be at least %g s (or 0 / off), got %r" % (name, minimum, raw))
    return value


def peer_timeout(env=None):
    """Seconds a connected but silent peer is waited for before it is dead, or None when heartbeats are off."""
    return _seconds(os.environ if env is None else env, PEER_TIMEOUT_ENV, DEFAULT_PEER_TIMEOUT, 0.5)


def peer_warn(env=None):
    """Seconds of silence after which a connected peer is warned about (None: never)."""
    return _seconds(os.environ if env is None else env, PEER_WARN_ENV, DEFAULT_PEER_WARN, 0.1)


def handshake_timeout(env=None):
    """Seconds a connection may take to finish its secure handshake (``FLUIDIST_HANDSHAKE_TIMEOUT``, default
    10), whatever the peer timeout: a connection that never finishes it holds a descriptor meanwhile."""
    raw = (os.environ if env is None else env).get(HANDSHAKE_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_HANDSHAKE_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("%s must be a number of seconds, got %r" % (HANDSHAKE_TIMEOUT_ENV, raw)) from None
    if not value >= 0.1:
        raise ValueError("%s must be at least 0.1 s, got %r" % (HANDSHAKE_TIMEOUT_ENV, raw))
    return value


def configure(sock, timeout=None):
    """Heartbeats on ``sock`` (before it binds or connects); returns the peer timeout (None: off). The
    handshake deadline (``handshake_timeout``) is set either way.

    Pings go often enough that a live peer is never silent for long (at least 4 per warning period);
    ZeroMQ itself closes a connection only after the whole bound of silence."""
    sock.setsockopt(zmq.HANDSHAKE_IVL, int(handshake_timeout() * 1000))
    t = peer_timeout() if timeout is None else timeout
    if t is None:
        return None
    ms = int(t * 1000)
    warn = peer_warn()
    ivl = min(1000, ms // 8, int(warn * 1000) // 4 if warn else 1000)
    sock.setsockopt(zmq.HEARTBEAT_IVL, max(100, ivl))
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, ms)
    sock.setsockopt(zmq.HEARTBEAT_TTL, min(ms, _MAX_TTL_MS))
    return t


def tcp_info_field(fd, fmt, offset):
    """The field of Linux's ``struct tcp_info`` at ``offset`` (``struct`` format ``fmt``) of TCP socket
    ``fd``, or None when unknown (no ``TCP_INFO``, a closed descriptor, an older kernel's shorter struct)."""
    if fd is None or fd < 0 or not hasattr(socket, "TCP_INFO"):
        return None
    try:
        s = socket.socket(fileno=fd)
    except OSError:
        return None
    try:
        info = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_BYTES)
    except OSError:
        return None
    finally:
        s.detach()
    if len(info) < offset + struct.calcsize(fmt):
        return None
    return struct.unpack_from(fmt, info, offset)[0]


def silent_seconds(fd):
    """Seconds since anything arrived on TCP socket ``fd`` (the kernel's count), or None when unknown."""
    ms = tcp_info_field(fd, "I", _LAST_DATA_RECV)
    return None if ms is None else ms / 1000.0


_monitor_ids = itertools.count()


class MonitorPipe:
    """The events of ``sock``'s monitor, through an inproc PAIR pipe without a high-water mark.

    libzmq's I/O thread writes each event into the pipe with a blocking send, holding the socket's monitor
    lock. Two ways that send never returns, each stalling every socket of the context (no connection is
    made or served any more) and any later ``close`` of the socket:

    - a full pipe: with pyzmq's bounded pipe (``get_monitor_socket``), a monitor nobody reads filled up (an
      idle pooled client whose pserver has gone reconnects every 100 ms, one event each). This pipe is
      unbounded; it costs its queued events' memory, and readers drain it.
    - a pipe whose reading end was closed while the socket still reports to it. Garbage collection did
      that: an object holding the socket and the PAIR, left in a reference cycle (a Client whose
      constructor raised, kept by the exception's traceback), is collected with the finalizers of its
      objects run in any order, so the PAIR could be closed before the socket and its next event
      blocked the I/O thread for good. The pipe is stopped by a ``weakref.finalize`` instead, which holds
      both sockets: whether :meth:`close` is called or the owner is collected, the monitor is stopped
      first and the PAIR closed after, and neither socket can go before that."""

    def __init__(self, sock, events):
        addr = "inproc://fluidist-monitor-%d-%d" % (os.getpid(), next(_monitor_ids))
        sock.monitor(addr, events)
        mon = sock.context.socket(zmq.PAIR)
        mon.rcvhwm = 0      # no high-water mark: libzmq never blocks on this pipe
        mon.linger = 0
        mon.connect(addr)
        self.socket = mon
        self._stop = weakref.finalize(self, _stop_monitor, sock, mon, os.getpid())
        # not at the interpreter's exit: a daemon thread may still be using the socket then, and zmq sockets
        # are not to be touched from two threads; the finalizer keeps both sockets alive until the process ends
        self._stop.atexit = False

    def drain(self, limit=None):
        """The pending events (at most ``limit``), without blocking: dicts with the ``event`` and its ``value``."""
        return [] if not self._stop.alive else _drain(self.socket, limit)

    def close(self):
        """Stop the monitor (what is queued is dropped) and close the pipe; once."""
        self._stop()


def _stop_monitor(sock, mon, pid):
    if os.getpid() != pid:
        return          # a forked child (at its exit): the sockets are its parent's, not to be touched
    _drain(mon)         # what is queued goes first: stopping the monitor sends one more event
    try:
        sock.monitor(None, 0)
    except zmq.ZMQError:
        pass
    mon.close(0)


_EVENT_HEAD = struct.Struct("=Hi")    # a monitor event's first frame: event number (u16), value (i32)


def _drain(mon, limit=None):
    """The pending events of a monitor socket (at most ``limit``: a socket may report faster than they are
    read, e.g. a listener that keeps failing to accept), without blocking."""
    out = []
    while limit is None or len(out) < limit:
        try:
            # (asking first is cheaper than the zmq.Again a recv raises on an empty pipe, and a
            # client asks before every request)
            if not mon.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                return out
            frames = mon.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return out
        except zmq.ZMQError:
            return out
        if len(frames) != 2 or len(frames[0]) != _EVENT_HEAD.size:
            continue        # a frame pair the monitor protocol does not define: skip it
        event, value = _EVENT_HEAD.unpack(frames[0])
        out.append({"event": event, "value": value, "endpoint": frames[1]})
    return out


class SilenceWatch:
    """Warns once per silent spell of a peer; says when the silence passed the bound."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.warn = peer_warn()
        self._warned = set()

    def check(self, peer, silent, describe):
        """``silent``: seconds the connected ``peer`` has been silent (None: unknown or not connected).
        Logs a warning naming it (``describe()``) past the warning time; returns True past the bound."""
        if silent is None or self.warn is None or silent < self.warn:
            self._warned.discard(peer)
            return silent is not None and silent > self.timeout
        if peer not in self._warned:
            self._warned.add(peer)
            logger.warning("%s is connected but has been silent for %.1f s (stopped, frozen or cut off?): waiting "
                           "for it up to %s=%g s", describe(), silent, PEER_TIMEOUT_ENV, self.timeout)
        return silent > self.timeout


class Link:
    """The connection of one connecting socket to its one peer, as its monitor reports it."""

    def __init__(self, sock, timeout):
        self.timeout = timeout
        self.grace = min(CLOSED_GRACE, timeout / 2.0)
        self._sock = sock
        self._mon = MonitorPipe(sock, _LINK_EVENTS)
        self.started = time.monotonic()
        self.up = False
        self.ever_up = False
        self.fd = None
        self.refused_since = None   # since when every connection attempt failed (nothing listens there)
        self.down_since = self.started
        self.losses = 0           # connections lost after a handshake (each loses what was in flight)
        self.refusals = 0         # handshakes that failed (another secret, or none)
        self.last_refusal = None

    def update(self):
        for ev in self._mon.drain():
            e = ev["event"]
            if e == zmq.EVENT_CONNECTED:
                self.fd = int(ev["value"])
                self.refused_since = None
            elif e == zmq.EVENT_CONNECT_RETRIED:
                if self.refused_since is None:
                    self.refused_since = time.monotonic()
            elif e == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.up = self.ever_up = True
                self.down_since = None
            elif e == zmq.EVENT_DISCONNECTED:
                if self.up:
                    self.losses += 1
                    self.down_since = time.monotonic()
                self.up = False
                self.fd = None
            elif e & _HANDSHAKE_FAILED:
                self.refusals += 1
                self.last_refusal = e
        return self

    def dead_for(self, now=None):
        """Seconds the peer has been gone (its connection closed longer than the grace ago, after having
        been up), else 0."""
        if self.up or not self.ever_up or self.down_since is None:
            return 0.0
        down = (time.monotonic() if now is None else now) - self.down_since
        return down if down > self.grace else 0.0

    def refused_for(self, now=None):
        """Seconds every attempt to connect has failed, before the peer ever answered (else 0)."""
        if self.ever_up or self.refused_since is None:
            return 0.0
        return (time.monotonic() if now is None else now) - self.refused_since

    def silent_for(self):
        """Seconds nothing arrived on the open connection (None: not up, or not known here)."""
        return silent_seconds(self.fd) if self.up else None

    def refused(self):
        """Why the peer keeps refusing our handshakes (never up, two refusals or more), or None."""
        if self.ever_up or self.refusals < 2:
            return None
        if self.last_refusal == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            return "it refused this process's key"
        return "the secure handshake failed"

    def close(self):
        self._mon.close()


def _newer_routing_id(a, b):
    """Whether ROUTER routing id ``a`` was given out after ``b``: ids the ROUTER makes itself are a zero
    byte and a big-endian counter of the connections it attached (peers cannot choose such ids)."""
    return len(a) == len(b) == 5 and a[0] == b[0] == 0 and a > b


class PeerTable:
    """The connections a bound socket accepted, by file descriptor, and the peers seen on them.

    A message may be read after the monitor reported its connection closed (it was queued while this
    process was not reading): :meth:`stale` tells such a message, so that a dead peer's queued
    requests never make it alive again. Call :meth:`update` before looking at a message's descriptor
    (``zmq.Frame.get(zmq.SRCFD)``). A descriptor is open from its ACCEPTED event to its DISCONNECTED
    event; the routing id of the messages on it ties them to that one connection, so a message of a
    closed connection whose descriptor number was reused by a new one is told apart too. A peer whose
    connections are all closed has been gone since the last one closed."""

    _CLOSED_IDS_KEPT = 4096

    def __init__(self, sock, timeout, events=None):
        """``events``: a callable returning the socket's monitor events, where something else owns its monitor
        (a socket has one; the pserver's ``HandshakeGuard`` reads it and hands the events on)."""
        self.timeout = timeout
        self.grace = min(CLOSED_GRACE, timeout / 2.0)
        self._sock = sock
        self._mon = MonitorPipe(sock, _TABLE_EVENTS) if events is None else None
        self._events = self._mon.drain if events is None else events
        self.open_fds = set()
        self.peers_on = {}       # fd -> the peers seen on it
        self.rid_of = {}         # fd -> routing id of the connection on it
        self.fds_of = {}         # peer -> set of open fds
        self.gone_since = {}     # peer -> when its last connection closed
        self._closed_ids = OrderedDict()
        self.silence = SilenceWatch(timeout)

    def update(self):
        for ev in self._events():
            fd = int(ev["value"])
            if ev["event"] == zmq.EVENT_DISCONNECTED:
                self.open_fds.discard(fd)
                self._release(fd)
            elif ev["event"] == zmq.EVENT_ACCEPTED:
                self._release(fd)      # a reused number: nobody's until a message says whose
                self.open_fds.add(fd)
        return self

    def _release(self, fd):
        rid = self.rid_of.pop(fd, None)
        if rid is not None:
            self._close_id(rid)
        for peer in self.peers_on.pop(fd, ()):
            fds = self.fds_of.get(peer, set())
            fds.discard(fd)
            if not fds:
                self.gone_since[peer] = time.monotonic()

    def _close_id(self, rid):
        self._closed_ids[rid] = True
        while len(self._closed_ids) > self._CLOSED_IDS_KEPT:
            self._closed_ids.popitem(last=False)

    def stale(self, fd, rid=None):
        """Whether a message with routing id ``rid`` read on descriptor ``fd`` came on a connection that
        is already closed (its sender cannot hear a reply, and may be dead)."""
        if fd is None or fd < 0:
            return False
        if rid is not None and rid in self._closed_ids:
            return True
        if fd not in self.open_fds:
            if rid is not None:
                self._close_id(rid)
            return True
        bound = self.rid_of.get(fd)
        if rid is not None and bound is not None and bound != rid:
            if _newer_routing_id(rid, bound):
                self._release(fd)      # the bound one was a closed connection's message, read late
                return False
            self._close_id(rid)
            return True
        return False

    def seen(self, fd, peer, rid=None):
        """A message of ``peer`` that is not :meth:`stale` came on ``fd``: that connection is ``peer``'s
        (one connection may carry several peers: trainers of one process share it)."""
        if fd is None or fd < 0 or fd not in self.open_fds:
            return
        if rid is not None:
            self.rid_of[fd] = rid
        self.peers_on.setdefault(fd, set()).add(peer)
        self.fds_of.setdefault(peer, set()).add(fd)
        self.gone_since.pop(peer, None)

    def connected(self, peer):
        return bool(self.fds_of.get(peer))

    def dead(self, now=None):
        """``{peer: seconds}`` of the peers gone for longer than the grace."""
        now = time.monotonic() if now is None else now
        return {p: now - t for p, t in self.gone_since.items() if now - t > self.grace}

    def silent(self, peers=None):
        """``{peer: seconds}``: how long nothing arrived from each connected peer (the freshest of its
        connections); peers whose silence is not known here are left out."""
        out = {}
        for peer, fds in self.fds_of.items():
            if not fds or (peers is not None and peer not in peers):
                continue
            times = [silent_seconds(fd) for fd in fds]
            if times and all(t is not None for t in times):
                out[peer] = min(times)
        return out

    def close(self):
        if self._mon is not None:
            self._mon.close()


def describe_timeout(timeout):
    return "%s=%g s" % (PEER_TIMEOUT_ENV, timeout)
