"""What both ends of the ZeroMQ transport (``rpc``'s clients, ``rpc_server``) share: its errors, its
deadlines and retries (``FLAGS_rpc_deadline``, ``FLAGS_rpc_retry_times``) and its endpoints. ``rpc``
re-exports every name here."""
import math
import os
import socket as _socket

from . import liveness, ports

DEFAULT_DEADLINE_MS = 180000
RETRIED_KINDS = ("get", "prefetch")   # reads: sending one again changes nothing on the pserver
DEFAULT_RETRY_TIMES = 3
SERVER_LINGER_MS = 3000   # a closing server still delivers its last replies for this long


class RPCError(RuntimeError):
    """A request failed: the peer answered with an error, or the exchange broke the protocol."""


class RPCTimeout(RPCError, TimeoutError):
    """A deadline passed while waiting for a peer."""


class PeerLost(RPCError):
    """The connection to a pserver was lost while a request waited, or the pserver is dead."""


class PserverUnreachable(RPCTimeout):
    """No connection to a pserver was ever made within ``FLUIDIST_CONNECT_TIMEOUT`` (see ``reach``)."""


for _error in (RPCError, RPCTimeout, PeerLost, PserverUnreachable):
    _error.__module__ = "fluidist.distributed.rpc"     # where users import them, and how tracebacks name them


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


def explicit_deadline_seconds(deadline_ms=None):
    """The deadline asked for (``deadline_ms``, else ``FLAGS_rpc_deadline``) in seconds, or None."""
    if deadline_ms is None and not os.environ.get("FLAGS_rpc_deadline", "").strip():
        return None
    return deadline_seconds(deadline_ms)


def retry_times():
    """``FLAGS_rpc_retry_times`` (Paddle's, default 3): how many times a ``get`` (recv) or ``prefetch`` whose
    deadline passed is sent again, each time with a fresh deadline. Sends and barriers are never sent twice:
    a pserver counts them (a second one is refused in sync mode, applied twice in async mode)."""
    raw = os.environ.get("FLAGS_rpc_retry_times", "").strip()
    if not raw:
        return DEFAULT_RETRY_TIMES
    if not raw.isdigit():
        raise ValueError("FLAGS_rpc_retry_times must be an integer >= 0, got %r" % raw)
    return int(raw)


def wait_limit(deadline_ms=None):
    """Seconds a wait on a live pserver may take: the deadline asked for, else no limit (``math.inf``)
    while heartbeats watch the pserver, else the default deadline."""
    explicit = explicit_deadline_seconds(deadline_ms)
    if explicit is not None:
        return explicit
    return math.inf if liveness.peer_timeout() is not None else deadline_seconds()


def split_endpoint(endpoint):
    """``"host:port"`` -> (host, port); port 0 (a server binding any free port) is allowed. A malformed
    endpoint raises :class:`~fluidist.distributed.ports.EndpointError` (a ValueError) naming it."""
    return ports.split_endpoint(endpoint, allow_port_zero=True)


def _tcp(endpoint, for_bind=False):
    host, port = split_endpoint(endpoint)
    if for_bind and host not in ("*", "0.0.0.0"):
        try:
            host = _socket.gethostbyname(host)
        except OSError as e:
            raise RPCError("cannot listen on %s: host %r does not resolve (%s)" % (endpoint, host, e)) from None
    return "tcp://%s:%s" % (host, "*" if for_bind and port == 0 else port)
