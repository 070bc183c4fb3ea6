"""The collective launcher over real processes on 127.0.0.1: environment, logs, endpoints.log,
console echo of rank 0, failures, signals, ports, and two nodes on one host (127.0.0.1 and 127.0.0.2)."""
import os
import signal
import socket
import time

import pytest

from launch_testlib import (Launcher, base_env, free_port_block, pid_alive, read, read_json, run_launcher, script,
                            wait_until)
from load_aware import scaled  # (bounds that follow the machine's load)

pytestmark = pytest.mark.timeout(120)


def test_nproc_per_node_2_on_cpu(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc_per_node", "2", "--log_dir", "logs", script("env_check.py"), "--lr", "0.1", "x y"],
                     cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    got = [read_json(out / ("trainer_%d.json" % i)) for i in range(2)]
    eps = got[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(eps) == 2 and len(set(eps)) == 2 and all(e.startswith("127.0.0.1:") for e in eps)
    for rank, g in enumerate(got):
        assert g["PADDLE_TRAINER_ID"] == str(rank)
        assert g["PADDLE_TRAINERS_NUM"] == "2"
        assert g["PADDLE_TRAINER_ENDPOINTS"] == ",".join(eps)
        assert g["PADDLE_CURRENT_ENDPOINT"] == eps[rank]
        assert g["POD_IP"] == "127.0.0.1"
        assert g["PADDLE_RANK_IN_NODE"] == str(rank)
        assert g["FLAGS_selected_gpus"] is None  # a CPU node
        assert g["argv"] == ["--lr", "0.1", "x y"]
        # each rank reached the other at its endpoint and the right rank answered
        assert g["answers"] == {eps[1 - rank]: 1 - rank} and g["seen"] == [1 - rank]
    logs = tmp_path / "logs"
    assert sorted(os.listdir(logs)) == ["endpoints.log", "workerlog.0", "workerlog.1"]
    assert read(logs / "endpoints.log") == "PADDLE_TRAINER_ENDPOINTS:\n%s\n%s\n" % tuple(eps)
    assert "rank 0 of 2 says hello" in read(logs / "workerlog.0")
    assert "rank 1 of 2 says hello" in read(logs / "workerlog.1")
    # the console shows rank 0's output, not rank 1's
    assert "rank 0 of 2 says hello" in r.stdout and "rank 1 of 2" not in r.stdout


def test_default_log_dir_is_log_and_console_script_entry(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher([script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path / "log")) == ["endpoints.log", "workerlog.0"]
    g = read_json(out / "trainer_0.json")
    assert g["PADDLE_TRAINERS_NUM"] == "1" and g["PADDLE_TRAINER_ID"] == "0"
    from fluidist.launch.cli import main  # the function pyproject.toml names for fluidist-launch
    assert callable(main)


@pytest.mark.parametrize("how", ["exit", "signal"])
def test_failing_child_stops_the_job_with_its_exit_code(tmp_path, how):
    out = tmp_path / "out"
    out.mkdir()
    bad = ["--fail_rank", "1", "--exit_code", "7", "--lines", "30"] if how == "exit" else ["--kill_rank", "1"]
    t0 = time.monotonic()
    r = run_launcher(["--nproc_per_node", "3", "--grace_period", "2", script("misbehave.py")] + bad,
                     cwd=tmp_path, env=base_env(out_dir=out))
    assert time.monotonic() - t0 < scaled(60)
    want = 7 if how == "exit" else 128 + signal.SIGKILL
    assert r.returncode == want, (r.returncode, r.stderr)
    err = r.stderr
    assert "ABORT: trainer rank 1 (local 1, endpoint 127.0.0.1:" in err
    assert "stopped the other 2 local processes" in err
    assert ("exit code 7" if how == "exit" else "killed by signal SIGKILL") in err
    assert os.path.join("log", "workerlog.1") in err
    if how == "exit":
        # the tail of the failing rank's log: its last lines, not its first ones
        assert "rank 1 line 29" in err and "rank 1 is failing on purpose" in err
        assert "rank 1 line 5\n" not in err
    for rank in (0, 2):
        pid = read_json(out / ("pids_%d.json" % rank))["pid"]
        assert not pid_alive(pid), "rank %d (pid %d) survived" % (rank, pid)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_launcher_leaves_no_process_behind(tmp_path, sig):
    out = tmp_path / "out"
    out.mkdir()
    lau = Launcher(["--nproc_per_node", "2", "--grace_period", "1", script("misbehave.py"), "--grandchild",
                    "--ignore_term_rank", "1"], cwd=tmp_path, env=base_env(out_dir=out))
    try:
        wait_until(lambda: all((out / ("pids_%d.json" % i)).exists() for i in range(2)), 30, "both ranks to start")
        pids = [read_json(out / ("pids_%d.json" % i)) for i in range(2)]
        everyone = [p["pid"] for p in pids] + [p["grandchild"] for p in pids]
        assert all(pid_alive(p) for p in everyone)
        os.kill(lau.pid, sig)
        assert lau.wait(30) == 128 + sig
        # rank 1 ignores SIGTERM: it was SIGKILLed after the grace period; grandchildren went with their group
        wait_until(lambda: not any(pid_alive(p) for p in everyone), 10, "every child and grandchild to be gone")
        assert "got interrupted by %s" % signal.Signals(sig).name in lau.stderr()
    finally:
        lau.close()


def test_children_die_with_a_killed_launcher(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    lau = Launcher(["--nproc_per_node", "2", script("misbehave.py")], cwd=tmp_path, env=base_env(out_dir=out))
    try:
        wait_until(lambda: all((out / ("pids_%d.json" % i)).exists() for i in range(2)), 30, "both ranks to start")
        pids = [read_json(out / ("pids_%d.json" % i))["pid"] for i in range(2)]
        lau.proc.kill()  # SIGKILL: the launcher cannot clean up; the kernel's parent-death signal does
        lau.wait(10)
        wait_until(lambda: not any(pid_alive(p) for p in pids), 10, "the orphaned children to die")
    finally:
        lau.close()


def test_port_in_use_is_an_error_naming_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port_block(2) + 1     # rank 0's port (port - 1) free, rank 1's held here
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen(1)
        r = run_launcher(["--started_port", port - 1, "--nproc_per_node", "2", script("env_check.py")],
                         cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 1
    assert "port %d on 127.0.0.1 is already in use (needed by trainer rank 1, endpoint 127.0.0.1:%d)" % (port, port) \
        in r.stderr
    assert not (tmp_path / "log" / "workerlog.0").exists()  # nothing was started


def test_bad_arguments_are_clear_errors(tmp_path):
    env = base_env(out_dir=tmp_path)
    r = run_launcher(["--ips", "10.123.0.1,10.123.0.2", "--node_ip", "127.0.0.1", script("env_check.py")],
                     cwd=tmp_path, env=env)
    assert r.returncode == 1 and "127.0.0.1 (--node_ip or POD_IP) is not in the node list 10.123.0.1,10.123.0.2" \
        in r.stderr
    r = run_launcher(["--ips", "10.123.0.1,10.123.0.2", script("env_check.py")], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "none of the node IPs 10.123.0.1,10.123.0.2 is an address of this machine" in r.stderr
    r = run_launcher(["--nproc_per_node", "1", "no_such_script.py"], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "training script 'no_such_script.py' not found" in r.stderr
    r = run_launcher(["--run_mode", "ps-heter", script("env_check.py")], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "not supported" in r.stderr
    r = run_launcher(["--gpus", "0", script("env_check.py")], cwd=tmp_path, env=env)  # CUDA_VISIBLE_DEVICES=""
    assert r.returncode == 1 and "GPU 0 is not visible here (0 CUDA devices visible" in r.stderr
    r = run_launcher([], cwd=tmp_path, env=env)
    assert r.returncode == 2 and "the training script is required" in r.stderr


def _two_node_launchers(tmp_path, out, nprocs, port, extra=()):
    launchers = []
    for k, (ip, nproc) in enumerate(zip(("127.0.0.1", "127.0.0.2"), nprocs)):
        args = ["--ips", "127.0.0.1,127.0.0.2", "--node_ip", ip, "--started_port", port, "--nproc_per_node", nproc,
                "--log_dir", "log%d" % k, "--rendezvous_timeout", 30] + list(extra) + [script("env_check.py")]
        launchers.append(Launcher(args, cwd=tmp_path, env=base_env(out_dir=out), name="node%d" % k))
    return launchers


def test_two_nodes_on_loopback_addresses(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port_block(2, "127.0.0.1")
    nodes = _two_node_launchers(tmp_path, out, (2, 2), port)
    try:
        codes = [n.wait(90) for n in nodes]
        assert codes == [0, 0], [n.stderr() for n in nodes]
    finally:
        for n in nodes:
            n.close()
    eps = ["127.0.0.1:%d" % port, "127.0.0.1:%d" % (port + 1), "127.0.0.2:%d" % port, "127.0.0.2:%d" % (port + 1)]
    for rank in range(4):
        g = read_json(out / ("trainer_%d.json" % rank))
        assert g["PADDLE_TRAINER_ENDPOINTS"] == ",".join(eps)
        assert g["PADDLE_CURRENT_ENDPOINT"] == eps[rank] and g["POD_IP"] == eps[rank].split(":")[0]
        assert g["PADDLE_TRAINERS_NUM"] == "4" and g["PADDLE_RANK_IN_NODE"] == str(rank % 2)
        assert g["answers"] == {ep: j for j, ep in enumerate(eps) if j != rank}
    assert read(tmp_path / "log1" / "endpoints.log") == "PADDLE_TRAINER_ENDPOINTS:\n" + "".join(e + "\n" for e in eps)
    assert sorted(os.listdir(tmp_path / "log1")) == ["endpoints.log", "workerlog.0", "workerlog.1"]
    assert "rank 2 of 4 says hello" in read(tmp_path / "log1" / "workerlog.0")
    assert "rank 2 of 4 says hello" in nodes[1].stdout()  # each node's console shows its local rank 0


def test_two_nodes_with_different_process_counts_fail_clearly(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port_block(2, "127.0.0.1")
    nodes = _two_node_launchers(tmp_path, out, (2, 1), port)
    try:
        codes = [n.wait(60) for n in nodes]
    finally:
        for n in nodes:
            n.close()
    assert codes == [1, 1]
    for n in nodes:
        assert "node 127.0.0.2 runs 1 processes but node 127.0.0.1 runs 2; every node must use the same number " \
               "of GPUs" in n.stderr()
    assert not os.path.exists(out / "trainer_0.json")


def test_empty_log_dir_sends_every_child_to_the_console(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--log_dir", "", "--nproc_per_node", "2", script("env_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    assert "rank 0 of 2 says hello" in r.stdout and "rank 1 of 2 says hello" in r.stdout
    assert not (tmp_path / "log").exists()


def _visible_gpus(env):
    import subprocess
    import sys
    code = "from fluidist.launch.cluster import cuda_device_count as c; print(c() or 0)"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    return int(r.stdout.strip() or 0)


@pytest.mark.gpu
def test_gpu_node_one_process_per_gpu_and_physical_ids(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    env = base_env(out_dir=out)
    env.pop("CUDA_VISIBLE_DEVICES")
    n = _visible_gpus(env)
    if n == 0:
        pytest.skip("no CUDA device visible (needs CuPy or nvidia-smi and a GPU)")
    r = run_launcher([script("env_check.py")], cwd=tmp_path, env=env)  # no --gpus: every visible GPU
    assert r.returncode == 0, r.stderr
    for rank in range(n):
        g = read_json(out / ("trainer_%d.json" % rank))
        assert g["FLAGS_selected_gpus"] == str(rank) and g["PADDLE_TRAINERS_NUM"] == str(n)
        assert g["PADDLE_DISTRI_BACKEND"] == "nccl"
    # a physical id is mapped to its position in CUDA_VISIBLE_DEVICES; the children keep that CVD
    last = str(n - 1)
    env["CUDA_VISIBLE_DEVICES"] = last
    r = run_launcher(["--gpus", last, "--log_dir", "log2", script("env_check.py")], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    g = read_json(out / "trainer_0.json")
    assert g["FLAGS_selected_gpus"] == "0" and g["CUDA_VISIBLE_DEVICES"] == last and g["PADDLE_TRAINERS_NUM"] == "1"
    r = run_launcher(["--gpus", str(n), script("env_check.py")], cwd=tmp_path, env=env)
    assert r.returncode == 1 and "Can't find your selected_gpus %d in CUDA_VISIBLE_DEVICES" % n in r.stderr


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_ctrl_c_is_one_line_not_a_traceback_per_process(tmp_path, level):
    """ctrl-C at the terminal reaches the launcher (its children run in groups of their own): it says
    so once and exits with 130; the children, fluidist scripts, end without printing a traceback,
    which their logs keep at DEBUG."""
    out = tmp_path / "out"
    out.mkdir()
    lau = Launcher(["--nproc_per_node", "2", "--log_level", level, script("interruptible.py")], cwd=tmp_path,
                   env=base_env(out_dir=out))
    try:
        wait_until(lambda: all((out / ("ready_%d" % i)).exists() for i in range(2)), 60, "both ranks to run")
        os.kill(lau.pid, signal.SIGINT)
        assert lau.wait(30) == 130
        console = lau.stdout() + lau.stderr()
        assert console.count("got interrupted by SIGINT") == 1, console
        logs = [(tmp_path / "log" / ("workerlog.%d" % i)).read_text() for i in range(2)]
        if level == "INFO":   # the console shows rank 0's log too: at DEBUG, with its traceback
            assert "Traceback" not in console, console
            assert not any("Traceback" in log or "KeyboardInterrupt" in log for log in logs), logs
        else:
            assert all("KeyboardInterrupt" in log for log in logs), logs
    finally:
        lau.close()
