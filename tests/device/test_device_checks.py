"""Ids, labels and indices out of range: the host names them at once (its errors unchanged); a device
place checks them without waiting for itself (no read back in a training step but the fetch), and an
id out of range still shows, as NaN in the fetched loss (fluidist/ops/device_ids.py).

Each family's training step runs on a stand-in place: its feeds in, its loss out, one
synchronisation (the fetch); then a batch with a bad id gives a NaN loss there and, on the CPU, the
kernel's own error."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import places
from fluidist.device.standin import StandinPlace, count_transfers

pytestmark = pytest.mark.timeout(120)
N = 16


def _program(body):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8], "float32")
        out = body(fluid.layers.fc(x, 6))
        loss = fluid.layers.mean(out)
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def _ids(name, shape, dtype="int64"):
    return fluid.data(name, shape, dtype)


def lookup():
    def body(h):
        e = fluid.layers.embedding(_ids("ids", [None, 1]), [20, 6])
        return e * h
    return body, {"ids": np.arange(N).reshape(N, 1) % 20}, ("ids", 20), r"id 20 in Ids 'ids' is out of range"


def gather():
    return (lambda h: fluid.layers.gather(h, _ids("idx", [None])), {"idx": np.arange(5)[::-1].copy()},
            ("idx", N), r"index 16 in 'idx' is out of range \[0, 16\)")


def gather_nd():
    return (lambda h: fluid.layers.gather_nd(h, _ids("idx", [None, 2])), {"idx": np.array([[0, 1], [15, 5], [3, 3]])},
            ("idx", 6), r"coordinate out of range for axis 1 of size 6")


def scatter():
    def body(h):
        return fluid.layers.scatter(h, _ids("idx", [None]), fluid.layers.fc(fluid.data("u", [None, 3], "float32"), 6))
    return body, {"idx": np.array([2, 7, 2]), "u": np.ones((3, 3), "float32")}, ("idx", N), \
        r"id 16 in 'idx' is out of range \[0, 16\)"


def scatter_nd_add():
    def body(h):
        upd = fluid.layers.fc(fluid.data("u", [None, 3], "float32"), 6)
        return fluid.layers.scatter_nd_add(h, _ids("idx", [None, 1]), upd)
    return body, {"idx": np.array([[2], [7], [2]]), "u": np.ones((3, 3), "float32")}, ("idx", N), \
        r"coordinate out of range for axis 0 of size 16"


def index_select():
    return (lambda h: fluid.layers.index_select(h, _ids("idx", [None]), dim=1), {"idx": np.array([5, 0, 5])},
            ("idx", -1), r"index -1 in 'idx' is out of range \[0, 6\)")


def index_sample():
    return (lambda h: fluid.layers.index_sample(h, _ids("idx", [None, 2])), {"idx": np.tile([[1, 4]], (N, 1))},
            ("idx", 6), r"index 6 in 'idx' is out of range \[0, 6\)")


def one_hot():
    return (lambda h: fluid.layers.fc(fluid.layers.one_hot(_ids("ids", [None, 1]), 5), 6) * h,
            {"ids": np.arange(N).reshape(N, 1) % 5}, ("ids", 5), r"id 5 in X 'ids' is out of range for depth 5")


def multiplex():
    def body(h):
        return fluid.layers.multiplex([h, h * 2.0], _ids("idx", [None, 1], "int32"))
    return body, {"idx": (np.arange(N) % 2).reshape(N, 1).astype("int32")}, ("idx", 2), \
        r"id 2 in 'idx' is out of range \[0, 2\)"


def bpr_loss():
    return (lambda h: fluid.layers.bpr_loss(h, _ids("label", [None, 1])), {"label": np.arange(N).reshape(N, 1) % 6},
            ("label", 6), r"a label in Label 'label' is out of range for 6 classes")


def center_loss():
    def body(h):
        return fluid.layers.center_loss(h, _ids("label", [None, 1]), 4, 0.1, fluid.ParamAttr(name="centres"))
    return body, {"label": np.arange(N).reshape(N, 1) % 4}, ("label", 4), r"label 4 in Label 'label' is out of range"


def cross_entropy():
    """``layers.cross_entropy`` (the cross_entropy2 op), labels 5 ignored (``ignore_index`` among the
    classes: an ignored row and a row out of range are told apart on the device)."""
    def body(h):
        return fluid.layers.cross_entropy(fluid.layers.softmax(h), _ids("label", [None, 1]), ignore_index=5)
    return body, {"label": np.arange(N).reshape(N, 1) % 6}, ("label", 6), \
        r"label 6 in Label 'label' is out of range for 6 classes"


FAMILIES = [lookup, gather, gather_nd, scatter, scatter_nd_add, index_select, index_sample, one_hot, multiplex,
            bpr_loss, center_loss, cross_entropy]


def _feed(ids, rng):
    feed = {"x": rng.rand(N, 8).astype("float32")}
    feed.update({k: np.asarray(v) for k, v in ids.items()})
    return feed


def _with_bad_id(feed, slot, bad):
    feed = dict(feed)
    ids = feed[slot].copy()
    ids.reshape(-1)[1] = bad
    feed[slot] = ids
    return feed


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_a_device_step_checks_ids_without_a_sync_and_still_reports_a_bad_one(family):
    body, ids, (slot, bad), cpu_error = family()
    main, startup, loss = _program(body)
    rng = np.random.RandomState(0)
    feeds = [_feed(ids, rng) for _ in range(3)]
    exe, scope = fluid.Executor(StandinPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for feed in feeds[:2]:      # the first step plans the program
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    with count_transfers() as log:
        good = exe.run(main, feed=feeds[2], fetch_list=[loss], scope=scope)[0]
    assert (len(log.h2d), len(log.d2h), len(log.syncs)) == (len(feeds[2]), 1, 1), str(log)
    bad_feed = _with_bad_id(feeds[2], slot, bad)
    with count_transfers() as log:
        reported = exe.run(main, feed=bad_feed, fetch_list=[loss], scope=scope)[0]
    assert len(log.syncs) == 1, str(log)
    assert np.isnan(reported).all(), reported

    cpu, cpu_scope = fluid.Executor(places.CPUPlace()), fluid.Scope()
    cpu.run(startup, scope=cpu_scope)
    on_cpu = [cpu.run(main, feed=feed, fetch_list=[loss], scope=cpu_scope)[0] for feed in feeds]
    np.testing.assert_allclose(on_cpu[2], good, rtol=1e-5)
    with pytest.raises(ValueError, match=cpu_error):
        cpu.run(main, feed=bad_feed, fetch_list=[loss], scope=cpu_scope)


def test_an_integer_result_has_no_nan_so_a_device_checks_its_ids_on_the_host():
    """A gather of an integer tensor cannot show a bad id as NaN: there the device reads the ids'
    bounds back (two waits before the fetch's) and raises the host's error."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        table = fluid.data("table", [None], "int64")
        out = fluid.layers.gather(table, _ids("idx", [None]))
    exe = fluid.Executor(StandinPlace())
    feed = {"table": np.arange(10, 20), "idx": np.array([3, 1])}
    with count_transfers() as log:
        got = exe.run(main, feed=feed, fetch_list=[out])[0]
    assert got.tolist() == [13, 11] and len(log.syncs) == 3, str(log)
    with pytest.raises(ValueError, match=r"index 10 in 'idx' is out of range \[0, 10\)"):
        exe.run(main, feed=dict(feed, idx=np.array([10, 1])), fetch_list=[out])


def test_gather_nd_marks_the_slices_of_bad_coordinates_in_indexs_own_shape():
    """An Index of several leading axes (as beam search's decoders build it): each bad coordinate
    tuple makes its own output slice NaN on a device; the others are the CPU's."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [4, 5], "float32")
        idx = fluid.data("idx", [2, 3, 1], "int64")
        out = fluid.layers.gather_nd(x, idx)
    feed = {"x": np.arange(20, dtype="float32").reshape(4, 5), "idx": np.array([[[0], [3], [1]], [[2], [0], [1]]])}
    cpu, = fluid.Executor(places.CPUPlace()).run(main, feed=feed, fetch_list=[out])
    feed["idx"] = feed["idx"].copy()
    feed["idx"][1, 1, 0] = 9
    dev, = fluid.Executor(StandinPlace(0)).run(main, feed=feed, fetch_list=[out])
    assert dev.shape == (2, 3, 5)
    assert np.isnan(dev[1, 1]).all() and not np.isnan(np.delete(dev.reshape(6, 5), 4, axis=0)).any()
    np.testing.assert_array_equal(np.delete(dev.reshape(6, 5), 4, axis=0), np.delete(cpu.reshape(6, 5), 4, axis=0))
