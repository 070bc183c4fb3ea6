"""The same-host path of the pserver transport: big payloads through shared memory (shm_payload),
gradients summed on arrival (arrival_sums), received blocks written into the parameter (recv_buffers)."""
import json
import os
import threading

import numpy as np
import pytest

import fluidist as fluid
from fluidist.distributed import arrival_sums, rpc, shm_payload, wire
from fluidist.distributed.authorize import parse_block_map

pytestmark = pytest.mark.timeout(60)


def _frames(arr, name="w"):
    return wire.encode("send", 1, name, arr)


def test_pack_moves_big_buffers_and_unpack_restores_them(monkeypatch):
    monkeypatch.setenv(shm_payload.MIN_BYTES_ENV, "1024")
    big = np.arange(4096, dtype=np.float32).reshape(64, 64)
    packed, seg = shm_payload.pack(_frames(big), ("test", "w"), owner=7)
    assert shm_payload.is_packed(packed) and seg is not None and seg.busy == 7
    assert packed[3] == b"" and sum(len(memoryview(f)) for f in packed[3:]) == 0
    msg = wire.decode(shm_payload.unpack(packed))
    np.testing.assert_array_equal(msg.value, big)
    assert shm_payload.is_shared(msg.value) and not shm_payload.is_shared(big)
    # a small buffer stays in the message
    small = np.ones(8, np.float32)
    same, seg2 = shm_payload.pack(_frames(small), ("test", "s"), owner=None)
    assert seg2 is None and not shm_payload.is_packed(same)
    seg.busy = None
    again, seg3 = shm_payload.pack(_frames(big * 2), ("test", "w"), owner=8)
    assert seg3 is seg                                   # a free slot of the key is reused
    np.testing.assert_array_equal(wire.decode(shm_payload.unpack(again)).value, big * 2)


@pytest.mark.parametrize("desc,why", [
    (b'[[1,"../../etc/passwd",0,4]]', "bad shared-memory segment name"),
    (b'[[1,"fluidist-ps-1-999999",0,4]]', "cannot open shared-memory segment"),
    (b'[[5,"fluidist-ps-1-1",0,4]]', "not an empty payload frame"),
    (b'{"a":1}', "must be a list"),
    (b'not json', "not valid JSON")])
def test_bad_descriptors_are_refused(desc, why):
    frames = [shm_payload.MAGIC, desc] + wire.encode("send", 1, "w", np.zeros(2, np.float32))
    frames[3] = b""
    with pytest.raises(shm_payload.ShmError, match=why):
        shm_payload.unpack(frames)


def test_out_of_range_descriptor_is_refused(monkeypatch):
    monkeypatch.setenv(shm_payload.MIN_BYTES_ENV, "16")
    packed, seg = shm_payload.pack(_frames(np.zeros(64, np.float32)), ("test", "r"), owner=None)
    packed[1] = ('[[1,"%s",0,%d]]' % (seg.name, seg.size + 1)).encode()
    with pytest.raises(shm_payload.ShmError, match="outside segment"):
        shm_payload.unpack(packed)


def test_modes(monkeypatch):
    monkeypatch.setenv(shm_payload.MODE_ENV, "tcp")
    assert not shm_payload.use_for("127.0.0.1")
    monkeypatch.setenv(shm_payload.MODE_ENV, "auto")
    assert shm_payload.use_for("127.0.0.1") and shm_payload.use_for("localhost")
    assert not shm_payload.use_for("192.0.2.1")          # TEST-NET: never this host
    monkeypatch.setenv(shm_payload.MODE_ENV, "bogus")
    with pytest.raises(ValueError, match="FLUIDIST_PS_TRANSPORT"):
        shm_payload.mode()


@pytest.mark.parametrize("transport", ["auto", "tcp"])
def test_client_and_server_over_shared_memory(monkeypatch, transport):
    """A same-host client's big send arrives through shared memory; the server answers it the same
    way (resident arrays by reference, a snapshot as a copy); over tcp nothing is packed."""
    monkeypatch.setenv(shm_payload.MODE_ENV, transport)
    monkeypatch.setenv(shm_payload.MIN_BYTES_ENV, "4096")
    server = rpc.Server("127.0.0.1:0")
    grad = np.random.RandomState(0).rand(300, 40).astype(np.float32)
    param = shm_payload.outbox().resident(np.full((500, 40), 3.0, np.float32), ("test", "param"))
    got = {}

    def serve():
        req = server.recv(10)
        got["send"] = np.array(req.msg.value)
        got["shared"] = server.shares_memory_with(req)
        server.reply(req)
        req = server.recv(10)
        server.reply(req, value=param)
        req = server.recv(10)
        server.reply(req, value=param, snapshot=True)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    client = rpc.Client(server.endpoint)
    try:
        client.call("send", "g", grad)
        assert not client._slots                           # answered: the slot is free again
        ref = client.call("get", "param").value
        snap = client.call("get", "param").value
        t.join(10)
        np.testing.assert_array_equal(got["send"], grad)
        np.testing.assert_array_equal(ref, param)
        np.testing.assert_array_equal(snap, param)
        assert got["shared"] == (transport == "auto")
        assert shm_payload.is_shared(ref) == (transport == "auto")
        if transport == "auto":
            param += 1.0                                  # a resident array is read in place ...
            assert ref[0, 0] == 4.0 and snap[0, 0] == 3.0   # ... a snapshot is a copy
    finally:
        client.close()
        server.close()


