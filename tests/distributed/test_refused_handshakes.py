"""A peer that knows the pserver's public key but not the job's client key (the ZAP handler refuses it)
retries hundreds of times against a real pserver process: the pserver's log gets a few lines, not one per
refusal, and the job that follows runs."""
import time

import pytest
import zmq

from cluster import Cluster, free_ports
from fluidist.distributed import security
from fluidist.distributed.ports import wait_server_ready

pytestmark = pytest.mark.timeout(120)

ATTEMPTS = 300


def _refused_handshakes(endpoint, n):
    """``n`` CURVE handshakes with the server's key and a client key of nobody's; each socket waits for
    its refusal (the handshake-failed event), then closes."""
    ctx = zmq.Context()
    server_key = security.keys("server")[0]
    refused = 0
    try:
        for _ in range(n):
            s = ctx.socket(zmq.DEALER)
            s.linger = 0
            public, secret = zmq.curve_keypair()
            s.curve_serverkey, s.curve_publickey, s.curve_secretkey = server_key, public, secret
            mon = s.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL)
            s.connect("tcp://" + endpoint)
            if mon.poll(2000):
                refused += 1
            s.disable_monitor()
            mon.close(0)
            s.close(0)
    finally:
        ctx.term()
    return refused


def test_refused_handshakes_are_logged_a_few_times_not_each_time(tmp_path):
    eps = ["127.0.0.1:%d" % free_ports(1)[0]]
    common = ["--endpoints", eps[0], "--trainers", 2, "--model", "fc", "--steps", 2, "--batch", 2]
    with Cluster(tmp_path) as c:
        c.start("ps0", "pserver_model.py", ["--role", "pserver", "--current_endpoint", eps[0]] + common,
                env={"FLUIDIST_LOG_LEVEL": "INFO"})
        wait_server_ready(eps, timeout=60)
        t0 = time.monotonic()
        refused = _refused_handshakes(eps[0], ATTEMPTS)
        took = time.monotonic() - t0
        assert refused > ATTEMPTS // 2, "only %d of %d handshakes were refused in %.1f s" % (refused, ATTEMPTS, took)
        for k in range(2):
            c.start("tr%d" % k, "pserver_model.py", ["--role", "trainer", "--trainer_id", k] + common)
        c.check(timeout=90)
    lines = [line for line in c.log("ps0").splitlines() if "does not hold this job's secret" in line]
    assert 1 <= len(lines) <= 10, "%d log lines for %d refused handshakes:\n%s" % (len(lines), refused,
                                                                                   "\n".join(lines[:20]))
