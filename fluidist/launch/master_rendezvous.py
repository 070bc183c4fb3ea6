"""The ``--master host:port`` rendezvous of a multi-node collective job, with no external service.

One launcher hosts it on the master address: node 0 when ``--node_rank`` is given, otherwise the first
launcher that manages to listen there (the master address must then be one of its machine's). Every other
launcher connects (retrying until ``--rendezvous_timeout``) and sends one JSON line: its node IP (``--node_ip``
/ ``POD_IP``, else the local address of its connection to the master), its process count, the trainer
endpoints it chose on that IP, and its ``--node_rank`` if it has one. The host waits for ``--nnodes`` nodes
(``N:M``: M nodes, or at least N once no node has joined for ``last_call`` seconds), checks that they agree
(the same process count, node ranks given by all or none, each once), numbers them (the given node ranks,
else the host first and the others in the order they joined) and answers every node with the whole node
list. Clients close first, so the master port is not left in TIME_WAIT on the host.

Every node proves it holds the job secret: the host opens each connection with a fresh nonce, the
joining node's line carries an HMAC of its content and that nonce (and a nonce of its own), and the
host's answer an HMAC of the answer and the joiner's nonce. A node without the secret is refused (and
logged) while the rendezvous goes on; a joiner that gets an answer without a valid proof stops. With
``--insecure`` everywhere, no proofs.

Nodes may share an IP (several launchers on one machine): their trainers listen on different ports.
"""
import json
import selectors
import socket
import time

from .. import bounded_json
from ..distributed import security
from ..log_helper import LineBudget
from .cluster import format_endpoint, split_endpoint
from .common import LaunchError, logger

__all__ = ["parse_master", "parse_nnodes", "master_rendezvous", "recv_json_line", "MemberGate", "reply_member",
           "join_exchange", "let_clients_close_first", "connect_until"]

PROTOCOL = 2


def parse_master(text):
    """``"host:port"`` or ``"[v6]:port"`` -> ``(host, port)``."""
    return split_endpoint(text, "--master")


def parse_nnodes(text):
    """``"N"`` -> (N, N); ``"N:M"`` -> (N, M) (torchrun's elastic range)."""
    text = str(text).strip()
    try:
        lo, hi = (int(x) for x in text.split(":", 1)) if ":" in text else (int(text),) * 2
    except ValueError:
        raise LaunchError("--nnodes must be N or MIN:MAX, got %r" % text) from None
    if lo < 1 or hi < lo:
        raise LaunchError("--nnodes %s: need 1 <= MIN <= MAX" % text)
    return lo, hi


MAX_LINE_BYTES = 1 << 20     # one rendezvous line: a node's IP, process count and endpoints
MAX_LINE_DEPTH = 8           # its JSON nests 3 deep (the endpoints list in the node list in an answer)
MAX_PENDING = 64             # connections that have not sent their line yet, read side by side
LINE_SECONDS = 10.0          # how long one of them may take to send it
_refusals = LineBudget(5, 60.0)


def parse_line(raw, what):
    """A rendezvous line (bytes, without its newline) as a JSON object: size and nesting are bounded
    before it is parsed, so no line from the network can crash the launcher (LaunchError otherwise)."""
    try:
        msg = bounded_json.loads(raw, "the line of %s" % what, MAX_LINE_BYTES, MAX_LINE_DEPTH)
    except bounded_json.JSONBoundsError as e:
        raise LaunchError("rendezvous: %s" % e) from None
    if not isinstance(msg, dict):
        raise LaunchError("rendezvous: %s sent something that is not a JSON object" % what)
    return msg


def recv_json_line(sock, deadline, catcher, what):
    """One JSON object line from ``sock`` before ``deadline`` (monotonic), checking ``catcher`` for signals."""
    buf = b""
    while b"\n" not in buf:
        if catcher is not None:
            catcher.check()
        if time.monotonic() > deadline:
            raise LaunchError("rendezvous: timed out waiting for %s" % what)
        sock.settimeout(0.2)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            raise LaunchError("rendezvous: %s closed the connection" % what)
        buf += chunk
        if len(buf) > MAX_LINE_BYTES:
            raise LaunchError("rendezvous: oversized message from %s" % what)
    return parse_line(buf.split(b"\n", 1)[0], what)


