"""torchrun's spellings over real processes: hyphenated flags, --standalone, --rdzv-backend c10d / static with
--rdzv-endpoint and --rdzv-id, --master-addr/--master-port, --max-restarts with restarts that happen,
--tee, unknown flags named with the nearest known one, and parameter-server jobs meeting at --master."""
import os
import re
import subprocess
import sys

import pytest

from fluidist.launch.args import parse_args
from fluidist.launch.cli import decide_mode
from fluidist.launch.common import LaunchError
from fluidist.launch.torchrun import apply_torchrun
from launch_testlib import Launcher, base_env, free_port, read, read_json, run_launcher, script, wait_until

pytestmark = pytest.mark.timeout(150)


def _world(out, n):
    got = [read_json(out / ("trainer_%d.json" % r)) for r in range(n)]
    eps = got[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(eps) == n == len(set(eps))
    for r, g in enumerate(got):
        assert g["RANK"] == str(r) and g["WORLD_SIZE"] == str(n)
        assert g["answers"] == {ep: j for j, ep in enumerate(eps) if j != r}   # every rank reached every other
    return got


def _nodes(tmp_path, out, args_for, n=2):
    """Start ``n`` launchers (``args_for(k)``) and wait for them: (exit codes, [(stdout, stderr)])."""
    nodes = []
    try:
        for k in range(n):
            nodes.append(Launcher(args_for(k), cwd=tmp_path, env=base_env(out_dir=out),
                                  name="node%d" % k))
        codes = [node.wait(120) for node in nodes]
        return codes, [(node.stdout(), node.stderr()) for node in nodes]
    finally:
        for node in nodes:
            node.close()


def test_hyphenated_flags_and_standalone(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--standalone", "--nproc-per-node", "2", "--log-dir", "logs", "--log-level", "INFO",
                      script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    _world(out, 2)
    assert (tmp_path / "logs" / "workerlog.1").is_file()
    r = run_launcher(["--standalone", "--master", "127.0.0.1:%d" % free_port(), script("env_check.py")], cwd=tmp_path)
    assert r.returncode == 1 and "--standalone is a one-node job with no rendezvous; drop --master" in r.stderr


@pytest.mark.parametrize("flag,near", [("--nprocs-per-node", "--nproc-per-node"), ("--nproc_per_nod3", "--nproc_per_node"),
                                       ("--max-restart5", "--max-restarts"), ("--rdzv-endpiont", "--rdzv-endpoint")])
def test_unknown_flags_are_named_with_the_nearest_known_one(tmp_path, flag, near):
    r = run_launcher([flag, "2", script("env_check.py")], cwd=tmp_path)
    assert r.returncode == 2
    assert "error: unknown option %s (did you mean %s?)" % (flag, near) in r.stderr, r.stderr


def test_abbreviations_are_spelled_out_and_ambiguous_ones_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc=2", "--standalone", script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    _world(out, 2)
    r = run_launcher(["--rdzv", "x", script("env_check.py")], cwd=tmp_path)
    assert r.returncode == 2 and "ambiguous option --rdzv: it could be --rdzv-backend" in r.stderr


def test_c10d_rendezvous_numbers_nodes_and_turns_away_another_job(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
              "127.0.0.1:%d" % port, "--rendezvous-timeout", "60"]
    nodes = []
    try:
        host = Launcher(common + ["--rdzv-id", "job-a", "--local-addr", "127.0.0.1", "--log-dir", "l0",
                                  script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out), name="host")
        nodes.append(host)
        wait_until(lambda: "rendezvous: hosting on" in host.stderr(), 60, "the host to listen")
        other = Launcher(common + ["--rdzv-id", "job-b", "--local-addr", "127.0.0.3", "--log-dir", "lx",
                                   script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out), name="other")
        nodes.append(other)
        assert other.wait(90) == 1   # turned away; the rendezvous goes on
        assert "is of job 'job-b' but the rendezvous at this master is job 'job-a' (--rdzv_id)" in other.stderr()
        joiner = Launcher(common + ["--rdzv-id", "job-a", "--local-addr", "127.0.0.2", "--log-dir", "l1",
                                    script("env_check.py")], cwd=tmp_path, env=base_env(out_dir=out), name="joiner")
        nodes.append(joiner)
        assert [host.wait(120), joiner.wait(120)] == [0, 0], host.stderr() + joiner.stderr()
        assert "refused node 127.0.0.3 is of job 'job-b'" in host.stderr()
    finally:
        for node in nodes:
            node.close()
    got = _world(out, 2)
    assert [g["POD_IP"] for g in got] == ["127.0.0.1", "127.0.0.2"]   # the host is node 0, the joiner node 1
    assert {(g["MASTER_ADDR"], g["MASTER_PORT"]) for g in got} == {("127.0.0.1", str(port))}


def test_static_rendezvous_at_master_addr_and_port(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    ips = ("127.0.0.1", "127.0.0.2")
    codes, logs = _nodes(tmp_path, out, lambda k: [
        "--nnodes", "2", "--node-rank", str(1 - k), "--nproc-per-node", "1", "--rdzv-backend", "static",
        "--master-addr", "127.0.0.1", "--master-port", str(port), "--local-addr", ips[1 - k], "--log-dir", "log%d" % k,
        script("env_check.py")])
    assert codes == [0, 0], logs
    got = _world(out, 2)
    assert [g["GROUP_RANK"] for g in got] == ["0", "1"] and [g["POD_IP"] for g in got] == list(ips)


def test_max_restarts_restarts_the_failed_group(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc-per-node", "2", "--max-restarts", "2", "--log-dir", "log", "--log-level", "INFO",
                      script("restart_check.py"), "--fail_rank", "1", "--fail_until", "2"],
                     cwd=tmp_path, env=base_env(out_dir=out), timeout=120)
    assert r.returncode == 0, r.stderr
    for gen in range(3):
        for rank in range(2):
            g = read_json(out / ("gen_%d_%d.json" % (rank, gen)))
            assert g["FLUIDIST_RESTART_COUNT"] == g["TORCHELASTIC_RESTART_COUNT"] == str(gen)
            assert g["TORCHELASTIC_MAX_RESTARTS"] == "2"
    assert not (out / "gen_0_3.json").exists()
    assert "restarting this node's processes (restart 1 of 2, --max_restarts): the last run ended with exit code 3" \
        in r.stderr
    assert "(restart 2 of 2, --max_restarts)" in r.stderr and r.stderr.count("ABORT: trainer rank 1") == 2
    # every generation in the same log, after a line saying so
    log = read(tmp_path / "log" / "workerlog.1")
    assert [int(g) for g in re.findall(r"rank 1 generation (\d)", log)] == [0, 1, 2]
    assert log.count("fluidist.launch: trainer rank 1 (local 1") == 2 and "restarted at" in log


def test_max_restarts_gives_up_with_the_last_exit_code(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc-per-node", "2", "--max-restarts", "1", script("restart_check.py"), "--fail_rank", "0",
                      "--fail_until", "9", "--exit_code", "7"], cwd=tmp_path, env=base_env(out_dir=out), timeout=120)
    assert r.returncode == 7
    assert "giving up after 1 restart(s) (--max_restarts 1): the last run ended with exit code 7" in r.stderr
    assert sorted(os.listdir(out)) == ["gen_0_0.json", "gen_0_1.json", "gen_1_0.json", "gen_1_1.json"]
    r = run_launcher(["--nproc-per-node", "2", script("restart_check.py"), "--fail_until", "9"], cwd=tmp_path,
                     env=base_env(out_dir=tmp_path), timeout=120)
    assert r.returncode == 3 and "restarting" not in r.stderr   # no --max-restarts: no restart


def test_max_restarts_on_two_nodes_meets_again(tmp_path):
    """Node 1's rank fails; node 0's ranks lose it and fail too; both nodes meet at the master again and the
    second generation runs to its end."""
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    ips = ("127.0.0.1", "127.0.0.2")
    codes, logs = _nodes(tmp_path, out, lambda k: [
        "--nnodes", "2", "--node-rank", str(k), "--nproc-per-node", "2", "--master", "127.0.0.1:%d" % port,
        "--node-ip", ips[k], "--max-restarts", "1", "--rendezvous-timeout", "60", "--log-dir", "log%d" % k,
        script("restart_check.py"), "--peers", "--fail_rank", "3", "--fail_until", "1"])
    assert codes == [0, 0], logs
    for rank in range(4):
        first, second = (read_json(out / ("gen_%d_%d.json" % (rank, g))) for g in (0, 1))
        assert first["GROUP_RANK"] == second["GROUP_RANK"] == str(rank // 2)
        assert first["PADDLE_CURRENT_ENDPOINT"].startswith(ips[rank // 2] + ":")
    for k, (_, err) in enumerate(logs):
        assert "restarting this node's processes (restart 1 of 1, --max_restarts)" in err, err
    assert logs[0][1].count("rendezvous: 2 node(s) met on 127.0.0.1:%d" % port) == 2   # node 0 hosted both
    assert "rank 0 lost a peer in generation 0" in read(tmp_path / "log0" / "workerlog.0")


def test_tee_copies_every_process_with_a_prefix(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = run_launcher(["--nproc-per-node", "2", "--tee", "3", script("env_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for rank in (0, 1):
        assert "[trainer %d] rank %d of 2 says hello" % (rank, rank) in lines, r.stdout
    r = run_launcher(["--nproc-per-node", "2", "-t", "1:3", script("env_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0 and "[trainer 1] rank 1 of 2 says hello" in r.stdout and "rank 0" not in r.stdout
    r = run_launcher(["--nproc-per-node", "2", "--tee", "0", script("env_check.py")], cwd=tmp_path,
                     env=base_env(out_dir=out))
    assert r.returncode == 0 and "says hello" not in r.stdout
    r = run_launcher(["--tee", "5", script("env_check.py")], cwd=tmp_path)
    assert r.returncode == 1 and "--tee 5: each value must be 0 (none), 1 (stdout), 2 (stderr) or 3" in r.stderr


def test_parameter_server_job_meets_at_master(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    ips = ("127.0.0.1", "127.0.0.2")
    codes, logs = _nodes(tmp_path, out, lambda k: [
        "--nnodes", "2", "--node-rank", str(k), "--master", "127.0.0.1:%d" % port, "--server_num", "1",
        "--worker-num", "1", "--node-ip", ips[k], "--log-dir", "log%d" % k, script("ps_check.py")])
    assert codes == [0, 0], logs
    servers = [read_json(out / ("server_%d.json" % i)) for i in range(2)]
    workers = [read_json(out / ("worker_%d.json" % i)) for i in range(2)]
    eps = servers[0]["PADDLE_PSERVERS_IP_PORT_LIST"].split(",")
    assert [e.split(":")[0] for e in eps] == list(ips)   # node 0's server, then node 1's
    for i, s in enumerate(servers):
        assert s["PADDLE_CURRENT_ENDPOINT"] == eps[i] and s["POD_IP"] == ips[i]
    for i, w in enumerate(workers):
        assert w["PADDLE_TRAINER_ID"] == str(i) and w["PADDLE_TRAINERS_NUM"] == "2" and w["POD_IP"] == ips[i]
        assert w["PADDLE_PSERVERS_IP_PORT_LIST"] == ",".join(eps)
        assert w["answers"] == {ep: j for j, ep in enumerate(eps)}   # each worker reached both servers
    r = run_launcher(["--master", "127.0.0.1:%d" % port, "--servers", "127.0.0.1:1", "--worker_num", "1",
                      script("ps_check.py")], cwd=tmp_path)
    assert r.returncode == 1 and "--master and --servers both say where" in r.stderr


def _mapped(argv):
    args = parse_args(argv + ["train.py"])
    apply_torchrun(args)
    return args


def test_rendezvous_options_map_onto_the_launchers_own():
    a = _mapped(["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.1", "--rdzv-id", "j"])
    assert (a.master, a.node_rank, a.rdzv_id, decide_mode(a)) == ("10.0.0.1:29400", None, "j", "collective")
    a = _mapped(["--nnodes", "2", "--rdzv-endpoint", "[fd00::1]:7000"])   # torchrun's default backend: static
    assert (a.master, a.node_rank) == ("[fd00::1]:7000", 0)
    a = _mapped(["--nnodes", "1:4", "--rdzv-backend", "etcd", "--rdzv-endpoint", "10.0.0.9", "--rdzv-id", "j1"])
    assert (a.elastic_server, a.job_id, a.np, a.nnodes, decide_mode(a)) == ("10.0.0.9:2379", "j1", "1:4", None,
                                                                          "elastic")
    a = _mapped(["--rdzv-conf", "join_timeout=12,last_call_timeout=3", "--master-addr", "h"])
    assert (a.rendezvous_timeout, a.rendezvous_last_call, a.master) == (12.0, 3.0, "h:29500")
    a = _mapped(["--nproc-per-node", "cpu"])
    assert a.nproc_per_node == (os.cpu_count() or 1)
    for argv, match in [
            (["--rdzv-backend", "etcd", "--rdzv-endpoint", "h"], "needs --rdzv_id"),
            (["--rdzv-backend", "c10d"], "needs --rdzv_endpoint"),
            (["--rdzv-conf", "timeout=3"], "'timeout=3' is not one of join_timeout, last_call_timeout"),
            (["--master", "a:1", "--rdzv-endpoint", "b:2"], "--master a:1 and --rdzv_endpoint b:2 name different"),
            (["--master-port", "7"], "--master_port 7 needs --master_addr"),
            (["--standalone", "--nnodes", "2"], "--standalone is a one-node job but --nnodes is 2")]:
        with pytest.raises(LaunchError, match=re.escape(match)):
            _mapped(argv)
    with pytest.raises(LaunchError, match="needs --server_num and --worker_num"):
        decide_mode(_mapped(["--master", "h:1", "--server_num", "1"]))
    with pytest.raises(LaunchError, match="meets at --master host:port"):
        decide_mode(_mapped(["--nnodes", "2", "--server_num", "1", "--worker_num", "1"]))


def test_help_lists_both_spellings():
    r = subprocess.run([sys.executable, "-m", "fluidist.launch", "--help"], capture_output=True, text=True,
                       env=base_env(), timeout=60)
    assert r.returncode == 0
    for flag in (r"--nproc_per_node \S+, --nproc-per-node", r"--max_restarts \S+, --max-restarts", r"--standalone",
                 r"--rdzv_backend \S+, --rdzv-backend", r"-t TEE, --tee"):
        assert re.search(flag, r.stdout), flag


@pytest.mark.parametrize("flag,instead", [("--redirects", "--tee copies it to the console"),
                                          ("-r", "output goes to its log in --log_dir"),
                                          ("--local-ranks-filter", "--tee LOCAL_RANK:N"),
                                          ("--start_method", "a new Python interpreter")])
def test_torchrun_options_not_taken_are_answered_with_what_does_the_same(flag, instead, capsys):
    with pytest.raises(SystemExit) as e:
        parse_args([flag, "3", "train.py"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "%s is torchrun's option" % flag in err and instead in err, err
    assert "did you mean" not in err
