"""The stand-in device refuses, counts and places as CuPy 14.1 does, in the cases a GPU run would
hit that NumPy never shows: each test names the rule of CuPy's source (``cupy/_core``) it checks.
"""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.device.places import place_of
from fluidist.device.standin_cuda import DEVICE_COUNT
from fluidist.device.standin import StandinPlace, count_transfers, xp

pytestmark = pytest.mark.timeout(60)


def dev(a):
    return xp.asarray(np.asarray(a))


def test_a_host_value_through_a_basic_index_must_be_a_scalar():
    """CuPy, ``_scatter_op`` with a basic index (slices, integers, ``...``): a value that is not a
    device array is handed to ``fill``, which raises ValueError for a non-scalar host array (and a
    list): host data never enters a device array unnoticed. Scalars, 0-d host arrays and device
    arrays are fine."""
    a = dev(np.zeros(4, np.float32))
    for host in (np.ones(2, np.float32), [1.0, 2.0], np.ones((1, 2))):
        with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
            a[0:2] = host
    with pytest.raises(ValueError, match="non-scalar"):
        a[...] = np.arange(4.0)
    with pytest.raises(ValueError, match="non-scalar cupy.ndarray"):
        a.fill(dev([1.0, 2.0]))
    a[0:2] = 3
    a[2] = np.float32(4)
    a[3:] = np.array(5.0)
    assert a.tolist() == [3.0, 3.0, 4.0, 5.0]
    a[1:3] = dev([7.0, 8.0])
    assert a.tolist() == [3.0, 7.0, 8.0, 5.0]


def test_fill_with_a_device_value_reads_it_back():
    """CuPy's ``fill`` tests ``value == 0`` on the host (a memset for zero): a device value costs a
    read back, where ``full`` (a copy on the device) costs none. A real H200 run counted it in
    ``mean_grad`` before the stand-in did."""
    a = dev(np.zeros(4, np.float32))
    v = dev(np.float32(2.5)).reshape(())
    with count_transfers() as log:
        a.fill(v)
    assert len(log.d2h) == 1 and "value == 0" in str(log.d2h[0])
    with count_transfers() as log:
        b = xp.full((4,), v, dtype=np.float32)
        a.fill(3)
    assert log.d2h == [] and log.syncs == []
    assert b.tolist() == [2.5] * 4 and a.tolist() == [3.0] * 4


def test_set_copies_into_a_contiguous_array_only():
    """CuPy, ``ndarray.set``: only a ``numpy.ndarray`` (TypeError otherwise) of the same dtype
    (TypeError) and shape (ValueError), into a C- or F-contiguous array (RuntimeError otherwise)."""
    a = dev(np.zeros((3, 4), np.float32))
    with pytest.raises(RuntimeError, match="non-contiguous"):
        a[:, 1:3].set(np.ones((3, 2), np.float32))
    with pytest.raises(TypeError):
        a.set(np.ones((3, 4), np.float64))
    with pytest.raises(TypeError):
        a.set([[0.0] * 4] * 3)
    with pytest.raises(ValueError):
        a.set(np.ones((4, 3), np.float32))
    a.T.set(np.arange(12, dtype=np.float32).reshape(4, 3))      # F-contiguous: accepted
    assert a.get()[0].tolist() == [0.0, 3.0, 6.0, 9.0]
    a[1].set(np.full(4, 2, np.float32))                          # a contiguous row view
    assert a.get()[1].tolist() == [2.0] * 4


