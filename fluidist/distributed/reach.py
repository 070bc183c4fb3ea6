"""Can a pserver be reached at all? The wait for a peer that has never answered.

A trainer's first request to a pserver goes out before any connection exists (ZeroMQ connects in the
background and retries). If nothing ever answers (a wrong address, a pserver that is not started, a
closed port), the trainer says so within seconds instead of waiting out the deadline:

- after ``WARN_AFTER_S`` (3 s) a WARNING names the endpoint and why it cannot be reached (a plain TCP
  probe tells "connection refused" from "no answer", "does not resolve" and "listening, but not a
  fluidist pserver of this job");
- after ``FLUIDIST_CONNECT_TIMEOUT`` seconds (default 10) the request fails with
  :class:`~fluidist.distributed.rpc.PserverUnreachable`, naming the endpoint, the request and the reason.

Pservers that start well after their trainers (a scheduler that starts roles at different times) are
waited for longer only when asked: ``FLUIDIST_CONNECT_TIMEOUT=<seconds>`` (a WARNING every 30 s meanwhile),
at most ``FLAGS_rpc_deadline`` when that is set. A pserver that answered once is never under this limit:
from then on the heartbeats (``liveness``) decide whether it is alive.
"""
import logging
import os
import socket
import time

from . import ports

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_ENV = "FLUIDIST_CONNECT_TIMEOUT"
DEFAULT_CONNECT_TIMEOUT_S = 10.0
WARN_AFTER_S = 3.0
WARN_EVERY_S = 30.0


def connect_timeout(env=None):
    """Seconds a trainer keeps trying to reach a pserver that never answered (``FLUIDIST_CONNECT_TIMEOUT``)."""
    env = os.environ if env is None else env
    raw = env.get(CONNECT_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_CONNECT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("%s must be a number of seconds, got %r" % (CONNECT_TIMEOUT_ENV, raw)) from None
    if not value > 0:
        raise ValueError("%s must be > 0 seconds, got %r" % (CONNECT_TIMEOUT_ENV, raw))
    return value


NOT_ACCEPTING = "the pserver cannot accept connections"


def probe(endpoint, timeout=1.0):
    """Why ``endpoint`` cannot be reached, from one plain TCP connection attempt (a short phrase): after
    connecting, it waits up to ``timeout`` for the first bytes a ZeroMQ peer sends (its greeting, sent as
    soon as its process takes the connection), which tells a process that takes no connection (out of
    file descriptors, stopped) from one that answers but refuses the handshake."""
    try:
        host, port = ports.split_endpoint(endpoint, "pserver endpoint")
    except ports.EndpointError as e:
        return str(e)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        return "host %r does not resolve (%s)" % (host, e.strerror or e)
    family, kind, proto, _, addr = infos[0]
    s = socket.socket(family, kind, proto)
    s.settimeout(timeout)
    try:
        s.connect(addr)
    except ConnectionRefusedError:
        return "connection refused: nothing listens on %s (is the pserver started, and at this address?)" % endpoint
    except socket.timeout:
        return ("no answer from %s within %.0f s (the host is down, a firewall drops the packets, or the pserver's "
                "queue of connections to take is full)" % (host, timeout))
    except OSError as e:
        s.close()
        return "%s (%s)" % (e.strerror or e, endpoint)
    try:
        first = s.recv(16)
    except socket.timeout:
        return ("%s: out of file descriptors, or stopped: %s takes TCP connections but its process never answered "
                "on this one within %.0f s (the pserver's log says 'out of file descriptors' when that is why)"
                % (NOT_ACCEPTING, endpoint, timeout))
    except OSError as e:
        return "%s closed the connection: %s" % (endpoint, e.strerror or e)
    finally:
        s.close()
    if not first:
        return ("%s closed the connection without a word (a pserver drops connections past its cap on waiting "
                "handshakes, FLUIDIST_MAX_PENDING_HANDSHAKES; or it is not a ZeroMQ service)" % endpoint)
    return ("%s accepts connections but never completed the secure handshake: not a fluidist pserver, another "
            "fluidist version, or a pserver of another job" % endpoint)


class ReachWatch:
    """The wait of one client for a peer it has never reached: when to warn, when to give up."""

    def __init__(self, endpoint, started=None, limit=None):
        self.endpoint = endpoint
        self.started = time.monotonic() if started is None else started
        self.limit = connect_timeout() if limit is None else limit
        self._next_warning = self.started + WARN_AFTER_S

    def give_up_at(self):
        """The monotonic time after which the wait fails."""
        return self.started + self.limit

    def tick(self, now=None):
        """Log the WARNING when it is due (once after ``WARN_AFTER_S``, then every ``WARN_EVERY_S``)."""
        now = time.monotonic() if now is None else now
        if now < self._next_warning or now >= self.give_up_at():
            return
        self._next_warning = now + WARN_EVERY_S
        logger.warning("cannot reach pserver %s after %.0f s: %s; trying until %.0f s (%s)", self.endpoint,
                       now - self.started, probe(self.endpoint), self.limit, CONNECT_TIMEOUT_ENV)

    def failure(self, desc):
        """The message of the error that ends the wait for request ``desc``."""
        return ("pserver %s is unreachable: no connection within %.1f s for %s: %s. Pservers that start later "
                "than their trainers are waited for longer with %s=<seconds>"
                % (self.endpoint, time.monotonic() - self.started, desc, probe(self.endpoint), CONNECT_TIMEOUT_ENV))