def _transpiled_pserver(trainers):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 64], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        pred = fluid.layers.fc(fluid.layers.fc(x, 256, act="tanh"), 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers="127.0.0.1:1", trainers=trainers, startup_program=startup,
                current_endpoint="127.0.0.1:1")
    prog = t.get_pserver_program("127.0.0.1:1")
    serv = prog.global_block().ops[0]
    return prog, [b.idx for b in serv.attr("optimize_blocks")], parse_block_map(serv.attr("sum_on_arrival"), "sums")


def test_arrival_sums_replace_the_rounds_sum():
    prog, blocks, listed = _transpiled_pserver(trainers=3)
    assert sorted(listed.values()) == blocks               # the transpiler lists every block's sum ...
    sums = arrival_sums.ArrivalSums(prog, listed, 3)
    assert sorted(sums.by_block) == blocks                 # ... and the pserver sums them as they arrive
    idx = blocks[0]
    acc = sums.by_block[idx]
    assert [op.type for op in sums.derived.block(idx).ops] == [op.type for op in prog.block(idx).ops][1:]
    rng = np.random.RandomState(1)
    vals = {n: rng.rand(*[d if d > 0 else 4 for d in prog.global_block().var(n).shape]).astype(np.float32)
            for n in acc.inputs}
    stored = {}
    for n in reversed(acc.inputs[1:]):                     # out of trainer order, one missing
        sums.add(n, vals[n], 0)
    assert sums.program_for(idx, 0, stored.__setitem__) is prog and not stored
    sums.add(acc.inputs[0], vals[acc.inputs[0]], 0)
    assert sums.program_for(idx, 0, stored.__setitem__) is sums.derived
    np.testing.assert_allclose(stored[acc.out], sum(vals.values()), rtol=1e-6)
    # next round: a trainer sending twice falls back to the block as written
    for n in acc.inputs + acc.inputs[:1]:
        sums.add(n, vals[n], 1)
    assert sums.program_for(idx, 1, stored.__setitem__) is prog
    # one trainer: nothing to sum
    prog1, blocks1, listed1 = _transpiled_pserver(trainers=1)
    assert listed1 == {} and not arrival_sums.ArrivalSums(prog1, listed1, 1).by_block
    # an attr that does not say what the block holds is refused, naming the block
    wrong = {"not_the_grad": idx}
    with pytest.raises(ValueError, match="sum_on_arrival says block %d begins with the sum" % idx):
        arrival_sums.ArrivalSums(prog, wrong, 3)


def test_arrival_sums_of_two_trainers_are_their_sum_bit_for_bit_and_leave_the_arrivals_alone():
    prog, blocks, listed = _transpiled_pserver(trainers=2)
    sums = arrival_sums.ArrivalSums(prog, listed, 2)
    rng = np.random.RandomState(2)
    for round_no in range(3):                              # the buffer is reused round after round
        for idx in blocks:
            acc = sums.by_block[idx]
            shape = [d if d > 0 else 4 for d in prog.global_block().var(acc.inputs[0]).shape]
            a, b = (rng.randn(*shape).astype(np.float32) * 10.0 ** rng.randint(-3, 4) for _ in range(2))
            kept_a, kept_b = a.copy(), b.copy()
            sums.add(acc.inputs[1], b, round_no)           # trainer 1 first
            sums.add(acc.inputs[0], a, round_no)
            stored = {}
            assert sums.program_for(idx, round_no, stored.__setitem__) is sums.derived
            assert np.array_equal(stored[acc.out], b + a)
            assert np.array_equal(a, kept_a) and np.array_equal(b, kept_b)
            # a second gradient of another shape in the same round: the block runs as written
            sums.add(acc.inputs[0], a, round_no + 100)
            sums.add(acc.inputs[1], a[..., None], round_no + 100)
            assert sums.program_for(idx, round_no + 100, stored.__setitem__) is prog


