"""The reads CuPy 14.2 makes inside its own functions and array methods, counted by the stand-in
where CuPy makes them and nowhere else. Each test names the place of CuPy's source it follows
(``cupy/_core/_routines_manipulation.pyx``, ``_routines_indexing.pyx``, ``core.pyx``,
``cupy/_creation/ranges.py``, ``cupy/_manipulation/``); the numbers are NumPy's in every case.
"""
import warnings

import numpy as np
import pytest

from fluidist.device.standin import count_transfers, xp

pytestmark = pytest.mark.timeout(60)


def dev(a):
    return xp.asarray(np.asarray(a))


def reads(log):
    return [e.what for e in log.syncs]


def test_repeat_reads_an_array_of_repeats():
    """``_repeat`` (``_routines_manipulation.pyx``): an integer repeats on the device; a device array
    of one element is read with ``item()``; of more, its cumulative sum's last value and its minimum
    are read (``_repeat_perelement``); an empty one reads nothing. A list is copied in first, then
    read the same way; a NumPy array is refused (TypeError)."""
    host = np.arange(6.0).reshape(2, 3)
    a = dev(host)
    with count_transfers() as log:
        by_int = (a.repeat(2), xp.repeat(a, 3, axis=1))
    assert log.events == []
    with count_transfers() as log:
        one = a.repeat(dev(np.array([2])), axis=0)
    assert reads(log) == ["repeat: repeats.item()"]
    with count_transfers() as log:
        each = xp.repeat(a, dev(np.array([1, 0, 2])), axis=1)
    assert reads(log) == ["repeat: int(cumsum(repeats)[-1])", "repeat: int(min(repeats))"]
    with count_transfers() as log:
        listed = a.repeat([2, 1], axis=0)
    assert [(e.direction, e.what) for e in log.events] == [
        ("h2d", "repeat: repeats (a list)"), ("d2h", "repeat: int(cumsum(repeats)[-1])"),
        ("d2h", "repeat: int(min(repeats))")]
    with count_transfers() as log:
        none = dev(np.zeros((0, 3))).repeat(dev(np.zeros(0, np.int64)), axis=0)
    assert log.syncs == [] and none.shape == (0, 3)
    for call in (lambda: a.repeat(np.array([1, 2]), axis=0), lambda: xp.repeat(a, np.array([1, 2]), axis=0)):
        with pytest.raises(TypeError):
            call()
    expected = (np.repeat(host, 2), np.repeat(host, 3, axis=1), np.repeat(host, 2, axis=0),
                np.repeat(host, [1, 0, 2], axis=1), np.repeat(host, [2, 1], axis=0))
    for got, want in zip(by_int + (one, each, listed), expected):
        np.testing.assert_array_equal(got.get(), want)


def test_choose_reads_its_bounds_check_in_mode_raise_only():
    """``_ndarray_choose`` (``_routines_indexing.pyx``): in mode ``"raise"`` (the default) it reads
    ``all(a < n)`` and, when true, ``all(0 <= a)``; ``"wrap"`` and ``"clip"`` read nothing."""
    idx, choices = np.array([0, 1, 1]), np.arange(6.0).reshape(2, 3)
    i, c = dev(idx), dev(choices)
    with count_transfers() as log:
        raised = (i.choose(c), xp.choose(i, c))
    assert reads(log) == ["choose: all(a < n)", "choose: all(0 <= a)"] * 2
    with count_transfers() as log:
        quiet = (xp.choose(i, c, mode="clip"), i.choose(c, mode="wrap"))
    assert log.syncs == []
    with count_transfers() as log, pytest.raises(ValueError):
        dev(np.array([0, 5])).choose(c)
    assert reads(log) == ["choose: all(a < n)"]     # false: CuPy raises without the second read
    for got in raised + quiet:
        np.testing.assert_array_equal(got.get(), np.choose(idx, choices))


def test_put_reads_its_error_flag_in_mode_raise_only():
    """``_ndarray_put`` (``_routines_indexing.pyx``): ``mode="raise"`` runs a kernel that flags an
    index out of range and reads the flag (``if err``); the default ``"wrap"`` and ``"clip"`` read
    nothing, nor does an empty ``values`` (CuPy returns first)."""
    a = dev(np.zeros(4))
    with count_transfers() as log:
        a.put(dev(np.array([1, 2])), dev(np.array([5.0, 6.0])), mode="raise")
    assert reads(log) == ["put: the error flag (mode='raise')"]
    with count_transfers() as log:
        a.put(dev(np.array([3])), dev(np.array([7.0])))
        a.put(dev(np.array([0])), dev(np.array([8.0])), mode="clip")
        a.put(dev(np.array([0])), dev(np.zeros(0)), mode="raise")
    assert log.syncs == []
    assert a.tolist() == [8.0, 5.0, 6.0, 7.0]


