"""Pure pieces of the launcher: GPU selection, cluster construction, argument checks, node IPs,
ports, and the elastic rank assignment. No process is started here."""
import socket

import pytest

from fluidist.launch import cluster as launch_cluster
from fluidist.launch.args import parse_args
from fluidist.launch.cli import decide_mode
from fluidist.launch.cluster import (check_ports_free, get_cluster, get_gpus, parse_endpoints, parse_ips, pick_node_ip,
                                     split_devices)
from fluidist.launch.collective import build_collective, collective_specs
from fluidist.launch.common import LaunchError
from fluidist.launch.elastic import assign_ranks, desired_members, parse_np
from fluidist.launch.ps import build_ps, ps_specs
from fluidist.launch.slurm import apply_slurm, first_slurm_host, slurm_defaults


# -- get_gpus ---------------------------------------------------------------------------------
def test_get_gpus_defaults_to_every_visible_device():
    assert get_gpus(None, device_count=4, cuda_visible_devices=None) == ["0", "1", "2", "3"]
    assert get_gpus(None, device_count=0, cuda_visible_devices=None) == []
    assert get_gpus("", device_count=2, cuda_visible_devices="") == ["0", "1"]
    assert get_gpus(None, device_count=None, cuda_visible_devices=None) == []  # unknown: a CPU node


def test_get_gpus_without_cuda_visible_devices_uses_ids_as_given():
    assert get_gpus("2,3", device_count=8, cuda_visible_devices=None) == ["2", "3"]
    assert get_gpus(" 1 , 0 ", device_count=8, cuda_visible_devices="") == ["1", "0"]


def test_get_gpus_maps_physical_ids_through_cuda_visible_devices():
    # the seed's example: CVD=4,5,6,7 and selected 4,5,6,7 -> 0,1,2,3
    assert get_gpus("4,5,6,7", device_count=4, cuda_visible_devices="4,5,6,7") == ["0", "1", "2", "3"]
    assert get_gpus("5,7", device_count=4, cuda_visible_devices="4,5,6,7") == ["1", "3"]
    assert get_gpus("7,4", device_count=None, cuda_visible_devices="4,5,6,7") == ["3", "0"]


def test_get_gpus_errors_name_the_id():
    with pytest.raises(LaunchError, match=r"Can't find your selected_gpus 3 in CUDA_VISIBLE_DEVICES\[4,5\]"):
        get_gpus("4,3", device_count=2, cuda_visible_devices="4,5")
    with pytest.raises(LaunchError, match="'a' is not a device id"):
        get_gpus("0,a", device_count=2, cuda_visible_devices=None)
    with pytest.raises(LaunchError, match="twice"):
        get_gpus("1,1", device_count=2, cuda_visible_devices=None)
    with pytest.raises(LaunchError, match=r"GPU 2 is not visible here \(2 CUDA devices visible"):
        get_gpus("0,2", device_count=2, cuda_visible_devices=None)


