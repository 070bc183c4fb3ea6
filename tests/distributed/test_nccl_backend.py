"""The NCCL backend (CuPy): skipped cleanly without CuPy and a GPU.

One GPU is enough for a single-rank ring on the device and for the check that refuses two ranks on
one GPU; the all-ops test across processes needs two GPUs (one rank per GPU). The file is also the
ranks' script (``python test_nccl_backend.py worker ...``)."""
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if __name__ == "__main__":
    sys.path.insert(0, ROOT)

import fluidist as fluid  # noqa: E402


def _gpu_count():
    try:
        import cupy
        from cupy.cuda import nccl  # noqa: F401
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


# ====================================================================== worker side
def worker(argv):
    import cupy
    from test_collective_ops import _check, _expected, _inputs, _startup
    from fluidist.distributed.collective import registry
    mode, rank, endpoints, device = argv[0], int(argv[1]), argv[2].split(","), int(argv[3])
    n = len(endpoints)
    place = fluid.CUDAPlace(device)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    exe.run(_startup(rank, endpoints, 2), scope=scope)
    comm = registry.get_communicator(0, place)
    assert comm.backend == "nccl" and comm.device_id == device
    done = 0
    for seed, (op_type, attrs, shape, dtype) in enumerate([
            ("c_allreduce_sum", {"ring_id": 0}, (7,), "float32"),
            ("c_allreduce_sum", {"ring_id": 1}, (3, 100001), "float16"),
            ("c_allreduce_max", {"ring_id": 0}, (5, 3), "int64"),
            ("c_allreduce_min", {"ring_id": 0}, (9,), "bool"),
            ("c_allreduce_prod", {"ring_id": 1}, (11,), "float64"),
            ("c_broadcast", {"ring_id": 1, "root": n - 1}, (4, 6), "int32"),
            ("c_allgather", {"ring_id": 0, "nranks": n}, (3, 2), "uint8"),
            ("c_reducescatter", {"ring_id": 1, "nranks": n}, (2 * n, 3), "float32")]):
        red = op_type.rsplit("_", 1)[-1]
        xs = [_inputs(r, shape, dtype, red, seed) for r in range(n)]
        main = fluid.Program()
        b = main.global_block()
        b.create_var(name="x", shape=list(shape), dtype=dtype)
        b.create_var(name="out", dtype=dtype)
        b.append_op("c_sync_calc_stream", inputs={"X": ["x"]}, outputs={"Out": ["x"]})
        b.append_op(op_type, inputs={"X": ["x"]}, outputs={"Out": ["out"]}, attrs=attrs)
        b.append_op("c_sync_comm_stream", inputs={"X": ["out"]}, outputs={"Out": ["out"]},
                    attrs={"ring_id": attrs["ring_id"]})
        got = exe.run(main, feed={"x": xs[rank]}, fetch_list=["out"], scope=scope)[0]
        assert isinstance(scope.vals["out"], cupy.ndarray), type(scope.vals["out"])   # stayed on the device
        assert scope.vals["out"].device.id == device
        _check(got, _expected(op_type, attrs, xs, rank, n), "%s %s%s" % (op_type, dtype, shape))
        done += 1
    # the Python API, on the calc stream and on the comm stream
    with cupy.cuda.Device(device):
        x = cupy.full((1000,), rank + 1.0, dtype=cupy.float32)
        y = comm.allreduce(x, "sum")
        z = comm.allreduce(x, "max", use_calc_stream=False)
        comm.sync_comm_stream()
        assert float(y[0]) == n * (n + 1) / 2 and float(z[0]) == n
        comm.barrier()
    print(json.dumps({"rank": rank, "cases": done}))


# ====================================================================== test side
import pytest  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(180),
              pytest.mark.skipif(_gpu_count() == 0, reason="needs CuPy with NCCL and a CUDA GPU")]


def _launch(tmp_path, name, devices, timeout=60):
    from test_collective_ops import free_ports
    eps = ",".join("127.0.0.1:%d" % p for p in free_ports(len(devices)))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + HERE + os.pathsep + os.environ.get("PYTHONPATH", ""),
               FLUIDIST_COLLECTIVE_TIMEOUT=str(timeout))
    procs = []
    for r, d in enumerate(devices):
        log = open(os.path.join(str(tmp_path), "%s-%d.log" % (name, r)), "w+")
        procs.append((r, subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker", name, str(r), eps,
                                           str(d)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                          start_new_session=True), log))
    return procs


def test_single_rank_ring_on_the_device():
    import cupy
    from fluidist.distributed.collective import registry
    from test_collective_ops import _startup
    place = fluid.CUDAPlace(0)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    exe.run(_startup(0, ["127.0.0.1:1"], 1), scope=scope)
    try:
        comm = registry.get_communicator(0, place)
        assert comm.backend == "nccl" and comm.nranks == 1
        with cupy.cuda.Device(0):
            x = cupy.arange(10, dtype=cupy.float32)
            np.testing.assert_array_equal(comm.allreduce(x, "sum").get(), np.arange(10))
            np.testing.assert_array_equal(comm.allgather(x).get(), np.arange(10))
            np.testing.assert_array_equal(comm.broadcast(x, 0).get(), np.arange(10))
            with pytest.raises(TypeError, match="NCCL works on device arrays"):
                comm.allreduce(np.arange(3, dtype=np.float32))
            with pytest.raises(TypeError, match="bool tensors support only the max and min"):
                comm.allreduce(cupy.zeros(3, dtype=bool), "sum")
            with pytest.raises(TypeError, match="NCCL has no dtype int16"):
                comm.allreduce(cupy.zeros(3, dtype=cupy.int16), "max")
    finally:
        registry.destroy(0)


def test_two_ranks_on_one_gpu_are_refused(tmp_path):
    procs = _launch(tmp_path, "same", [0, 0], timeout=30)
    from test_collective_ops import finish
    res = finish(procs, 120)
    for r in (0, 1):
        assert res[r][0] != 0
        assert "ranks 0 and 1 would both drive GPU" in res[r][1], res[r][1][-2000:]


@pytest.mark.skipif(_gpu_count() < 2, reason="needs two GPUs (one rank per GPU)")
def test_collective_ops_on_two_gpus(tmp_path):
    procs = _launch(tmp_path, "all", [0, 1])
    from test_collective_ops import finish
    t0 = time.monotonic()
    res = finish(procs, 150)
    for r in (0, 1):
        assert res[r][0] == 0, res[r][1][-3000:]
        assert json.loads(res[r][1].strip().splitlines()[-1])["cases"] == 8
    assert time.monotonic() - t0 < 150


if __name__ == "__main__":
    worker(sys.argv[2:])
