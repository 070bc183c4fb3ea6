"""Training steps through kernels that once selected with a boolean mask on the device (CuPy reads
a mask's count back, a synchronisation): an embedding with ``padding_idx`` and a max
``sequence_pool`` over a batch with an empty sequence, ``max_pool2d_with_index``, ``one_hot`` with
ids out of range. On a stand-in place each step waits for the device once, for its fetch, and its
numbers are the CPU's, bit for bit.
"""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import places
from fluidist.device.standin import StandinPlace, count_transfers

pytestmark = pytest.mark.timeout(120)


def _embedding_max_pool():
    ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
    e = fluid.embedding(ids, [10, 4], padding_idx=3)
    return fluid.layers.mean(fluid.layers.fc(fluid.layers.sequence_pool(e, "max"), 1))


def _pool_with_index():
    x = fluid.data("x", [None, 2, 5, 5], "float32")
    out, _ = fluid.layers.adaptive_pool2d(fluid.layers.conv2d(x, 2, 1), [2, 2], pool_type="max",
                                          require_index=True)
    return fluid.layers.mean(out)


def _one_hot():
    x = fluid.data("x", [None, 1], "int64")
    f = fluid.data("f", [None, 5], "float32")
    hot = fluid.layers.reshape(fluid.one_hot(x, 5, allow_out_of_range=True), [-1, 5])
    return fluid.layers.mean(fluid.layers.fc(f, 5) * hot)


def _feed(model, place):
    rng = np.random.RandomState(0)
    if model is _embedding_max_pool:      # the middle sequence is empty; id 3 is the padding id
        return {"ids": fluid.create_lod_tensor(np.array([[1], [3], [3], [9], [0]], np.int64), [[2, 0, 3]], place)}
    if model is _pool_with_index:
        return {"x": rng.randn(2, 2, 5, 5).astype("float32")}
    return {"x": np.array([[0], [4], [7], [-1]], np.int64), "f": rng.randn(4, 5).astype("float32")}


def _losses(model, place, log_last=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = model()
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(place)
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    losses = [exe.run(main, feed=_feed(model, place), fetch_list=[loss], scope=scope)[0] for _ in range(2)]
    with count_transfers() as log:
        losses.append(exe.run(main, feed=_feed(model, place), fetch_list=[loss], scope=scope)[0])
    return losses, log


@pytest.mark.parametrize("model", [_embedding_max_pool, _pool_with_index, _one_hot],
                         ids=["embedding-padding-sequence-max", "max-pool-with-index", "one-hot-out-of-range"])
def test_a_step_waits_for_its_fetch_only(model):
    on_device, log = _losses(model, StandinPlace())
    assert [(e.direction, e.what) for e in log.syncs] == [("d2h", "get")], str(log)
    on_cpu, _ = _losses(model, places.CPUPlace())
    for a, b in zip(on_device, on_cpu):
        assert a.tobytes() == b.tobytes(), (a, b)
