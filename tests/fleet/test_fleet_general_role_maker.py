"""GeneralRoleMaker: several processes meet in a shared directory; gathers, reductions and
barriers are exact; a missing process ends in a deadline error naming it."""
import json
import os
import time

import pytest

from fleet_cluster import Procs, endpoints
from load_aware import scaled  # (bounds that follow the machine's load)
from fluidist.role_maker import GeneralRoleMaker, MockBarrier

pytestmark = pytest.mark.timeout(240)


def start_job(procs, tmp_path, workers, servers, job, args=(), only=None, tag=""):
    eps_w, eps_s = endpoints(workers), endpoints(servers)
    common = {"PADDLE_TRAINER_ENDPOINTS": ",".join(eps_w), "PADDLE_PSERVERS_IP_PORT_LIST": ",".join(eps_s),
              "SYS_JOB_ID": job}
    outs = {}
    for i in range(workers):
        name = "%sw%d" % (tag, i)
        if only is None or name in only:
            outs[name] = str(tmp_path / (name + ".json"))
            procs.start(name, "fleet_general_child.py", ["--path", tmp_path / "rdv", "--out", outs[name]] + list(args),
                        dict(common, TRAINING_ROLE="TRAINER", PADDLE_TRAINER_ID=i))
    for i in range(servers):
        name = "%ss%d" % (tag, i)
        if only is None or name in only:
            host, port = eps_s[i].split(":")
            outs[name] = str(tmp_path / (name + ".json"))
            env = dict(common, TRAINING_ROLE="PSERVER", POD_IP=host, PADDLE_PORT=port)
            if i % 2:
                env = dict(common, TRAINING_ROLE="PSERVER", PADDLE_PSERVER_ID=i)
            procs.start(name, "fleet_general_child.py", ["--path", tmp_path / "rdv", "--out", outs[name]] + list(args),
                        env)
    return outs, eps_w, eps_s


def check_results(outs, workers, servers, rounds=3, tag=""):
    res = {n: json.load(open(p)) for n, p in outs.items()}
    everyone = ["w%d" % i for i in range(workers)] + ["s%d" % i for i in range(servers)]
    for name, d in res.items():
        assert d["worker_num"] == workers and d["server_num"] == servers
        assert d["is_worker"] == (name[len(tag)] == "w")
        assert d["is_first_worker"] == (name == tag + "w0")
        for r in range(rounds):
            assert d["gather"][r] == [[who, r] for who in everyone]   # workers first, then servers
            if d["is_worker"]:
                sum_i = sum(range(workers))
                assert d["sum"][r] == [[sum_i + workers * r, -sum_i], [0.5 * sum_i, 3.0 * workers]]
                assert d["min"][r] == [[r, -(workers - 1)], [0.0, 3.0]]
                assert d["max"][r] == workers - 1 + r
    return res


def test_three_workers_two_servers_meet(tmp_path):
    with Procs(tmp_path) as procs:
        outs, _, _ = start_job(procs, tmp_path, 3, 2, "job1")
        procs.check(timeout=150)
    check_results(outs, 3, 2)


def test_rerun_with_the_same_job_id_ignores_old_files(tmp_path):
    with Procs(tmp_path) as procs:
        outs, _, _ = start_job(procs, tmp_path, 2, 1, "same", ["--rounds", "2"], tag="a")
        procs.check(timeout=150)
    check_results(outs, 2, 1, rounds=2, tag="a")
    # the directory now holds the first run's files; a second run with the same id still agrees
    with Procs(tmp_path) as procs:
        outs, _, _ = start_job(procs, tmp_path, 2, 1, "same", ["--rounds", "2"], tag="b")
        procs.check(timeout=150)
    check_results(outs, 2, 1, rounds=2, tag="b")


def test_missing_process_hits_the_init_deadline(tmp_path):
    with Procs(tmp_path) as procs:
        t0 = time.monotonic()
        outs, eps_w, _ = start_job(procs, tmp_path, 2, 0, "late", ["--init_timeout", "2"], only={"w0"})
        codes = procs.wait(timeout=scaled(60))
        took = time.monotonic() - t0
        log = procs.log("w0")
    assert codes["w0"] not in (0, None)
    assert "RendezvousTimeout" in log and "start-up rendezvous" in log and "timed out after 2 s" in log
    assert "rank 1 (%s) never arrived" % eps_w[1] in log and "'trainer'" in log
    assert took < scaled(30)


def test_missing_process_hits_the_run_deadline(tmp_path):
    # x1 leaves right after the rendezvous; x0 waits for it in all_gather until the run deadline
    with Procs(tmp_path) as procs:
        eps = endpoints(2)
        common = {"PADDLE_TRAINER_ENDPOINTS": ",".join(eps), "PADDLE_PSERVERS_IP_PORT_LIST": "",
                  "SYS_JOB_ID": "run2", "TRAINING_ROLE": "TRAINER"}
        args = ["--path", tmp_path / "rdv", "--run_timeout", "2"]
        procs.start("x0", "fleet_general_child.py", args + ["--out", tmp_path / "x0.json"],
                    dict(common, PADDLE_TRAINER_ID=0))
        procs.start("x1", "fleet_general_child.py", args + ["--out", tmp_path / "x1.json", "--skip_barrier"],
                    dict(common, PADDLE_TRAINER_ID=1))
        codes = procs.wait(timeout=60)
        log = procs.log("x0")
    assert codes["x1"] == 0 and codes["x0"] not in (0, None)
    assert "all_gather (call 1)" in log and "rank 1 (%s) never arrived" % eps[1] in log