def test_get_gpus_reads_the_environment(monkeypatch):
    monkeypatch.setattr(launch_cluster, "cuda_device_count", lambda: 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    assert get_gpus("6,7") == ["2", "3"]
    assert get_gpus(None) == ["0", "1", "2", "3"]
    with pytest.raises(LaunchError, match="Can't find your selected_gpus 1"):
        get_gpus("1")


def test_cuda_device_count_is_zero_with_empty_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert launch_cluster.cuda_device_count() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert launch_cluster.cuda_device_count() == 0


def test_split_devices():
    assert split_devices([], None) == [[]]
    assert split_devices([], 3) == [[], [], []]
    assert split_devices(["0", "1"], None) == [["0"], ["1"]]
    assert split_devices(["0", "1", "2", "3"], 2) == [["0", "1"], ["2", "3"]]
    with pytest.raises(LaunchError, match="does not divide the 3 selected GPUs"):
        split_devices(["0", "1", "2"], 2)
    with pytest.raises(LaunchError, match="at least 1"):
        split_devices([], 0)


# -- cluster ----------------------------------------------------------------------------------
def test_get_cluster_ranks_grow_over_nodes_then_local_processes():
    ips = ["10.0.0.1", "10.0.0.2"]
    eps = [["%s:%d" % (ip, p) for p in (6070, 6071)] for ip in ips]
    cluster, pod = get_cluster(ips, "10.0.0.2", eps, [["0"], ["1"]])
    assert pod.rank == 1 and pod.addr == "10.0.0.2"
    assert [t.rank for t in pod.trainers] == [2, 3]
    assert [t.gpus for t in pod.trainers] == [["0"], ["1"]]
    assert cluster.trainers_nranks() == 4
    assert cluster.trainers_endpoints() == ["10.0.0.1:6070", "10.0.0.1:6071", "10.0.0.2:6070", "10.0.0.2:6071"]
    assert cluster.pods_endpoints() == ips
    assert cluster.get_pod_by_id(0).trainers[1].endpoint == "10.0.0.1:6071"
    assert pod.get_visible_gpus() == "0,1"
    with pytest.raises(LaunchError, match="10.0.0.3 is not in the node list 10.0.0.1,10.0.0.2"):
        get_cluster(ips, "10.0.0.3", eps, [["0"], ["1"]])


def _args(argv):
    return parse_args(argv + ["train.py"])


def test_build_collective_cpu_single_node_gets_free_distinct_ports(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    cluster, pod, use_gpu = build_collective(_args(["--nproc_per_node", "3"]))
    assert not use_gpu
    eps = cluster.trainers_endpoints()
    assert len(eps) == 3 and len(set(eps)) == 3 and all(e.startswith("127.0.0.1:") for e in eps)
    assert [t.gpus for t in pod.trainers] == [[], [], []]


def test_build_collective_multi_node_uses_started_port_everywhere(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    args = _args(["--ips", "10.0.0.1,10.0.0.2", "--node_ip", "10.0.0.2", "--nproc_per_node", "2"])
    cluster, pod, _ = build_collective(args)
    assert cluster.trainers_endpoints() == ["10.0.0.1:6070", "10.0.0.1:6071", "10.0.0.2:6070", "10.0.0.2:6071"]
    assert [t.rank for t in pod.trainers] == [2, 3]
    args = _args(["--cluster_node_ips", "10.0.0.1,10.0.0.2", "--node_ip", "10.0.0.1", "--started_port", "7000"])
    cluster, pod, _ = build_collective(args)
    assert cluster.trainers_endpoints() == ["10.0.0.1:7000", "10.0.0.2:7000"]


def test_build_collective_gpu_mode_sets_flags_selected_gpus(monkeypatch, tmp_path):
    monkeypatch.setattr(launch_cluster, "cuda_device_count", lambda: 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")
    script = tmp_path / "train.py"
    script.write_text("")
    args = parse_args(["--selected_gpus", "6,7", str(script), "--lr", "0.1"])
    cluster, pod, use_gpu = build_collective(args)
    assert use_gpu and [t.gpus for t in pod.trainers] == [["2"], ["3"]]
    specs = collective_specs(args, cluster, pod, use_gpu)
    assert [s.env["FLAGS_selected_gpus"] for s in specs] == ["2", "3"]
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["4,5,6,7", "4,5,6,7"]  # inherited unchanged
    assert specs[1].env["PADDLE_TRAINER_ID"] == "1" and specs[1].env["PADDLE_TRAINERS_NUM"] == "2"
    assert specs[0].cmd[-3:] == [str(script), "--lr", "0.1"] and specs[0].cmd[1] == "-u"
    assert specs[0].log_path.endswith("workerlog.0") and specs[0].echo and not specs[1].echo
    # --nproc_per_node on a GPU node splits the GPUs between processes
    args = parse_args(["--gpus", "4,5,6,7", "--nproc_per_node", "2", str(script)])
    cluster, pod, _ = build_collective(args)
    assert [t.gpus for t in pod.trainers] == [["0", "1"], ["2", "3"]]
    assert collective_specs(args, cluster, pod, True)[1].env["FLAGS_selected_gpus"] == "2,3"


def test_collective_cpu_children_get_no_flags_selected_gpus(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("FLAGS_selected_gpus", "0")
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    script = tmp_path / "t.py"
    script.write_text("")
    args = parse_args(["--nproc_per_node", "2", str(script)])
    cluster, pod, use_gpu = build_collective(args)
    for s in collective_specs(args, cluster, pod, use_gpu):
        assert "FLAGS_selected_gpus" not in s.env and "http_proxy" not in s.env
        assert s.env["PADDLE_DISTRI_BACKEND"] == "gloo" and s.env["POD_IP"] == "127.0.0.1"


def test_backend_checks(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(LaunchError, match="--backend nccl needs CUDA devices"):
        build_collective(_args(["--backend", "nccl"]))
    with pytest.raises(LaunchError, match="gloo runs on CPU"):
        build_collective(_args(["--backend", "gloo", "--gpus", "0"]))


# -- addresses and ports ----------------------------------------------------------------------
def test_parse_ips_and_endpoints():
    assert parse_ips(" 10.0.0.1, 10.0.0.2 ") == ["10.0.0.1", "10.0.0.2"]
    with pytest.raises(LaunchError, match="lists an IP twice"):
        parse_ips("10.0.0.1,10.0.0.1")
    with pytest.raises(LaunchError, match="without ports"):
        parse_ips("10.0.0.1:80")
    assert parse_endpoints("a:1,b:2", "--servers") == [("a", 1), ("b", 2)]
    assert parse_endpoints("a,b:9", "--workers", default_port=lambda i: 100 + i) == [("a", 100), ("b", 9)]
    with pytest.raises(LaunchError, match="--servers: 'a' has no port"):
        parse_endpoints("a", "--servers")
    with pytest.raises(LaunchError, match="'a:99999' is not host:port"):
        parse_endpoints("a:99999", "--servers")
    with pytest.raises(LaunchError, match="endpoint twice"):
        parse_endpoints("a:1,a:1", "--servers")


def test_pick_node_ip():
    ips = ["127.0.0.1", "10.123.0.77"]  # the second is not an address of this machine
    assert pick_node_ip(ips, "10.123.0.77", env={}) == "10.123.0.77"
    assert pick_node_ip(ips, None, env={"POD_IP": "10.123.0.77"}) == "10.123.0.77"
    assert pick_node_ip(ips, None, env={}) == "127.0.0.1"  # the only listed IP this machine has
    assert pick_node_ip(["10.123.0.77"], None, env={}) == "10.123.0.77"
    with pytest.raises(LaunchError, match="10.123.0.9 .* is not in the node list"):
        pick_node_ip(ips, "10.123.0.9", env={})
    with pytest.raises(LaunchError, match=r"POD_IP\) is not in the node list"):
        pick_node_ip(ips, None, env={"POD_IP": "10.123.0.9"})
    with pytest.raises(LaunchError, match="none of the node IPs 10.123.0.77,10.123.0.78"):
        pick_node_ip(["10.123.0.77", "10.123.0.78"], None, env={})
    with pytest.raises(LaunchError, match="several node IPs"):
        pick_node_ip(["127.0.0.1", "127.0.0.2"], None, env={})


def test_find_free_ports():
    ports = launch_cluster.find_free_ports(3)
    assert len(set(ports)) == 3
    with pytest.raises(LaunchError, match="cannot find 1 free port.* on 10.123.0.77.*not an address of this machine"):
        launch_cluster.find_free_ports(1, "10.123.0.77")


def test_check_ports_free_names_the_port_in_use():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(LaunchError, match="port %d on 127.0.0.1 is already in use \\(needed by trainer 0\\)" % port):
            check_ports_free([("127.0.0.1", port, "trainer 0")])
    check_ports_free([("127.0.0.1", port, "trainer 0")])  # closed again: free
    with pytest.raises(LaunchError, match="10.123.0.77 is not an address of this machine"):
        check_ports_free([("10.123.0.77", port, "server 0")])


# -- mode selection ---------------------------------------------------------------------------
@pytest.mark.parametrize("argv,match", [
    (["--run_mode", "ps-heter"], "not supported"),
    (["--heter_workers", "127.0.0.1:6000"], "--heter_workers.*not supported"),
    (["--server_num", "1", "--worker_num", "1", "--heter_worker_num", "1"], "not supported"),
    (["--ips", "127.0.0.1", "--server_num", "1", "--worker_num", "1"], "--ips is a collective option"),
    (["--run_mode", "collective", "--servers", "127.0.0.1:1"], "does not take parameter-server options"),
    (["--elastic_server", "127.0.0.1:2379"], "missing: --job_id, --np"),
    (["--elastic_server", "h:1", "--job_id", "j", "--np", "2", "--server_num", "1"], "collective jobs only"),
    (["--server_num", "1", "--worker_num", "1", "--gpus", "0"], "--gpus is a collective option"),
])
def test_decide_mode_errors(argv, match):
    with pytest.raises(LaunchError, match=match):
        decide_mode(_args(argv))


@pytest.mark.parametrize("argv,mode", [
    ([], "collective"), (["--ips", "127.0.0.1"], "collective"), (["--server_num", "2", "--worker_num", "2"], "ps"),
    (["--run_mode", "ps"], "ps"), (["--servers", "127.0.0.1:1", "--workers", "127.0.0.1"], "ps"),
    (["--elastic_server", "h:1", "--job_id", "j", "--np", "2"], "elastic"),
])
def test_decide_mode(argv, mode):
    assert decide_mode(_args(argv)) == mode


def test_options_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("FLUIDIST_LAUNCH_SERVER_NUM", "3")
    monkeypatch.setenv("FLUIDIST_LAUNCH_LOG_DIR", "elsewhere")
    monkeypatch.setenv("PADDLE_ELASTIC_NP", "2:4")
    monkeypatch.setenv("POD_IP", "10.1.2.3")
    monkeypatch.setenv("FLUIDIST_LAUNCH_TRAINING_SCRIPT", "from_env.py")
    args = parse_args([])
    assert args.server_num == 3 and args.log_dir == "elsewhere" and args.np == "2:4"
    assert args.node_ip == "10.1.2.3" and args.host == "10.1.2.3" and args.training_script == "from_env.py"
    args = parse_args(["--server_num", "1", "mine.py", "--server_num", "9"])
    assert args.server_num == 1 and args.training_script == "mine.py"
    assert args.training_script_args == ["--server_num", "9"]  # the script's own arguments stay its own


def test_build_ps_lists_and_counts():
    a = _args(["--server_num", "2", "--worker_num", "3"])
    servers, workers, node_ip = build_ps(a)
    assert node_ip == "127.0.0.1" and len(servers) == 2 and len(workers) == 3
    assert len({p for _, p in servers + workers}) == 5
    a = _args(["--servers", "127.0.0.1:7001,127.0.0.1:7002", "--workers", "127.0.0.1,127.0.0.1"])
    servers, workers, _ = build_ps(a)
    assert servers == [("127.0.0.1", 7001), ("127.0.0.1", 7002)]
    assert workers == [("127.0.0.1", 6172), ("127.0.0.1", 6173)]  # 6170 + servers + i, as Paddle 2.x
    a = _args(["--server_num", "2", "--started_port", "7100", "--worker_num", "1"])
    assert build_ps(a)[0] == [("127.0.0.1", 7100), ("127.0.0.1", 7101)]
    with pytest.raises(LaunchError, match="--server_num 3 but --servers lists 2"):
        build_ps(_args(["--servers", "127.0.0.1:1,127.0.0.1:2", "--server_num", "3", "--worker_num", "1"]))
    with pytest.raises(LaunchError, match="needs --workers or --worker_num"):
        build_ps(_args(["--server_num", "1"]))
    with pytest.raises(LaunchError, match="needs --servers or --server_num"):
        build_ps(_args(["--worker_num", "1"]))
    with pytest.raises(LaunchError, match="both a server and a worker"):
        build_ps(_args(["--servers", "127.0.0.1:7001", "--workers", "127.0.0.1:7001"]))


def test_ps_specs_env(tmp_path):
    script = tmp_path / "t.py"
    script.write_text("")
    a = parse_args(["--servers", "10.0.0.1:7000,10.0.0.2:7000", "--workers", "10.0.0.1:7001,10.0.0.2:7001",
                           str(script)])
    specs = ps_specs(a, [("10.0.0.1", 7000), ("10.0.0.2", 7000)], [("10.0.0.1", 7001), ("10.0.0.2", 7001)],
                            "10.0.0.2")
    assert [(s.role, s.rank, s.local_index) for s in specs] == [("server", 1, 0), ("worker", 1, 0)]
    server, worker = specs[0].env, specs[1].env
    assert server["TRAINING_ROLE"] == "PSERVER" and server["PADDLE_PSERVER_ID"] == "1"
    assert server["PADDLE_PORT"] == "7000" and server["POD_IP"] == "10.0.0.2" and "PADDLE_TRAINER_ID" not in server
    assert worker["TRAINING_ROLE"] == "TRAINER" and worker["PADDLE_TRAINER_ID"] == "1"
    assert worker["PADDLE_PORT"] == "7001" and "PADDLE_PSERVER_ID" not in worker
    assert (worker["RANK"], worker["LOCAL_RANK"], worker["WORLD_SIZE"]) == ("1", "0", "2") and "RANK" not in server
    for env in (server, worker):
        assert env["PADDLE_PSERVERS_IP_PORT_LIST"] == "10.0.0.1:7000,10.0.0.2:7000"
        assert env["PADDLE_TRAINER_ENDPOINTS"] == "10.0.0.1:7001,10.0.0.2:7001"
        assert env["PADDLE_TRAINERS_NUM"] == "2"
    assert specs[0].log_path.endswith("serverlog.0") and specs[1].log_path.endswith("workerlog.0")
    assert specs[1].echo and not specs[0].echo


# -- elastic membership -----------------------------------------------------------------------
def test_parse_np():
    assert parse_np("2") == (2, 2) and parse_np("1:4") == (1, 4)
    for bad in ("x", "0", "3:2", "1:"):
        with pytest.raises(LaunchError, match="--np"):
            parse_np(bad)


def test_assign_ranks_keeps_survivors_in_place():
    # a replacement takes the place of the node that left
    assert assign_ranks(["a", "b"], ["a", "c"], 2) == ["a", "c"]
    assert assign_ranks(["a", "b"], ["b", "c"], 2) == ["c", "b"]
    # a spare does not displace a live member
    assert assign_ranks(["a", "b"], ["a", "b", "c"], 2) == ["a", "b"]
    # scale out appends, scale in fills holes with the displaced survivors
    assert assign_ranks(["a", "b"], ["a", "b", "c"], 3) == ["a", "b", "c"]
    assert assign_ranks(["a", "b", "c", "d"], ["a", "c", "d"], 3) == ["a", "d", "c"]
    assert assign_ranks([], ["x", "y"], 2) == ["x", "y"]


def test_desired_members():
    assert desired_members(["a"], [], 2, 2) is None
    assert desired_members(["a", "b", "c"], [], 2, 2) == ["a", "b"]
    assert desired_members(["a", "b", "c"], ["a"], 1, 4) == ["a", "b", "c"]


# -- addresses, Slurm ---------------------------------------------------------------------------
def test_ipv6_endpoints_and_ips():
    from fluidist.launch.cluster import format_endpoint, parse_endpoints, parse_ips, split_endpoint
    assert parse_ips("[::1],10.0.0.1,fe80::2") == ["::1", "10.0.0.1", "fe80::2"]
    with pytest.raises(LaunchError, match="takes IPs without ports"):
        parse_ips("10.0.0.1:80")
    assert parse_endpoints("[::1]:7000,10.0.0.1:7001", "--servers") == [("::1", 7000), ("10.0.0.1", 7001)]
    assert parse_endpoints("[::1],::2,10.0.0.3", "--workers", default_port=lambda i: 100 + i) == \
        [("::1", 100), ("::2", 101), ("10.0.0.3", 102)]
    with pytest.raises(LaunchError, match="write an IPv6 address in brackets"):
        split_endpoint("::1:7000", "--master")
    assert format_endpoint("::1", 7) == "[::1]:7" and format_endpoint("10.0.0.1", 7) == "10.0.0.1:7"


def test_slurm_mapping():
    assert first_slurm_host("node[03-05,9],gpu1") == "node03"
    assert first_slurm_host("gpu1,node[1-2]") == "gpu1"
    assert first_slurm_host("rack2-n[007-010]x") == "rack2-n007x"
    env = {"SLURM_JOB_ID": "1234", "SLURM_STEP_ID": "0", "SLURM_NNODES": "4", "SLURM_NODEID": "2",
           "SLURM_NTASKS": "4", "SLURM_JOB_NODELIST": "n[10-13]"}
    assert slurm_defaults(env) == {"nnodes": "4", "node_rank": 2, "master": "n10:29734"}
    assert slurm_defaults(dict(env, MASTER_PORT="6000"))["master"] == "n10:6000"
    assert slurm_defaults(dict(env, SLURM_NNODES="1")) is None  # one node: nothing to meet
    assert slurm_defaults({k: v for k, v in env.items() if k != "SLURM_STEP_ID"}) is None  # not in srun
    # the command line wins over Slurm
    a = _args(["--node_rank", "0", "--master", "h:1"])
    assert apply_slurm(a, env) and (a.nnodes, a.node_rank, a.master) == ("4", 0, "h:1")


def test_nnodes_and_node_rank_with_ips(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    a = _args(["--ips", "127.0.0.1,127.0.0.2", "--node_rank", "1", "--started_port", "7000", "--nnodes", "2"])
    cluster, pod, _ = build_collective(a)
    assert pod.rank == 1 and pod.addr == "127.0.0.2" and cluster.trainers_endpoints() == ["127.0.0.1:7000",
                                                                                         "127.0.0.2:7000"]
    with pytest.raises(LaunchError, match="--nnodes 3 but --ips lists 2"):
        build_collective(_args(["--ips", "127.0.0.1,127.0.0.2", "--nnodes", "3"]))
    with pytest.raises(LaunchError, match="needs --master host:port"):
        build_collective(_args(["--nnodes", "2"]))
    with pytest.raises(LaunchError, match="--node_rank needs a fixed --nnodes"):
        from fluidist.launch.master_rendezvous import master_rendezvous
        master_rendezvous("127.0.0.1:1", "1:2", 0, None, 1, lambda ip: [])


# -- Paddle's paths of the launcher ----------------------------------------------------------------
def test_paddles_launcher_paths_are_the_launchers_modules():
    """``paddle.distributed.launch`` / ``launch_ps`` are fluidist.distributed.launch / launch_ps: the very
    modules of fluidist.launch (through fluidist/paddle_paths.py), runnable with ``python -m`` as Paddle's are."""
    import subprocess
    import sys

    import fluidist.distributed.launch as paddle_launch
    import fluidist.distributed.launch_ps as paddle_launch_ps
    from fluidist.launch import cli, paddle_ps
    assert paddle_launch is cli and paddle_launch_ps is paddle_ps
    for module, option in (("fluidist.launch", "--nproc_per_node"), ("fluidist.distributed.launch", "--nproc_per_node"),
                           ("fluidist.distributed.launch_ps", "--server_num")):
        r = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and option in r.stdout, (module, r.stderr)
    assert "usage: python -m fluidist.distributed.launch " in subprocess.run(
        [sys.executable, "-m", "fluidist.distributed.launch", "--help"], capture_output=True, text=True,
        timeout=60).stdout


def test_free_ports_come_from_fluidist_port_range_when_set(monkeypatch):
    """Drawn at random from the range, skipping a taken one; too few free ports and a malformed range are
    errors naming FLUIDIST_PORT_RANGE; unset, the kernel picks."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    base = taken.getsockname()[1]
    low = base - 3 if base > 1030 else base
    try:
        monkeypatch.setenv("FLUIDIST_PORT_RANGE", "%d-%d" % (low, low + 3))
        free = [p for p in range(low, low + 4) if p != base and check_bindable(p)]
        got = launch_cluster.find_free_ports(len(free))
        assert sorted(got) == free and base not in got
        with pytest.raises(LaunchError, match=r"cannot find %d free port\(s\) on 127.0.0.1 in "
                                              r"FLUIDIST_PORT_RANGE=%d-%d" % (len(free) + 1, low, low + 3)):
            launch_cluster.find_free_ports(len(free) + 1)
    finally:
        taken.close()
    for bad in ("6070", "7000-6000", "0-10", "a-b", "1-70000"):
        monkeypatch.setenv("FLUIDIST_PORT_RANGE", bad)
        with pytest.raises(LaunchError, match="FLUIDIST_PORT_RANGE must be LOW-HIGH.*got %r" % bad):
            launch_cluster.find_free_ports(1)
    monkeypatch.delenv("FLUIDIST_PORT_RANGE")
    assert len(set(launch_cluster.find_free_ports(3))) == 3


def check_bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def test_use_paddlecloud_reads_paddle_port_as_paddle_1_8():
    """Paddle 1.8's launcher starts a PaddleCloud node's trainers at PADDLE_PORT when TRAINER_PORTS_NUM
    leaves room for them (fluidist read only TRAINER_PORT); the nodes come from PADDLE_TRAINERS."""
    import argparse
    from fluidist.launch.collective import cloud_nodes
    args = argparse.Namespace(use_paddlecloud=True, ips=None, started_port=None)
    env = {"PADDLE_TRAINERS_NUM": "2", "PADDLE_TRAINERS": "127.0.0.1,127.0.0.2", "POD_IP": "127.0.0.1",
           "PADDLE_TRAINER_ID": "0", "PADDLE_PORT": "6200", "TRAINER_PORTS_NUM": "2"}
    assert cloud_nodes(args, 2, env) == (["127.0.0.1", "127.0.0.2"], "127.0.0.1", 6200)
    assert cloud_nodes(args, 3, env)[2] is None          # not room for 3: the launcher's default start
    legacy = dict(env, TRAINER_PORT="6300")
    del legacy["PADDLE_PORT"]
    assert cloud_nodes(args, 2, legacy)[2] == 6300
