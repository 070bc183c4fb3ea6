"""The ZeroMQ transport over real sockets on 127.0.0.1: replies, errors, deadlines, the client pool."""
import os
import socket
import threading
import time

import numpy as np
import pytest
import zmq

from child_procs import free_port  # a port below the ephemeral range: a client retrying it cannot connect to itself
from load_aware import scaled  # noqa: E402  (bounds that follow the machine's load)
from fluidist.distributed import rpc, security, wire

pytestmark = pytest.mark.timeout(60)




class EchoServer:
    """A Server in a thread: 'get' replies with the value last sent under that name; 'send' stores."""

    def __init__(self, endpoint="127.0.0.1:0", deadline_ms=None, silent=False):
        self.server = rpc.Server(endpoint, deadline_ms)
        self.endpoint = self.server.endpoint
        self.store = {}
        self.silent = silent
        self.seen = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop.is_set():
            req = self.server.recv(0.05)
            if req is None:
                continue
            m = req.msg
            self.seen.append((m.kind, m.name, m.trainer, m.step))
            if self.silent:
                continue
            if m.kind == "send":
                self.store[m.name] = np.array(m.value)
                self.server.reply(req)
            elif m.kind == "get":
                if m.name not in self.store:
                    self.server.error(req, "no variable %r" % m.name)
                else:
                    self.server.reply(req, value=self.store[m.name])
            else:
                self.server.reply(req)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.server.close(0)


@pytest.fixture
def echo():
    s = EchoServer()
    yield s
    s.close()


def test_send_then_get_round_trip(echo):
    c = rpc.Client(echo.endpoint)
    try:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        assert c.call("send", "w", x, trainer=1, step=2).kind == "ok"
        got = c.call("get", "w", trainer=1, step=2).value
        np.testing.assert_array_equal(got, x)
        assert ("send", "w", 1, 2) in echo.seen
    finally:
        c.close()


def test_error_reply_raises_rpc_error_naming_endpoint_and_request(echo):
    c = rpc.Client(echo.endpoint)
    try:
        with pytest.raises(rpc.RPCError) as e:
            c.call("get", "missing", trainer=3, step=4, what="recv missing")
        msg = str(e.value)
        assert echo.endpoint in msg and "'recv missing' (trainer 3, step 4)" in msg and "no variable" in msg
    finally:
        c.close()


def test_garbage_gets_an_error_reply_and_the_server_keeps_serving(echo):
    ctx = zmq.Context()
    raw = ctx.socket(zmq.DEALER)
    raw.linger = 0
    security.secure_client(raw)
    raw.connect("tcp://" + echo.endpoint)
    try:
        bad = [
            [b"not json at all"],
            [b'{"v": 1, "kind": "get", "id": 17, "name": "w", "trainer": 0, "step": 0, "value": '
             b'{"t": "dense", "dtype": "float32", "shape": [1000]}}', b"short"],
            [b'{"v": 1, "kind": "rm -rf", "id": 18, "trainer": 0, "step": 0}'],
            [b'{"v": 1, "kind": "ok", "id": 19, "trainer": 0, "step": 0}'],
        ]
        for frames in bad:
            raw.send_multipart(frames)
            assert raw.poll(5000), "the server did not answer a malformed message"
            reply = wire.decode(raw.recv_multipart())
            assert reply.kind == "error" and "malformed request rejected" in reply.get("msg")
        # the ids it could read are echoed back
        raw.send_multipart(bad[2])
        assert raw.poll(5000)
        assert wire.decode(raw.recv_multipart()).rid == 18
        assert echo.server.malformed == 5
        # and it still serves well-formed requests
        c = rpc.Client(echo.endpoint)
        try:
            c.call("send", "v", np.ones(3))
            np.testing.assert_array_equal(c.call("get", "v").value, np.ones(3))
        finally:
            c.close()
    finally:
        raw.close(0)
        ctx.term()


