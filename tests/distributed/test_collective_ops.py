"""Collective ops through real Programs and the Executor, in separate processes on 127.0.0.1.

Each rank runs this file as a script (``python test_collective_ops.py worker ...``): a startup
program with ``c_gen_nccl_id`` + ``c_comm_init`` for two rings, then one small main program per
case (every c_* op, every relevant dtype, odd sizes), each result checked against NumPy on the inputs
of all ranks (every rank can compute them: they are seeded by rank). The test compares what the
ranks report, that the chosen transport was used (shared memory or ZeroMQ), that deadlines name the
missing rank, and that no shared-memory segment is left in /dev/shm.
"""
import glob
import hashlib
import itertools
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if __name__ == "__main__":
    sys.path.insert(0, ROOT)

import fluidist as fluid  # noqa: E402
from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: E402


def _shm_glob():
    """This job's collective segments in /dev/shm (their names carry the job secret's tag): never
    another test session's."""
    from fluidist.distributed import security
    from fluidist.distributed.collective.shm import SHM_DIR, SHM_PREFIX
    return os.path.join(SHM_DIR, "%s%s-*" % (SHM_PREFIX, security.secret_tag()))


# ====================================================================== worker side
def _inputs(rank, shape, dtype, op, seed):
    rng = np.random.RandomState(seed * 131 + rank)
    if dtype == "bool":
        return rng.rand(*shape) > 0.5
    if op == "prod":
        v = rng.randint(1, 3, size=shape) if np.dtype(dtype).kind in "iu" else rng.uniform(0.7, 1.4, shape)
        return v.astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return rng.randint(0, 40, size=shape).astype(dtype)
    return rng.uniform(-3, 3, shape).astype(dtype)


_UF = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def _expected(op_type, attrs, xs, rank, n):
    if op_type.startswith("c_allreduce_"):
        red = op_type[len("c_allreduce_"):]
        out = xs[0].copy()
        for x in xs[1:]:
            out = _UF[red](out, x)
        return out
    if op_type == "c_broadcast":
        return xs[attrs["root"]]
    if op_type == "c_allgather":
        return np.concatenate(xs, axis=0)
    if op_type == "c_reducescatter":
        total = xs[0].copy()
        for x in xs[1:]:
            total = total + x
        rows = xs[0].shape[0] // n
        return total[rank * rows:(rank + 1) * rows]
    raise ValueError(op_type)


