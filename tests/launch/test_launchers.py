"""ps_launcher, launcher and openKS_launcher, driven in this process by argument lists and
environment variables, starting real processes."""
import os
import subprocess
import sys

import pytest

from fluidist.launch import cluster as launch_cluster
from fluidist.launch.launchers import launcher, openKS_launcher, ps_launcher
from launch_testlib import ROOT, base_env, read, read_json, script

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """A CPU node whose environment holds none of the launcher's variables; cwd is tmp_path."""
    for k in list(os.environ):
        if k.startswith(("FLUIDIST_LAUNCH_", "PADDLE_", "FLAGS_selected")) or k == "POD_IP":
            monkeypatch.delenv(k)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("OUT_DIR", str(out))
    monkeypatch.chdir(tmp_path)
    return out


def test_openks_cpu_mode_is_a_ps_launcher_configured_from_env(clean_env, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("FLUIDIST_LAUNCH_SERVER_NUM", "2")
    monkeypatch.setenv("FLUIDIST_LAUNCH_WORKER_NUM", "2")
    monkeypatch.setenv("FLUIDIST_LAUNCH_TRAINING_SCRIPT", script("ps_check.py"))
    monkeypatch.setenv("FLUIDIST_LAUNCH_PRINT_CONFIG", "false")
    monkeypatch.setenv("FLUIDIST_LAUNCH_LOG_DIR", "pslogs")
    ks = openKS_launcher("cpu", argv=[])
    assert isinstance(ks.launcher, ps_launcher)
    assert ks.launcher.args.server_num == 2 and ks.launcher.args.worker_num == 2
    assert ks.launch() is None
    for i in range(2):
        w = read_json(clean_env / ("worker_%d.json" % i))
        assert w["TRAINING_ROLE"] == "TRAINER" and w["PADDLE_TRAINER_ID"] == str(i)
        assert len(w["answers"]) == 2
        assert read_json(clean_env / ("server_%d.json" % i))["seen"] == [0, 1]
    assert sorted(os.listdir(tmp_path / "pslogs")) == ["endpoints.log", "serverlog.0", "serverlog.1",
                                                       "workerlog.0", "workerlog.1"]
    assert "worker 0 done" in capsys.readouterr().out


def test_ps_launcher_command_line_wins_over_env_and_requires_counts(clean_env, monkeypatch, capsys):
    monkeypatch.setenv("FLUIDIST_LAUNCH_SERVER_NUM", "5")
    args = ps_launcher.parse_args(["--server_num", "1", "--worker_num", "3", "--start_port", "7100", "t.py", "-x"])
    assert (args.server_num, args.worker_num, args.started_port) == (1, 3, 7100)
    assert args.training_script == "t.py" and args.training_script_args == ["-x"]
    monkeypatch.delenv("FLUIDIST_LAUNCH_SERVER_NUM")
    with pytest.raises(SystemExit) as e:
        ps_launcher.parse_args(["--worker_num", "2", "t.py"])
    assert e.value.code == 2
    assert "the number of servers is required: --server_num N (or FLUIDIST_LAUNCH_SERVER_NUM)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ps_launcher.parse_args(["--server_num", "2", "t.py"])
    assert "the number of workers is required" in capsys.readouterr().err


def test_ps_launcher_start_procs_returns_the_failing_code(clean_env, capsys):
    p = ps_launcher(["--print_config", "0", "--server_num", "1", "--worker_num", "2", script("ps_check.py"),
                     "--fail_worker", "0", "--exit_code", "4"])
    assert p.start_procs() == 4
    assert "ABORT: worker rank 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        p.launch()
    assert e.value.code == 4


def test_openks_gpu_mode_is_the_collective_launcher(clean_env, monkeypatch, capsys):
    monkeypatch.setenv("FLUIDIST_LAUNCH_NPROC_PER_NODE", "2")
    ks = openKS_launcher("GPU", argv=["--log_dir", "clogs", "--print_config", script("env_check.py"), "--flag"])
    assert isinstance(ks.launcher, launcher)
    ks.launch()
    got = [read_json(clean_env / ("trainer_%d.json" % i)) for i in range(2)]
    assert [g["PADDLE_TRAINER_ID"] for g in got] == ["0", "1"]
    assert got[0]["PADDLE_TRAINER_ENDPOINTS"] == got[1]["PADDLE_TRAINER_ENDPOINTS"]
    assert got[1]["argv"] == ["--flag"]
    out = capsys.readouterr().out
    assert "Configuration Arguments" in out and "nproc_per_node: 2" in out  # print_argument
    assert "rank 0 of 2 says hello" in out
    assert "rank 1 of 2 says hello" in read(os.path.join("clogs", "workerlog.1"))


def test_launcher_gpu_selection_and_cluster(clean_env, monkeypatch):
    monkeypatch.setattr(launch_cluster, "cuda_device_count", lambda: 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    la = launcher(["--ips", "10.0.0.1,10.0.0.2", "--node_ip", "10.0.0.2", "--started_port", "6170", "t.py"])
    assert la.get_gpus("4,5,6,7") == ["0", "1", "2", "3"]
    assert la.get_gpus([6, 7]) == ["2", "3"]
    assert la.get_gpus(None) == ["0", "1", "2", "3"]
    cluster = la.get_cluster_from_args(la.get_gpus("6,7"))
    assert cluster.trainers_endpoints() == ["10.0.0.1:6170", "10.0.0.1:6171", "10.0.0.2:6170", "10.0.0.2:6171"]
    assert [(t.rank, t.gpus) for t in la.pod.trainers] == [(2, ["2"]), (3, ["3"])]
    with pytest.raises(launch_cluster.LaunchError, match="Can't find your selected_gpus 1"):
        la.get_gpus("1")


def test_launcher_failure_exits_with_the_childs_code(clean_env, capsys):
    la = launcher(["--print_config", "false", "--nproc_per_node", "2", "--grace_period", "1", script("misbehave.py"),
                   "--fail_rank", "0", "--exit_code", "9"])
    with pytest.raises(SystemExit) as e:
        la.launch()
    assert e.value.code == 9
    err = capsys.readouterr().err
    assert "ABORT: trainer rank 0" in err and "rank 0 is failing on purpose" in err


def test_openks_rejects_unknown_modes(clean_env):
    with pytest.raises(ValueError, match="'cpu' \\(parameter server\\) or 'gpu' \\(collective\\), got 'tpu'"):
        openKS_launcher("tpu", argv=["t.py"])


def test_launchers_module_runs_from_the_command_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = subprocess.run([sys.executable, "-m", "fluidist.launch.launchers", "--mode", "cpu", "--print_config", "0",
                        "--server_num", "1", "--worker_num", "1", script("ps_check.py")], cwd=str(tmp_path),
                       env=base_env(out_dir=out), capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert read_json(out / "worker_0.json")["answers"]
    r = subprocess.run([sys.executable, "-m", "fluidist.launch.launchers", "t.py"], cwd=ROOT,
                       env=base_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--mode cpu|gpu" in r.stderr