class _Pending:
    __slots__ = ("conn", "who", "nonce", "buf", "until")

    def __init__(self, conn, who, nonce, until):
        self.conn, self.who, self.nonce, self.buf, self.until = conn, who, nonce, b"", until


class MemberGate:
    """The joining nodes of a rendezvous host, read side by side: each connection is challenged with a
    nonce at once and then read without blocking, within ``LINE_SECONDS`` of its accept, at most
    ``MAX_PENDING`` at a time (the oldest is dropped past that). Idle or slow connections, however
    many, cannot hold up a node that sends its line; a node that fails the proof of the secret is told
    why and logged (a few lines a minute)."""

    def __init__(self, srv, secret):
        self.srv = srv
        self.secret = secret
        self._pending = []
        self._sel = selectors.DefaultSelector()
        srv.setblocking(False)
        self._sel.register(srv, selectors.EVENT_READ, None)

    def next(self, deadline, catcher, wait_s=0.2):
        """``(connection, message)`` of the next node proven to hold the secret (None: plain mode), or
        None when none came within ``wait_s`` (or by ``deadline``)."""
        end = min(deadline, time.monotonic() + wait_s)
        while True:
            if catcher is not None:
                catcher.check()
            now = time.monotonic()
            for p in [p for p in self._pending if now > p.until]:
                self._drop(p)
            if now >= end:
                return None
            for key, _ in self._sel.select(max(0.0, min(end - now, 0.05))):
                got = self._accept() if key.data is None else self._read(key.data)
                if got is not None:
                    return got

    def _accept(self):
        try:
            conn, addr = self.srv.accept()
        except OSError:
            return None
        if len(self._pending) >= MAX_PENDING:
            self._drop(self._pending[0])
        nonce = security.new_nonce()
        try:
            conn.settimeout(2)
            conn.sendall((json.dumps({"v": PROTOCOL, "nonce": nonce}) + "\n").encode("utf-8"))
            conn.setblocking(False)
        except OSError:
            conn.close()
            return None
        p = _Pending(conn, "node at %s" % addr[0], nonce, time.monotonic() + LINE_SECONDS)
        self._pending.append(p)
        self._sel.register(conn, selectors.EVENT_READ, p)
        return None

    def _read(self, p):
        try:
            chunk = p.conn.recv(65536)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            chunk = b""
        if not chunk or len(p.buf) + len(chunk) > MAX_LINE_BYTES + 1:
            self._drop(p)
            return None
        p.buf += chunk
        if b"\n" not in p.buf:
            return None
        self._forget(p)
        p.conn.settimeout(2)
        try:
            msg = parse_line(p.buf.split(b"\n", 1)[0], p.who)
            security.verify(msg, "join", p.nonce, p.who, self.secret)
        except security.SecurityError as e:
            log, unlogged = _refusals.take()
            if log:
                logger.warning("rendezvous: refused a connection: %s%s", e,
                               " (and %d more refused since the last such line)" % unlogged if unlogged else "")
            _send(p.conn, {"ok": False, "error": str(e)})
            p.conn.close()
            return None
        except LaunchError as e:
            logger.info("%s", e)
            p.conn.close()
            return None
        return p.conn, msg

    def _forget(self, p):
        self._pending.remove(p)
        self._sel.unregister(p.conn)

    def _drop(self, p):
        self._forget(p)
        p.conn.close()

    def close(self):
        for p in list(self._pending):
            self._drop(p)
        self._sel.close()


def reply_member(conn, obj, member, secret):
    """Answer ``member`` (its message) with ``obj``, proven with the secret against the member's nonce."""
    _send(conn, security.sign(obj, "welcome", member.get("nonce"), secret))