def test_kernels_refuse_arrays_of_another_device():
    """CuPy, ``_kernel._check_peer_access``: a kernel launched on the current device given an array
    of another device raises ValueError ("The device where the array resides ... is different
    from the current device") unless the GPUs have peer access; the stand-in always refuses.
    Reading one to the host, views of it and a copy onto the current device (``asarray``) are
    allowed, as in CuPy."""
    with xp.cuda.Device(1):
        b = dev([1.0, 2.0])
    assert b.device.id == 1 and b.data.device_id == 1
    a = dev([1.0, 1.0])
    refused = [lambda: a + b, lambda: b * 2, lambda: xp.exp(b), lambda: xp.concatenate([a, b]),
               lambda: b.sum(), lambda: a.__setitem__(slice(None), b), lambda: b.fill(0),
               lambda: b[dev([0])], lambda: xp.add.at(a, dev([0]), b[0:1])]
    for call in refused:
        with pytest.raises(ValueError, match=r"resides \(1\) is different from the current device \(0\)"):
            call()
    assert b.get().tolist() == [1.0, 2.0] and b.reshape(2, 1).device.id == 1 and b[1:].device.id == 1
    with count_transfers() as log:
        c = xp.asarray(b)
    assert c.device.id == 0 and (c + a).tolist() == [2.0, 3.0] and log.counts() == {"h2d": 0, "d2h": 0}
    with xp.cuda.Device(1):
        assert (b + 1).device.id == 1


def test_places_own_the_arrays_of_their_device_only():
    """A ``StandinPlace(i)`` makes its arrays on device ``i`` and owns no other device's; moving a
    value of another stand-in device onto it is a copy between devices (no host transfer)."""
    p0, p1 = StandinPlace(0), StandinPlace(1)
    with count_transfers() as log:
        v1 = p1.to_device(np.arange(3.0))
        v0 = p0.to_device(v1)
    assert v1.device.id == 1 and v0.device.id == 0 and v0.tolist() == [0.0, 1.0, 2.0]
    assert log.counts() == {"h2d": 1, "d2h": 0}
    assert p1.owns(v1) and not p0.owns(v1) and p0.owns(v0) and not p1.owns(v0)
    assert place_of(v1) == p1 and place_of(v0) == p0
    assert p0.to_device(v0) is v0
    with p1.device_context():
        assert xp.cuda.Device().id == 1 and (v1 * 2).device.id == 1
    assert xp.cuda.Device().id == 0
    with pytest.raises(ValueError, match="does not exist"):
        xp.cuda.Device(DEVICE_COUNT)


def test_data_parallel_places_run_each_place_on_its_own_device():
    """Two stand-in places of a data-parallel program: each place's scope holds arrays of its own
    device (the parameters broadcast to place 1 are copied onto device 1), and a step runs (a
    kernel given another device's array would raise)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4], "float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(StandinPlace(0))
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    places = [StandinPlace(0), StandinPlace(1)]
    prog = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=places)
    out = exe.run(prog, feed={"x": np.ones((4, 4), np.float32)}, fetch_list=[loss], scope=scope)
    assert np.all(np.isfinite(out[0]))
    runner = prog._runner
    for i, place in enumerate(places):
        params = [runner.scopes[i].vals[p.name] for p in main.all_parameters()]
        assert params and all(place.owns(v) for v in params), i


def test_may_share_memory_is_a_host_bool_and_shares_memory_a_sync():
    """CuPy, ``may_share_memory``: compares the two arrays' address ranges on the host and returns
    a Python bool (no kernel, no synchronisation); ``shares_memory`` runs a kernel and reads its
    answer (a synchronisation)."""
    a, b = dev(np.zeros(6)), dev(np.zeros(2))
    with count_transfers() as log:
        assert xp.may_share_memory(a, a[2:]) is True
        assert xp.may_share_memory(a[:2], b) is False
    assert log.events == [] and log.launches == 0
    with count_transfers() as log:
        assert xp.shares_memory(a, a[2:])
    assert [e.what for e in log.syncs] == ["shares_memory: bool(any(...))"]


def test_the_synchronisations_hidden_in_cupy_functions_are_counted():
    """CuPy's sources: ``bincount`` reads ``(x < 0).any()`` and ``int(x.max())`` (only the first for
    an empty input); ``unique`` reads the size of its mask selection, and once more for each of
    ``return_index`` and ``return_counts``; along an axis it sorts rows on the host (one read for
    the order, one or two per comparison); ``arange`` / ``eye`` / ``zeros`` read a device size to
    the host; streams', events' and devices' ``synchronize()`` wait."""
    ids = dev(np.array([2, 0, 2], np.int64))
    n = dev(np.array(3))
    with count_transfers() as log:
        xp.bincount(ids)
        xp.bincount(dev(np.zeros(0, np.int64)), minlength=2)
        xp.unique(ids, return_index=True, return_inverse=True, return_counts=True)
        xp.arange(n)
        xp.eye(n)
        xp.zeros(n)
        xp.cuda.get_current_stream().synchronize()
        xp.cuda.Stream().synchronize()
        xp.cuda.Event().synchronize()
        xp.cuda.Device().synchronize()
        xp.cuda.runtime.deviceSynchronize()
    assert [e.what for e in log.syncs] == [
        "bincount: any(x < 0)", "bincount: max(x) + 1", "bincount: any(x < 0)",
        "xp.unique (result size)", "xp.unique: return_index (result size)", "xp.unique: return_counts (result size)",
        "shape argument", "shape argument", "shape argument",
        "Stream.synchronize", "Stream.synchronize", "Event.synchronize", "Device.synchronize",
        "runtime.deviceSynchronize"]
    rows = dev(np.array([[1, 2], [0, 5], [1, 2], [0, 1]]))
    with count_transfers() as log:
        got = xp.unique(rows, axis=0)
    assert got.tolist() == [[0, 1], [0, 5], [1, 2]]
    # the quicksort: pivot row 0 against rows 1 (differs), 2 (equal), 3 (differs); then 3 against 1
    whats = [e.what.split(": ")[-1] for e in log.syncs]
    assert whats == ["the row order (tolist)"] + ["trim_zeros (item)", "the comparison (bool)", "trim_zeros (item)",
                                                  "trim_zeros (item)", "the comparison (bool)",
                                                  "trim_zeros (item)", "the comparison (bool)"] + \
        ["xp.unique (result size)", "the row count (item)"]


