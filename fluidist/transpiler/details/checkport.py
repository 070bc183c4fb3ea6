"""``transpiler.details.checkport``: ``wait_server_ready(endpoints)`` blocks until every endpoint accepts
a TCP connection (the runtime's, under Paddle's path)."""
from ...distributed.ports import wait_server_ready  # noqa: F401