def join_exchange(conn, info, deadline, catcher, what, secret):
    """The joining side: read the host's challenge, send ``info`` with its proof, return the host's
    proven answer (LaunchError when the host is of another job, version or secret)."""
    challenge = recv_json_line(conn, deadline, catcher, what)
    if not isinstance(challenge, dict) or challenge.get("v") != PROTOCOL or not isinstance(challenge.get("nonce"), str):
        raise LaunchError("rendezvous: %s speaks another rendezvous protocol than this launcher's %d (mixed fluidist "
                          "versions, or not a fluidist launcher)" % (what, PROTOCOL))
    nonce = security.new_nonce()
    conn.sendall((json.dumps(security.sign(dict(info, nonce=nonce), "join", challenge["nonce"], secret))
                  + "\n").encode("utf-8"))
    reply = recv_json_line(conn, deadline, catcher, what)
    if not isinstance(reply, dict):
        raise LaunchError("rendezvous: %s answered something that is not a JSON object" % what)
    if reply.get("ok") is False and "mac" not in reply:
        raise LaunchError("rendezvous: %s" % reply.get("error"))
    try:
        security.verify(reply, "welcome", nonce, what, secret)
    except security.SecurityError as e:
        raise LaunchError("rendezvous: %s" % e) from None
    return reply


def let_clients_close_first(conns, seconds=5):
    """Wait (up to ``seconds``) for each client to close its end, so this side's port is not left in
    TIME_WAIT."""
    end = time.monotonic() + seconds
    for conn in conns:
        conn.settimeout(max(0.05, end - time.monotonic()))
        try:
            conn.recv(1)
        except OSError:
            pass


def connect_until(host, port, deadline, catcher, what, timeout):
    """A connection to ``host:port``, retried until ``deadline`` (the other side may not listen yet)."""
    while True:
        if catcher is not None:
            catcher.check()
        try:
            return socket.create_connection((host, port), timeout=2)
        except OSError:
            if time.monotonic() > deadline:
                raise LaunchError("rendezvous: could not reach %s within %.0f s (is its launcher running, and is "
                                  "the port open?)" % (what, timeout)) from None
            time.sleep(0.3)


def _send(conn, obj):
    try:
        conn.sendall((json.dumps(obj) + "\n").encode("utf-8"))
    except OSError:
        pass


def _resolve(host, port):
    try:
        return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0]
    except socket.gaierror as e:
        raise LaunchError("--master %s: cannot resolve %s: %s" % (host, host, e)) from None


def _listen(ip, port):
    """A listening socket on ``ip:port``, or None when that is not possible here."""
    srv = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
    try:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((ip, port))
        srv.listen(64)
    except OSError as e:
        srv.close()
        return None, e
    srv.settimeout(0.2)
    return srv, None


def _is_count(n):
    return type(n) is int and 0 < n <= 1 << 16


def member_fields_error(msg):
    """What is wrong with the fields of a joining node's line (even one that holds the secret), or None."""
    ip, nproc, endpoints, rank = msg.get("node_ip"), msg.get("nproc"), msg.get("endpoints"), msg.get("node_rank")
    if not isinstance(ip, str) or not 0 < len(ip) <= 255:
        return "a node sent node_ip %.80r, not a host name or IP" % (ip,)
    counts_ok = _is_count(nproc) or (isinstance(nproc, list) and len(nproc) == 2 and all(map(_is_count, nproc)))
    if not counts_ok:   # a collective node's process count, or a parameter-server node's [servers, workers]
        return "node %s sent nproc %.80r, not a process count" % (ip, nproc)
    if not isinstance(endpoints, list) or not all(isinstance(e, str) and len(e) <= 300 for e in endpoints):
        return "node %s sent endpoints that are not a list of host:port strings" % ip
    if rank is not None and (type(rank) is not int or not 0 <= rank < 1 << 16):
        return "node %s sent node_rank %.80r, not a node rank" % (ip, rank)
    job, kind = msg.get("job"), msg.get("kind", "collective")
    if job is not None and (not isinstance(job, str) or len(job) > 300):
        return "node %s sent job %.80r, not a job id" % (ip, job)
    if kind not in ("collective", "ps"):
        return "node %s sent kind %.80r, not collective or ps" % (ip, kind)
    return None


