"""Small helpers shared by the transpiler modes."""
import socket
import sys
import time


def wait_server_ready(endpoints, timeout=None, interval=0.5):
    """Wait until every ``host:port`` accepts TCP connections; raise TimeoutError naming the ones that
    never did (Paddle waited forever)."""
    if isinstance(endpoints, str):
        raise TypeError("wait_server_ready takes a list of endpoints, got the string %r" % endpoints)
    if timeout is None:
        import os
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
            sys.stderr.write("server not ready, waiting for %s\n" % ", ".join(pending))
            warned = True
        time.sleep(interval)


def _port_open(endpoint):
    host, _, port = endpoint.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=2):
            return True
    except (OSError, ValueError):
        return False


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


def program_to_code(prog, fetch_list=None, skip_op_callstack=True):
    """Print ``prog`` as readable code, block by block: its variables, then its ops as
    ``{Out=[...]} = type(inputs={...}, attr = value, ...)``. With ``fetch_list`` (Variables or names)
    only the ops those need are printed. ``skip_op_callstack`` is accepted for compatibility: fluidist
    records no op call stacks."""
    from ..framework.graph import ops_needed_for
    targets = None
    if fetch_list is not None:
        targets = [v if isinstance(v, str) else v.name for v in fetch_list]
    for block in prog.blocks:
        keep = range(len(block.ops)) if targets is None or block.idx != 0 else ops_needed_for(block, targets)
        lines = ["{ // block %d" % block.idx]
        lines += ["    " + v.to_string() for v in block.vars.values()]
        lines.append("")
        lines += ["    " + block.ops[i].to_string() for i in keep]
        lines.append("}")
        print("\n".join(lines))
