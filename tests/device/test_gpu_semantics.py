"""The stand-in's opt-in GPU semantics (``fluidist.device.standin.gpu_semantics``): an integer index
out of range wraps around, and writes through repeated indices land in an order no one chose; and
the kernels that promise an order where indices repeat (``scatter`` and ``gather``'s gradient with
``overwrite=True``: the last of repeated indices wins) keep it under them, as they must on a GPU."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import standin
from fluidist.device.standin import StandinPlace, xp

SEEDS = range(8)


def _dev(a):
    with StandinPlace().device_context():
        return xp.asarray(np.asarray(a))


def test_an_index_out_of_range_raises_by_default_and_wraps_under_gpu_semantics():
    a = _dev(np.arange(4.0))
    idx = _dev(np.array([5, -6, 1]))
    with standin.gpu_semantics(enabled=False):      # the default (a run may turn them on for the process)
        for gather in (lambda: a[idx], lambda: xp.take(a, idx), lambda: a.take(idx)):
            with pytest.raises(IndexError):
                gather()
    with standin.gpu_semantics():
        np.testing.assert_array_equal(a[idx].get(), [1.0, 2.0, 1.0])     # 5 % 4, -6 % 4, 1
        np.testing.assert_array_equal(xp.take(a, idx).get(), [1.0, 2.0, 1.0])
        np.testing.assert_array_equal(a.take(idx).get(), [1.0, 2.0, 1.0])
        b = _dev(np.zeros(4))
        b[idx] = _dev(np.array([7.0, 8.0, 9.0]))
        assert b.get()[2] == 8.0 and b.get()[1] in (7.0, 9.0)
        c = _dev(np.zeros(4))
        c.put(_dev(np.array([6])), _dev(np.array([3.0])))
        np.testing.assert_array_equal(c.get(), [0.0, 0.0, 3.0, 0.0])


def test_put_under_gpu_semantics_follows_cupys_kernels_for_each_mode():
    """CuPy's ``_ndarray_put``: an empty ``values`` writes nothing; "wrap" (the default) takes indices
    modulo the size, "clip" clips them (-1 to 0, not to the last element); "raise" writes the indices
    in range and then raises IndexError for the others; another mode is a ValueError."""
    with standin.gpu_semantics():
        a = _dev(np.arange(4.0))
        a.put(_dev(np.array([0, 1])), _dev(np.zeros(0)), mode="raise")
        a.put(_dev(np.array([0])), _dev(np.zeros(0)))
        np.testing.assert_array_equal(a.get(), [0.0, 1.0, 2.0, 3.0])
        a.put(_dev(np.array([-1, 9])), _dev(np.array([7.0, 8.0])), mode="clip")
        np.testing.assert_array_equal(a.get(), [7.0, 1.0, 2.0, 8.0])
        a.put(_dev(np.array([-1, 5])), _dev(np.array([5.0, 6.0])))
        np.testing.assert_array_equal(a.get(), [7.0, 6.0, 2.0, 5.0])
        with pytest.raises(IndexError, match="invalid entry in indices array"):
            a.put(_dev(np.array([2, 4, -4])), _dev(np.array([10.0, 11.0, 12.0])), mode="raise")
        np.testing.assert_array_equal(a.get(), [12.0, 6.0, 10.0, 5.0])
        with pytest.raises(ValueError, match="clipmode"):
            a.put(_dev(np.array([0])), _dev(np.array([1.0])), mode="bogus")


def test_repeated_writes_land_in_index_order_by_default_and_in_no_order_under_gpu_semantics():
    idx = np.zeros(16, np.int64)
    values = np.arange(1.0, 17.0)
    with standin.gpu_semantics(enabled=False):
        a = _dev(np.zeros(2))
        a[_dev(idx)] = _dev(values)
        assert a.get()[0] == 16.0                      # NumPy's order: the last wins
    winners = set()
    for seed in SEEDS:
        with standin.gpu_semantics(seed=seed):
            a = _dev(np.zeros(2))
            a[_dev(idx)] = _dev(values)
            winners.add(float(a.get()[0]))
    assert winners <= set(values) and len(winners) > 1, winners


def _scatter_program(n, width):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [n, width], "float32")
        ids = fluid.data("ids", [None], "int64")
        upd = fluid.data("upd", [None, width], "float32")
        out = fluid.layers.scatter(x, ids, upd, overwrite=True)
    return main, out


def _last_wins(x, ids, upd):
    out = x.copy()
    for i, row in enumerate(ids):       # in index order: the last of repeated ids wins
        out[row] = upd[i]
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_scatter_with_overwrite_keeps_the_last_of_repeated_ids_under_gpu_semantics(seed):
    rng = np.random.RandomState(100 + seed)
    n, width = 6, 3
    x = rng.rand(n, width).astype("float32")
    ids = np.array([1, 4, 1, 1, 0, 4, 2, 1], "int64")
    upd = rng.rand(len(ids), width).astype("float32")
    main, out = _scatter_program(n, width)
    exe = fluid.Executor(StandinPlace())
    with standin.gpu_semantics(seed=seed):
        got, = exe.run(main, feed={"x": x, "ids": ids, "upd": upd}, fetch_list=[out])
    np.testing.assert_array_equal(got, _last_wins(x, ids, upd))


@pytest.mark.parametrize("seed", SEEDS)
def test_gather_gradient_with_overwrite_keeps_the_last_rows_gradient_under_gpu_semantics(seed):
    """Paddle's gather_grad with ``overwrite``: a row gathered several times gets the gradient of
    its last gather only."""
    rng = np.random.RandomState(200 + seed)
    n, width = 5, 2
    ids = np.array([3, 0, 3, 3, 1, 0], "int64")
    weights = rng.rand(len(ids), width).astype("float32")     # dOut: a different row for each gather
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [n, width], "float32")
        x.stop_gradient = False
        index = fluid.data("ids", [len(ids)], "int64")
        w = fluid.data("w", [len(ids), width], "float32")
        picked = fluid.layers.gather(x, index, overwrite=True)
        loss = fluid.layers.reduce_sum(picked * w)
        dx, = fluid.gradients([loss], [x])
    exe = fluid.Executor(StandinPlace())
    feed = {"x": rng.rand(n, width).astype("float32"), "ids": ids, "w": weights}
    with standin.gpu_semantics(seed=seed):
        got, = exe.run(main, feed=feed, fetch_list=[dx])
    np.testing.assert_array_equal(got, _last_wins(np.zeros((n, width), "float32"), ids, weights))
