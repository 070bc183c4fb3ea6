"""What a peer without the job secret may hold on a pserver: connections that never finish their handshake.

ZeroMQ accepts every TCP connection to the pserver's ROUTER in its own I/O thread and keeps it until the
secure handshake succeeds, fails, or runs past ``ZMQ_HANDSHAKE_IVL``. An outsider that opens connections
and sends nothing would hold one file descriptor each; with ``nofile`` 1024, 1,100 idle connections left
the pserver unable to accept anyone (``EMFILE``), a job could not start, and nothing said why. As the
launcher's rendezvous does for its connections, the pserver bounds them here:

- a handshake deadline of its own, ``FLUIDIST_HANDSHAKE_TIMEOUT`` seconds (default 10), independent of the
  peer timeout (``FLUIDIST_PEER_TIMEOUT``, minutes): a connection whose handshake did not finish by then is
  closed by ZeroMQ (``liveness.configure`` sets it on every socket of the runtime);
- at most ``FLUIDIST_MAX_PENDING_HANDSHAKES`` (default 64) connections waiting for their handshake: past
  that, the oldest waiting ones are closed first. A connection waits while fewer bytes came on it than a
  handshake needs to get past the point where a peer without the secret is refused (the kernel's count,
  ``TCP_INFO``); the guard follows the connections through the socket's monitor (accepted, closed) and
  closes one by shutting its descriptor down, which ZeroMQ then closes like any dropped connection;
- a pserver out of file descriptors (``EMFILE``: ZeroMQ then fails every accept) says so in its log, a few
  lines a minute, naming the limit (checked once a second, by duplicating a descriptor); the waiting
  connections older than a second are then closed at once to give descriptors back.

Trainers that cannot finish their handshake are told why by ``reach.probe``: a pserver whose port takes
connections but whose process never answers on them cannot accept connections (out of file descriptors,
or stopped), which is not a wrong secret.
"""
import errno
import logging
import os
import resource
import socket
import time
from collections import OrderedDict

import zmq

from ..log_helper import LineBudget
from .liveness import MonitorPipe, tcp_info_field

logger = logging.getLogger("fluidist.distributed.handshake_guard")

MAX_PENDING_ENV = "FLUIDIST_MAX_PENDING_HANDSHAKES"
DEFAULT_MAX_PENDING = 64
# Bytes a client sends before a peer without the secret is refused: the ZMTP greeting (64) and, with CURVE,
# the HELLO command (200), which only a holder of the server's key (derived from the secret) can make.
_CURVE_HANDSHAKE_BYTES = 64 + 200
_PLAIN_HANDSHAKE_BYTES = 64 + 1
_BYTES_RECEIVED = 128       # offset of tcpi_bytes_received (u64) in Linux's struct tcp_info (Linux 4.1+)
_STALE_ON_EMFILE_S = 1.0
_FILES_CHECK_S = 1.0
_EVENTS_PER_UPDATE = 4096
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED


