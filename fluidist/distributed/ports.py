"""Waiting for servers to listen (the runtime side of Paddle's ``wait_port``)."""
import logging
import os
import socket
import time

logger = logging.getLogger("fluidist.distributed.ports")


def wait_server_ready(endpoints, timeout=None, interval=0.5):
    """Wait until every ``host:port`` accepts TCP connections; raise TimeoutError naming the ones that
    never did (Paddle waited forever)."""
    if isinstance(endpoints, str):
        raise TypeError("wait_server_ready takes a list of endpoints, got the string %r" % endpoints)
    if timeout is None:
        timeout = float(os.environ.get("FLUIDIST_WAIT_PORT_TIMEOUT", "300"))
    deadline = time.monotonic() + timeout
    pending = list(endpoints)
    warned = False
    while True:
        pending = [ep for ep in pending if not _port_open(ep)]
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise TimeoutError("servers not ready after %.1f s: %s" % (timeout, ", ".join(pending)))
        if not warned:
            logger.info("server not ready, waiting for %s", ", ".join(pending))
            warned = True
        time.sleep(interval)


def _port_open(endpoint):
    host, _, port = endpoint.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except (OSError, ValueError):
        return False
