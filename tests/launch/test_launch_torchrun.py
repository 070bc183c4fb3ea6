"""The launcher's torchrun habits over real processes on loopback addresses: ``--nnodes`` / ``--node_rank`` /
``--master`` (no external service), ``-m``, ``--no_python``, ``RANK`` & co., help, ``--version``, the quiet
default, ``--use_paddlecloud``, Slurm's variables, bracketed IPv6, ``--http_port`` refused, fresh logs."""
import os
import socket
import stat
import subprocess
import sys

import pytest

from launch_testlib import (ROOT, Launcher, base_env, free_port, free_port_block, read, read_json, run_launcher,
                            script)

pytestmark = pytest.mark.timeout(120)


def _run_nodes(tmp_path, out, args_for, envs=None, n=2):
    nodes = []
    try:
        for k in range(n):
            env = base_env(out_dir=out)
            env.update((envs or [{}] * n)[k])
            nodes.append(Launcher(args_for(k), cwd=tmp_path, env=env, name="node%d" % k))
        codes = [node.wait(90) for node in nodes]
        return codes, [(node.stdout(), node.stderr()) for node in nodes]
    finally:
        for node in nodes:
            node.close()


def _check_world(out, n, eps=None):
    got = [read_json(out / ("trainer_%d.json" % r)) for r in range(n)]
    eps = got[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(eps) == n == len(set(eps))
    for r, g in enumerate(got):
        assert g["RANK"] == g["PADDLE_TRAINER_ID"] == str(r) and g["WORLD_SIZE"] == g["PADDLE_TRAINERS_NUM"] == str(n)
        assert g["PADDLE_CURRENT_ENDPOINT"] == eps[r] and g["PADDLE_TRAINER_ENDPOINTS"] == ",".join(eps)
        assert g["answers"] == {ep: j for j, ep in enumerate(eps) if j != r}  # every rank reached every other
    return got


def test_master_rendezvous_two_nodes_with_node_ranks(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port_block(2)     # both nodes' ranks take port and port + 1
    ips = ("127.0.0.1", "127.0.0.2")
    codes, logs = _run_nodes(tmp_path, out, lambda k: [
        "--nnodes", "2", "--node_rank", str(1 - k), "--master", "127.0.0.1:%d" % port, "--node_ip", ips[1 - k],
        "--nproc_per_node", "2", "--log_dir", "log%d" % k, "--rendezvous_timeout", "60", script("env_check.py")])
    assert codes == [0, 0], logs
    got = _check_world(out, 4)
    for r, g in enumerate(got):
        assert g["POD_IP"] == ips[r // 2] and g["PADDLE_CURRENT_ENDPOINT"].startswith(ips[r // 2] + ":")
        assert (g["LOCAL_RANK"], g["LOCAL_WORLD_SIZE"], g["GROUP_RANK"]) == (str(r % 2), "2", str(r // 2))
        assert (g["MASTER_ADDR"], g["MASTER_PORT"]) == ("127.0.0.1", str(port))
        assert g["PADDLE_RANK_IN_NODE"] == str(r % 2)
    # node 1 was started first (k=0) and waited for node 0; each console shows its own local rank 0
    assert "rank 2 of 4 says hello" in logs[0][0] and "rank 0 of 4 says hello" in logs[1][0]


def test_master_rendezvous_elastic_range_numbers_nodes_as_they_join(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    # two launchers on one IP, no node rank: the first to listen on the master hosts the rendezvous;
    # the master is a name, as a Kubernetes service gives it
    codes, logs = _run_nodes(tmp_path, out, lambda k: [
        "--nnodes", "1:3", "--rendezvous_last_call", "1.5", "--master", "localhost:%d" % port,
        "--nproc_per_node", "1", "--log_dir", "log%d" % k, script("env_check.py")])
    assert codes == [0, 0], logs
    got = _check_world(out, 2)
    assert sorted(g["GROUP_RANK"] for g in got) == ["0", "1"]


def test_master_rendezvous_refuses_nodes_that_disagree(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    codes, logs = _run_nodes(tmp_path, out, lambda k: [
        "--nnodes", "2", "--node_rank", str(k), "--master", "127.0.0.1:%d" % port, "--nproc_per_node", str(k + 1),
        "--rendezvous_timeout", "30", script("env_check.py")])
    assert codes == [1, 1]
    for _, err in logs:
        assert "runs 2 processes but node 127.0.0.1 runs 1; every node must use the same number" in err
    assert not os.listdir(out)


def test_module_no_python_and_torchrun_variables(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "envmod.py").write_text(
        "import json, os, sys\n"
        "keys = ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'FLUIDIST_LOG_LEVEL')\n"
        "json.dump({'argv': sys.argv[1:], 'name': __name__, **{k: os.environ.get(k) for k in keys}},\n"
        "          open(os.path.join(os.environ['OUT_DIR'], 'mod_%s.json' % os.environ['RANK']), 'w'))\n")
    r = run_launcher(["--nproc_per_node", "2", "--log_level", "WARNING", "-m", "envmod", "--lr", "0.1"],
                     cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    got = [read_json(out / ("mod_%d.json" % i)) for i in range(2)]
    for i, g in enumerate(got):
        assert g["name"] == "__main__" and g["argv"] == ["--lr", "0.1"]
        assert (g["RANK"], g["LOCAL_RANK"], g["WORLD_SIZE"], g["LOCAL_WORLD_SIZE"]) == (str(i), str(i), "2", "2")
        assert g["MASTER_ADDR"] == "127.0.0.1" and int(g["MASTER_PORT"]) > 0
        assert g["FLUIDIST_LOG_LEVEL"] == "30"
    assert got[0]["MASTER_PORT"] == got[1]["MASTER_PORT"]
    sh = tmp_path / "run.sh"
    sh.write_text('#!/bin/sh\necho "$RANK/$WORLD_SIZE $*" > "$OUT_DIR/sh_$RANK.txt"\n')
    sh.chmod(sh.stat().st_mode | stat.S_IXUSR)
    r = run_launcher(["--nproc_per_node", "2", "--no_python", "./run.sh", "a", "b"], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    assert [read(out / ("sh_%d.txt" % i)) for i in range(2)] == ["0/2 a b\n", "1/2 a b\n"]
    r = run_launcher(["--no_python", "envmod.py"], cwd=tmp_path, env=base_env(out_dir=out))  # not executable
    assert r.returncode == 1 and "--no_python: 'envmod.py' is not an executable program" in r.stderr


def _console(args, env=None):
    code = "import sys; sys.argv[0] = 'fluidist-launch'; from fluidist.distributed.launch import main; main()"
    return subprocess.run([sys.executable, "-c", code] + args, capture_output=True, text=True, timeout=60,
                          env=env or base_env())


def test_help_version_and_quiet_default(tmp_path):
    r = _console(["--help"])
    assert r.returncode == 0
    assert r.stdout.startswith("usage: fluidist-launch ")  # the console script calls itself by its name
    assert "default: log" in r.stdout and "default: 3.0" in r.stdout and "examples:" in r.stdout
    assert "fluidist-launch --nnodes 2 --master 10.0.0.1:29500" in r.stdout
    import fluidist
    r = _console(["--version"])
    assert r.returncode == 0 and r.stdout.strip() == "fluidist-launch (fluidist %s)" % fluidist.__version__
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher([script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0 and "Configuration Arguments" not in r.stdout
    # a bare --print_config, and Paddle 1.8's bare --use_paddlecloud (a one-node job here), before the script
    r = subprocess.run([sys.executable, "-m", "fluidist.distributed.launch", "--print_config", "--use_paddlecloud",
                        script("env_check.py"), "--print_config"], cwd=str(tmp_path), env=base_env(out_dir=out),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Configuration Arguments" in r.stdout and "use_paddlecloud: True" in r.stdout
    assert read_json(out / "trainer_0.json")["argv"] == ["--print_config"]  # the script's own flags untouched


def test_use_paddlecloud_takes_the_nodes_from_the_environment(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port_block(2)     # both nodes' ranks take port and port + 1
    ips = ("127.0.0.1", "127.0.0.2")
    envs = [{"PADDLE_TRAINERS": ",".join(ips), "POD_IP": ips[k], "PADDLE_TRAINER_ID": str(k),
             "PADDLE_TRAINERS_NUM": "2", "TRAINER_PORT": str(port), "TRAINER_PORTS_NUM": "2"} for k in range(2)]
    codes, logs = _run_nodes(tmp_path, out, lambda k: [
        "--use_paddlecloud", "--nproc_per_node", "2", "--log_dir", "log%d" % k, "--rendezvous_timeout", "60",
        script("env_check.py")], envs)
    assert codes == [0, 0], logs
    got = _check_world(out, 4)
    assert [g["PADDLE_CURRENT_ENDPOINT"] for g in got] == ["%s:%d" % (ip, port + i) for ip in ips for i in range(2)]
    r = run_launcher(["--use_paddlecloud", script("env_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out, extra={"PADDLE_TRAINERS_NUM": "2", "POD_IP": "127.0.0.1"}))
    assert r.returncode == 1 and "needs PADDLE_TRAINERS, PADDLE_TRAINER_ID in the environment" in r.stderr


def test_slurm_variables_make_a_master_job(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    envs = [{"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_NNODES": "2", "SLURM_NODEID": str(k),
             "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "127.0.0.[1-2]", "MASTER_PORT": str(port)} for k in range(2)]
    codes, logs = _run_nodes(tmp_path, out, lambda k: [
        "--nproc_per_node", "1", "--log_dir", "log%d" % k, script("env_check.py")], envs)
    assert codes == [0, 0], logs
    got = _check_world(out, 2)
    for r, g in enumerate(got):
        assert g["GROUP_RANK"] == str(r) and (g["MASTER_ADDR"], g["MASTER_PORT"]) == ("127.0.0.1", str(port))
    # several launchers per node is a mistake srun makes easy: said plainly
    bad = dict(envs[0], SLURM_NTASKS="8")
    r = run_launcher([script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out, extra=bad))
    assert r.returncode == 1 and "run one launcher per node (srun --ntasks-per-node=1)" in r.stderr


def _ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_bracketed_ipv6(tmp_path):
    if not _ipv6_loopback():
        pytest.skip("no IPv6 loopback (::1) on this machine")
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--ips", "[::1]", "--nproc_per_node", "2", script("env_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    got = _check_world(out, 2)
    assert all(g["PADDLE_CURRENT_ENDPOINT"].startswith("[::1]:") and g["POD_IP"] == "::1" for g in got)
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port = s.getsockname()[1]
    r = run_launcher(["--nnodes", "1", "--master", "[::1]:%d" % port, "--log_dir", "log6", script("env_check.py")],
                     cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    assert read_json(out / "trainer_0.json")["MASTER_ADDR"] == "::1"


def test_http_port_refused_and_logs_fresh_per_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--server_num", "1", "--worker_num", "1", "--http_port", "7500", script("ps_check.py")],
                     cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 1 and "--http_port 7500: Paddle's Gloo HTTP rendezvous store is not supported" in r.stderr
    for word in ("first-run", "second-run"):
        r = run_launcher([script("env_check.py"), word], cwd=tmp_path, env=base_env(out_dir=out))
        assert r.returncode == 0, r.stderr
    log = read(tmp_path / "log" / "workerlog.0")
    assert log.count("says hello") == 1  # the second run rewrote the log: no line of the first