def test_no_segment_is_left_behind_by_a_child():
    import subprocess
    import sys
    code = ("import json, numpy as np; from fluidist.distributed import shm_payload as s; "
            "b = s.outbox(); b.slot(('k',), 1 << 16, None); b.resident(np.ones(10), 'r'); "
            "print(json.dumps(sorted(x.name for x in b._all)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ))
    names = json.loads(out.stdout.strip())
    assert len(names) == 2 and not any(os.path.exists(os.path.join(shm_payload.SHM_DIR, n)) for n in names)


@pytest.mark.cpu_only("recv writes received blocks into the parameter's host memory; on a device the plan "
                      "copies them to the device instead")
def test_consecutive_recvs_ask_at_once_and_write_into_the_parameter(monkeypatch):
    """Two recv ops in a row, as the transpiler writes them: the first (its batch_* attrs list what
    the second receives) sends both gets and waits once; the second takes its reply. Blocks joined
    by a Dist concat (row_block_* attrs) land in the parameter's rows (the concat copies nothing).
    The fetch_barrier after them has nothing left to ask."""
    monkeypatch.setenv(shm_payload.MODE_ENV, "shm")
    monkeypatch.setenv(shm_payload.MIN_BYTES_ENV, "1")
    server = rpc.Server("127.0.0.1:0")
    values = {"w.block0": np.full((3, 4), 1.0, np.float32), "w.block1": np.full((2, 4), 2.0, np.float32),
              "b": np.arange(4, dtype=np.float32)}
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            req = server.recv(0.05)
            if req is not None:
                server.reply(req, value=values[req.msg.name]) if req.msg.kind == "get" else server.reply(req)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    ep = server.endpoint
    prog = fluid.Program()
    gb = prog.global_block()
    for n, v in values.items():
        gb.create_var(name=n, shape=list(v.shape), dtype="float32", persistable=True)
    gb.create_var(name="w", shape=[5, 4], dtype="float32", persistable=True)
    gb.append_op("recv", inputs={"X": []}, outputs={"Out": ["w.block0", "w.block1"]},
                 attrs={"epmap": [ep, ep], "trainer_id": 0, "batch_epmap": [ep], "batch_varnames": ["b"],
                        "row_block_of": ["w", "w"], "row_block_begin": [0, 3]})
    gb.append_op("recv", inputs={"X": []}, outputs={"Out": ["b"]}, attrs={"epmap": [ep], "trainer_id": 0})
    gb.append_op("concat", inputs={"X": ["w.block0", "w.block1"]}, outputs={"Out": ["w"]},
                 attrs={"axis": 0, "op_role": 8})
    gb.append_op("fetch_barrier", inputs={"X": []}, outputs={"Out": []}, attrs={"endpoints": [ep], "trainer_id": 0})
    alone = fluid.Program()
    alone.global_block().append_op("fetch_barrier", inputs={"X": []}, outputs={"Out": []},
                                   attrs={"endpoints": [ep], "trainer_id": 0})
    calls = []
    real = rpc.call_all
    monkeypatch.setattr(rpc, "call_all", lambda reqs, **kw: calls.append(len(reqs)) or real(reqs, **kw))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    try:
        for step in range(2):
            values["b"] += 1
            exe.run(prog, scope=scope)
            w = scope.find_var("w").value()
            np.testing.assert_array_equal(w, np.concatenate([values["w.block0"], values["w.block1"]]))
            np.testing.assert_array_equal(scope.find_var("b").value(), values["b"])
            for n in ("w", "b", "w.block0"):
                assert not shm_payload.is_shared(scope.find_var(n).value()), n
            assert np.shares_memory(scope.find_var("w.block1").value(), w)    # written in place
            if step == 0:
                first_w = w
        assert scope.find_var("w").value() is first_w                         # the same array each step
        # one wait per step; the fetch_barrier asks no pserver that answered a recv of this step
        assert calls == [3, 0, 3, 0]
        exe.run(alone, scope=scope)
        assert calls[-1] == 0
        from fluidist.distributed import trainer_session
        trainer_session.advance([ep], 0)                                     # a new step: not fetched yet
        exe.run(alone, scope=scope)
        assert calls[-1] == 1
    finally:
        stop.set()
        t.join(5)
        server.close()


def test_segments_of_dead_processes_are_reclaimed():
    import subprocess
    import sys
    code = ("import numpy as np, os, signal; from fluidist.distributed import shm_payload as s; "
            "b = s.outbox(); seg = b.slot(('k',), 4096, None); print(seg.name, flush=True); "
            "os.kill(os.getpid(), signal.SIGKILL)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    name = out.stdout.strip()
    assert name and os.path.exists(os.path.join(shm_payload.SHM_DIR, name))        # killed: left behind
    assert name in shm_payload.reclaim_stale_segments()
    assert not os.path.exists(os.path.join(shm_payload.SHM_DIR, name))
    mine = shm_payload.outbox().slot(("alive",), 4096, None)
    assert mine.name not in shm_payload.reclaim_stale_segments()                   # a live owner's stays


def test_a_same_host_client_is_known_from_its_first_request(monkeypatch):
    """Even a request without payload (a start-up get) tells the pserver that the trainer reads shared
    memory, so the parameters it gets back already come that way."""
    monkeypatch.setenv(shm_payload.MODE_ENV, "auto")
    monkeypatch.setenv(shm_payload.MIN_BYTES_ENV, "1024")
    server = rpc.Server("127.0.0.1:0")
    big = np.ones((64, 64), np.float32)
    seen = {}

    def serve():
        req = server.recv(10)
        seen["shared"] = server.shares_memory_with(req)
        server.reply(req, value=big)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    client = rpc.Client(server.endpoint)
    try:
        got = client.call("get", "w").value
        t.join(10)
        assert seen["shared"] and shm_payload.is_shared(got)
        np.testing.assert_array_equal(got, big)
    finally:
        client.close()
        server.close()