def max_pending(env=None):
    """Connections a pserver lets wait for their handshake at once (``FLUIDIST_MAX_PENDING_HANDSHAKES``)."""
    raw = (os.environ if env is None else env).get(MAX_PENDING_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_PENDING
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("%s must be a whole number, got %r" % (MAX_PENDING_ENV, raw)) from None
    if value < 1:
        raise ValueError("%s must be at least 1, got %r" % (MAX_PENDING_ENV, raw))
    return value


def bytes_received(fd):
    """Bytes that arrived on TCP socket ``fd`` (the kernel's count), or None when unknown."""
    return tcp_info_field(fd, "Q", _BYTES_RECEIVED)


def _nofile():
    try:
        return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        return -1


class HandshakeGuard:
    """Follows the connections a bound socket accepted and closes the oldest of those still waiting for
    their handshake past the cap (see the module doc). ``update()`` reads the socket's monitor (call it when
    ``socket`` is readable, and before looking at a message's descriptor) and returns the events it read."""

    def __init__(self, sock, endpoint, secure):
        self.endpoint = endpoint
        self.cap = max_pending()
        self.needed = _CURVE_HANDSHAKE_BYTES if secure else _PLAIN_HANDSHAKE_BYTES
        self._mon = MonitorPipe(sock, _EVENTS)
        self.socket = self._mon.socket
        self._port = None
        self.open = set()             # the connections open now (descriptors)
        self.unproven = OrderedDict()  # fd -> when accepted, oldest first: not yet seen past the handshake's start
        self.dropped = 0
        self._said_unknown = False
        self.out_of_files = 0         # checks that found no descriptor left
        self._probe_fd = self.socket.getsockopt(zmq.FD)
        self._checked_files = 0.0
        self._said_drops = LineBudget(3, 60.0)
        self._said_files = LineBudget(3, 60.0)

    def listening_on(self, port):
        self._port = int(port)

    def update(self):
        events = self._mon.drain(_EVENTS_PER_UPDATE)
        for ev in events:
            e, value = ev["event"], int(ev["value"])
            if e == zmq.EVENT_ACCEPTED:
                self.open.add(value)
                self.unproven.pop(value, None)
                self.unproven[value] = time.monotonic()
            elif e == zmq.EVENT_DISCONNECTED:
                self.open.discard(value)
                self.unproven.pop(value, None)
        out_of_files = self._out_of_files()
        if len(self.unproven) > self.cap or out_of_files:
            self._drop_waiting(out_of_files)
        return events

    def _out_of_files(self):
        """Whether this process has no file descriptor left (checked at most once a second: duplicating one).
        ZeroMQ's listener then fails every accept and retries at once; its failures are not watched through
        the monitor, which would queue them as fast as it fails."""
        now = time.monotonic()
        if now - self._checked_files < _FILES_CHECK_S:
            return False
        self._checked_files = now
        try:
            os.close(os.dup(self._probe_fd))
            return False
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                return False
            self.out_of_files += 1
            self._say_out_of_files(e.errno)
            return True

    def _waiting(self):
        """The connections that have not sent enough for a handshake, oldest first (None: the kernel does not
        tell). One that has is proven for good and never looked at again: with many trainers connected, only
        the new connections cost a query each."""
        out = []
        for fd in list(self.unproven):
            got = bytes_received(fd)
            if got is None:
                if not self._said_unknown:
                    self._said_unknown = True
                    logger.info("pserver %s cannot tell connections waiting for their handshake here (no byte count "
                                "from TCP_INFO): %s is not enforced", self.endpoint, MAX_PENDING_ENV)
                return None
            if got < self.needed:
                out.append(fd)
            else:
                del self.unproven[fd]
        return out

    def _drop_waiting(self, emfile):
        waiting = self._waiting()
        if not waiting:
            return
        excess = max(0, len(waiting) - self.cap)
        if emfile:
            now = time.monotonic()
            excess = max(excess, sum(1 for fd in waiting if now - self.unproven[fd] > _STALE_ON_EMFILE_S))
        closed = sum(1 for fd in waiting[:excess] if self._close(fd))
        self.dropped += closed
        if closed:
            log, unlogged = self._said_drops.take()
            if log:
                logger.warning("pserver %s: closed %d connection(s) that did not finish their secure handshake (more "
                               "than %s=%d waiting%s; peers without this job's secret?)%s", self.endpoint, closed,
                               MAX_PENDING_ENV, self.cap, ", and out of file descriptors" if emfile else "",
                               " (%d such lines left out)" % unlogged if unlogged else "")

    def _close(self, fd):
        """Shut the connection on ``fd`` down (ZeroMQ then closes it), if it is one accepted on our port."""
        try:
            s = socket.socket(fileno=fd)
        except OSError:
            return False
        try:
            if s.type != socket.SOCK_STREAM or (self._port is not None and s.getsockname()[1] != self._port):
                return False
            s.shutdown(socket.SHUT_RDWR)
            self.unproven.pop(fd, None)
            return True
        except OSError:
            return False
        finally:
            s.detach()

    def _say_out_of_files(self, err):
        log, unlogged = self._said_files.take()
        if log:
            logger.warning("pserver %s cannot accept connections: out of file descriptors (%s; this process may open "
                           "%d, `ulimit -n`; %d connections open, %d of them waiting for their handshake)%s",
                           self.endpoint, errno.errorcode.get(err, err), _nofile(), len(self.open),
                           len(self._waiting() or ()), " (%d such lines left out)" % unlogged if unlogged else "")

    def close(self):
        self._mon.close()
