"""What reaches the launcher's --master rendezvous host before any proof of the secret: a line of 200,000
``[`` and thirty idle connections. The host answers or drops them and goes on; the real node that joins
meanwhile meets it within seconds and the job runs."""
import json
import socket
import time

import pytest

from fluidist.distributed import security
from launch_testlib import Launcher, base_env, free_port, run_launcher, script
from load_aware import scaled  # (bounds that follow the machine's load)

pytestmark = pytest.mark.timeout(120)

SECRET = "the-secret-of-this-preauth-job"


def _env(out):
    env = base_env(out_dir=out)
    for k in (security.SECRET_FILE_ENV, security.INSECURE_ENV):
        env.pop(k, None)
    env[security.SECRET_ENV] = SECRET
    return env


def _connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    return s


def _challenge(sock):
    buf = b""
    while b"\n" not in buf:
        chunk = sock.recv(4096)
        assert chunk, "the host closed the connection before its challenge"
        buf += chunk
    return json.loads(buf.split(b"\n", 1)[0])


def _host(tmp_path, port, timeout):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    args = ["--nnodes", "2", "--master", "127.0.0.1:%d" % port, "--nproc_per_node", "1",
            "--rendezvous_timeout", str(timeout)]
    host = Launcher(args + ["--node_rank", "0", "--node_ip", "127.0.0.1", script("env_check.py")], cwd=tmp_path,
                    env=_env(out), name="host")
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, host.stderr()
            time.sleep(0.2)
    return host, args, out


def _join(tmp_path, args, out):
    return run_launcher(args + ["--node_rank", "1", "--node_ip", "127.0.0.2", script("env_check.py")], cwd=tmp_path,
                        env=_env(out), timeout=60)


def test_a_line_of_200000_brackets_does_not_end_the_rendezvous_host(tmp_path):
    port = free_port()
    host, args, out = _host(tmp_path, port, 30)
    try:
        s = _connect(port)
        assert "nonce" in _challenge(s)
        s.sendall(b"[" * 200000 + b"\n")
        s.close()
        time.sleep(0.5)
        assert host.proc.poll() is None, host.stderr()
        joiner = _join(tmp_path, args, out)
        assert joiner.returncode == 0, joiner.stderr
        assert host.wait(60) == 0, host.stderr()
    finally:
        host.close()


def test_idle_connections_do_not_hold_up_the_rendezvous(tmp_path):
    port = free_port()
    host, args, out = _host(tmp_path, port, 25)
    idle = []
    try:
        for _ in range(30):
            idle.append(_connect(port))      # connected, never says anything
        t0 = time.monotonic()
        joiner = _join(tmp_path, args, out)
        took = time.monotonic() - t0
        assert joiner.returncode == 0, joiner.stderr
        assert took < scaled(20), "the node met the host only after %.0f s" % took
        assert host.wait(60) == 0, host.stderr()
    finally:
        for s in idle:
            s.close()
        host.close()
