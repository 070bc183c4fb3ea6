"""Two hosts: two network namespaces joined by a veth pair (10.123.0.1/24 and 10.123.0.2/24, the
project's own test addresses, which exist only inside these namespaces), one launcher in each.

Skipped, with the reason, where the machine does not allow network namespaces; the namespaces (and
with them the veth pair) are always deleted afterwards."""
import os
import shutil
import subprocess

import pytest

from launch_testlib import Launcher, base_env, read, read_json, script

pytestmark = pytest.mark.timeout(180)

HOSTS = ("10.123.0.1", "10.123.0.2")


def _ip(*args):
    return subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=30)


@pytest.fixture
def two_hosts():
    if shutil.which("ip") is None:
        pytest.skip("the `ip` command (Debian package iproute2) is not installed")
    tag = "%05d" % (os.getpid() % 100000)
    names = ["fluidist_a" + tag, "fluidist_b" + tag]
    veths = ["flva" + tag, "flvb" + tag]
    created = []
    try:
        for n in names:
            r = _ip("netns", "add", n)
            if r.returncode != 0:
                pytest.skip("network namespaces are not allowed on this machine: `ip netns add` said: %s"
                            % r.stderr.strip())
            created.append(n)
        r = _ip("link", "add", veths[0], "type", "veth", "peer", "name", veths[1])
        if r.returncode != 0:
            pytest.skip("cannot create a veth pair here: %s" % r.stderr.strip())
        for n, v, host in zip(names, veths, HOSTS):
            for cmd in (["link", "set", v, "netns", n], ["-n", n, "addr", "add", host + "/24", "dev", v],
                        ["-n", n, "link", "set", v, "up"], ["-n", n, "link", "set", "lo", "up"]):
                r = _ip(*cmd)
                assert r.returncode == 0, "ip %s: %s" % (" ".join(cmd), r.stderr)
        yield names
    finally:
        for n in created:
            _ip("netns", "del", n)  # deletes the veth end inside it, and so the pair
        for v in veths:
            if _ip("link", "show", v).returncode == 0:  # an end that never moved into a namespace
                _ip("link", "del", v)


def _run_both(tmp_path, names, args_for, out):
    nodes = []
    try:
        for k, n in enumerate(names):
            nodes.append(Launcher(args_for(k), cwd=tmp_path, env=base_env(out_dir=out), name="host%d" % k,
                                  prefix=["ip", "netns", "exec", n]))
        codes = [node.wait(120) for node in nodes]
        return codes, nodes
    finally:
        for node in nodes:
            node.close()


def test_collective_job_across_two_hosts(tmp_path, two_hosts):
    out = tmp_path / "out"
    out.mkdir()
    # no --node_ip: each launcher finds which listed IP is its own
    codes, nodes = _run_both(tmp_path, two_hosts, lambda k: [
        "--ips", ",".join(HOSTS), "--nproc_per_node", "2", "--log_dir", "log%d" % k, "--rendezvous_timeout", "60",
        script("env_check.py"), "--epochs", "1"], out)
    assert codes == [0, 0], [n.stderr() for n in nodes]
    eps = ["%s:%d" % (h, p) for h in HOSTS for p in (6070, 6071)]  # the default started_port on many nodes
    for rank in range(4):
        g = read_json(out / ("trainer_%d.json" % rank))
        assert g["PADDLE_TRAINER_ID"] == str(rank) and g["PADDLE_TRAINERS_NUM"] == "4"
        assert g["PADDLE_TRAINER_ENDPOINTS"] == ",".join(eps) and g["PADDLE_CURRENT_ENDPOINT"] == eps[rank]
        assert g["POD_IP"] == HOSTS[rank // 2]
        # it reached every other rank, across the veth pair too, and the right rank answered
        assert g["answers"] == {ep: j for j, ep in enumerate(eps) if j != rank}
        assert g["argv"] == ["--epochs", "1"]
    for k in range(2):
        assert read(tmp_path / ("log%d" % k) / "endpoints.log") == \
            "PADDLE_TRAINER_ENDPOINTS:\n" + "".join(e + "\n" for e in eps)
        assert "rank %d of 4 says hello" % (2 * k) in nodes[k].stdout()


def test_ps_job_across_two_hosts(tmp_path, two_hosts):
    out = tmp_path / "out"
    out.mkdir()
    servers = ",".join("%s:6170" % h for h in HOSTS)
    workers = ",".join(HOSTS)  # ip only: ports 6170 + servers + i
    codes, nodes = _run_both(tmp_path, two_hosts, lambda k: [
        "--servers", servers, "--workers", workers, "--log_dir", "log%d" % k, script("ps_check.py")], out)
    assert codes == [0, 0], [n.stderr() for n in nodes]
    for i, host in enumerate(HOSTS):
        s = read_json(out / ("server_%d.json" % i))
        assert s["POD_IP"] == host and s["PADDLE_PORT"] == "6170" and s["PADDLE_PSERVER_ID"] == str(i)
        assert s["seen"] == [0, 1]  # both workers, one of them on the other host
        w = read_json(out / ("worker_%d.json" % i))
        assert w["POD_IP"] == host and w["PADDLE_TRAINER_ID"] == str(i)
        assert w["PADDLE_CURRENT_ENDPOINT"] == "%s:%d" % (host, 6172 + i)
        assert w["PADDLE_TRAINER_ENDPOINTS"] == "10.123.0.1:6172,10.123.0.2:6173"
        assert w["answers"] == {"10.123.0.1:6170": 0, "10.123.0.2:6170": 1}
        assert sorted(os.listdir(tmp_path / ("log%d" % i))) == ["endpoints.log", "serverlog.0", "workerlog.0"]


def test_master_rendezvous_across_two_hosts(tmp_path, two_hosts):
    out = tmp_path / "out"
    out.mkdir()
    # the same line on both hosts: no node list, no node rank, no node IP; host a owns the master address
    codes, nodes = _run_both(tmp_path, two_hosts, lambda k: [
        "--nnodes", "2", "--master", "%s:29500" % HOSTS[0], "--nproc_per_node", "2", "--log_dir", "log%d" % k,
        "--rendezvous_timeout", "60", script("env_check.py")], out)
    assert codes == [0, 0], [n.stderr() for n in nodes]
    eps = read_json(out / "trainer_0.json")["PADDLE_TRAINER_ENDPOINTS"].split(",")
    for rank in range(4):
        g = read_json(out / ("trainer_%d.json" % rank))
        assert g["POD_IP"] == HOSTS[rank // 2] and eps[rank].startswith(HOSTS[rank // 2] + ":")
        assert (g["RANK"], g["GROUP_RANK"], g["WORLD_SIZE"]) == (str(rank), str(rank // 2), "4")
        assert (g["MASTER_ADDR"], g["MASTER_PORT"]) == (HOSTS[0], "29500")
        assert g["answers"] == {ep: j for j, ep in enumerate(eps) if j != rank}  # across the veth pair too
