"""Connections that never finish their secure handshake cannot starve a pserver: they are closed after
``FLUIDIST_HANDSHAKE_TIMEOUT`` whatever the peer timeout, at most ``FLUIDIST_MAX_PENDING_HANDSHAKES`` wait
at once (the oldest closed first), and an idle flood of 1,100 connections against a pserver limited to
1,024 open files leaves a job able to start. A trainer whose pserver takes no connection is told so, not
that its secret may be wrong."""
import os
import resource
import selectors
import socket
import subprocess
import sys
import time

import pytest
from load_aware import scaled  # noqa: E402  (bounds that follow the machine's load)

from cluster import ROOT, Cluster, free_ports
from fluidist.distributed import rpc
from fluidist.distributed.ports import wait_server_ready
from test_rpc import EchoServer

pytestmark = pytest.mark.timeout(180)


def _idle_connections(endpoint, n, wait_s=0.0):
    """``n`` TCP connections to ``endpoint`` that send nothing (non-blocking connects, left open); with
    ``wait_s``, returns once all are established (the kernel took them, whatever the process did since) or
    that time passed, with how many were."""
    host, port = endpoint.rsplit(":", 1)
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((host, int(port)))
        socks.append(s)
        if wait_s and i % 50 == 49:
            time.sleep(0.05)      # paced, so that the server's queue of connections to take never overflows
    if not wait_s:
        return socks
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_WRITE)
    established, deadline = 0, time.monotonic() + wait_s
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            sel.unregister(key.fileobj)
            established += key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
    sel.close()
    return socks, established


def _closed_by_peer(s):
    """Whether the server closed ``s`` (EOF after at most its greeting)."""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return True
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:
        return True


def test_a_connection_that_never_finishes_its_handshake_is_closed_after_the_handshake_deadline(monkeypatch):
    monkeypatch.setenv("FLUIDIST_HANDSHAKE_TIMEOUT", "1")
    monkeypatch.setenv("FLUIDIST_PEER_TIMEOUT", "300")       # the deadline does not follow the peer timeout
    server = EchoServer()
    try:
        (s,) = _idle_connections(server.endpoint, 1)
        t0 = time.monotonic()
        limit = scaled(15)
        while not _closed_by_peer(s):
            assert time.monotonic() - t0 < limit, "the idle connection is still open after %.0f s" % limit
            time.sleep(0.05)
        assert time.monotonic() - t0 < limit
        s.close()
    finally:
        server.close()


def test_past_the_cap_the_oldest_waiting_connections_are_closed_and_a_trainer_still_gets_in(monkeypatch):
    monkeypatch.setenv("FLUIDIST_MAX_PENDING_HANDSHAKES", "8")
    monkeypatch.setenv("FLUIDIST_HANDSHAKE_TIMEOUT", "60")
    server = EchoServer()
    socks = _idle_connections(server.endpoint, 40)
    try:
        deadline = time.monotonic() + 20
        while sum(_closed_by_peer(s) for s in socks[:32]) < 32:
            assert time.monotonic() < deadline, "the oldest waiting connections were not closed"
            time.sleep(0.05)
        assert not _closed_by_peer(socks[-1]), "the newest waiting connection was closed"
        c = rpc.Client(server.endpoint)
        try:
            assert c.call("send", "w", value=__import__("numpy").ones(2), timeout_s=30).kind == "ok"
        finally:
            c.close()
        assert server.server.guard.dropped >= 32
    finally:
        for s in socks:
            s.close()
        server.close()


def test_a_pserver_that_takes_no_connection_is_named_so_not_a_wrong_secret(monkeypatch):
    """A listening port whose process never accepts (as a pserver out of file descriptors): the kernel
    takes the TCP connection, nothing ever answers on it."""
    monkeypatch.setenv("FLUIDIST_CONNECT_TIMEOUT", "3")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    endpoint = "127.0.0.1:%d" % listener.getsockname()[1]
    c = rpc.Client(endpoint)
    try:
        with pytest.raises(rpc.PserverUnreachable) as info:
            c.call("get", "w", timeout_s=60)
        assert "the pserver cannot accept connections: out of file descriptors" in str(info.value)
        assert "secret" not in str(info.value) and "another job" not in str(info.value)
    finally:
        c.close()
        listener.close()


@pytest.mark.slow
def test_an_idle_flood_of_1100_connections_leaves_a_starting_job_able_to_start(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        pytest.skip("this test process may open %d files; the flood needs 1,300" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 4096) if hard == resource.RLIM_INFINITY
                                                else min(hard, max(soft, 4096)), hard))
    eps = ["127.0.0.1:%d" % free_ports(1)[0]]
    common = ["--endpoints", eps[0], "--trainers", 2, "--model", "fc", "--steps", 2, "--batch", 2]
    flood = []
    try:
        with Cluster(tmp_path) as c:
            c.start("ps0", "limited_nofile.py", [1024, "pserver_model.py", "--role", "pserver",
                                                 "--current_endpoint", eps[0]] + common)
            wait_server_ready(eps, timeout=60)
            flood, established = _idle_connections(eps[0], 1100, wait_s=60)
            assert established >= 1050, "only %d of 1100 connections were established" % established
            for k in range(2):
                c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k] + common)
            c.check(["tr0", "tr1"], timeout=120)
            c.check(["ps0"], timeout=60)
        assert "did not finish their secure handshake" in c.log("ps0"), c.log("ps0")[-3000:]
    finally:
        for s in flood:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


SERVER_OUT_OF_FILES = """
import os, resource, sys, time, logging
logging.basicConfig(level=logging.WARNING)
from fluidist.distributed import rpc
server = rpc.Server("127.0.0.1:0")
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))     # every descriptor this process may have
except OSError:
    pass
print(server.endpoint, flush=True)
until = time.monotonic() + float(sys.argv[1])
while time.monotonic() < until:
    server.recv(0.1)
print("out of files", server.guard.out_of_files, flush=True)
"""


@pytest.mark.slow
def test_a_pserver_out_of_file_descriptors_says_so_and_its_trainers_are_told(monkeypatch, tmp_path):
    monkeypatch.setenv("FLUIDIST_CONNECT_TIMEOUT", "3")
    log = open(str(tmp_path / "server.log"), "w+")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", SERVER_OUT_OF_FILES, "7"], stdout=subprocess.PIPE, stderr=log,
                            text=True, env=env)
    try:
        endpoint = proc.stdout.readline().strip()
        c = rpc.Client(endpoint)
        try:
            with pytest.raises(rpc.PserverUnreachable) as info:
                c.call("get", "w", timeout_s=60)
        finally:
            c.close()
        assert "the pserver cannot accept connections: out of file descriptors" in str(info.value)
        out = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert int(out.split("out of files")[1]) > 0, out
    log.seek(0)
    lines = [line for line in log.read().splitlines() if "cannot accept connections: out of file descriptors" in line]
    assert 1 <= len(lines) <= 6, lines      # said, a few lines a minute at most
    assert "ulimit -n" in lines[0]
