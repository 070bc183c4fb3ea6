"""A program that all-reduces its own gradients (``fluid.layers.collective._allreduce``, Paddle's
"reduce layer"), run by ``with_data_parallel`` over two worker processes on the CPU, trains exactly
as one process on the whole batch: ``with_data_parallel`` scales the loss gradient by 1/2 and leaves
those gradients to the program's own all-reduce (not summed twice)."""
import numpy as np
import pytest

from cluster import Cluster, free_ports

pytestmark = pytest.mark.timeout(120)


def test_reduce_layer_workers_equal_the_local_run(tmp_path):
    eps = ",".join("127.0.0.1:%d" % p for p in free_ports(2))
    with Cluster(tmp_path) as c:
        c.start("local", "reduce_layer_child.py", ["--local", "--out", tmp_path / "local.npz"])
        for k in range(2):
            c.start("w%d" % k, "reduce_layer_child.py", ["--endpoints", eps, "--trainer_id", k,
                                                         "--out", tmp_path / ("w%d.npz" % k)])
        c.check(timeout=100)
    local = np.load(str(tmp_path / "local.npz"))
    workers = [np.load(str(tmp_path / ("w%d.npz" % k))) for k in range(2)]
    for step in range(4):
        mean = (workers[0]["loss_%d" % step] + workers[1]["loss_%d" % step]) / 2
        np.testing.assert_allclose(mean, local["loss_%d" % step], rtol=1e-5, err_msg="step %d" % step)
    for name in ("w1", "b1", "w2", "b2"):
        for w in workers:
            np.testing.assert_allclose(w[name], local[name], rtol=1e-5, atol=1e-6, err_msg=name)
