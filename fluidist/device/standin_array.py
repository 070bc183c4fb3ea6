"""The stand-in device's array: NumPy memory behind CuPy's manners.

A :class:`StandinArray` holds a NumPy array but is not one (``isinstance(a, numpy.ndarray)`` is
False, as for ``cupy.ndarray``), and it behaves as CuPy's array does where CuPy differs from NumPy:

- NumPy cannot convert it (``numpy.asarray(a)`` raises ``TypeError``, as CuPy's ``__array__`` does),
  and arithmetic mixing it with a NumPy array raises ``TypeError`` (CuPy refuses host arrays as
  ufunc operands). NumPy scalars and Python numbers mix freely, as in CuPy.
- NumPy functions and ufuncs given it raise ``TypeError``. CuPy dispatches the NumPy functions it
  implements to itself (``__array_function__`` / ``__array_ufunc__``); the stand-in refuses them all,
  so that code calls the place's array module (``ctx.xp``) and never NumPy on device values. The
  one exception is arithmetic between a NumPy scalar and a device array (``np.float32(2) * a``
  reaches NumPy's ufunc through the scalar's operator), which CuPy computes on the device.
- ``flags`` has only ``c_contiguous``, ``f_contiguous`` and ``owndata`` (no ``writeable``).
- Reductions return 0-d arrays, never NumPy scalars; there is no ``__index__``.
- Reading a value on the host is a counted transfer (:mod:`fluidist.device.transfers`): ``get()``
  explicitly; ``float()``, ``int()``, ``bool()``, ``complex()``, ``item()``, ``tolist()``, ``repr()``
  and ``str()`` implicitly, as CuPy does them with a hidden synchronisation. Host arrays and lists
  used as indices or assigned into a device array are counted implicit host-to-device transfers.
"""
from __future__ import annotations

import numpy as np

from . import transfers

IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed: this is a device array (the "
                       "stand-in device, which refuses what CuPy refuses). Copy it to the host with .get() or "
                       "the array module's asnumpy(), through the Place that owns it")
_SCALAR_TYPES = (bool, int, float, complex, np.generic)


def wrap(a):
    """A device array over the NumPy array ``a`` (no copy, no transfer: results of device work)."""
    obj = object.__new__(StandinArray)
    obj._a = a
    return obj


def wrap_result(x):
    """Results of device work: arrays and NumPy scalars become device arrays (CuPy gives 0-d arrays
    where NumPy gives scalars); tuples and lists of them keep their kind; other values pass."""
    if isinstance(x, np.ndarray):
        return wrap(x)
    if isinstance(x, np.generic):
        return wrap(np.asarray(x))
    if isinstance(x, tuple):
        return tuple(wrap_result(v) for v in x)
    if isinstance(x, list):
        return [wrap_result(v) for v in x]
    return x


def host_array_error(what, value):
    return TypeError("%s given a host %s (shape %s): device code takes device arrays only (CuPy refuses "
                     "host arrays here too); copy it to the device through the Place, or create it with the "
                     "array module (xp.asarray)" % (what, type(value).__name__, list(np.shape(value))))


# parameters CuPy reads on the host as Python sequences (shapes, axes, split points, repeats): host
# arrays are fine there; a device array there is read element by element (implicit transfers)
HOST_PARAMS = frozenset(("shape", "newshape", "axes", "axis", "reps", "indices_or_sections", "pad_width",
                         "repeats", "source", "destination", "shift", "sections", "new_shape"))
# array methods whose positional arguments are such parameters
_SHAPE_METHODS = frozenset(("reshape", "transpose", "repeat", "swapaxes", "squeeze"))
# array methods that copy host index arrays to the device (CuPy converts them silently)
_INDEX_METHODS = frozenset(("take", "put", "compress", "choose"))


def host_param(v):
    """A shape-like argument as NumPy reads it: device arrays in it are read to the host (counted)."""
    if type(v) is StandinArray:
        transfers.record("d2h", True, "shape argument", v._a)
        return v._a
    if type(v) in (list, tuple):
        return type(v)(host_param(x) for x in v)
    return v


def operand(x):
    """The NumPy value behind an operand of device arithmetic: device arrays and scalars pass, a host
    array raises TypeError (as CuPy), anything else is NotImplemented (Python tries the other side)."""
    if type(x) is StandinArray:
        return x._a
    if isinstance(x, _SCALAR_TYPES):
        return x
    if isinstance(x, np.ndarray):
        raise host_array_error("device arithmetic", x)
    return NotImplemented


def index_for_device(key):
    """An index for the NumPy array behind a device array. Host arrays and lists in it are copied
    to the device (CuPy converts them silently): counted as implicit transfers. A boolean mask
    makes a result whose size depends on the data: CuPy reads the count to the host (counted)."""
    if type(key) is StandinArray:
        if key._a.dtype == np.bool_:
            data_dependent_size("boolean mask")
        return key._a
    if type(key) is tuple:
        return tuple(index_for_device(k) for k in key)
    if isinstance(key, np.ndarray) or type(key) is list:
        transfers.record("h2d", True, "index", np.asarray(key) if type(key) is list else key)
    return key