def test_each_call_that_makes_or_writes_a_device_array_is_one_launch():
    """A kernel launch costs the host a few microseconds on a GPU whatever the size: the stand-in
    counts one for each array-module call, operator, advanced index, assignment and ``fill`` that
    makes or writes a device array, none for views (basic slicing, ``reshape`` of a contiguous
    array, ``transpose``), ``empty``, metadata and host copies."""
    a = dev(np.arange(6.0).reshape(2, 3))
    with count_transfers() as log:
        a[0:1], a.reshape(3, 2), a.T, xp.transpose(a), a.shape, xp.empty((2, 2)), xp.may_share_memory(a, a)
    assert log.launches == 0, dict(log.launch_counts)
    with count_transfers() as log:
        b = a + 1                   # 1
        b *= 2                      # 2
        xp.exp(b, out=b)            # 3
        c = xp.zeros((2, 3))        # 4
        c[:, 0] = 1.0               # 5
        c[dev([0, 1])]              # 6
        c.fill(0)                   # 7
        xp.add.at(c, dev([0, 0]), 1.0)   # 8
        c.sum(axis=0)               # 9
        xp.matmul(a, c.T)           # 10
        a.astype(np.float32)        # 11
        a.get()
    assert log.launches == 11, dict(log.launch_counts)
    assert log.launch_counts["xp.exp"] == 1 and log.launch_counts["setitem"] == 1


def test_where_casts_a_condition_that_is_not_bool_first():
    """CuPy's ``where(condition, x, y)`` (``cupy/_sorting/search.py``) runs
    ``condition.astype('?', copy=False)`` before its kernel: one launch with a bool condition, two
    with any other; a ufunc's ``out=`` broadcasts its inputs into it, one launch."""
    a = dev(np.arange(4.0))
    with count_transfers() as log:
        xp.where(a > 1, a, 0.0)
    assert dict(log.launch_counts) == {"operator __gt__": 1, "xp.where": 1}
    with count_transfers() as log:
        out = xp.where(dev(np.array([0, 2, 0, 1], np.uint64)), a, 0.0)
    assert dict(log.launch_counts) == {"xp.where": 1, "ndarray.astype": 1}
    np.testing.assert_array_equal(out.get(), [0.0, 1.0, 0.0, 3.0])
    with count_transfers() as log:
        filled = xp.divide(a[1:2].reshape(()), 4, out=xp.empty((2, 3)))
    assert log.launches == 1 and filled.get().tolist() == [[0.25] * 3] * 2