def test_linspace_reads_once_where_an_end_is_an_array():
    """``linspace`` (``cupy/_creation/ranges.py``): with numbers for both ends it runs on scalars
    (no read); with an array end (a device array, or a list copied in) and more than one sample it
    reads ``any(step == 0)``. The ends are not read themselves."""
    start, stop = dev(np.array([0.0, 1.0])), dev(np.array([1.0, 3.0]))
    with count_transfers() as log:
        plain = xp.linspace(-1.0, 1.0, 5)
        single = xp.linspace(start, stop, 1)
    assert log.syncs == []
    with count_transfers() as log:
        both = xp.linspace(start, stop, 3)
        zero_d = xp.linspace(dev(np.float64(2.0)), 4.0, 3)
    assert reads(log) == ["linspace: any(step == 0)"] * 2
    with count_transfers() as log:
        listed = xp.linspace([0.0, 1.0], 2.0, 3)
    assert [(e.direction, e.what) for e in log.events] == [("h2d", "linspace: start (a list)"),
                                                          ("d2h", "linspace: any(step == 0)")]
    np.testing.assert_allclose(plain.get(), np.linspace(-1, 1, 5))
    np.testing.assert_allclose(single.get(), np.linspace([0.0, 1.0], [1.0, 3.0], 1))
    np.testing.assert_allclose(both.get(), np.linspace([0.0, 1.0], [1.0, 3.0], 3))
    np.testing.assert_allclose(zero_d.get(), np.linspace(2.0, 4.0, 3))
    np.testing.assert_allclose(listed.get(), np.linspace([0.0, 1.0], 2.0, 3))


def test_roll_by_a_device_shift_reads_nothing():
    """``roll`` (``cupy/_manipulation/rearrange.py``): a device shift becomes an index computed on
    the device (a gather): no read, where a shape-like argument would be read."""
    host = np.arange(10.0).reshape(2, 5)
    a = dev(host)
    with count_transfers() as log:
        flat = xp.roll(a, dev(np.array(3)))
        along = xp.roll(a, dev(np.array([1, -2])), axis=(0, 1))
        plain = xp.roll(a, 2, axis=1)
    assert log.syncs == []
    np.testing.assert_array_equal(flat.get(), np.roll(host, 3))
    np.testing.assert_array_equal(along.get(), np.roll(host, (1, -2), axis=(0, 1)))
    np.testing.assert_array_equal(plain.get(), np.roll(host, 2, axis=1))


def test_a_result_sized_by_the_data_reads_its_size_unless_the_input_is_empty():
    """``_ndarray_argwhere`` and ``_prepare_mask_indexing_single`` (``_routines_indexing.pyx``): the
    count of true elements is read (``int(scan[-1])``) only when the mask or input has elements; an
    empty one is known to select nothing. ``a[True]`` is a mask of one element."""
    host = np.array([0.0, 2.0, 0.0, 3.0])
    a, mask = dev(host), dev(host > 0)
    calls = [lambda: xp.nonzero(a), lambda: a.nonzero(), lambda: xp.flatnonzero(a), lambda: xp.argwhere(a),
             lambda: xp.where(mask), lambda: xp.compress(mask, a), lambda: a.compress(mask),
             lambda: xp.extract(mask, a), lambda: a[mask], lambda: a.__setitem__(mask, 1.0),
             lambda: xp.add.at(a, mask, 1.0), lambda: a[True]]
    for call in calls:
        with count_transfers() as log:
            call()
        assert len(log.syncs) == 1 and log.syncs[0].what.endswith("(result size)"), str(log)
    empty, no_mask = dev(np.zeros(0)), dev(np.zeros(0, bool))
    with count_transfers() as log:
        got = (xp.nonzero(empty)[0], xp.flatnonzero(empty), xp.where(no_mask)[0], empty[no_mask],
               xp.compress(no_mask, a), a[no_mask])
        a[no_mask] = 5.0
        xp.add.at(a, no_mask, 1.0)
    assert log.syncs == [] and all(g.shape[0] == 0 for g in got)
    np.testing.assert_array_equal(a.get(), [0.0, 2.0, 0.0, 2.0])   # set to 1, then 1 added


def test_unique_of_an_empty_array_reads_only_the_row_count():
    """``unique`` (``cupy/_manipulation/add_remove.py``): an empty input's mask selections read
    nothing; along an axis with no rows, only the row count (``mask.sum().item()``) is read."""
    with count_transfers() as log:
        flat = xp.unique(dev(np.zeros(0)), return_index=True, return_counts=True)
    assert log.syncs == [] and all(r.shape == (0,) for r in flat)
    with count_transfers() as log:
        rows = xp.unique(dev(np.zeros((0, 3))), axis=0, return_index=True)
    assert reads(log) == ["unique: the row count (item)"]
    assert rows[0].shape == (0, 3) and rows[1].shape == (0,)


