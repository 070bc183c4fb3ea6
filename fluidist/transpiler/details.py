"""Small helpers shared by the transpiler modes (``wait_server_ready`` is the runtime's, kept here
under Paddle's import path)."""
from ..distributed.ports import wait_server_ready  # noqa: F401


def parse_endpoints(value, what):
    if isinstance(value, (list, tuple)):
        eps = [str(e).strip() for e in value]
    elif isinstance(value, str):
        eps = [e.strip() for e in value.split(",") if e.strip()]
    else:
        raise TypeError("%s must be a comma-separated string or a list of ip:port, got %r" % (what, value))
    for ep in eps:
        host, sep, port = ep.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("%s: %r is not an ip:port endpoint" % (what, ep))
    if len(set(eps)) != len(eps):
        raise ValueError("%s lists an endpoint twice: %s" % (what, eps))
    return eps
