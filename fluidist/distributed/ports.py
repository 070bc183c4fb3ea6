"""Endpoints (``host:port``): the one parser and formatter every part of fluidist uses, and waiting
for servers to listen (the runtime side of Paddle's ``wait_port``).

This module imports nothing of fluidist, so the runtime, the transpiler, the role makers, Fleet and
the launcher may all use it."""
import logging
import os
import socket
import time

from .liveness import peer_warn

logger = logging.getLogger("fluidist.distributed.ports")

__all__ = ["EndpointError", "split_endpoint", "format_endpoint", "strip_brackets", "is_endpoint", "wait_server_ready"]


class EndpointError(ValueError):
    """A malformed ``host:port``; the message names the endpoint and what it was given for."""


def strip_brackets(host):
    """``"[::1]"`` -> ``"::1"``; other hosts unchanged."""
    host = str(host).strip()
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1]
    return host


def format_endpoint(host, port):
    """``host:port``, with an IPv6 address in brackets (``[::1]:6170``), as URLs and ZeroMQ write it."""
    return "[%s]:%d" % (host, int(port)) if ":" in host else "%s:%d" % (host, int(port))


def split_endpoint(endpoint, what="endpoint", allow_port_zero=False):
    """``"host:port"`` or ``"[v6]:port"`` -> ``(host, port)``, the host without brackets.

    Raises :class:`EndpointError` naming ``what`` and the endpoint when it is not a string of that
    form, its port is not in 1..65535 (0..65535 with ``allow_port_zero``: a server binding any free
    port), or an IPv6 address is written without brackets (``::1:7000`` is ambiguous)."""
    text = endpoint.strip() if isinstance(endpoint, str) else None
    low = 0 if allow_port_zero else 1
    if text is not None:
        host, sep, port = text.rpartition(":")
        if text.startswith("[") and "]" not in host:  # "[::1]" alone: brackets but no port
            sep = ""
    if text is not None and any(c in text for c in ";,"):
        raise EndpointError("%s: %r is not one host:port: a list of endpoints is written with commas, "
                            "host:port,host:port" % (what, endpoint))
    if text is None or not sep or not host or not port.isdigit() or not low <= int(port) <= 65535:
        raise EndpointError("%s: %r is not host:port (a port in %d..65535; IPv6 in brackets: [::1]:6170)"
                            % (what, endpoint, low))
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise EndpointError("%s: %r: write an IPv6 address in brackets, e.g. [%s]:%s" % (what, endpoint, host, port))
    return strip_brackets(host), int(port)


def is_endpoint(text):
    """Whether ``text`` is a ``host:port`` :func:`split_endpoint` accepts."""
    try:
        split_endpoint(text)
    except EndpointError:
        return False
    return True


def wait_server_ready(endpoints, timeout=None, interval=0.5):
    """Wait until every ``host:port`` accepts TCP connections; raise TimeoutError naming the ones that
    never did (Paddle waited forever)."""
    if isinstance(endpoints, str):
        raise TypeError("wait_server_ready takes a list of endpoints, got the string %r" % endpoints)
    if timeout is None:
        timeout = float(os.environ.get("FLUIDIST_WAIT_PORT_TIMEOUT", "300"))
    start = time.monotonic()
    deadline = start + timeout
    warn_after = peer_warn()
    pending = list(endpoints)
    said = 0     # 1: the info line, 2: the warning after FLUIDIST_PEER_WARN seconds
    while True:
        pending = [ep for ep in pending if not _port_open(ep)]
        if not pending:
            return
        now = time.monotonic()
        if now >= deadline:
            raise TimeoutError("servers not ready after %.1f s: %s" % (timeout, ", ".join(pending)))
        if said == 0:
            logger.info("server not ready, waiting for %s", ", ".join(pending))
            said = 1
        elif said == 1 and warn_after is not None and now - start > warn_after:
            logger.warning("nothing listens at %s after %.1f s (not started yet, or gone); waiting up to %.0f s "
                           "(FLUIDIST_WAIT_PORT_TIMEOUT)", ", ".join(pending), now - start, timeout)
            said = 2
        time.sleep(interval)


def _port_open(endpoint):
    try:
        host, port = split_endpoint(endpoint, "wait_server_ready")
        with socket.create_connection((host, port), timeout=2):
            return True
    except (OSError, ValueError):
        return False