def test_reading_an_empty_array_copies_nothing():
    """``ndarray.get`` (``core.pyx``) returns a new host array without a copy for an empty array,
    so ``tolist()`` and ``get()`` of one move nothing; ``bool()`` of one is False with a
    DeprecationWarning (``__nonzero__``), no read. Given ``out``, ``get`` copies (no bytes) and waits."""
    e = dev(np.zeros((0, 2), np.float32))
    with count_transfers() as log:
        got, listed = e.get(), e.tolist()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            truth = bool(e)
    assert log.events == [] and got.shape == (0, 2) and listed == [] and truth is False
    assert [w.category for w in caught] == [DeprecationWarning]
    with count_transfers() as log:
        e.get(out=np.empty((0, 2), np.float32))
        dev(np.ones(1)).tolist()
    assert [e.what for e in log.d2h] == ["get", "tolist()"]


def test_the_functions_kernels_use_most_read_nothing():
    """What fluidist's kernels call most runs on the device in CuPy without a read: ``clip`` with
    array bounds, ``take`` / ``take_along_axis`` / ``searchsorted``, ``where`` with three arguments,
    ``full`` of a device value (a copy, not ``fill``), ``pad`` and ``split`` with host widths,
    ``concatenate``, sorting, ``cumsum``, ``add.reduceat``, ``add.at`` and a device RNG's draws."""
    host = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
    a, lo, hi = dev(host), dev(np.float64(-1.5)), dev(np.array([1.0, 2.0, 3.0]))
    idx, at, starts = dev(np.array([2, 0])), dev(np.array([1.5, 9.0])), dev(np.array([0, 1]))
    with count_transfers() as log:
        xp.clip(a, lo, hi), a.clip(lo, hi), xp.take(a, idx, axis=1), a.take(idx % 2, axis=0)
        xp.take_along_axis(a, xp.argsort(a, axis=1), axis=1), xp.searchsorted(hi, at)
        xp.where(a > 0, a, lo), xp.full((2, 2), lo), xp.pad(a, [(1, 0), (0, 2)]), xp.split(a, np.array([1]), axis=1)
        xp.concatenate([a, a]), xp.sort(a, axis=0), xp.cumsum(a, axis=1), a.max(axis=0), a.argmax(axis=1)
        xp.add.reduceat(a, starts, axis=1), xp.add.at(a, (idx % 2, idx), 1.0)
        xp.random.RandomState(0).random_sample((2, 3)), a.astype(np.float32).sum(), a.var(axis=0)
    assert log.syncs == [] and log.h2d == [], str(log)