def test_a_process_that_left_is_noticed_by_its_heartbeat_and_a_slow_one_is_waited_for(tmp_path):
    """No run deadline to speak of: x1 leaves (its heartbeat stops) and x0 stops within a few seconds
    naming it; in a second job y1 sleeps 3x the peer timeout (alive) and y0 waits for it."""
    eps = endpoints(2)
    common = {"PADDLE_TRAINER_ENDPOINTS": ",".join(eps), "PADDLE_PSERVERS_IP_PORT_LIST": "",
              "TRAINING_ROLE": "TRAINER", "FLUIDIST_PEER_TIMEOUT": "2"}
    args = ["--path", tmp_path / "rdv", "--run_timeout", "600", "--rounds", "1"]
    with Procs(tmp_path) as procs:
        t0 = time.monotonic()
        procs.start("x0", "fleet_general_child.py", args + ["--out", tmp_path / "x0.json"],
                    dict(common, PADDLE_TRAINER_ID=0, SYS_JOB_ID="left"))
        procs.start("x1", "fleet_general_child.py", args + ["--out", tmp_path / "x1.json", "--skip_barrier"],
                    dict(common, PADDLE_TRAINER_ID=1, SYS_JOB_ID="left"))
        procs.start("y0", "fleet_general_child.py", args + ["--out", tmp_path / "y0.json"],
                    dict(common, PADDLE_TRAINER_ID=0, SYS_JOB_ID="slow"))
        procs.start("y1", "fleet_general_child.py", args + ["--out", tmp_path / "y1.json", "--sleep", "6"],
                    dict(common, PADDLE_TRAINER_ID=1, SYS_JOB_ID="slow"))
        codes = procs.wait(timeout=scaled(90))
        took = time.monotonic() - t0
        log = procs.log("x0")
    assert codes["x1"] == 0 and codes["x0"] not in (0, None)
    assert "RankLost" in log and "rank 1 (%s) of group 'all' stopped beating" % eps[1] in log, log[-2000:]
    assert codes["y0"] == 0 and codes["y1"] == 0
    assert took < scaled(60)


def test_arguments_and_environment():
    with pytest.raises(ValueError, match="needs path="):
        GeneralRoleMaker().generate_role(environ={})
    for key in ("hdfs_name", "http_ip_port"):
        with pytest.raises(NotImplementedError, match="not supported"):
            GeneralRoleMaker(path="/tmp/x", **{key: "x"})
    rm = GeneralRoleMaker(path="/tmp/x")
    with pytest.raises(KeyError, match="TRAINING_ROLE.*python -m fluidist.distributed.launch"):
        rm.generate_role(environ={"PADDLE_PSERVERS_IP_PORT_LIST": "", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:1"})
    with pytest.raises(ValueError, match="PADDLE_TRAINER_ID"):
        rm.generate_role(environ={"PADDLE_PSERVERS_IP_PORT_LIST": "", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:1",
                                  "TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": "1"})
    with pytest.raises(ValueError, match="PADDLE_IS_BARRIER_ALL_ROLE"):
        rm.generate_role(environ={"PADDLE_PSERVERS_IP_PORT_LIST": "", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:1",
                                  "TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": "0",
                                  "PADDLE_IS_BARRIER_ALL_ROLE": "yes"})


def test_barrier_all_role_is_any_integer_as_paddle_reads_it(tmp_path):
    """Paddle 1.8 takes ``int(PADDLE_IS_BARRIER_ALL_ROLE)`` for its truth value: 2 is on (fluidist wanted 0 or 1)."""
    rm = GeneralRoleMaker(path=str(tmp_path))
    rm.generate_role(environ={"PADDLE_PSERVERS_IP_PORT_LIST": "", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:1",
                              "TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": "0", "PADDLE_IS_BARRIER_ALL_ROLE": "2"})
    assert rm.is_first_worker() and not isinstance(rm._all_comm, MockBarrier)   # the all-role group is made


def test_single_process_group_in_process(tmp_path):
    rm = GeneralRoleMaker(path=str(tmp_path))
    rm.generate_role(environ={"PADDLE_PSERVERS_IP_PORT_LIST": "", "PADDLE_TRAINER_ENDPOINTS": "127.0.0.1:1",
                              "TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": "0", "SYS_JOB_ID": "solo"})
    assert rm.is_first_worker() and rm.worker_num() == 1 and rm.server_num() == 0
    assert rm.all_gather({"a": 1}) == [{"a": 1}]
    rm.barrier_worker()
    rm.barrier_all()
    for r in range(5):   # files of old calls are cleaned up as calls go on
        assert rm.all_reduce_worker(r, mode="max") == r
    session_dir = os.path.join(str(tmp_path), "solo", "trainer", rm._worker_comm.session)
    assert len([d for d in os.listdir(session_dir) if d != "alive"]) <= 2   # (and the heartbeats)
    with pytest.raises(ValueError, match="unknown mode"):
        rm.all_reduce_worker(1, mode="mean")