def _describe_nproc(nproc, unit=True):
    if isinstance(nproc, list) and len(nproc) == 2:
        return "%s server(s) and %s worker(s)" % tuple(nproc)
    return "%s processes" % (nproc,) if unit else str(nproc)


def _foreign(msg, mine):
    """Why ``msg`` is a node of another job (``--rdzv_id``), or None: it is turned away, the others go on."""
    if msg.get("job") != mine.get("job"):
        return ("node %s is of job %.80r but the rendezvous at this master is job %r (--rdzv_id)"
                % (msg.get("node_ip"), msg.get("job"), mine.get("job")))
    return None


def _check_member(members, msg, mine):
    """The reason ``msg`` cannot join ``members``, or None."""
    who = "node %s" % msg.get("node_ip")
    if msg.get("v") != PROTOCOL:
        return "%s speaks rendezvous protocol %r, this launcher %d (mixed fluidist versions)" % (
            who, msg.get("v"), PROTOCOL)
    wrong = member_fields_error(msg)
    if wrong:
        return wrong
    if msg.get("kind", "collective") != mine.get("kind", "collective"):
        return ("%s runs a %s job but node %s a %s job; give every node the same options"
                % (who, msg.get("kind", "collective"), mine["node_ip"], mine.get("kind", "collective")))
    if msg.get("nproc") != mine["nproc"]:
        hint = ("--server_num and --worker_num" if mine.get("kind") == "ps"
                else "the same number of GPUs (--gpus) or --nproc_per_node")
        return ("%s runs %s but node %s runs %s; every node must use %s" % (
            who, _describe_nproc(msg.get("nproc")), mine["node_ip"], _describe_nproc(mine["nproc"], unit=False), hint))
    if (msg.get("node_rank") is None) != (mine["node_rank"] is None):
        return "%s and node %s disagree on --node_rank: give it on every node or on none" % (who, mine["node_ip"])
    if msg.get("node_rank") is not None:
        for m in members:
            if m["node_rank"] == msg["node_rank"]:
                return "--node_rank %d is used by node %s and node %s" % (msg["node_rank"], m["node_ip"],
                                                                           msg.get("node_ip"))
    return None


def _host(srv, mine, lo, hi, deadline, last_call, catcher, where, secret):
    members, conns = [mine], []
    error = None
    last_join = time.monotonic()
    gate = MemberGate(srv, secret)
    try:
        logger.info("rendezvous: hosting on %s for %s node(s)", where, lo if lo == hi else "%d to %d" % (lo, hi))
        while error is None:
            n = len(members)
            now = time.monotonic()
            if n >= hi or (n >= lo and now - last_join >= last_call):
                break
            if catcher is not None:
                catcher.check()
            if now > deadline:
                error = ("waited on %s for %d node(s) but only %d joined (%s); start the launchers of the "
                         "others, or raise --rendezvous_timeout" % (where, lo, n, ",".join(m["node_ip"] for m in members)))
                break
            got = gate.next(deadline, catcher)
            if got is None:
                continue
            conn, msg = got
            foreign = _foreign(msg, mine)
            if foreign:
                logger.warning("rendezvous: refused %s", foreign)
                reply_member(conn, {"ok": False, "error": foreign}, msg, secret)
                conn.close()
                continue
            conns.append(conn)
            error = _check_member(members, msg, mine)
            members.append(msg)
            last_join = time.monotonic()
        if error is None and mine["node_rank"] is not None:
            ranks = sorted(m["node_rank"] for m in members)
            if ranks != list(range(len(members))):
                error = "node ranks %s are not 0..%d" % (ranks, len(members) - 1)
        if error is not None:
            for conn, member in zip(conns, members[1:]):
                reply_member(conn, {"ok": False, "error": error}, member, secret)
            raise LaunchError("rendezvous: " + error)
        if mine["node_rank"] is not None:
            order = sorted(range(len(members)), key=lambda i: members[i]["node_rank"])
        else:
            order = list(range(len(members)))
        nodes = [{"ip": members[i]["node_ip"], "endpoints": members[i]["endpoints"]} for i in order]
        rank_of = {i: k for k, i in enumerate(order)}
        for i, conn in enumerate(conns, start=1):
            reply_member(conn, {"ok": True, "node_rank": rank_of[i], "nodes": nodes}, members[i], secret)
        let_clients_close_first(conns)
        logger.info("rendezvous: %d node(s) met on %s", len(members), where)
        return rank_of[0], nodes
    finally:
        gate.close()
        for conn in conns:
            conn.close()
        srv.close()


