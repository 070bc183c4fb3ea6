"""The parameter-server launcher over real processes on 127.0.0.1."""
import os
import socket

import pytest

from launch_testlib import base_env, pid_alive, read, read_json, run_launcher, script

pytestmark = pytest.mark.timeout(120)


def _check_job(out, servers, workers):
    """Every worker reached every server at its endpoint; the environment matches the lists."""
    sv = [read_json(out / ("server_%d.json" % i)) for i in range(servers)]
    wk = [read_json(out / ("worker_%d.json" % i)) for i in range(workers)]
    server_eps = sv[0]["PADDLE_PSERVERS_IP_PORT_LIST"].split(",")
    worker_eps = sv[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(server_eps) == servers and len(worker_eps) == workers
    assert len(set(server_eps + worker_eps)) == servers + workers
    for i, s in enumerate(sv):
        assert s["TRAINING_ROLE"] == "PSERVER" and s["PADDLE_PSERVER_ID"] == str(i)
        assert "%s:%s" % (s["POD_IP"], s["PADDLE_PORT"]) == server_eps[i] == s["PADDLE_CURRENT_ENDPOINT"]
        assert s["PADDLE_TRAINERS_NUM"] == str(workers) and s["PADDLE_TRAINER_ID"] is None
        assert s["seen"] == list(range(workers))
    for i, w in enumerate(wk):
        assert w["TRAINING_ROLE"] == "TRAINER" and w["PADDLE_TRAINER_ID"] == str(i)
        assert w["PADDLE_PSERVERS_IP_PORT_LIST"] == ",".join(server_eps)
        assert w["PADDLE_TRAINER_ENDPOINTS"] == ",".join(worker_eps)
        assert w["PADDLE_CURRENT_ENDPOINT"] == worker_eps[i] and w["PADDLE_PSERVER_ID"] is None
        assert w["PADDLE_TRAINERS_NUM"] == str(workers)
        assert w["answers"] == {ep: j for j, ep in enumerate(server_eps)}
    return server_eps, worker_eps


def test_server_num_2_worker_num_2(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--server_num", "2", "--worker_num", "2", script("ps_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    server_eps, worker_eps = _check_job(out, 2, 2)
    logs = tmp_path / "log"
    assert sorted(os.listdir(logs)) == ["endpoints.log", "serverlog.0", "serverlog.1", "workerlog.0", "workerlog.1"]
    assert read(logs / "endpoints.log") == ("PADDLE_PSERVERS_IP_PORT_LIST:\n" + "".join(e + "\n" for e in server_eps)
                                            + "PADDLE_TRAINER_ENDPOINTS:\n" + "".join(e + "\n" for e in worker_eps))
    assert "server 1 listening" in read(logs / "serverlog.1")
    assert "worker 1 done" in read(logs / "workerlog.1")
    # the console shows worker 0's output only
    assert "worker 0 done" in r.stdout and "worker 1" not in r.stdout and "server" not in r.stdout


def test_explicit_lists_and_run_mode(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    from launch_testlib import free_port_block
    p = free_port_block(4)
    servers = "127.0.0.1:%d,127.0.0.1:%d" % (p, p + 1)
    workers = "127.0.0.1:%d,127.0.0.1:%d" % (p + 2, p + 3)
    r = run_launcher(["--run_mode", "ps", "--servers", servers, "--workers", workers, "--log_dir", "plogs",
                      script("ps_check.py")], cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    server_eps, worker_eps = _check_job(out, 2, 2)
    assert server_eps == servers.split(",") and worker_eps == workers.split(",")


def test_servers_that_do_not_exit_are_stopped_after_the_workers(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--server_num", "1", "--worker_num", "2", "--server_exit_timeout", "1", script("ps_check.py"),
                      "--hang"], cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    assert "still running 1 s after the workers finished; stopping them" in r.stderr
    assert not pid_alive(read_json(out / "server_0.json")["pid"])
    assert read_json(out / "worker_1.json")["answers"]


def test_failing_worker_stops_the_job(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--server_num", "2", "--worker_num", "2", script("ps_check.py"), "--fail_worker", "1",
                      "--exit_code", "3"], cwd=tmp_path, env=base_env(out_dir=out, extra={"CHECK_TIMEOUT": "60"}))
    assert r.returncode == 3
    assert "ABORT: worker rank 1 (local 1, endpoint 127.0.0.1:" in r.stderr and "exit code 3" in r.stderr
    assert os.path.join("log", "workerlog.1") in r.stderr and "worker 1 is failing on purpose" in r.stderr
    for i in range(2):  # the servers waited for worker 1 forever: the launcher stopped them
        assert not pid_alive(read_json(out / ("server_%d.json" % i))["pid"])


def test_ps_port_in_use_and_argument_errors(tmp_path):
    env = base_env(out_dir=tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = run_launcher(["--servers", "127.0.0.1:%d" % port, "--worker_num", "1", script("ps_check.py")],
                         cwd=tmp_path, env=env)
    assert r.returncode == 1
    assert "port %d on 127.0.0.1 is already in use (needed by server 0, endpoint 127.0.0.1:%d)" % (port, port) \
        in r.stderr
    r = run_launcher(["--server_num", "1", "--worker_num", "1", "--heter_workers", "127.0.0.1:7000",
                      script("ps_check.py")], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "--heter_workers) are not supported by fluidist" in r.stderr
    r = run_launcher(["--server_num", "2", script("ps_check.py")], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "needs --workers or --worker_num" in r.stderr
    r = run_launcher(["--servers", "10.123.0.1:7000,10.123.0.2:7000", "--workers", "10.123.0.1,10.123.0.2",
                      script("ps_check.py")], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "none of the node IPs 10.123.0.1,10.123.0.2" in r.stderr


def test_paddle_launch_ps_command_line(tmp_path):
    """``python -m fluidist.distributed.launch_ps`` is Paddle 1.8's ``paddle.distributed.launch_ps``: its
    defaults (2 servers at 127.0.0.1 from --start_port, 2 workers, logs in ``logs``) and its flags."""
    import subprocess
    import sys
    from launch_testlib import free_port_block
    out = tmp_path / "out"
    out.mkdir()
    start = free_port_block(2)
    cmd = [sys.executable, "-m", "fluidist.distributed.launch_ps", "--start_port", str(start), "--cluster_node_ips",
           "127.0.0.1", "--node_ip", "127.0.0.1", script("ps_check.py")]
    r = subprocess.run(cmd, cwd=str(tmp_path), env=base_env(out_dir=out), capture_output=True, text=True, timeout=100)
    assert r.returncode == 0, r.stderr
    server_eps, _ = _check_job(out, 2, 2)
    assert server_eps == ["127.0.0.1:%d" % start, "127.0.0.1:%d" % (start + 1)]
    assert sorted(os.listdir(tmp_path / "logs"))[-2:] == ["workerlog.0", "workerlog.1"]
    p = free_port_block(3)
    listed = ",".join("127.0.0.1:%d" % (p + i) for i in range(3))
    r = subprocess.run([sys.executable, "-m", "fluidist.distributed.launch_ps", "--endpoints", listed, "--server_num",
                        "1", "--worker_num", "1", "--log_dir", "ps1", script("ps_check.py")], cwd=str(tmp_path),
                       env=base_env(out_dir=out), capture_output=True, text=True, timeout=100)
    assert r.returncode == 0, r.stderr
    assert _check_job(out, 1, 1)[0] == ["127.0.0.1:%d" % p]       # the first --server_num endpoints
