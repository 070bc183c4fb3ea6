"""Elastic jobs and the etcd client against a real etcd server (Debian's etcd-server), started here
on free loopback ports. Skipped, with the reason, only where the etcd binary is not installed."""
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid

import pytest

from fluidist.launch.etcd_client import EtcdClient, EtcdError, Lease
from launch_testlib import Launcher, base_env, free_port, pid_alive, read, read_json, run_launcher, script, wait_until
from launch_testlib import script as _script
from load_aware import scaled  # (bounds that follow the machine's load)

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def etcd(tmp_path_factory):
    exe = shutil.which("etcd")
    if exe is None:
        pytest.skip("the etcd binary is not installed (Debian package etcd-server; .ci/run installs it)")
    base = tmp_path_factory.mktemp("etcd")
    for attempt in range(3):
        client_port, peer_port = free_port(), free_port()
        if client_port == peer_port:
            continue
        c_url, p_url = "http://127.0.0.1:%d" % client_port, "http://127.0.0.1:%d" % peer_port
        log = open(str(base / ("etcd%d.log" % attempt)), "w")
        proc = subprocess.Popen([exe, "--name", "default", "--data-dir", str(base / ("data%d" % attempt)),
                                 "--listen-client-urls", c_url, "--advertise-client-urls", c_url,
                                 "--listen-peer-urls", p_url, "--initial-advertise-peer-urls", p_url,
                                 "--initial-cluster", "default=" + p_url], stdout=log, stderr=subprocess.STDOUT)
        client = EtcdClient("127.0.0.1:%d" % client_port)
        try:
            client.wait_ready(timeout=30)
        except EtcdError:
            proc.kill()
            proc.wait(10)
            log.close()
            continue  # a port was taken in between: try other ones
        try:
            yield "127.0.0.1:%d" % client_port
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            log.close()
        return
    raise RuntimeError("etcd did not start; see %s" % base)


# -- the client -------------------------------------------------------------------------------
def test_etcd_client_kv_txn_and_prefix(etcd):
    c = EtcdClient(etcd)
    p = "/test-%s/" % uuid.uuid4().hex
    rev = c.put(p + "a", "1")
    c.put(p + "b", "zwei ü")
    c.put(p[:-1] + "x", "outside the prefix")
    assert c.get_value(p + "b") == "zwei ü" and c.get(p + "none") is None
    kvs = c.get_prefix(p)
    assert [(kv.key, kv.value) for kv in kvs] == [(p + "a", "1"), (p + "b", "zwei ü")]
    assert kvs[0].create_revision == rev == kvs[0].mod_revision
    assert c.put_if_absent(p + "a", "again") is False and c.get_value(p + "a") == "1"
    assert c.put_if_absent(p + "c", "3") is True
    kv = c.get(p + "a")
    assert c.compare_and_put(p + "a", "swapped", kv.mod_revision) is True
    assert c.compare_and_put(p + "a", "stale", kv.mod_revision) is False
    assert c.get_value(p + "a") == "swapped"
    assert c.compare_and_put(p + "new", "n", 0) is True and c.compare_and_put(p + "new", "m", 0) is False
    assert c.delete(p + "c") == 1
    assert c.delete_prefix(p) == 3 and c.get_prefix(p) == []
    assert c.delete(p[:-1] + "x") == 1


def test_etcd_client_leases(etcd):
    c = EtcdClient(etcd)
    p = "/test-%s/" % uuid.uuid4().hex
    kept = Lease(c, 1)  # refreshed every 1/3 s
    raw = c.lease_grant(1)  # never refreshed
    c.put(p + "kept", "x", lease=kept.id)
    c.put(p + "raw", "y", lease=raw)
    assert c.get(p + "kept").lease == kept.id
    wait_until(lambda: c.get(p + "raw") is None, 10, "the key of the lease nobody refreshes to expire")
    assert c.get_value(p + "kept") == "x"     # past the same TTL: the refreshed lease keeps its key
    assert c.lease_time_to_live(raw) == -1
    assert c.lease_keepalive(raw) <= 0
    kept.revoke()
    assert c.get(p + "kept") is None
    c.lease_revoke(kept.id)  # already gone: not an error