def _join(host, port, node_ip, node_rank, nproc, make_endpoints, deadline, catcher, timeout, secret, extra):
    what = "the master %s:%d" % (host, port)
    conn = connect_until(host, port, deadline, catcher, what, timeout)
    try:
        ip = node_ip or conn.getsockname()[0]
        info = dict(extra, v=PROTOCOL, node_ip=ip, nproc=nproc, endpoints=make_endpoints(ip), node_rank=node_rank)
        reply = join_exchange(conn, info, deadline, catcher, what, secret)
    except OSError as e:
        raise LaunchError("rendezvous with %s failed: %s" % (what, e)) from None
    finally:
        conn.close()
    if not reply.get("ok"):
        raise LaunchError("rendezvous: %s" % reply.get("error"))
    return reply["node_rank"], reply["nodes"]


def master_rendezvous(master, nnodes, node_rank, node_ip, nproc, make_endpoints, timeout=300.0, last_call=5.0,
                      catcher=None, secret=security.FROM_ENV, job_id=None, kind="collective"):
    """Meet the other nodes at ``master`` (``"host:port"``); returns ``(this node's rank, nodes)`` where
    ``nodes[k]`` is ``{"ip": ..., "endpoints": [...]}`` for node rank k. ``secret``: the job secret every
    node proves (None: plain mode; default: this process's).

    ``nnodes``: ``"N"`` or ``"N:M"``; ``node_rank``: int or None (assigned by the host); ``nproc``: what each
    node runs (the same on every node: a count, or ``[servers, workers]``); ``make_endpoints(ip)``: this node's
    endpoints once its IP is known. ``job_id`` (``--rdzv_id``): a node of another job is turned away while
    the rendezvous goes on; ``kind``: ``"collective"`` or ``"ps"``, the same on every node."""
    host, port = parse_master(master)
    lo, hi = parse_nnodes(nnodes)
    if node_rank is not None:
        if lo != hi:
            raise LaunchError("--node_rank needs a fixed --nnodes, got %s (leave --node_rank out: the master then "
                              "numbers the nodes as they join)" % nnodes)
        if not 0 <= node_rank < hi:
            raise LaunchError("--node_rank %d is not in 0..%d (--nnodes %s)" % (node_rank, hi - 1, nnodes))
    deadline = time.monotonic() + timeout
    host_ip = _resolve(host, port)
    where = format_endpoint(host_ip, port)
    srv = None
    if node_rank in (None, 0):
        srv, err = _listen(host_ip, port)
        if srv is None and node_rank == 0:
            raise LaunchError("rendezvous: node 0 hosts the rendezvous but cannot listen on --master %s: %s (run "
                              "node 0 on the master host, and use a free port)" % (where, err))
    extra = {"job": job_id, "kind": kind}
    if srv is not None:
        ip = node_ip or host_ip
        mine = dict(extra, v=PROTOCOL, node_ip=ip, nproc=nproc, endpoints=make_endpoints(ip), node_rank=node_rank)
        return _host(srv, mine, lo, hi, deadline, last_call, catcher, where, secret)
    return _join(host, port, node_ip, node_rank, nproc, make_endpoints, deadline, catcher, timeout, secret, extra)