def data_dependent_size(what):
    """CuPy learns the size of a result that depends on the data (a boolean mask's selection,
    ``nonzero``, ``unique``) by reading a count from the device: an implicit transfer."""
    transfers.record("d2h", True, "%s (result size)" % what, np.zeros((), np.int64))


def value_for_device(v, what):
    if type(v) is StandinArray:
        return v._a
    if isinstance(v, np.ndarray) or type(v) in (list, tuple):
        transfers.record("h2d", True, what, np.asarray(v) if type(v) is not np.ndarray else v)
    return v


class Flags:
    """CuPy's array flags: ``c_contiguous``, ``f_contiguous`` and ``owndata`` only, read-only."""

    __slots__ = ("_c", "_f", "_own")

    def __init__(self, c, f, own):
        self._c, self._f, self._own = c, f, own

    c_contiguous = property(lambda self: self._c)
    f_contiguous = property(lambda self: self._f)
    owndata = property(lambda self: self._own)

    def __getitem__(self, name):
        keys = {"C_CONTIGUOUS": self._c, "F_CONTIGUOUS": self._f, "OWNDATA": self._own}
        if name not in keys:
            raise KeyError("%s is not a flag of a device array (CuPy has C_CONTIGUOUS, F_CONTIGUOUS, OWNDATA)" % name)
        return keys[name]

    def __getattr__(self, name):
        raise AttributeError("device array flags have no %r: CuPy's arrays have only c_contiguous, "
                             "f_contiguous and owndata" % name)

    def __repr__(self):
        return "  C_CONTIGUOUS : %s\n  F_CONTIGUOUS : %s\n  OWNDATA : %s" % (self._c, self._f, self._own)


class StandinArray:
    """An array on the stand-in device (see the module's docstring). ``StandinArray(shape, dtype)``
    allocates one, as ``cupy.ndarray(shape, dtype)`` does; ``xp.asarray(host)`` copies one in."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]  # unhashable, as NumPy's arrays

    def __init__(self, shape, dtype=float, order="C"):
        self._a = np.empty(shape, dtype=dtype, order=order)

    # ---------------------------------------------------------------- what NumPy may not do with it
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT_CONVERSION)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for x in inputs:
            if isinstance(x, np.ndarray):
                raise host_array_error("numpy.%s mixing device and host arrays" % ufunc.__name__, x)
        if method == "__call__" and len(inputs) == 2 and not kwargs and \
                any(isinstance(x, np.generic) for x in inputs):
            # a NumPy scalar's operator (np.float32(2) * a) arrives here: CuPy computes it on the device
            a, b = (operand(x) for x in inputs)
            return wrap_result(ufunc(a, b))
        raise TypeError("numpy.%s%s given a device array: call the place's array module instead "
                        "(ctx.xp.%s); the stand-in refuses NumPy on device arrays"
                        % (ufunc.__name__, "" if method == "__call__" else "." + method, ufunc.__name__))

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError("numpy.%s given a device array: call the place's array module instead (ctx.xp.%s); "
                        "the stand-in refuses NumPy functions on device arrays" % (func.__name__, func.__name__))

    # ---------------------------------------------------------------- transfers
    def get(self, stream=None, order="C", out=None):
        """A host copy (an explicit device-to-host transfer)."""
        transfers.record("d2h", False, "get", self._a)
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        """Copy the host array ``arr`` (same shape and dtype) into this array (host-to-device)."""
        if not isinstance(arr, np.ndarray):
            raise TypeError("only a numpy.ndarray can be set into a device array, got %r" % type(arr).__name__)
        if arr.dtype != self._a.dtype or arr.shape != self._a.shape:
            raise ValueError("set: %s%s into %s%s" % (arr.dtype, list(arr.shape), self._a.dtype, list(self._a.shape)))
        transfers.record("h2d", False, "set", arr)
        self._a[...] = arr

    def _scalar(self, what):
        transfers.record("d2h", True, what, self._a)
        return self._a

    def __float__(self):
        return float(self._scalar("float()"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __complex__(self):
        return complex(self._scalar("complex()"))

    def __bool__(self):
        if self._a.size != 1:
            return bool(self._a)      # NumPy's errors (CuPy raises the same)
        return bool(self._scalar("bool()"))

    def item(self):
        if self._a.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._scalar("item()").item()

    def tolist(self):
        return self._scalar("tolist()").tolist()

    def tobytes(self, order="C"):
        return self._scalar("tobytes()").tobytes(order)

    def __repr__(self):
        return "standin." + repr(self._scalar("repr()")).replace("\n", "\n" + " " * 8)

    def __str__(self):
        return str(self._scalar("str()"))

    def __format__(self, spec):
        return format(self._scalar("format()"), spec)

    def __reduce__(self):
        return _restore, (np.array(self._scalar("pickle"), copy=True),)

    # ---------------------------------------------------------------- metadata (no transfer)
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, value):
        self._a.shape = value

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    T = property(lambda self: self if self._a.ndim < 2 else wrap(self._a.T))

    @property
    def flags(self):
        f = self._a.flags
        return Flags(f.c_contiguous, f.f_contiguous, self._a.base is None)

    @property
    def base(self):
        return None if self._a.base is None else wrap(self._a.base)

    @property
    def real(self):
        return wrap(self._a.real)

    @property
    def imag(self):
        return wrap(self._a.imag)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (wrap_result(self._a[i]) for i in range(self._a.shape[0]))

    # ---------------------------------------------------------------- indexing
    def __getitem__(self, key):
        return wrap_result(self._a[index_for_device(key)])

    def __setitem__(self, key, value):
        self._a[index_for_device(key)] = value_for_device(value, "setitem value")

    def scatter_add(self, slices, value):
        """CuPy's ``ndarray.scatter_add``: ``self[slices] += value`` with repeated indices summed."""
        _check_scatter_dtype("scatter_add", self._a.dtype)
        np.add.at(self._a, index_for_device(slices), value_for_device(value, "scatter value"))

    def scatter_max(self, slices, value):
        np.maximum.at(self._a, index_for_device(slices), value_for_device(value, "scatter value"))

    def scatter_min(self, slices, value):
        np.minimum.at(self._a, index_for_device(slices), value_for_device(value, "scatter value"))

    def __copy__(self):
        return wrap(self._a.copy())

    def __deepcopy__(self, memo):
        return wrap(self._a.copy())