def test_etcd_client_watch_stream_and_polling(etcd):
    c = EtcdClient(etcd)
    p = "/test-%s/" % uuid.uuid4().hex
    rev = c.put(p + "1", "a")

    def later():
        time.sleep(0.5)
        c.put(p + "2", "b")
        c.delete(p + "1")
    t = threading.Thread(target=later)
    t.start()
    # from a past revision: the stream replays history, then follows; it ends at its deadline
    events = [(kind, kv.key, kv.value) for kind, kv in c.watch(p, prefix=True, start_revision=rev, timeout=2)]
    t.join()
    assert events == [("PUT", p + "1", "a"), ("PUT", p + "2", "b"), ("DELETE", p + "1", "")]
    t0 = time.monotonic()
    assert list(c.watch(p + "quiet", timeout=0.5)) == [] and time.monotonic() - t0 < 3
    threading.Timer(0.3, lambda: c.put(p + "3", "c")).start()
    kvs = c.wait_for(p, lambda kvs: len(kvs) == 2, prefix=True, timeout=10)
    assert [kv.key for kv in kvs] == [p + "2", p + "3"]
    with pytest.raises(EtcdError, match="waited 0 s on"):
        c.wait_for(p, lambda kvs: False, prefix=True, timeout=0.2)


def test_etcd_client_errors_name_the_server():
    port = free_port()
    c = EtcdClient("127.0.0.1:%d" % port, timeout=2)
    with pytest.raises(EtcdError, match=r"etcd at http://127.0.0.1:%d: /v3/kv/put failed" % port):
        c.put("/k", "v")
    with pytest.raises(EtcdError, match="did not answer within"):
        c.wait_ready(timeout=0.3)


# -- elastic jobs -----------------------------------------------------------------------------
def _elastic_env(out, ttl=2):
    return base_env(out_dir=out, extra={"PADDLE_ELASTIC_TTL": str(ttl), "FLUIDIST_ELASTIC_POLL": "0.2",
                                        "FLUIDIST_ELASTIC_SETTLE": "1"})


def _node(tmp_path, out, etcd, job, name, np="2", extra=(), ttl=2, script_args=(), script="elastic_check.py"):
    args = ["--elastic_server", etcd, "--job_id", job, "--np", np, "--host", "127.0.0.1", "--elastic_timeout", "60",
            "--log_dir", "log_" + name, "--grace_period", "1"] + list(extra) + [_script(script)] + \
        [str(x) for x in script_args]
    return Launcher(args, cwd=tmp_path, env=_elastic_env(out, ttl), name=name)


def _gen_files(out, gen, n):
    return all(os.path.exists(out / ("g%d_r%d.json" % (gen, r))) for r in range(n))


def _rank_in(tmp_path, name, gen):
    m = re.findall(r"generation %d rank (\d+)" % gen, read(tmp_path / ("log_" + name) / "workerlog.0"))
    return int(m[-1])


def _latest_full_gen(out, n, after):
    gens = sorted({int(m.group(1)) for f in os.listdir(out) for m in [re.match(r"g(\d+)_r0\.json$", f)] if m})
    full = [g for g in gens if g > after and _gen_files(out, g, n)]
    return full[-1] if full else None


