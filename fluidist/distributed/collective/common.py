"""Helpers the collective transports and the rendezvous share: the deadline, endpoint parsing,
the ZeroMQ context and sockets (CURVE-secured and heartbeating, see ``security`` and ``liveness``),
this host's identity and IP, liveness of local pids, and whether CuPy can be used (with the reason
when it cannot)."""
import math
import os
import socket
import threading

import zmq

from ...device.places import cupy_status  # noqa: F401 (re-exported: GPU detection with its reason)
from .. import liveness, security
from ..ports import split_endpoint  # noqa: F401 (the collectives' parser: fluidist's one)

DEFAULT_TIMEOUT = 300.0


def collective_timeout():
    """Seconds the set-up of a ring may wait (env ``FLUIDIST_COLLECTIVE_TIMEOUT``, default 300)."""
    raw = os.environ.get("FLUIDIST_COLLECTIVE_TIMEOUT")
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("FLUIDIST_COLLECTIVE_TIMEOUT must be a number of seconds, got %r" % raw) from None
    if value <= 0:
        raise ValueError("FLUIDIST_COLLECTIVE_TIMEOUT must be > 0, got %r" % raw)
    return value


def collective_wait_limit(timeout=None):
    """Seconds a collective call may wait for live peers: ``timeout`` or ``FLUIDIST_COLLECTIVE_TIMEOUT``
    when given, else no limit (``math.inf``) while heartbeats watch the peers (a dead or stopped rank is
    noticed within ``FLUIDIST_PEER_TIMEOUT``), else the default 300 s."""
    if timeout is not None:
        return float(timeout)
    if os.environ.get("FLUIDIST_COLLECTIVE_TIMEOUT"):
        return collective_timeout()
    return math.inf if liveness.peer_timeout() is not None else DEFAULT_TIMEOUT


def describe_seconds(t):
    return "without limit" if math.isinf(t) else "%g s" % t


class CollectiveTimeout(TimeoutError):
    """A rank, endpoint or rendezvous did not answer within the collective deadline."""


_ctx_lock = threading.Lock()
_ctx = None
_ctx_pid = None


def zmq_context():
    """The collective runtime's own ZeroMQ context (one per process, re-made after a fork)."""
    global _ctx, _ctx_pid
    with _ctx_lock:
        if _ctx is None or _ctx_pid != os.getpid():
            _ctx = zmq.Context(io_threads=1)
            _ctx_pid = os.getpid()
        return _ctx


_host_id = None


def host_id():
    """Names this machine (hostname and kernel boot id): equal host ids mean one kernel, so
    shared memory may be possible (the rendezvous still proves it with a token in the segment)."""
    global _host_id
    if _host_id is None:
        boot = ""
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                boot = f.read().strip()
        except OSError:
            pass
        _host_id = "%s/%s" % (socket.gethostname(), boot)
    return _host_id


def bind_random(sock, host):
    """Bind ``sock`` to a free port on ``host``; returns the address the others should connect to.
    A host that is not an address of this machine is an error (never a silent bind to every
    interface)."""
    try:
        port = sock.bind_to_random_port("tcp://%s" % host)
    except zmq.ZMQError as e:
        raise RuntimeError("cannot listen on %s (is it an address of this machine?): %s" % (host, e)) from None
    return "tcp://%s:%d" % (host, port)


def new_socket(kind, linger=0, role=None):
    """A socket of the collective context; ``role`` "server" (it binds) or "client" (it connects)
    makes it a CURVE socket of the job with heartbeats."""
    s = zmq_context().socket(kind)
    s.setsockopt(zmq.LINGER, linger)
    try:
        if role == "server":
            security.secure_server(s)
            liveness.configure(s)
        elif role == "client":
            security.secure_client(s)
            liveness.configure(s)
        elif role is not None:
            raise ValueError("unknown socket role %r" % role)
    except BaseException:
        s.close(0)
        raise
    return s


def plural(word, items):
    items = list(items)
    if len(items) == 1:
        return "%s %s" % (word, items[0])
    return "%ss %s" % (word, ", ".join(str(i) for i in items))


def pid_state(pid):
    """The state letter of process ``pid`` in /proc (R, S, D, T stopped, t traced, Z, ...), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def pid_start_ticks(pid):
    """When process ``pid`` started (clock ticks since boot, /proc's field 22), or None: with the pid,
    it names one process for good, where a pid alone may be reused."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def pid_alive(pid):
    """False once process ``pid`` (on this host) has exited, also while it is an unreaped zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid_state(pid) not in ("Z", "X")      # None (no /proc entry, unreadable): alive


def local_ip_towards(addr):
    """This host's IP on the route to ``tcp://ip:port`` or ``ip:port`` (no packet is sent)."""
    host, port = split_endpoint(addr.replace("tcp://", ""), "address")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, port))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
