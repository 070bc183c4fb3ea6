"""The CPU collective backend, driven directly: several ranks as threads of this process, each
with its own communicator over a real transport (a shared-memory segment, or ZeroMQ sockets on
127.0.0.1), plus the in-process thread transport. Multi-process runs through Programs and the
Executor are in test_collective_ops.py."""
import glob
import os
import socket
import threading
import time

import numpy as np
import pytest
from load_aware import scaled  # noqa: E402  (bounds that follow the machine's load)

from fluidist.distributed import security
from fluidist.distributed.collective import rendezvous
from fluidist.distributed.collective.cpu import (SHM_DIR, SHM_PREFIX, CollectiveError, OutputPool,
                                                 create_cpu_communicator, thread_group)
from fluidist.distributed.collective.rendezvous import CollectiveTimeout, CommId, new_comm_id

pytestmark = pytest.mark.timeout(120)


def _segments():
    """This job's collective segments (their names carry the job secret's tag): never another
    test session's."""
    return set(glob.glob(os.path.join(SHM_DIR, "%s%s-*" % (SHM_PREFIX, security.secret_tag()))))


def _threads(n, fn):
    """Run fn(rank) in n threads; returns the results, re-raises the first exception."""
    res, errs = [None] * n, [None] * n

    def run(r):
        try:
            res[r] = fn(r)
        except BaseException as e:  # noqa: B902 - handed back to the test
            errs[r] = e
    ts = [threading.Thread(target=run, args=(r,)) for r in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    for e in errs:
        if e is not None:
            raise e
    return res


def make_group(n, transport, monkeypatch, timeout=20, ring=0):
    monkeypatch.setenv("FLUIDIST_COLLECTIVE_TRANSPORT", transport)
    if transport == "threads":
        return thread_group(n, ring, timeout)
    cid = new_comm_id(ring, "cpu", "127.0.0.1:1")
    ids = [cid] + [CommId.from_json(cid.to_json()) for _ in range(n - 1)]
    return _threads(n, lambda r: create_cpu_communicator(ids[r], n, r, "127.0.0.1:1", timeout=timeout))


@pytest.fixture(params=["shm", "zmq", "threads"])
def transport(request):
    return request.param


@pytest.fixture
def groups(transport, monkeypatch):
    made = {}

    def get(n, timeout=20):
        if (n, timeout) not in made:
            made[(n, timeout)] = make_group(n, transport, monkeypatch, timeout)
        return made[(n, timeout)]
    yield get
    for comms in made.values():
        for c in comms:
            c.close()


def _data(rank, shape, dtype, op="sum", seed=0):
    rng = np.random.RandomState(seed * 31 + rank)
    if dtype == "bool":
        return rng.rand(*shape) > 0.5
    if op == "prod":
        v = rng.randint(1, 3, size=shape) if np.dtype(dtype).kind in "iu" else rng.uniform(0.5, 1.5, shape)
        return v.astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return rng.randint(0, 50, size=shape).astype(dtype)
    return rng.uniform(-4, 4, shape).astype(dtype)


_UF = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _reference(xs, op):
    out = xs[0].copy()
    for x in xs[1:]:
        out = _UF[op](out, x)
    return out


def _close(got, want, dtype):
    if np.dtype(dtype).kind == "f":
        tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[np.dtype(dtype).name]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


MANY_STEPS = (2, 300007)
SHAPES = [(1,), (7,), (5, 3), (70001,), MANY_STEPS]     # 70001 float32: chunked; 2x300007: many steps


@pytest.mark.parametrize("n", [2, 3])
def test_allreduce_every_op_dtype_and_size(groups, n):
    """Every op on every dtype at the small and the chunked sizes; at the many-step size one op per
    dtype (the ops differ only in the elementwise function, which the chunked size covers)."""
    comms = groups(n)
    for shape in SHAPES:
        for dtype in ["float16", "float32", "float64", "int32", "int64", "uint8", "bool"]:
            ops = ["max", "min"] if dtype == "bool" else ["sum", "max", "min", "prod"]
            if shape == MANY_STEPS or (np.prod(shape) > 1000 and dtype not in ("float32", "float64", "bool", "int64")):
                ops = ops[:1]
            for op in ops:
                xs = [_data(r, shape, dtype, op) for r in range(n)]
                outs = _threads(n, lambda r: comms[r].allreduce(xs[r], op))
                want = _reference(xs, op)
                for r in range(n):
                    assert outs[r].shape == shape and outs[r].dtype == np.dtype(dtype)
                    _close(outs[r], want, dtype)
                    # every rank ends with the same bits
                    np.testing.assert_array_equal(outs[r], outs[0])
                for r in range(n):   # inputs untouched
                    np.testing.assert_array_equal(xs[r], _data(r, shape, dtype, op))


@pytest.mark.parametrize("n", [2, 3])
def test_allreduce_in_place_and_into_out(groups, n):
    comms = groups(n)
    for size in (2, 5, 3001, 300001):      # fewer elements than ranks, the direct and the chunked paths
        xs = [_data(r, (size,), "float64") for r in range(n)]
        want = _reference(xs, "sum")
        bufs = [x.copy() for x in xs]
        for _ in range(3):   # again on the same buffers: in place twice in a row must not race
            np.copyto(bufs[0], xs[0])
            for r in range(1, n):
                np.copyto(bufs[r], xs[r])
            outs = _threads(n, lambda r: comms[r].allreduce(bufs[r], "sum", out=bufs[r]))
            for r in range(n):
                assert outs[r] is bufs[r]
                _close(bufs[r], want, "float64")
                np.testing.assert_array_equal(bufs[r], bufs[0])    # the same bits on every rank
        given = [np.empty_like(x) for x in xs]
        outs = _threads(n, lambda r: comms[r].allreduce(xs[r], "max", out=given[r]))
        for r in range(n):
            assert outs[r] is given[r]
            _close(given[r], _reference(xs, "max"), "float64")


@pytest.mark.parametrize("n", [2, 3])
def test_broadcast_allgather_reducescatter(groups, n):
    comms = groups(n)
    for shape in [(1,), (7,), (6, 5), (90000,), (6, 100003)]:
        for dtype in ["float16", "float32", "float64", "int32", "int64", "uint8", "bool"]:
            if np.prod(shape) > 1000 and dtype not in ("float32", "uint8"):
                continue
            xs = [_data(r, shape, dtype) for r in range(n)]
            for root in (0, n - 1):
                outs = _threads(n, lambda r: comms[r].broadcast(xs[r], root))
                for o in outs:
                    np.testing.assert_array_equal(o, xs[root])
            outs = _threads(n, lambda r: comms[r].allgather(xs[r]))
            for o in outs:
                np.testing.assert_array_equal(o, np.concatenate(xs, axis=0))
            if shape[0] % n == 0 and dtype != "bool":
                outs = _threads(n, lambda r: comms[r].reducescatter(xs[r]))
                want = _reference(xs, "sum")
                rows = shape[0] // n
                for r in range(n):
                    _close(outs[r], want[r * rows:(r + 1) * rows], dtype)
    _threads(n, lambda r: comms[r].barrier())


def test_scalar_and_empty_tensors(groups):
    comms = groups(2)
    xs = [np.float32(r + 1.5) for r in range(2)]
    outs = _threads(2, lambda r: comms[r].allreduce(np.asarray(xs[r]), "sum"))
    assert outs[0].shape == () and outs[0] == 4.0
    outs = _threads(2, lambda r: comms[r].allgather(np.asarray(xs[r])))
    np.testing.assert_array_equal(outs[1], [1.5, 2.5])
    empty = [np.zeros((0, 3), np.float32) for _ in range(2)]
    outs = _threads(2, lambda r: comms[r].allreduce(empty[r], "sum"))
    assert outs[0].shape == (0, 3)
    outs = _threads(2, lambda r: comms[r].allgather(empty[r]))
    assert outs[1].shape == (0, 3)


def test_argument_errors_name_the_culprit(groups):
    comms = groups(2)
    with pytest.raises(ValueError, match=r"dim 0 of shape \[5, 2\] is not divisible by the 2 ranks"):
        comms[0].reducescatter(np.zeros((5, 2), np.float32))
    with pytest.raises(TypeError, match="bool tensors support only the max and min"):
        comms[0].allreduce(np.zeros(3, bool), "sum")
    with pytest.raises(ValueError, match="unknown reduction 'avg'"):
        comms[0].allreduce(np.zeros(3, np.float32), "avg")
    with pytest.raises(TypeError, match="complex128 is not supported"):
        comms[0].allreduce(np.zeros(3, np.complex128))
    with pytest.raises(ValueError, match="root 2 is out of range"):
        comms[0].broadcast(np.zeros(3), 2)
    # nothing was sent: the ring still works
    outs = _threads(2, lambda r: comms[r].allreduce(np.full(4, r, np.int64), "max"))
    np.testing.assert_array_equal(outs[0], [1, 1, 1, 1])


def test_mismatched_calls_fail_on_every_rank(transport, monkeypatch):
    comms = make_group(2, transport, monkeypatch, timeout=5)
    try:
        sizes = [10, 12]
        errs = [None, None]

        def run(r):
            try:
                comms[r].allreduce(np.ones(sizes[r], np.float32))
            except Exception as e:
                errs[r] = e
        _threads(2, run)
        for e in errs:
            assert isinstance(e, CollectiveError), e
            assert "allreduce of float32[10] (sum)" in str(e) and "allreduce of float32[12] (sum)" in str(e)
        # the ring is unusable afterwards, and says why
        with pytest.raises(CollectiveError, match="unusable after an earlier failure"):
            comms[0].barrier()
    finally:
        for c in comms:
            c.close()


def test_missing_rank_times_out_naming_it(transport, monkeypatch):
    comms = make_group(3, transport, monkeypatch, timeout=1.0)
    try:
        errs = {}

        def run(r):
            if r == 1:
                return   # rank 1 never calls
            try:
                comms[r].allreduce(np.ones(1000, np.float32))
            except Exception as e:
                errs[r] = e
        t0 = time.monotonic()
        _threads(3, run)
        assert time.monotonic() - t0 < scaled(15)
        assert 0 in errs
        word = "thread rank" if transport == "threads" else "rank"
        # rank 0 (shm, threads: it sees every rank) names rank 1; on zmq it waits for its left neighbour
        msg = str(errs[0])
        if transport == "zmq":
            assert "of ring 0 did not reach allreduce #1 within 1 s" in msg or "failed" in msg, msg
        else:
            assert "%s 1 of ring 0 did not reach allreduce #1 within 1 s" % word in msg, msg
    finally:
        for c in comms:
            c.close()


def test_failed_rank_tells_the_others(monkeypatch):
    """A rank that fails (here: a mismatch it detects) makes the waiting ranks fail with its reason
    well before the deadline."""
    comms = make_group(3, "shm", monkeypatch, timeout=30)
    try:
        errs = {}

        def run(r):
            try:
                if r == 2:
                    time.sleep(0.3)
                    comms[r].allreduce(np.ones(5, np.float64))   # others use float32
                else:
                    comms[r].allreduce(np.ones(5, np.float32))
            except Exception as e:
                errs[r] = e
        t0 = time.monotonic()
        _threads(3, run)
        assert time.monotonic() - t0 < scaled(10)
        assert set(errs) == {0, 1, 2}
        assert "float64[5]" in str(errs[2])
    finally:
        for c in comms:
            c.close()


def test_shm_segment_is_unlinked_once_mapped(monkeypatch):
    before = _segments()
    comms = make_group(2, "shm", monkeypatch)
    try:
        assert all(c.transport == "shm" for c in comms)
        assert _segments() - before == set()
        outs = _threads(2, lambda r: comms[r].allreduce(np.full(3, r + 1.0)))
        np.testing.assert_array_equal(outs[1], [3.0, 3.0, 3.0])
    finally:
        for c in comms:
            c.close()


def test_shm_attach_failure_unlinks_and_falls_back_to_zmq(monkeypatch):
    """A rank that cannot map the segment reports it; rank 0 removes the file and everyone uses
    ZeroMQ (auto), or everyone fails with the reason when shared memory was demanded."""
    from fluidist.distributed.collective import cpu
    real_open = cpu.open_segment

    def broken(path, size, token):
        raise OSError("simulated: cannot map %s" % path)
    before = _segments()
    monkeypatch.setattr(cpu, "open_segment", broken)
    comms = make_group(2, "auto", monkeypatch)
    try:
        assert [c.transport for c in comms] == ["zmq", "zmq"]
        outs = _threads(2, lambda r: comms[r].allreduce(np.full(3, r + 1.0)))
        np.testing.assert_array_equal(outs[0], [3.0, 3.0, 3.0])
    finally:
        for c in comms:
            c.close()
    assert _segments() - before == set()
    with pytest.raises(CollectiveError, match="could not be mapped by rank 1"):
        make_group(2, "shm", monkeypatch)
    assert _segments() - before == set()
    monkeypatch.setattr(cpu, "open_segment", real_open)


def test_output_pool_reuses_only_unreferenced_buffers():
    pool = OutputPool()
    a = pool.empty((1 << 18,), np.float32)      # 1 MiB: pooled
    a[:] = 1
    b = pool.empty((1 << 18,), np.float32)
    assert not np.shares_memory(a, b)            # a is alive: not reused
    view = a[10:20]
    del a
    c = pool.empty((1 << 18,), np.float32)
    assert not np.shares_memory(c, view)         # a view keeps it alive
    del view, b, c
    d = pool.empty((1 << 17,), np.float64)       # same bytes, other dtype and shape
    assert d.shape == (1 << 17,) and d.dtype == np.float64
    small = pool.empty((10,), np.float32)
    assert small.base is None


def test_thread_transport_mismatch_and_deadline():
    comms = thread_group(2, 3, timeout=0.5)
    errs = {}

    def run(r):
        try:
            if r == 0:
                comms[0].allreduce(np.ones(4, np.float32))
        except Exception as e:
            errs[r] = e
    _threads(2, run)
    assert "thread rank 1 of ring 3 did not reach allreduce #1 within 0.5 s" in str(errs[0])


# ---------------------------------------------------------------- id broadcast
def test_id_receive_deadline_names_the_endpoint(monkeypatch):
    port = _free_port()
    ep = "127.0.0.1:%d" % port
    with pytest.raises(CollectiveTimeout, match=r"nothing arrived on %s from rank 0 \(x\) within 0.3 s" % ep):
        rendezvous.receive_on_endpoint(ep, "c_gen_nccl_id (ring 0, rank 1)", {"kind": "k"}, "rank 0 (x)", timeout=0.3)


def test_id_send_deadline_names_the_endpoints():
    eps = ["127.0.0.1:%d" % _free_port() for _ in range(2)]
    with pytest.raises(CollectiveTimeout, match="endpoints %s, %s did not take the id within 0.3 s" % tuple(eps)):
        rendezvous.send_to_endpoints({"kind": "k"}, eps, "c_gen_nccl_id (ring 0, rank 0)", timeout=0.3)


def test_id_round_trip_and_wrong_kind_is_refused():
    ep = "127.0.0.1:%d" % _free_port()
    got = {}

    def listen():
        got["msg"] = rendezvous.receive_on_endpoint(ep, "test", {"kind": "right", "ring_id": 1}, timeout=10)
    t = threading.Thread(target=listen)
    t.start()
    with pytest.raises(RuntimeError, match="refused the id"):
        rendezvous.send_to_endpoints({"kind": "wrong", "ring_id": 1}, [ep], "test", timeout=10)
    cid = new_comm_id(1, "cpu", ep)
    rendezvous.send_to_endpoints({"kind": "right", "ring_id": 1, "id": cid.to_json()}, [ep], "test", timeout=10)
    t.join(10)
    cid.close()
    back = CommId.from_json(got["msg"]["id"])
    assert back == CommId.from_json(cid.to_json()) and back.token == cid.token


def test_comm_id_json_keeps_nccl_ids():
    for nid in (bytes(range(128)), tuple(range(-64, 64))):
        cid = CommId(0, "nccl", "0123456789abcdef", "tcp://127.0.0.1:1", nid)
        assert CommId.from_json(cid.to_json()).nccl_id == nid


@pytest.mark.parametrize("field,value,why", [
    ("token", "../../../etc/x", "not a session token"), ("token", 7, "not a session token"),
    ("rendezvous", "ipc:///tmp/sock", "not tcp://host:port"), ("ring_id", "0", "not a ring id"),
    ("ring_id", -1, "not a ring id"), ("backend", "gloo", "not 'cpu' or 'nccl'"),
    ("nccl_id", {"bytes": "zz"}, "not an NCCL unique id"), ("nccl_id", [1, 2], "not an NCCL unique id"),
])
def test_a_received_id_is_checked_field_by_field(field, value, why):
    d = CommId(0, "cpu", "0123456789abcdef", "tcp://127.0.0.1:1").to_json()
    d[field] = value
    with pytest.raises(ValueError, match=why):
        CommId.from_json(d)


def test_collective_timeout_env(monkeypatch):
    monkeypatch.setenv("FLUIDIST_COLLECTIVE_TIMEOUT", "7.5")
    assert rendezvous.collective_timeout() == 7.5
    monkeypatch.delenv("FLUIDIST_COLLECTIVE_TIMEOUT")
    assert rendezvous.collective_timeout() == 300.0
    monkeypatch.setenv("FLUIDIST_COLLECTIVE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="FLUIDIST_COLLECTIVE_TIMEOUT"):
        rendezvous.collective_timeout()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_id_listener_takes_only_a_well_formed_id_from_a_peer_with_the_secret(monkeypatch):
    import json
    import threading
    import zmq
    from fluidist.distributed import security
    from fluidist.launch.cluster import find_free_ports
    ep = "127.0.0.1:%d" % find_free_ports(1)[0]
    box = {}
    t = threading.Thread(target=lambda: box.update(msg=rendezvous.receive_on_endpoint(
        ep, "test", {"kind": "c_gen_nccl_id", "ring_id": 0}, parse=lambda m: CommId.from_json(m.get("id")),
        timeout=20)))
    t.start()
    good = CommId(0, "cpu", "0123456789abcdef", "tcp://127.0.0.1:1").to_json()

    def send(payload, secret=""):
        ctx = zmq.Context()
        s = ctx.socket(zmq.DEALER)
        s.linger = 0
        if secret is not None:
            security.secure_client(s, secret or None)
        s.connect("tcp://" + ep)
        s.send(json.dumps(payload).encode())
        reply = json.loads(s.recv()) if s.poll(1500) else None
        s.close(0)
        ctx.term()
        return reply
    try:
        time.sleep(0.3)
        assert send({"kind": "c_gen_nccl_id", "ring_id": 0, "id": good}, secret=None) is None
        assert send({"kind": "c_gen_nccl_id", "ring_id": 0, "id": good}, secret="another-secret-1234") is None
        bad = dict(good, rendezvous="ipc:///tmp/evil")
        assert "malformed id" in send({"kind": "c_gen_nccl_id", "ring_id": 0, "id": bad})["error"]
        assert send({"kind": "c_gen_nccl_id", "ring_id": 0, "id": good}) == {"ok": True}
    finally:
        t.join(20)
    assert box["msg"]["parsed"] == CommId.from_json(good)


def test_a_segment_outside_the_jobs_names_or_not_private_is_refused(tmp_path):
    from fluidist.distributed.collective import shm
    with pytest.raises(CollectiveError, match="not a fluidist segment"):
        shm.open_segment(str(tmp_path / "x"), 4096, "tok")
    path = os.path.join(shm.SHM_DIR, "%stest-%d" % (shm.SHM_PREFIX, os.getpid()))
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
    os.close(fd)
    try:
        os.chmod(path, 0o644)
        with pytest.raises(CollectiveError, match="not a private file of this user"):
            shm.open_segment(path, 4096, "tok")
    finally:
        os.unlink(path)
    os.symlink("/etc/passwd", path)
    try:
        with pytest.raises(OSError):
            shm.open_segment(path, 4096, "tok")
    finally:
        os.unlink(path)


def test_rank_k_maps_only_the_segment_its_ring_names(monkeypatch):
    """A rank 0 (or anyone holding the secret) naming another file gets a refusal, not a mapping."""
    from fluidist.distributed.collective import cpu
    from fluidist.distributed.collective.rendezvous import RendezvousServer
    cid = new_comm_id(0, "cpu", "127.0.0.1:1")
    victim = os.path.join(SHM_DIR, "%sother-job-%d" % (SHM_PREFIX, os.getpid()))
    box = {}

    def rank1():
        try:
            box["comm"] = cpu.create_cpu_communicator(CommId.from_json(cid.to_json()), 2, 1, "127.0.0.1:1", 10)
        except Exception as e:   # reported below
            box["error"] = e
    t = threading.Thread(target=rank1)
    t.start()
    server = RendezvousServer(cid, 2, "test")
    try:
        hello = server.gather("hello", {"host": "h", "pid": os.getpid(), "addr": "tcp://127.0.0.1:1", "shm": True,
                                        "transport": "auto"}, 10)
        server.reply_all({"transport": "shm", "path": victim, "size": 4096, "chunk": 4096,
                          "table": [hello[0], hello[1]]})
        acks = server.gather("attached", {"ok": True}, 10)
        assert not acks[1]["ok"] and "this job's segment for ring 0 is" in acks[1]["error"], acks[1]
        server.fail("refused")
    finally:
        server.close()
        t.join(20)
    assert "refused" in str(box.get("error"))