def _check(got, want, what):
    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError("%s: got %s%s, want %s%s" % (what, got.dtype, got.shape, want.dtype, want.shape))
    if want.dtype.kind == "f":
        tol = {2: 2e-2, 4: 1e-5, 8: 1e-12}[want.dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _startup(rank, endpoints, nrings):
    startup = fluid.Program()
    block = startup.global_block()
    others = [e for i, e in enumerate(endpoints) if i != rank]
    for ring in range(nrings):
        idv = block.create_var(name="nccl_id_%d" % ring, persistable=True, type="RAW")
        block.append_op("c_gen_nccl_id", outputs={"Out": [idv.name]},
                        attrs={"rank": rank, "endpoint": endpoints[rank], "other_endpoints": others, "ring_id": ring})
        block.append_op("c_comm_init", inputs={"X": [idv.name]},
                        attrs={"nranks": len(endpoints), "rank": rank, "ring_id": ring})
    return startup


def _run_one(exe, scope, op_type, attrs, x, in_place=False):
    main = fluid.Program()
    block = main.global_block()
    block.create_var(name="x", shape=list(x.shape), dtype=x.dtype.name)
    out = "x" if in_place else "out"
    if not in_place:
        block.create_var(name="out", dtype=x.dtype.name)
    if in_place:   # the GradAllReduce pattern: sync calc, all-reduce in place, sync comm
        block.append_op("c_sync_calc_stream", inputs={"X": ["x"]}, outputs={"Out": ["x"]})
    block.append_op(op_type, inputs={"X": ["x"]}, outputs={"Out": [out]}, attrs=attrs)
    if in_place:
        block.append_op("c_sync_comm_stream", inputs={"X": ["x"]}, outputs={"Out": ["x"]},
                        attrs={"ring_id": attrs.get("ring_id", 0)})
    main.lint()
    return exe.run(main, feed={"x": x}, fetch_list=[out], scope=scope)[0]


def cases(n):
    """(op type, attrs, shape, dtype, in place) for an n-rank ring."""
    out = []
    shapes = [(1,), (7,), (3, 5), (70001,), (3, 200003)]     # odd sizes; 70001 and 3x200003 take the chunked path
    dts = ["float16", "float32", "float64", "int32", "int64", "uint8"]
    for shape in shapes:
        big = np.prod(shape) > 1000
        for dtype in dts + ["bool"]:
            if big and dtype not in ("float32", "float64", "bool"):
                continue
            reds = ["max", "min"] if dtype == "bool" else ["sum", "max", "min", "prod"]
            for red in reds:
                if big and red in ("min", "prod"):
                    continue
                out.append(("c_allreduce_" + red, {"ring_id": 0}, shape, dtype, False))
            out.append(("c_broadcast", {"ring_id": 1, "root": n - 1}, shape, dtype, False))
            out.append(("c_allgather", {"ring_id": 0, "nranks": n}, shape, dtype, False))
    for shape in [(6,), (6, 5), (6 * 20001,)]:
        for dtype in dts:
            if np.prod(shape) > 1000 and dtype != "float32":
                continue
            out.append(("c_reducescatter", {"ring_id": 1, "nranks": n}, shape, dtype, False))
    out.append(("c_broadcast", {"ring_id": 0, "root": 0}, (4, 3), "float32", False))
    for shape in [(5,), (3, 100001)]:
        out.append(("c_allreduce_sum", {"ring_id": 1}, shape, "float32", True))
    return out


def worker(argv):
    mode, rank, endpoints = argv[0], int(argv[1]), argv[2].split(",")
    n = len(endpoints)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    from fluidist.distributed.collective import registry
    if mode == "nccl2":
        startup = fluid.Program()
        sb = startup.global_block()
        sb.create_var(name="NCCLID", persistable=True, type="RAW")
        sb.create_var(name="NCCLID_1", persistable=True, type="RAW")
        sb.append_op("gen_nccl_id", outputs={"NCCLID": ["NCCLID"]},
                     attrs={"trainers": endpoints, "trainer_id": rank, "nccl_comm_num": 2})
        exe.run(startup, scope=scope)
        comms = registry.init_comms_from_nccl_id(scope, fluid.CPUPlace(), n, rank, 2)
        again = registry.init_comms_from_nccl_id(scope, fluid.CPUPlace(), n, rank, 2)
        assert [c.ring_id for c in comms] == [0, 1] and again == comms, (comms, again)
        digest = hashlib.sha1()
        for ring in (0, 1):
            xs = [_inputs(r, (9, 2), "float32", "sum", ring) for r in range(n)]
            got = _run_one(exe, scope, "c_allreduce_sum", {"ring_id": ring}, xs[rank])
            _check(got, _expected("c_allreduce_sum", {}, xs, rank, n), "nccl2 ring %d" % ring)
            digest.update(got.tobytes())
        # the Python API the data-parallel runner uses
        got = comms[0].allreduce(np.full(3, rank + 1.0), "sum")
        assert got.tolist() == [n * (n + 1) / 2] * 3, got
        print(json.dumps({"rank": rank, "cases": 3, "digest": digest.hexdigest(), "transport": comms[0].transport}))
        return
    exe.run(_startup(rank, endpoints, 2), scope=scope)
    comm = registry.get_communicator(0)
    if mode == "stall" and rank == 1:
        time.sleep(60)
        return
    if mode == "die" and rank == 1:
        os._exit(3)
    if mode in ("stall", "die"):
        _run_one(exe, scope, "c_allreduce_sum", {"ring_id": 0}, np.ones(100, np.float32))
        return
    if mode == "loop":     # all-reduces until killed (test_liveness stops or kills a rank meanwhile)
        end = time.monotonic() + 300
        for i in itertools.count():
            _run_one(exe, scope, "c_allreduce_sum", {"ring_id": 0}, np.ones(1000, np.float32))
            if i == 0:
                print("ready", flush=True)
            if time.monotonic() > end:
                return
            time.sleep(0.01)
    if mode == "pause":    # rank 1 pauses (alive) between two all-reduces; the others wait for it
        for i in range(3):
            got = _run_one(exe, scope, "c_allreduce_sum", {"ring_id": 0}, np.ones(10, np.float32))
            assert got.tolist() == [n] * 10, got
            if i == 0 and rank == 1:
                time.sleep(float(os.environ.get("PAUSE_SECONDS", "30")))
        print(json.dumps({"rank": rank, "paused": rank == 1}))
        return
    digest = hashlib.sha1()
    todo = cases(n)
    for seed, (op_type, attrs, shape, dtype, in_place) in enumerate(todo):
        red = op_type.rsplit("_", 1)[-1]
        xs = [_inputs(r, shape, dtype, red, seed) for r in range(n)]
        got = _run_one(exe, scope, op_type, attrs, xs[rank], in_place)
        want = _expected(op_type, attrs, xs, rank, n)
        _check(got, want, "%s %s %s%s" % (op_type, attrs, dtype, shape))
        if op_type != "c_reducescatter":   # every rank must end with the same bits
            digest.update(got.tobytes())
    # a barrier op, and the ring still agrees afterwards
    main = fluid.Program()
    main.global_block().append_op("barrier", attrs={"ring_id": 1})
    exe.run(main, scope=scope)
    print(json.dumps({"rank": rank, "cases": len(todo), "digest": digest.hexdigest(), "transport": comm.transport}))


# ====================================================================== test side


def launch(tmp_path, mode, n, transport="auto", timeout=None, ranks=None):
    eps = ",".join("127.0.0.1:%d" % p for p in free_ports(n))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               FLUIDIST_COLLECTIVE_TRANSPORT=transport, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if timeout is not None:
        env["FLUIDIST_COLLECTIVE_TIMEOUT"] = str(timeout)
    procs = []
    for r in (range(n) if ranks is None else ranks):
        log = open(os.path.join(str(tmp_path), "%s-%d.log" % (mode, r)), "w+")
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", mode, str(r), eps],
                             stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        procs.append((r, p, log))
    return eps.split(","), procs


def finish(procs, limit=60):
    """{rank: (exit code, output)}; kills whatever is still running after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    out = {}
    for r, p, log in procs:
        try:
            code = p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            code = None
        log.seek(0)
        out[r] = (code, log.read())
        log.close()
    return out


def _reports(res):
    reports = {}
    for r, (code, text) in res.items():
        assert code == 0, "rank %d exited with %s:\n%s" % (r, code, text[-3000:])
        reports[r] = json.loads(text.strip().splitlines()[-1])
    return reports


import pytest  # noqa: E402

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def no_segment_left():
    before = set(glob.glob(_shm_glob()))
    yield
    assert set(glob.glob(_shm_glob())) - before == set(), "shared-memory segments left in /dev/shm"


@pytest.mark.parametrize("n,transport", [(2, "shm"), (3, "shm"), (2, "zmq"), (3, "zmq")])
def test_every_collective_op_across_processes(tmp_path, no_segment_left, n, transport):
    _, procs = launch(tmp_path, "all", n, transport, timeout=40)
    reports = _reports(finish(procs, 90))
    assert {rep["transport"] for rep in reports.values()} == {transport}
    assert all(rep["cases"] == len(cases(n)) > 100 for rep in reports.values())
    # all-reduce, broadcast and all-gather results are bit-identical on every rank
    assert len({rep["digest"] for rep in reports.values()}) == 1


def test_nccl2_gen_nccl_id_and_init_comms_from_nccl_id(tmp_path, no_segment_left):
    _, procs = launch(tmp_path, "nccl2", 3, "auto", timeout=30)
    reports = _reports(finish(procs, 60))
    assert len({rep["digest"] for rep in reports.values()}) == 1
    assert reports[0]["transport"] == "shm"


def test_missing_rank_at_setup_names_its_endpoint(tmp_path, no_segment_left):
    eps, procs = launch(tmp_path, "all", 3, timeout=2, ranks=[0, 1])
    res = finish(procs, 40)
    assert res[0][0] != 0 and res[1][0] != 0
    assert "endpoint %s did not take the id within 2 s" % eps[2] in res[0][1], res[0][1][-2000:]
    assert "rank 0 of ring 0 did not answer the rendezvous" in res[1][1], res[1][1][-2000:]


@pytest.mark.parametrize("transport", ["shm", "zmq"])
def test_stalled_rank_deadline_names_it(tmp_path, no_segment_left, transport):
    from load_aware import scaled   # (this file also runs as the workers' script, without tests/ on its path)
    _, procs = launch(tmp_path, "stall", 3, transport, timeout=3)
    t0 = time.monotonic()
    res = finish([p for p in procs if p[0] != 1], scaled(40))
    assert time.monotonic() - t0 < scaled(30)
    for r in (0, 2):
        assert res[r][0] != 0
    text = res[0][1] + res[2][1]
    assert "rank 1 of ring 0 did not reach allreduce #1 within 3 s" in text, text[-3000:]
    finish([p for p in procs if p[0] == 1], 0.1)


@pytest.mark.parametrize("transport", ["shm", "zmq"])
def test_dead_rank_is_noticed_before_the_deadline(tmp_path, no_segment_left, transport):
    from load_aware import scaled
    _, procs = launch(tmp_path, "die", 3, transport, timeout=int(scaled(60)))
    t0 = time.monotonic()
    res = finish(procs, scaled(50))
    assert time.monotonic() - t0 < scaled(30)
    assert res[1][0] == 3
    for r in (0, 2):
        assert res[r][0] != 0, res[r][1]
        assert "rank 1 (pid %d) of ring 0 exited before finishing allreduce #1" % procs[1][1].pid in res[r][1], \
            res[r][1][-2000:]


def test_c_comm_init_all_threads_in_one_process():
    """single_process_multi_thread on CPU places: one communicator per thread, found through
    thread_rank; the all-reduce runs through each thread's own Executor and scope."""
    from fluidist.distributed.collective import registry
    startup = fluid.Program()
    startup.global_block().append_op("c_comm_init_all", attrs={"ring_id": 5, "devices": [0, 1, 2]})
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=fluid.Scope())
    try:
        xs = [_inputs(r, (4, 1001), "float32", "sum", 0) for r in range(3)]
        outs, errs = [None] * 3, []

        def run(r):
            try:
                with registry.thread_rank(r):
                    outs[r] = _run_one(fluid.Executor(fluid.CPUPlace()), fluid.Scope(), "c_allreduce_sum",
                                       {"ring_id": 5}, xs[r])
            except Exception as e:
                errs.append(e)
        ts = [threading.Thread(target=run, args=(r,)) for r in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert not errs, errs
        for r in range(3):
            _check(outs[r], xs[0] + xs[1] + xs[2], "thread %d" % r)
        with pytest.raises(RuntimeError, match="call it from a thread bound with"):
            registry.get_communicator(5)
    finally:
        registry.destroy(5)


def test_ops_without_a_ring_and_bad_inputs_explain_themselves():
    from fluidist.core.tensor import SelectedRows
    exe = fluid.Executor(fluid.CPUPlace())
    with pytest.raises(RuntimeError, match="no communicator for ring_id 7"):
        _run_one(exe, fluid.Scope(), "c_allreduce_sum", {"ring_id": 7}, np.ones(3, np.float32))
    main = fluid.Program()
    b = main.global_block()
    b.create_var(name="x", shape=[6, 2], dtype="float32")
    b.create_var(name="out", dtype="float32")
    with pytest.raises(ValueError, match=r"dim 0 of X's shape \[6, 2\] is not divisible by nranks 4"):
        b.append_op("c_reducescatter", inputs={"X": ["x"]}, outputs={"Out": ["out"]}, attrs={"nranks": 4})
    op = b.append_op("c_allgather", inputs={"X": ["x"]}, outputs={"Out": ["out"]}, attrs={"nranks": 3})
    assert b.var("out").shape == (18, 2) and op.attr("ring_id") == 0
    # a c_comm_init fed with something that is not an id
    prog = fluid.Program()
    pb = prog.global_block()
    pb.create_var(name="idv", type="RAW", persistable=True)
    pb.append_op("c_comm_init", inputs={"X": ["idv"]}, attrs={"nranks": 2, "rank": 0})
    scope = fluid.Scope()
    scope.var("idv").set_value(SelectedRows())
    with pytest.raises(TypeError, match="input 'idv' should hold the id written by c_gen_nccl_id"):
        exe.run(prog, scope=scope)


def test_single_rank_ring_through_ops():
    """A ring of one rank (no other endpoints): every collective returns its input."""
    from fluidist.distributed.collective import registry
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(_startup(0, ["127.0.0.1:%d" % free_ports(1)[0]], 1), scope=scope)
    try:
        assert registry.get_communicator(0).transport == "solo"
        x = _inputs(0, (4, 3), "float32", "sum", 0)
        for op_type, attrs in [("c_allreduce_prod", {}), ("c_broadcast", {"root": 0}), ("c_allgather", {"nranks": 1}),
                               ("c_reducescatter", {"nranks": 1})]:
            np.testing.assert_array_equal(_run_one(exe, scope, op_type, dict(attrs, ring_id=0), x), x)
    finally:
        registry.destroy(0)


def test_sync_ops_on_cpu_pass_values_through():
    exe = fluid.Executor(fluid.CPUPlace())
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    main = fluid.Program()
    b = main.global_block()
    b.create_var(name="x", shape=[2, 3], dtype="float32")
    b.append_op("c_sync_calc_stream", inputs={"X": ["x"]}, outputs={"Out": ["x"]})
    b.append_op("c_sync_comm_stream", inputs={"X": ["x"]}, outputs={"Out": ["x"]}, attrs={"ring_id": 3})
    got = exe.run(main, feed={"x": x}, fetch_list=["x"], scope=fluid.Scope())[0]
    np.testing.assert_array_equal(got, x)


if __name__ == "__main__":
    worker(sys.argv[2:])