def test_elastic_node_killed_and_replaced(tmp_path, etcd):
    out = tmp_path / "out"
    out.mkdir()
    job = "replace-" + uuid.uuid4().hex[:8]
    nodes = {}
    try:
        nodes["A"] = _node(tmp_path, out, etcd, job, "A")
        nodes["B"] = _node(tmp_path, out, etcd, job, "B")
        wait_until(lambda: _gen_files(out, 1, 2), 60, "generation 1 with 2 trainers")
        g1 = [read_json(out / ("g1_r%d.json" % r)) for r in range(2)]
        eps1 = g1[0]["PADDLE_TRAINER_ENDPOINTS"].split(",")
        assert len(set(eps1)) == 2 and g1[1]["PADDLE_TRAINER_ENDPOINTS"] == ",".join(eps1)
        assert all(g["PADDLE_TRAINERS_NUM"] == "2" and g["FLUIDIST_ELASTIC_GENERATION"] == "1" for g in g1)
        assert [g["PADDLE_CURRENT_ENDPOINT"] for g in g1] == eps1
        a_rank, b_rank = _rank_in(tmp_path, "A", 1), _rank_in(tmp_path, "B", 1)
        assert {a_rank, b_rank} == {0, 1}

        nodes["B"].proc.kill()  # no goodbye: its registration goes when its lease expires
        nodes["B"].wait(10)
        wait_until(lambda: not pid_alive(g1[b_rank]["pid"]), 10, "B's trainer to die with its launcher")
        nodes["C"] = _node(tmp_path, out, etcd, job, "C")
        gen = wait_until(lambda: _latest_full_gen(out, 2, 1), 60, "a new generation with A and C")
        g = [read_json(out / ("g%d_r%d.json" % (gen, r))) for r in range(2)]
        assert _rank_in(tmp_path, "A", gen) == a_rank and _rank_in(tmp_path, "C", gen) == b_rank  # A kept its rank
        assert g[a_rank]["PADDLE_CURRENT_ENDPOINT"] == eps1[a_rank]
        assert g[b_rank]["PADDLE_CURRENT_ENDPOINT"] not in eps1  # C's own endpoint
        assert all(x["PADDLE_TRAINERS_NUM"] == "2" for x in g)
        assert not pid_alive(g1[a_rank]["pid"])  # A's generation-1 trainer was stopped and restarted
        assert "restarting (restart 1 of 3)" in nodes["A"].stderr()

        (out / "stop").write_text("")
        assert nodes["A"].wait(60) == 0 and nodes["C"].wait(60) == 0
        c = EtcdClient(etcd)
        assert c.get_value("/fluidist/elastic/%s/status" % job) == "completed"
        assert c.get_prefix("/fluidist/elastic/%s/nodes/" % job) == []  # both left on the way out
    finally:
        for n in nodes.values():
            n.close()


def test_elastic_gives_up_after_max_restarts(tmp_path, etcd):
    out = tmp_path / "out"
    out.mkdir()
    job = "giveup-" + uuid.uuid4().hex[:8]
    nodes = {}
    try:
        nodes["A"] = _node(tmp_path, out, etcd, job, "A", extra=["--max_restarts", "0"])
        nodes["B"] = _node(tmp_path, out, etcd, job, "B", extra=["--max_restarts", "0"])
        wait_until(lambda: _gen_files(out, 1, 2), 60, "generation 1 with 2 trainers")
        a_pid = read_json(out / ("g1_r%d.json" % _rank_in(tmp_path, "A", 1)))["pid"]
        nodes["B"].proc.kill()
        assert nodes["A"].wait(60) == 1
        assert "--max_restarts 0 reached" in nodes["A"].stderr() and "node(s) left" in nodes["A"].stderr()
        assert not pid_alive(a_pid)
    finally:
        for n in nodes.values():
            n.close()