def test_nothing_listening_ends_in_a_deadline_error_naming_the_endpoint(monkeypatch):
    ep = "127.0.0.1:%d" % free_port()
    monkeypatch.setenv("FLAGS_rpc_deadline", "300")    # read at call time
    c = rpc.Client(ep)
    try:
        t0 = time.monotonic()
        with pytest.raises(rpc.RPCTimeout) as e:
            c.call("get", "fc_w.block1", trainer=0, step=3, what="recv fc_w.block1")
        took = time.monotonic() - t0
        assert 0.25 < took < scaled(3.0)
        msg = str(e.value)
        assert ("pserver %s is unreachable or not answering" % ep) in msg
        assert "'recv fc_w.block1' (trainer 0, step 3)" in msg and "0.3 s" in msg
    finally:
        c.close()


def test_a_pserver_never_reached_fails_within_the_connect_timeout_naming_it(monkeypatch):
    holder = socket.socket()            # bound, never listening: refused, and no other test can take the port
    holder.bind(("127.0.0.1", 0))
    ep = "127.0.0.1:%d" % holder.getsockname()[1]
    monkeypatch.delenv("FLAGS_rpc_deadline", raising=False)
    monkeypatch.setenv("FLUIDIST_CONNECT_TIMEOUT", "1.5")
    c = rpc.Client(ep)
    try:
        t0 = time.monotonic()
        with pytest.raises(rpc.PserverUnreachable) as e:
            c.call("get", "fc_w", trainer=1, step=0, what="recv fc_w")
        assert 1.4 < time.monotonic() - t0 < scaled(5.0)
        msg = str(e.value)
        assert msg.startswith("pserver %s is unreachable: no connection within" % ep)
        assert "'recv fc_w' (trainer 1, step 0)" in msg and "connection refused: nothing listens on %s" % ep in msg
        assert "FLUIDIST_CONNECT_TIMEOUT" in msg
        assert isinstance(e.value, rpc.RPCTimeout)   # what code catching Paddle's deadline error expects
    finally:
        holder.close()
        c.close()
    monkeypatch.setenv("FLUIDIST_CONNECT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="FLUIDIST_CONNECT_TIMEOUT must be a number of seconds, got 'soon'"):
        rpc.Client(ep)


def open_sockets_of(ctx):
    import gc
    return [s for s in gc.get_objects() if isinstance(s, zmq.Socket) and s.context is ctx and not s.closed]


@pytest.mark.parametrize("setting", [("FLUIDIST_CONNECT_TIMEOUT", "soon"), ("FLUIDIST_PEER_TIMEOUT", "fast")])
def test_a_client_whose_settings_are_wrong_leaves_no_socket_behind(monkeypatch, setting):
    """The error names the setting, and nothing of the client is left: a half-made client, kept by the
    error's traceback and collected later, once stalled every connection of its process (its monitor's
    PAIR closed before the socket)."""
    ep = "127.0.0.1:%d" % free_port()
    before = len(open_sockets_of(rpc.context()))
    monkeypatch.setenv(*setting)
    with pytest.raises(ValueError, match=setting[0]) as e:
        rpc.Client(ep)
    assert len(open_sockets_of(rpc.context())) == before, e.value


def test_a_late_pserver_is_waited_for_when_asked_with_a_warning_naming_it(monkeypatch, caplog):
    port = free_port()
    ep = "127.0.0.1:%d" % port
    monkeypatch.delenv("FLAGS_rpc_deadline", raising=False)
    monkeypatch.setenv("FLUIDIST_CONNECT_TIMEOUT", "30")
    late = {}
    starter = threading.Timer(4.0, lambda: late.setdefault("server", EchoServer(ep)))
    c = rpc.Client(ep)
    try:
        starter.start()
        t0 = time.monotonic()
        with caplog.at_level("WARNING", logger="fluidist"):
            c.call("send", "w", np.arange(3.0))
        assert 3.9 < time.monotonic() - t0 < scaled(20)
        np.testing.assert_array_equal(c.call("get", "w").value, np.arange(3.0))
    finally:
        starter.join(10)
        c.close()
        if "server" in late:
            late["server"].close()
    warned = [r.getMessage() for r in caplog.records if r.name == "fluidist.distributed.reach"]
    assert len(warned) == 1, warned   # once after 3 s, and not again before the pserver came up
    assert warned[0].startswith("cannot reach pserver %s after 3 s: connection refused" % ep)
    assert "trying until 30 s (FLUIDIST_CONNECT_TIMEOUT)" in warned[0]


def test_a_server_that_stops_answering_times_out_with_did_not_answer():
    s = EchoServer()
    c = rpc.Client(s.endpoint, deadline_ms=400)
    try:
        c.call("send", "w", np.zeros(2))
        s.silent = True
        with pytest.raises(rpc.RPCTimeout, match=r"pserver %s did not answer 'recv w' \(trainer 1, step 5\) "
                                                 r"within 0.4 s" % s.endpoint):
            c.call("get", "w", trainer=1, step=5, what="recv w")
        # a late reply to the timed-out request is dropped, not taken for the next one
        s.silent = False
        c.call("send", "w", np.full(2, 3.0))
        np.testing.assert_array_equal(c.call("get", "w").value, np.full(2, 3.0))
    finally:
        c.close()
        s.close()


class DropFirstGets(EchoServer):
    """An EchoServer that leaves its first ``n`` 'get' requests, and every 'send' of 'never', unanswered."""

    def __init__(self, n):
        self.drop = n
        super().__init__()

    def _loop(self):
        while not self.stop.is_set():
            req = self.server.recv(0.05)
            if req is None:
                continue
            m = req.msg
            self.seen.append((m.kind, m.name, m.trainer, m.step))
            if m.kind == "get" and self.drop > 0:
                self.drop -= 1
                continue
            if m.kind == "send" and m.name == "never":
                continue
            if m.kind == "send":
                self.store[m.name] = np.array(m.value)
                self.server.reply(req)
            else:
                self.server.reply(req, value=self.store.get(m.name))


def test_rpc_retry_times_sends_a_timed_out_recv_again_but_never_a_send(monkeypatch, caplog):
    monkeypatch.setenv("FLAGS_rpc_deadline", "300")
    s = DropFirstGets(2)
    try:
        rpc.call_all([(s.endpoint, dict(kind="send", name="w", value=np.ones(2)))])
        monkeypatch.setenv("FLAGS_rpc_retry_times", "2")
        with caplog.at_level("WARNING", logger="fluidist"):
            got, = rpc.call_all([(s.endpoint, dict(kind="get", name="w", what="recv w"))])
        np.testing.assert_array_equal(got.value, np.ones(2))
        assert [k for k, n, _, _ in s.seen if n == "w"] == ["send", "get", "get", "get"]
        retries = [r.getMessage() for r in caplog.records if "FLAGS_rpc_retry_times" in r.getMessage()]
        assert len(retries) == 2 and retries[0].startswith("pserver %s did not answer 'recv w'" % s.endpoint)
        assert "sending it again (retry 1 of 2, FLAGS_rpc_retry_times)" in retries[0]
        s.drop = 1
        monkeypatch.setenv("FLAGS_rpc_retry_times", "0")
        with pytest.raises(rpc.RPCTimeout, match="did not answer 'recv w'"):
            rpc.call_all([(s.endpoint, dict(kind="get", name="w", what="recv w"))])
        monkeypatch.setenv("FLAGS_rpc_retry_times", "3")
        with pytest.raises(rpc.RPCTimeout, match="did not answer 'send never'"):
            rpc.call_all([(s.endpoint, dict(kind="send", name="never", value=np.ones(2), what="send never"))])
        assert [k for k, n, _, _ in s.seen if n == "never"] == ["send"]   # a pserver counts sends: never twice
        monkeypatch.setenv("FLAGS_rpc_retry_times", "-1")
        with pytest.raises(ValueError, match="FLAGS_rpc_retry_times must be an integer >= 0, got '-1'"):
            rpc.retry_times()
    finally:
        s.close()


def test_deadline_flag_validation(monkeypatch):
    monkeypatch.setenv("FLAGS_rpc_deadline", "abc")
    with pytest.raises(ValueError, match="FLAGS_rpc_deadline"):
        rpc.deadline_seconds()
    monkeypatch.setenv("FLAGS_rpc_deadline", "2500")
    assert rpc.deadline_seconds() == 2.5
    assert rpc.deadline_seconds(100) == 0.1
    monkeypatch.delenv("FLAGS_rpc_deadline")
    assert rpc.deadline_seconds() == 180.0


def test_port_in_use_is_an_error_naming_it():
    s = rpc.Server("127.0.0.1:0")
    try:
        with pytest.raises(rpc.RPCError, match="cannot listen on %s: address already in use" % s.endpoint):
            rpc.Server(s.endpoint)
    finally:
        s.close(0)


@pytest.mark.parametrize("bad", ["127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", ":80", 6174])
def test_malformed_endpoints(bad):
    with pytest.raises(ValueError, match="endpoint"):
        rpc.split_endpoint(bad)


def test_pool_reuses_one_client_per_endpoint_and_thread(echo):
    a = rpc.get_client(echo.endpoint)
    assert rpc.get_client(echo.endpoint) is a
    other = []
    t = threading.Thread(target=lambda: other.append(rpc.get_client(echo.endpoint)))
    t.start()
    t.join()
    assert other[0] is not a


def test_call_all_pipelines_requests_to_several_servers():
    servers = [EchoServer() for _ in range(3)]
    try:
        reqs = [(s.endpoint, dict(kind="send", name="x%d" % i, value=np.full(4, float(i))))
                for i, s in enumerate(servers)]
        assert [r.kind for r in rpc.call_all(reqs)] == ["ok"] * 3
        got = rpc.call_all([(s.endpoint, dict(kind="get", name="x%d" % i)) for i, s in enumerate(servers)])
        for i, r in enumerate(got):
            np.testing.assert_array_equal(r.value, np.full(4, float(i)))
        with pytest.raises(rpc.RPCError, match="no variable 'nope'"):
            rpc.call_all([(servers[0].endpoint, dict(kind="get", name="x0")),
                          (servers[1].endpoint, dict(kind="get", name="nope"))])
    finally:
        for s in servers:
            s.close()


def test_threads_sharing_an_endpoint_get_their_own_replies(echo):
    errors = []

    def worker(k):
        try:
            for i in range(50):
                v = np.full(8, k * 1000 + i, dtype=np.int64)
                rpc.call_all([(echo.endpoint, dict(kind="send", name="t%d" % k, value=v))])
                got = rpc.call_all([(echo.endpoint, dict(kind="get", name="t%d" % k))])[0].value
                assert (got == v).all()
        except Exception as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(30)
    assert not errors, errors


def test_posted_requests_are_acknowledged_by_the_next_call_of_the_thread(echo):
    rpc.post([(echo.endpoint, dict(kind="send", name="p", value=np.arange(3.0)))])
    rpc.post([(echo.endpoint, dict(kind="get", name="absent", what="send absent"))])
    with pytest.raises(rpc.RPCError, match="'send absent' .* no variable 'absent'"):
        rpc.call_all([(echo.endpoint, dict(kind="send_barrier"))])
    np.testing.assert_array_equal(rpc.call_all([(echo.endpoint, dict(kind="get", name="p"))])[0].value,
                                  np.arange(3.0))
    rpc.post([(echo.endpoint, dict(kind="send", name="q", value=np.ones(1)))])
    rpc.flush()
    assert "q" in echo.store
    rpc.flush()   # nothing left: returns at once


def test_a_peer_without_the_job_secret_never_reaches_a_handler(echo, monkeypatch):
    # a plain socket, and one with another secret: no reply, nothing handled
    for secret in (None, "another-secret-of-this-length"):
        ctx = zmq.Context()
        raw = ctx.socket(zmq.DEALER)
        raw.linger = 0
        if secret is not None:
            security.secure_client(raw, secret)
        raw.connect("tcp://" + echo.endpoint)
        try:
            raw.send_multipart(wire.encode("send", 1, "w", np.ones(2)))
            assert not raw.poll(1000)
        finally:
            raw.close(0)
            ctx.term()
    assert echo.seen == [] and echo.server.malformed == 0
    # our own client, run with another secret, says why it cannot talk
    monkeypatch.setenv("FLUIDIST_JOB_SECRET", "another-secret-of-this-length")
    c = rpc.Client(echo.endpoint)
    try:
        t0 = time.monotonic()
        with pytest.raises(rpc.RPCError, match="cannot talk to pserver %s .*the same job secret" % echo.endpoint):
            c.call("get", "w", what="recv w")
        assert time.monotonic() - t0 < scaled(5)
    finally:
        c.close()
    monkeypatch.undo()
    assert echo.seen == []


def test_an_outsider_who_knows_the_server_key_is_refused_by_the_zap_handler(echo, caplog):
    """The server's public key is no secret: a client that uses it with a key pair of its own completes the
    CURVE crypto and reaches the ZAP handler (pyzmq's ThreadAuthenticator), which admits only the job's client
    key: refused, counted and logged, never handled; the job's own client still gets in."""
    handler = security._zap_handler(echo.server._sock.context)
    before = handler.refused
    ctx = zmq.Context()
    raw = ctx.socket(zmq.DEALER)
    raw.linger = 0
    public, private = zmq.curve_keypair()
    raw.curve_serverkey = security.keys("server")[0]
    raw.curve_publickey, raw.curve_secretkey = public, private
    raw.connect("tcp://" + echo.endpoint)
    try:
        with caplog.at_level("WARNING", logger="fluidist"):
            raw.send_multipart(wire.encode("send", 1, "w", np.ones(2)))
            assert not raw.poll(1500)
            wait_until = time.monotonic() + 5
            while handler.refused == before and time.monotonic() < wait_until:
                time.sleep(0.05)
    finally:
        raw.close(0)
        ctx.term()
    assert handler.refused > before and echo.seen == []
    assert any("refused a CURVE connection: its client key is not this job's, it does not hold this job's secret"
               in r.getMessage()
               for r in caplog.records)
    c = rpc.Client(echo.endpoint)
    try:
        c.call("send", "w", np.ones(2))
    finally:
        c.close()
    assert [k for k, _, _, _ in echo.seen] == ["send"]


def test_secret_sources_and_their_checks(tmp_path, monkeypatch):
    for k in (security.SECRET_ENV, security.SECRET_FILE_ENV, security.INSECURE_ENV):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    made = security.job_secret()                       # the per-user default, made once, mode 0600
    path = tmp_path / ".fluidist" / "job_secret"
    assert path.read_text().strip() == made and (path.stat().st_mode & 0o777) == 0o600
    assert security.job_secret() == made
    f = tmp_path / "s"
    security.write_secret_file(str(f), "x" * 20)
    monkeypatch.setenv(security.SECRET_FILE_ENV, str(f))
    assert security.job_secret() == "x" * 20
    f.chmod(0o644)
    monkeypatch.setenv(security.SECRET_FILE_ENV, str(f) + " ")   # another key: read again
    with pytest.raises(security.SecurityError, match="can be read by others"):
        security.job_secret()
    monkeypatch.setenv(security.SECRET_ENV, "short")
    with pytest.raises(security.SecurityError, match="at least 16"):
        security.job_secret()
    monkeypatch.setenv(security.INSECURE_ENV, "1")
    assert security.job_secret() is None and not security.is_secure()
    a, b = security.keys("server", "y" * 20), security.keys("server", "z" * 20)
    assert a != b and security.keys("server", "y" * 20) == a and security.keys("client", "y" * 20) != a


class CountingRouter:
    """A bare ROUTER (CURVE, like a pserver's) in a thread that counts the messages it receives and
    answers each with ``ok`` parts (a ``get`` with the value last sent under its name)."""

    def __init__(self):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        security.secure_server(self.sock)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = "127.0.0.1:%d" % port
        self.messages = []           # per message: its kinds, in order
        self.store = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop.is_set():
            if not self.sock.poll(50):
                continue
            peer, *body = self.sock.recv_multipart()
            m = wire.decode(body)
            parts = m.parts if m.parts is not None else [m]
            self.messages.append([p.kind for p in parts])
            answers = []
            for p in parts:
                if p.kind == "send":
                    self.store[p.name] = np.array(p.value)
                value = self.store.get(p.name) if p.kind == "get" else None
                answers.append(wire.encode_part("ok", p.name, value, p.step))
            if m.parts is None:
                header, buffers = answers[0]
                frames = wire.encode(header["kind"], m.rid, m.name, value, m.trainer, m.step)
            else:
                frames = wire.encode_batch(m.rid, m.trainer, m.step, answers)
            self.sock.send_multipart([peer] + frames)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        security.release_context(self.ctx)     # its authentication handler
        self.sock.close(0)
        self.ctx.term()


def test_a_step_to_each_pserver_is_one_message_and_one_reply(monkeypatch):
    monkeypatch.setenv("FLUIDIST_PS_TRANSPORT", "tcp")       # the bare router reads no shared memory
    routers = [CountingRouter(), CountingRouter()]
    try:
        a, b = (r.endpoint for r in routers)
        g = np.arange(6, dtype=np.float32)
        rpc.post([(a, dict(kind="send", name="w0", value=g, trainer=1, step=1)),
                  (b, dict(kind="send", name="w1", value=g + 1, trainer=1, step=1))])
        rpc.post([(a, dict(kind="send", name="b0", value=g[:2], trainer=1, step=1))])
        rpc.post([(ep, dict(kind="send_barrier", trainer=1, step=1)) for ep in (a, b)])
        assert all(r.messages == [] for r in routers)       # queued: nothing has left yet
        got = rpc.call_all([(a, dict(kind="get", name="w0", trainer=1, step=1)),
                            (b, dict(kind="get", name="w1", trainer=1, step=1)),
                            (a, dict(kind="get", name="b0", trainer=1, step=1))])
        assert routers[0].messages == [["send", "send", "send_barrier", "get", "get"]]
        assert routers[1].messages == [["send", "send_barrier", "get"]]
        np.testing.assert_array_equal(got[0].value, g)
        np.testing.assert_array_equal(got[1].value, g + 1)
        np.testing.assert_array_equal(got[2].value, g[:2])
        # a lone request is still a plain message
        assert rpc.call_all([(a, dict(kind="get", name="b0", trainer=1, step=1))])[0].name == "b0"
        assert routers[0].messages[-1] == ["get"]
        # posted requests that no call takes along leave with dispatch(); flush() awaits their replies
        rpc.post([(b, dict(kind="send", name="late", value=g, trainer=1, step=2))])
        assert rpc.pending()
        rpc.dispatch()
        assert not rpc.pending()
        deadline = time.monotonic() + scaled(10)
        while len(routers[1].messages) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert routers[1].messages[-1] == ["send"]
        rpc.flush()
        rpc.release_clients([a, b])
    finally:
        for r in routers:
            r.close()


def test_each_part_of_a_batch_is_handed_to_the_server_loop_and_an_error_part_names_its_request(echo):
    g = np.arange(4.0)
    rpc.post([(echo.endpoint, dict(kind="send", name="p", value=g, trainer=2, step=5, what="send p")),
              (echo.endpoint, dict(kind="get", name="absent", trainer=2, step=5, what="recv absent"))])
    with pytest.raises(rpc.RPCError) as e:
        rpc.call_all([(echo.endpoint, dict(kind="get", name="p", trainer=2, step=5, what="recv p"))])
    assert "answered 'recv absent' (trainer 2, step 5) with an error: no variable 'absent'" in str(e.value)
    # the server loop saw the three requests one by one, in order; the others were served
    assert echo.seen[-3:] == [("send", "p", 2, 5), ("get", "absent", 2, 5), ("get", "p", 2, 5)]
    np.testing.assert_array_equal(rpc.call_all([(echo.endpoint, dict(kind="get", name="p", trainer=2))])[0].value, g)


@pytest.mark.parametrize("transport", ["tcp", "shm"])
def test_a_batch_waiting_for_a_later_part_keeps_the_values_it_was_answered_with(monkeypatch, transport):
    # A sync pserver may answer a part of a batch, then write the served array in place (its round)
    # before the last part is answered and the batch's one reply leaves: the reply carries the value
    # as it was answered (on one host also when the array lies in the pserver's resident segment).
    monkeypatch.setenv("FLUIDIST_PS_TRANSPORT", transport)
    monkeypatch.setenv("FLUIDIST_PS_SHM_MIN_BYTES", "1024")
    from fluidist.distributed import shm_payload
    server = rpc.Server("127.0.0.1:0")
    w = np.arange(4096, dtype=np.float32)
    if transport == "shm":
        w = shm_payload.outbox().resident(w, ("test", "w"))
        assert shm_payload.outbox().locate(w) is not None
    answered = {}

    def loop():
        first = server.recv(scaled(10))
        server.reply(first, value=w)                 # answered, but the batch waits for its second part
        second = server.recv(scaled(10))
        server.values_will_change()
        w[:] = -1.0                                  # the round writes the block in place
        server.reply(second, value=w)
        answered["parts"] = (first.index, second.index)

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        got = rpc.call_all([(server.endpoint, dict(kind="get", name="w", trainer=0)),
                            (server.endpoint, dict(kind="get", name="w", trainer=0))], timeout_s=scaled(10))
        t.join(5)
        assert answered["parts"] == (0, 1)
        np.testing.assert_array_equal(got[0].value, np.arange(4096, dtype=np.float32))
        np.testing.assert_array_equal(got[1].value, np.full(4096, -1.0, np.float32))
    finally:
        rpc.release_clients([server.endpoint])
        server.close(0)


@pytest.mark.parametrize("thread", ["1", "0"])
def test_posted_big_blocks_travel_through_shared_memory_step_after_step(monkeypatch, thread):
    # on one host a posted block is copied into the trainer's slot (by the transport thread while the
    # caller goes on, or when the message leaves); the step's message then carries references; slots
    # are reused step after step, and a row-sparse block whose row count grows gets a bigger slot
    monkeypatch.setenv("FLUIDIST_PS_TRANSPORT", "shm")
    monkeypatch.setenv("FLUIDIST_PS_SEND_THREAD", thread)
    from fluidist.core.tensor import SelectedRows
    echo = EchoServer()
    try:
        ep = echo.endpoint
        for step in range(1, 4):
            dense = [np.full((300, 100), step * 10 + k, np.float32) for k in range(3)]
            rows = SelectedRows(np.arange(step * 2000, dtype=np.int64), np.full((step * 2000, 16), -step, np.float32),
                                10 ** 6)
            rpc.post([(ep, dict(kind="send", name="d%d" % k, value=v, trainer=0, step=step))
                      for k, v in enumerate(dense)])
            rpc.post([(ep, dict(kind="send", name="rows", value=rows, trainer=0, step=step))])
            got = rpc.call_all([(ep, dict(kind="get", name="d%d" % k, trainer=0, step=step)) for k in range(3)])
            for v, r in zip(dense, got):
                np.testing.assert_array_equal(r.value, v)
            stored = echo.store["rows"].item()      # (the echo server keeps what it received)
            assert stored.value.shape == (step * 2000, 16) and (stored.value == -step).all()
            np.testing.assert_array_equal(stored.rows, rows.rows)
        assert len(echo.server._shm_peers) == 1          # the payloads came through shared memory
    finally:
        rpc.release_clients([echo.endpoint])
        echo.close()


def test_the_send_thread_setting(monkeypatch):
    from fluidist.distributed import outgoing
    for raw, want in [("1", True), ("0", False), (" 1 ", True)]:
        monkeypatch.setenv("FLUIDIST_PS_SEND_THREAD", raw)
        assert outgoing.copies_in_background() is want
    monkeypatch.setenv("FLUIDIST_PS_SEND_THREAD", "auto")
    assert outgoing.copies_in_background() is (len(os.sched_getaffinity(0)) >= outgoing.SEND_THREAD_MIN_CORES)
    monkeypatch.setenv("FLUIDIST_PS_SEND_THREAD", "yes")
    with pytest.raises(ValueError, match="FLUIDIST_PS_SEND_THREAD must be auto, 1 or 0, got 'yes'"):
        outgoing.copies_in_background()
