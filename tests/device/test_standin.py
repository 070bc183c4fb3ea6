"""The stand-in device behaves as CuPy's documented behaviour says, where CuPy differs from NumPy.

Each test names the statement of CuPy's documentation (or, where the documentation is silent, of
its source, ``cupy/_core``) it checks, in our words. Where the stand-in is deliberately stricter
than CuPy, the test says so.
"""
import pickle

import numpy as np
import pytest

from fluidist.device import standin
from fluidist.device.standin import StandinArray, StandinPlace, count_transfers, xp

pytestmark = pytest.mark.timeout(60)


def dev(a):
    return xp.asarray(np.asarray(a))


def test_numpy_cannot_convert_a_device_array():
    """CuPy, ``ndarray.__array__``: implicit conversion to a NumPy array is not allowed (TypeError);
    ``get()`` or ``cupy.asnumpy`` copy to the host explicitly."""
    a = dev([1.0, 2.0])
    for convert in (np.asarray, np.array, lambda v: np.concatenate([v]), lambda v: np.float64(1) + np.ones(2) * v):
        with pytest.raises(TypeError):
            convert(a)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(a)
    np.testing.assert_array_equal(a.get(), [1.0, 2.0])
    np.testing.assert_array_equal(xp.asnumpy(a), [1.0, 2.0])
    assert not isinstance(a, np.ndarray) and isinstance(a, xp.ndarray)


def test_arithmetic_with_a_host_array_raises_but_scalars_mix():
    """CuPy, ``ndarray.__array_ufunc__``: a binary ufunc accepts another device array or a number,
    and refuses a NumPy array rather than converting it silently (TypeError); NumPy scalars count as
    numbers, in either operand position."""
    a = dev([1.0, 2.0])
    with pytest.raises(TypeError):
        a + np.ones(2)
    with pytest.raises(TypeError):
        np.ones(2) * a
    with pytest.raises(TypeError):
        xp.maximum(a, np.zeros(2))
    np.testing.assert_array_equal((a * 2 + np.float32(1)).get(), [3.0, 5.0])
    np.testing.assert_array_equal((np.float32(2) * a).get(), [2.0, 4.0])


def test_numpy_functions_on_device_arrays_are_refused():
    """Stricter than CuPy: CuPy dispatches the NumPy functions it implements to itself
    (``__array_function__``, NEP 18); the stand-in refuses every NumPy function and ufunc on a
    device array, so that code calls the place's array module."""
    a = dev([[1.0, -2.0]])
    with pytest.raises(TypeError, match="numpy.exp"):
        np.exp(a)
    with pytest.raises(TypeError, match="numpy.sum"):
        np.sum(a)
    np.testing.assert_allclose(xp.exp(a).get(), np.exp([[1.0, -2.0]]))


def test_device_functions_refuse_host_arrays_but_read_shapes_on_the_host():
    """CuPy's routines take ``cupy.ndarray`` arguments (a NumPy array is an unsupported type) except
    the creation routines ``array`` / ``asarray``, which copy host data to the device; arguments that
    are shapes, axes or split points are read as Python sequences, so host arrays serve there."""
    a = dev(np.arange(6.0).reshape(2, 3))
    with pytest.raises(TypeError, match="host ndarray"):
        xp.concatenate([a, np.ones((1, 3))])
    assert xp.reshape(a, np.array([3, 2])).shape == (3, 2)
    assert [p.shape for p in xp.split(a, np.array([1]), axis=1)] == [(2, 1), (2, 2)]
    assert a.transpose(np.array([1, 0])).shape == (3, 2)


def test_flags_hold_only_contiguity_and_ownership():
    """CuPy, ``ndarray.flags``: only ``c_contiguous``, ``f_contiguous`` and ``owndata``, read-only,
    also by key (``C_CONTIGUOUS`` ...); there is no ``writeable``."""
    a = dev(np.zeros((2, 3)))
    f = a.flags
    assert f.c_contiguous and not f.f_contiguous and f.owndata
    assert f["C_CONTIGUOUS"] and not a.T.flags.c_contiguous
    with pytest.raises(AttributeError, match="writeable"):
        f.writeable
    with pytest.raises(KeyError):
        f["WRITEABLE"]
    assert getattr(f, "writeable", True) is True   # what fluidist's kernels ask instead


def test_reductions_return_zero_dimensional_arrays():
    """CuPy, "Differences between CuPy and NumPy": where NumPy's reductions return scalars, CuPy's
    return zero-dimensional arrays (the value stays on the device)."""
    a = dev([1.0, 2.0, 3.0])
    for r in (a.sum(), xp.sum(a), a.max(), xp.mean(a), xp.any(a > 2), xp.count_nonzero(a)):
        assert isinstance(r, StandinArray) and r.shape == ()
    assert xp.array_equal(a, a).shape == ()


def test_scalars_reach_the_host_only_as_counted_transfers():
    """CuPy, ``ndarray.item`` / ``__float__`` / ``__int__`` / ``__bool__`` / ``tolist`` / ``__repr__``:
    each copies the value to the host (``get()``), a synchronisation the caller does not see. The
    stand-in makes them and counts each as an implicit device-to-host transfer. There is no
    ``__index__``: a device scalar is not an index into a Python list."""
    a = dev(3.0)
    with count_transfers() as log:
        assert float(a) == 3.0 and int(a) == 3 and bool(a) and a.item() == 3.0 and a.tolist() == 3.0
        repr(a)
    assert [e.what for e in log.d2h] == ["float()", "int()", "bool()", "item()", "tolist()", "repr()"]
    assert all(e.implicit for e in log.events) and log.counts() == {"h2d": 0, "d2h": 6}
    with pytest.raises(TypeError):
        [10, 20, 30, 40][dev(np.array(2, np.int64))]


