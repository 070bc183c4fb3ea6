"""A serving ``listen_and_serv`` announces itself as Paddle 1.8's does: the port it listens on (port 0:
the free one it drew) in ``/tmp/paddle.<pid>.port`` once it serves, removed when it stops; SIGINT and
SIGTERM stop it with exit status 0. ``fluid.layers.io.ListenAndServ`` / ``Send`` / ``Recv`` build a
server and its client by hand."""
import os
import signal
import socket

import pytest

from child_procs import wait_until
from cluster import Cluster

pytestmark = pytest.mark.timeout(120)


def _port_file(pid):
    return "/tmp/paddle.%d.port" % pid


def _announced_port(proc, c, name):
    path = _port_file(proc.pid)
    wait_until(lambda: os.path.exists(path) or proc.poll() is not None, 60, "%s's port file" % name)
    assert proc.poll() is None, c.log(name)
    with open(path) as f:
        return int(f.read().split()[0])


@pytest.mark.parametrize("sig, async_mode", [(signal.SIGINT, False), (signal.SIGTERM, True)])
def test_pserver_writes_its_port_and_a_signal_stops_it(tmp_path, sig, async_mode):
    with Cluster(tmp_path) as c:
        p = c.start("ps", "listen_serv_child.py", ["--mode", "transpiled"] + (["--async_mode"] if async_mode else []))
        port = _announced_port(p, c, "ps")
        assert 0 < port < 65536
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass     # it listens on the port it wrote
        os.kill(p.pid, sig)
        assert c.wait(["ps"], timeout=30)["ps"] == 0, c.log("ps")
        assert not os.path.exists(_port_file(p.pid))


def test_hand_built_server_and_client_equal_local(tmp_path):
    with Cluster(tmp_path) as c:
        server = c.start("server", "listen_serv_child.py", ["--mode", "layers"])
        port = _announced_port(server, c, "server")
        c.start("client", "listen_serv_child.py", ["--mode", "client", "--port", port])
        c.check(["client"], timeout=60)
        # the server's block scaled what the client sent (2.3 everywhere) by 10
        words = c.log("client").split("result ", 1)[1].split(None, 1)
        assert abs(float(words[0]) - 12 * 10 * 2.3) < 1e-3 and words[1].startswith("[4, 3]"), c.log("client")
        # its one client completed (Executor.close()): the server ends by itself
        assert c.wait(["server"], timeout=30)["server"] == 0, c.log("server")
        assert not os.path.exists(_port_file(server.pid))