_SCATTER_ADD_DTYPES = frozenset(np.dtype(t) for t in ("int32", "float16", "float32", "float64", "uint32", "uint64"))


def _check_scatter_dtype(what, dtype):
    """CuPy's scatter add (behind ``ufunc.at`` and ``cupyx.scatter_add``) uses CUDA's atomicAdd, which
    exists for these dtypes only; others raise TypeError there."""
    if np.dtype(dtype) not in _SCATTER_ADD_DTYPES:
        raise TypeError("%s on a device array supports int32, float16, float32, float64, uint32 and uint64 only "
                        "(CUDA atomics), got %s" % (what, np.dtype(dtype)))


def _restore(host):
    transfers.record("h2d", True, "unpickle", host)
    return wrap(host)


def _method(name):
    def method(self, *args, **kwargs):
        if name in ("nonzero", "compress"):
            data_dependent_size("ndarray." + name)
        out_arg = kwargs.get("out")
        if name in _SHAPE_METHODS:
            args = tuple(host_param(a) for a in args)
        else:
            args = tuple(_method_arg(name, a) for a in args)
        kwargs = {k: (host_param(v) if k in HOST_PARAMS else _method_arg(name, v)) for k, v in kwargs.items()}
        res = getattr(self._a, name)(*args, **kwargs)
        if res is self._a:
            return self
        if type(out_arg) is StandinArray and res is out_arg._a:
            return out_arg
        return wrap_result(res)
    method.__name__ = name
    method.__doc__ = "``numpy.ndarray.%s`` on the device (results stay on the device)." % name
    return method


def _method_arg(name, a):
    if type(a) is StandinArray:
        return a._a
    if isinstance(a, np.ndarray):
        if name in _INDEX_METHODS:
            transfers.record("h2d", True, "%s() indices" % name, a)
            return a
        raise host_array_error("device array method %s()" % name, a)
    return a


for _name in ("reshape", "astype", "copy", "ravel", "flatten", "transpose", "swapaxes", "squeeze", "repeat",
              "take", "sum", "mean", "max", "min", "argmax", "argmin", "prod", "cumsum", "cumprod", "all", "any",
              "clip", "round", "var", "std", "dot", "view", "nonzero", "diagonal", "conj", "conjugate", "choose",
              "compress", "partition", "argpartition", "trace", "ptp", "argsort", "sort", "fill", "put"):
    setattr(StandinArray, _name, _method(_name))


def _binary(name):
    def op(self, other):
        o = operand(other)
        if o is NotImplemented:
            return NotImplemented
        out = getattr(self._a, name)(o)
        if out is NotImplemented:
            return out
        return self if out is self._a else wrap_result(out)
    op.__name__ = name
    return op


def _unary(name):
    def op(self):
        return wrap_result(getattr(self._a, name)())
    op.__name__ = name
    return op


for _op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and", "or",
            "xor", "divmod"):
    for _form in ("__%s__", "__r%s__", "__i%s__"):
        _name = _form % _op
        if hasattr(np.ndarray, _name):
            setattr(StandinArray, _name, _binary(_name))
for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(StandinArray, _name, _binary(_name))
for _name in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(StandinArray, _name, _unary(_name))
del _name, _op, _form