def test_every_copy_between_host_and_device_is_counted_each_way():
    """CuPy, ``cupy.asarray`` (host data is copied to the current device), ``ndarray.get`` and
    ``cupy.asnumpy`` (a copy on the host), ``ndarray.set``; indices and values given as host arrays or
    lists are converted to device arrays (``_prepare_slice_list``, ``_scatter_op`` in cupy/_core)."""
    with count_transfers() as log:
        a = xp.asarray(np.zeros(4))
        b = xp.array([1, 2])
        a[np.array([0, 1])] = 1.0           # a host index: implicit h2d
        a[b] = np.array([5.0, 6.0])          # a host value: implicit h2d
        a.set(np.ones(4))
        a.get()
        xp.asnumpy(a)
    assert [(e.direction, e.what, e.implicit) for e in log.events] == [
        ("h2d", "asarray", False), ("h2d", "array", False), ("h2d", "index", True), ("h2d", "setitem value", True),
        ("h2d", "set", False), ("d2h", "get", False), ("d2h", "get", False)]
    assert log.events[0].where.startswith("tests/device/test_standin.py:")


def test_results_whose_size_depends_on_the_data_read_a_count_from_the_device():
    """CuPy, boolean-mask indexing and ``nonzero`` (``_prepare_mask_indexing_single``,
    ``_ndarray_argwhere``): the output size is read from the device with ``int(...)``, a
    synchronisation; the stand-in counts one implicit transfer for each."""
    a = dev([1.0, -1.0, 2.0])
    with count_transfers() as log:
        a[a > 0]
        xp.nonzero(a)
        xp.unique(a)
    assert [e.what for e in log.d2h] == ["boolean mask (result size)", "xp.nonzero (result size)",
                                         "xp.unique (result size)"]


def test_ufunc_methods_and_scatter_dtypes_as_cupy_14_1_supports_them():
    """CuPy, ``ufunc.reduce`` / ``accumulate`` exist for add and multiply only, ``reduceat`` for add,
    ``at`` for the ufuncs with a scatter operation; CuPy >= 14.1's ``_scatter_op_single`` takes, for
    the array written: add int32, int64, float16, float32, float64, uint32, uint64; maximum and
    minimum the same but float16; subtract int32 and uint32 (TypeError otherwise)."""
    a = dev(np.zeros(3, np.float32))
    xp.add.at(a, dev(np.array([0, 0, 2])), 1.0)
    np.testing.assert_array_equal(a.get(), [2.0, 0.0, 1.0])
    assert float(xp.add.reduce(a)) == 3.0
    with pytest.raises(NotImplementedError):
        xp.maximum.reduce(a)
    with pytest.raises(NotImplementedError):
        xp.multiply.at(a, dev(np.array([0])), 1.0)
    with pytest.raises(TypeError, match="subtract"):
        xp.subtract.at(a, dev(np.array([0])), 1.0)
    counts = dev(np.zeros(3, np.int64))          # int64 add.at: accepted since CuPy 14.1
    xp.add.at(counts, dev(np.array([1, 1, 2])), 1)
    assert counts.tolist() == [0, 2, 1]
    half = dev(np.zeros(3, np.float16))
    xp.add.at(half, dev(np.array([1, 1])), 1.0)
    assert half.tolist() == [0.0, 2.0, 0.0]
    for ufunc in (xp.maximum, xp.minimum):       # float16 max/min: no atomic, refused
        with pytest.raises(TypeError, match="float16"):
            ufunc.at(half, dev(np.array([0])), 1.0)
        ufunc.at(counts, dev(np.array([0, 0])), dev(np.array([5, 3])))
    assert counts.tolist() == [3, 2, 1]
    with pytest.raises(TypeError, match="int8"):
        dev(np.zeros(2, np.int8)).scatter_add(dev(np.array([0])), 1)
    with pytest.raises(TypeError, match="bool"):
        xp.bitwise_or.at(dev(np.zeros(2, bool)), dev(np.array([0])), True)


def test_names_cupy_lacks_are_missing():
    """CuPy's namespace (cupy/__init__.py) has no ``insert``, ``block`` or ``spacing``: code that
    needs them fails on the stand-in as on a GPU."""
    for name in ("insert", "block", "spacing"):
        assert hasattr(np, name) and not hasattr(xp, name)
    assert xp.float32 is np.float32 and xp.ndarray is StandinArray


def test_arrays_pickle_through_the_host():
    """CuPy, ``ndarray.__reduce__``: pickling copies the array to the host, unpickling back."""
    a = dev([1, 2])
    with count_transfers() as log:
        b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, StandinArray) and b.tolist() == [1, 2]
    assert log.counts() == {"h2d": 1, "d2h": 1}


def test_the_place_moves_values_and_compares_like_a_place():
    place = StandinPlace(0)
    with count_transfers() as log:
        d = place.to_device(np.arange(3))
        assert place.owns(d) and not place.owns(np.arange(3))
        assert place.to_device(d) is d
        h = place.to_host(d)
    assert isinstance(h, np.ndarray) and h.tolist() == [0, 1, 2]
    assert log.counts() == {"h2d": 1, "d2h": 1}
    assert StandinPlace(0) == StandinPlace() and StandinPlace(1) != StandinPlace(0)
    assert place.xp is standin.xp and repr(place) == "StandinPlace(0)"