# ---------------------------------------------------------------- the same counts on CuPy
def _cases():
    """(name, setup(xp) -> the call to count, the reads CuPy 14.2 makes in it)."""
    def arrays(xp):
        return xp.asarray(np.arange(6.0).reshape(2, 3)), xp.asarray(np.array([0.0, 2.0, 0.0, 3.0]))
    return [
        ("repeat by an int", lambda xp: (lambda a=arrays(xp)[0]: (a.repeat(2), xp.repeat(a, 3, axis=1))), 0),
        ("repeat by one device value",
         lambda xp: (lambda a=arrays(xp)[0], r=xp.asarray(np.array([2])): a.repeat(r, axis=0)), 1),
        ("repeat by device repeats",
         lambda xp: (lambda a=arrays(xp)[0], r=xp.asarray(np.array([1, 0, 2])): xp.repeat(a, r, axis=1)), 2),
        ("repeat by a list", lambda xp: (lambda a=arrays(xp)[0]: a.repeat([2, 1], axis=0)), 2),
        ("choose, mode raise", lambda xp: (lambda i=xp.asarray(np.array([0, 1, 1])),
                                           c=xp.asarray(np.arange(6.0).reshape(2, 3)): i.choose(c)), 2),
        ("choose, mode clip", lambda xp: (lambda i=xp.asarray(np.array([0, 1, 1])),
                                          c=xp.asarray(np.arange(6.0).reshape(2, 3)): i.choose(c, mode="clip")), 0),
        ("put, mode raise", lambda xp: (lambda a=xp.zeros(4), i=xp.asarray(np.array([1])), v=xp.ones(1):
                                        a.put(i, v, mode="raise")), 1),
        ("put, mode wrap", lambda xp: (lambda a=xp.zeros(4), i=xp.asarray(np.array([1])), v=xp.ones(1): a.put(i, v)),
         0),
        ("linspace of numbers", lambda xp: (lambda: xp.linspace(-1.0, 1.0, 5)), 0),
        ("linspace of device ends", lambda xp: (lambda s=xp.zeros(2), e=xp.ones(2): xp.linspace(s, e, 3)), 1),
        ("linspace of device ends, one sample", lambda xp: (lambda s=xp.zeros(2), e=xp.ones(2): xp.linspace(s, e, 1)),
         0),
        ("roll by a device shift", lambda xp: (lambda a=arrays(xp)[0], s=xp.asarray(np.array(2)): xp.roll(a, s)), 0),
        ("a boolean mask, get and set", lambda xp: (lambda v=arrays(xp)[1]: (v[v > 0], v.__setitem__(v > 2, 1.0))), 2),
        ("an empty mask", lambda xp: (lambda v=arrays(xp)[1], m=xp.zeros(0, bool), e=xp.zeros(0):
                                      (e[m], xp.nonzero(e), xp.flatnonzero(e), xp.where(m))), 0),
        ("nonzero, flatnonzero, argwhere, where", lambda xp: (lambda v=arrays(xp)[1]: (
            xp.nonzero(v), xp.flatnonzero(v), xp.argwhere(v), xp.where(v > 0))), 4),
        ("unique of an empty array", lambda xp: (lambda e=xp.zeros(0): xp.unique(e, return_counts=True)), 0),
        ("unique along an axis with no rows", lambda xp: (lambda e=xp.zeros((0, 3)): xp.unique(e, axis=0)), 1),
        ("get and tolist of an empty array", lambda xp: (lambda e=xp.zeros((0, 2)): (e.get(), e.tolist())), 0),
        ("fill with a device value", lambda xp: (lambda a=xp.zeros(3), v=xp.ones(()): a.fill(v)), 1),
        ("full of a device value", lambda xp: (lambda v=xp.ones(()): xp.full((3,), v)), 0),
        ("bincount", lambda xp: (lambda i=xp.asarray(np.array([2, 0, 2])): xp.bincount(i)), 2),
        ("histogram, 4 bins", lambda xp: (lambda v=arrays(xp)[1]: xp.histogram(v, 4)), 4),
        ("histogram, 4 bins in a range", lambda xp: (lambda v=arrays(xp)[1]: xp.histogram(v, 4, range=(0, 3))), 0),
        ("histogram, device edges", lambda xp: (lambda v=arrays(xp)[1], e=xp.asarray(np.array([0.0, 1, 3])):
                                                xp.histogram(v, e)), 1),
        ("randint over 10 values", lambda xp: (lambda r=xp.random.RandomState(0): r.randint(0, 10, size=5)), 1),
        ("randint over 8 values", lambda xp: (lambda r=xp.random.RandomState(0): r.randint(2, 10, size=5)), 0),
        ("kernels' usual calls", lambda xp: (lambda a=arrays(xp)[0], i=xp.asarray(np.array([2, 0])): (
            xp.clip(a, xp.zeros(()), xp.ones(3)), xp.take(a, i, axis=1), xp.where(a > 1, a, 0.0),
            xp.pad(a, [(1, 0), (0, 2)]), xp.split(a, np.array([1]), axis=1), xp.cumsum(a, axis=1),
            xp.add.reduceat(a, i % 2, axis=1), xp.add.at(a, (i % 2, i), 1.0), xp.sort(a, axis=0))), 0),
    ]


def _cupy_or_skip():
    from fluidist.device.places import cupy_status
    cupy, why = cupy_status()
    if cupy is None:
        pytest.skip(why)
    return cupy


@pytest.mark.parametrize("device", ["standin", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_the_stand_in_reads_where_cupy_reads(device, monkeypatch):
    """Each case's reads, counted on the stand-in and, on a GPU, on CuPy itself: every read CuPy
    makes passes through ``ndarray.get``, which declares it (``cupy/_core/syncdetect.py``) before it
    copies; an empty array's ``get`` copies nothing and declares nothing."""
    for name, setup, expected in _cases():
        if device == "standin":
            call = setup(xp)
            with count_transfers() as log:
                call()
            got = len(log.syncs)
        else:
            cupy = _cupy_or_skip()
            from cupy._core import syncdetect
            declared = []
            real = syncdetect._declare_synchronize
            monkeypatch.setattr(syncdetect, "_declare_synchronize", lambda: (declared.append(1), real()))
            call = setup(cupy)
            cupy.cuda.Device().synchronize()
            del declared[:]
            call()
            got = len(declared)
            monkeypatch.undo()
        assert got == expected, "%s: %d reads on %s, CuPy 14.2 makes %d" % (name, got, device, expected)