def test_elastic_local_failure_restarts_every_node(tmp_path, etcd):
    out = tmp_path / "out"
    out.mkdir()
    job = "fail-" + uuid.uuid4().hex[:8]
    nodes = {}
    try:
        for name in ("A", "B"):
            nodes[name] = _node(tmp_path, out, etcd, job, name, script_args=["--fail_gen", "1", "--fail_rank", "1"])
        wait_until(lambda: _gen_files(out, 2, 2), 60, "generation 2 after rank 1 failed in generation 1")
        failing = "A" if _rank_in(tmp_path, "A", 1) == 1 else "B"
        err = nodes[failing].stderr()
        assert "ABORT: trainer rank 1" in err and "exit code 5" in err
        (out / "stop").write_text("")
        assert nodes["A"].wait(60) == 0 and nodes["B"].wait(60) == 0
    finally:
        for n in nodes.values():
            n.close()


def test_elastic_scale_out_then_a_node_leaves_on_sigterm(tmp_path, etcd):
    out = tmp_path / "out"
    out.mkdir()
    job = "scale-" + uuid.uuid4().hex[:8]
    nodes = {}
    try:
        # a long TTL: the quick restart below can only come from B revoking its lease as it leaves
        nodes["A"] = _node(tmp_path, out, etcd, job, "A", np="1:2", ttl=60)
        wait_until(lambda: _gen_files(out, 1, 1), 60, "generation 1 with A alone")
        assert read_json(out / "g1_r0.json")["PADDLE_TRAINERS_NUM"] == "1"
        nodes["B"] = _node(tmp_path, out, etcd, job, "B", np="1:2", ttl=60)
        gen = wait_until(lambda: _latest_full_gen(out, 2, 1), 60, "a generation with A and B")
        g = [read_json(out / ("g%d_r%d.json" % (gen, r))) for r in range(2)]
        assert _rank_in(tmp_path, "A", gen) == 0 and all(x["PADDLE_TRAINERS_NUM"] == "2" for x in g)
        b_pid = g[1]["pid"]
        t0 = time.monotonic()
        nodes["B"].proc.send_signal(signal.SIGTERM)
        assert nodes["B"].wait(30) == 128 + signal.SIGTERM
        assert not pid_alive(b_pid)
        wait_until(lambda: _latest_full_gen(out, 1, gen) and
                   read_json(out / ("g%d_r0.json" % _latest_full_gen(out, 1, gen)))["PADDLE_TRAINERS_NUM"] == "1",
                   min(scaled(20), 50), "A alone again")
        assert time.monotonic() - t0 < min(scaled(20), 50)  # less than the 60 s TTL, however busy the machine
        (out / "stop").write_text("")
        assert nodes["A"].wait(60) == 0
    finally:
        for n in nodes.values():
            n.close()


def test_elastic_without_etcd_is_a_clear_error(tmp_path):
    port = free_port()
    r = run_launcher(["--elastic_server", "127.0.0.1:%d" % port, "--job_id", "j", "--np", "1", "--elastic_timeout",
                      "1", script("elastic_check.py")], cwd=tmp_path, env=base_env(out_dir=tmp_path), timeout=60)
    assert r.returncode == 1
    assert "elastic job j: cannot register in etcd: etcd at http://127.0.0.1:%d did not answer within 1 s" % port \
        in r.stderr


def test_deep_values_in_etcd_are_ignored_not_fatal(tmp_path, etcd):
    """A node entry and a plan of 200,000 '[' (what anyone who can write the job's etcd keys may put there):
    the launcher waiting on the job warns that it ignores them and runs the job."""
    out = tmp_path / "out"
    out.mkdir()
    job = "deep-" + uuid.uuid4().hex[:8]
    c = EtcdClient(etcd)
    prefix = "/fluidist/elastic/%s/" % job
    c.put(prefix + "nodes/evil", "[" * 200000)
    c.put(prefix + "plan", "[" * 200000)
    node = _node(tmp_path, out, etcd, job, "A", np="1", script="env_check.py")
    try:
        assert node.wait(60) == 0, node.stderr()
        assert "ignoring the node entry %snodes/evil" % prefix in node.stderr(), node.stderr()
        assert "nests arrays/objects" in node.stderr(), node.stderr()
    finally:
        node.close()
