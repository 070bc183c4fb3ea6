"""etcd for real clusters: TLS (a CA, a client certificate) and user/password against real etcd
servers started here, no proxy ever, job ids that cannot nest into each other's keys, and plans in
etcd that are not what a launcher writes (ignored and replaced, never a crash). Skipped, with the
reason, where the etcd binary (or openssl, for the certificates) is not installed."""
import json
import os
import shutil
import subprocess
import time
import uuid

import pytest

from fluidist.launch.elastic import check_plan, job_prefix
from fluidist.launch.etcd_client import EtcdClient, EtcdError
from launch_testlib import Launcher, base_env, free_port, script, wait_until

pytestmark = pytest.mark.timeout(180)


def _need(binary, package):
    if shutil.which(binary) is None:
        pytest.skip("the %s binary is not installed (Debian package %s)" % (binary, package))


def start_etcd(base, scheme="http", flags=(), client_kw=None):
    """An etcd on free loopback ports; returns (process, client endpoint)."""
    _need("etcd", "etcd-server")
    for attempt in range(3):
        client_port, peer_port = free_port(), free_port()
        if client_port == peer_port:
            continue
        c_url, p_url = "%s://127.0.0.1:%d" % (scheme, client_port), "http://127.0.0.1:%d" % peer_port
        log = open(os.path.join(base, "etcd%d.log" % attempt), "w")
        proc = subprocess.Popen(["etcd", "--name", "default", "--data-dir", os.path.join(base, "data%d" % attempt),
                                 "--listen-client-urls", c_url, "--advertise-client-urls", c_url,
                                 "--listen-peer-urls", p_url, "--initial-advertise-peer-urls", p_url,
                                 "--initial-cluster", "default=" + p_url] + list(flags),
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            EtcdClient(c_url, **(client_kw or {})).wait_ready(timeout=30)
            return proc, c_url
        except EtcdError:
            proc.kill()
            proc.wait(10)
    raise RuntimeError("etcd did not start; see %s" % base)


def _stop(proc):
    proc.kill()
    proc.wait(10)


def _certificates(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl."""
    _need("openssl", "openssl")

    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=fluidist-test-ca")
    with open(os.path.join(d, "san.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
    for name in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/CN=" + name)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", name + ".pem", "-days", "2", "-extfile", "san.cnf")
    return {k: os.path.join(d, k) for k in ("ca.pem", "server.pem", "server.key", "client.pem", "client.key")}


def test_tls_with_a_client_certificate(tmp_path):
    certs = _certificates(str(tmp_path))
    tls = dict(ca_file=certs["ca.pem"], cert_file=certs["client.pem"], key_file=certs["client.key"])
    proc, url = start_etcd(str(tmp_path), "https", ["--cert-file", certs["server.pem"], "--key-file",
                                                    certs["server.key"], "--trusted-ca-file", certs["ca.pem"],
                                                    "--client-cert-auth"], client_kw=tls)
    try:
        c = EtcdClient(url, **tls)
        c.put("/k", "v")
        assert c.get_value("/k") == "v"
        assert [kv.value for _, kv in c.watch("/k", start_revision=1, timeout=2)][:1] == ["v"]
        with pytest.raises(EtcdError, match="failed"):                     # no client certificate
            EtcdClient(url, ca_file=certs["ca.pem"], timeout=3).get("/k")
        with pytest.raises(EtcdError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            EtcdClient(url, timeout=3, cert_file=certs["client.pem"],
                       key_file=certs["client.key"]).get("/k")              # the system CAs do not know ours
        with pytest.raises(EtcdError, match="TLS files given for an http:// address"):
            EtcdClient(url.replace("https", "http"), **tls)
    finally:
        _stop(proc)


def test_user_and_password(tmp_path):
    proc, url = start_etcd(str(tmp_path))
    try:
        admin = EtcdClient(url)
        admin._call("/v3/auth/user/add", {"name": "root", "password": "rootpw"})
        admin._call("/v3/auth/role/add", {"name": "root"})
        admin._call("/v3/auth/user/grant", {"user": "root", "role": "root"})
        admin._call("/v3/auth/enable", {})
        c = EtcdClient(url, user="root", password="rootpw")
        c.put("/fluidist/x", "1")
        assert c.get_value("/fluidist/x") == "1"
        c._token = "expired-or-forged"                    # a stale token: logged in again, once
        assert c.get_value("/fluidist/x") == "1"
        with pytest.raises(EtcdError, match="user name is empty|invalid auth token|permission denied"):
            EtcdClient(url).get("/fluidist/x")
        with pytest.raises(EtcdError, match="authentication failed|invalid"):
            EtcdClient(url, user="root", password="wrong").get("/fluidist/x")
    finally:
        _stop(proc)


def test_the_etcd_client_ignores_http_proxy(tmp_path, monkeypatch):
    proc, url = start_etcd(str(tmp_path))
    try:
        for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "all_proxy"):
            monkeypatch.setenv(k, "http://127.0.0.1:%d" % free_port())      # nobody there
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        c = EtcdClient(url, timeout=3)
        c.put("/p", "direct")
        assert c.get_value("/p") == "direct"
    finally:
        _stop(proc)


def test_job_ids_never_nest_and_plans_are_checked():
    assert job_prefix("jn") == "/fluidist/elastic/jn/"
    assert job_prefix("jn/nodes") == "/fluidist/elastic/jn%2Fnodes/"
    assert not job_prefix("jn/nodes").startswith(job_prefix("jn"))
    good = {"gen": 1, "members": ["a"], "nodes": {"a": {"host": "10.0.0.1", "nproc": 1,
                                                        "endpoints": ["10.0.0.1:6070"], "gpu": False}}}
    assert check_plan(good) is None
    for bad, why in [([], "not an object"), ({"gen": 0, "members": ["a"], "nodes": {}}, "not a generation"),
                     (dict(good, members=[]), "not distinct node ids"), (dict(good, members=["a", "b"]), "no node entry"),
                     (dict(good, nodes={"a": {"host": "h", "nproc": 1, "endpoints": ["h:x"]}}), "are not 1 ip:port")]:
        assert why in check_plan(bad), bad


def test_a_plan_that_is_not_a_plan_is_replaced_not_a_crash(tmp_path):
    proc, url = start_etcd(str(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    job = "bad-plan-" + uuid.uuid4().hex[:6]
    try:
        EtcdClient(url).put(job_prefix(job) + "plan", "[]")
        env = base_env(out_dir=out, extra={"PADDLE_ELASTIC_TTL": "2", "FLUIDIST_ELASTIC_POLL": "0.2",
                                           "FLUIDIST_ELASTIC_SETTLE": "1"})
        node = Launcher(["--elastic_server", url, "--job_id", job, "--np", "1", "--host", "127.0.0.1",
                         "--elastic_timeout", "60", "--log_dir", "log", script("elastic_check.py")], cwd=tmp_path,
                        env=env)
        try:
            wait_until(lambda: (out / "g1_r0.json").exists(), 60, "generation 1 to start")
            (out / "stop").write_text("")
            assert node.wait(60) == 0, node.stderr()
            assert "ignoring the plan in etcd (%splan): not an object" % job_prefix(job) in node.stderr()
        finally:
            node.close()
        plan = json.loads(EtcdClient(url).get_value(job_prefix(job) + "plan"))
        assert check_plan(plan) is None and plan["gen"] == 1
    finally:
        _stop(proc)
