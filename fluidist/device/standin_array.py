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
- It lives on one stand-in device (``a.device.id``: the thread's current device when it was made);
  a kernel given it while another device is current raises ValueError (see
  :mod:`fluidist.device.standin_cuda`).
- Assigning a host value through a basic index (``a[0:2] = host``) takes scalars only, and ``set``
  needs a contiguous array (see :mod:`fluidist.device.standin_index`).
- Reading a value on the host is a counted transfer (:mod:`fluidist.device.transfers`): ``get()``
  explicitly; ``float()``, ``int()``, ``bool()``, ``complex()``, ``item()``, ``tolist()``, ``repr()``
  and ``str()`` implicitly, as CuPy does them with a hidden synchronisation. Host arrays and lists
  used as indices or assigned into a device array are counted implicit host-to-device transfers.
  Each operation that makes or writes a device array is a counted kernel launch.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import standin_index as _ix
from . import transfers
from .standin_syncs import DEVICE_PARAMS, hidden_uploads, method_syncs
from .standin_cuda import Device, current_device, gpu_semantics_enabled

IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed: this is a device array (the "
                       "stand-in device, which refuses what CuPy refuses). Copy it to the host with .get() or "
                       "the array module's asnumpy(), through the Place that owns it")
_SCALAR_TYPES = (bool, int, float, complex, np.generic)
_COUNT = np.zeros((), np.int64)      # what a hidden read of CuPy's own reads: a count or a flag
_launch = transfers.record_launch


def wrap(a, dev=None):
    """A device array over the NumPy array ``a`` (no copy, no transfer: results of device work), on
    device ``dev`` (default: the current one)."""
    obj = object.__new__(StandinArray)
    obj._a = a
    obj._dev = current_device() if dev is None else dev
    return obj


def wrap_result(x, dev=None):
    """Results of device work: arrays and NumPy scalars become device arrays (CuPy gives 0-d arrays
    where NumPy gives scalars); tuples and lists of them keep their kind; other values pass."""
    if isinstance(x, np.ndarray):
        return wrap(x, dev)
    if isinstance(x, np.generic):
        return wrap(np.asarray(x), dev)
    if isinstance(x, tuple):
        return tuple(wrap_result(v, dev) for v in x)
    if isinstance(x, list):
        return [wrap_result(v, dev) for v in x]
    return x


def host_array_error(what, value):
    return TypeError("%s given a host %s (shape %s): device code takes device arrays only (CuPy refuses "
                     "host arrays here too); copy it to the device through the Place, or create it with the "
                     "array module (xp.asarray)" % (what, type(value).__name__, list(np.shape(value))))


def device_mismatch(what, dev, cur):
    return ValueError("%s: the device where the array resides (%d) is different from the current device (%d); "
                      "CuPy refuses it unless the two GPUs have peer access, the stand-in always does. Run the "
                      "kernel under the array's device (its Place's device_context()) or copy the array to the "
                      "current device (xp.asarray)" % (what, dev, cur))


def on_device(v, cur, what):
    """The NumPy array behind device array ``v``, which a kernel of the current device ``cur`` reads."""
    if v._dev != cur:
        raise device_mismatch(what, v._dev, cur)
    return v._a


def is_new(res, ins):
    """Whether the NumPy array ``res`` is new memory, not a view of one of ``ins`` (NumPy arrays)."""
    root = res if res.base is None else res.base
    for x in ins:
        if (x if x.base is None else x.base) is root:
            return False
    return True


def holds_new_array(res, ins):
    if isinstance(res, np.ndarray):
        return is_new(res, ins)
    if isinstance(res, (tuple, list)):
        return any(holds_new_array(r, ins) for r in res)
    return isinstance(res, np.generic)


# parameters CuPy reads on the host as Python numbers or sequences (shapes, axes, split points,
# repeats, sizes): host arrays are fine there; a device array there is read element by element
# (implicit transfers, each a synchronisation)
HOST_PARAMS = frozenset(("shape", "newshape", "axes", "axis", "reps", "indices_or_sections", "pad_width",
                         "repeats", "source", "destination", "shift", "sections", "new_shape", "start", "stop",
                         "step", "N", "M", "k", "n", "num", "minlength"))
# array methods whose positional arguments are such parameters (``repeat``'s are not: CuPy takes
# its repeats on the device, see ``standin_syncs.repeat_syncs``)
_SHAPE_METHODS = frozenset(("reshape", "transpose", "swapaxes", "squeeze"))
# array methods that copy host index arrays to the device (CuPy converts them silently)
_INDEX_METHODS = frozenset(("take", "put", "compress", "choose"))
# array methods that give views (no kernel; allowed on an array of another device)
_VIEW_METHODS = frozenset(("reshape", "transpose", "swapaxes", "squeeze", "view", "diagonal", "ravel"))
# array methods that write in place and return None
_IN_PLACE_METHODS = frozenset(("fill", "put", "sort", "partition"))


def host_param(v):
    """A shape-like argument as NumPy reads it: device arrays in it are read to the host (counted)."""
    if type(v) is StandinArray:
        transfers.record("d2h", True, "shape argument", v._a)
        return v._a
    if type(v) in (list, tuple):
        return type(v)(host_param(x) for x in v)
    return v


def operand(x, cur, what="device arithmetic"):
    """The NumPy value behind an operand of device arithmetic: device arrays (of the current device)
    and scalars pass, a host array raises TypeError (as CuPy), anything else is NotImplemented
    (Python tries the other side)."""
    if type(x) is StandinArray:
        return on_device(x, cur, what)
    if isinstance(x, _SCALAR_TYPES):
        return x
    if isinstance(x, np.ndarray):
        raise host_array_error(what, x)
    return NotImplemented


def index_for_device(key, cur):
    """An index for the NumPy array behind a device array. Host arrays and lists in it are copied
    to the device (CuPy converts them silently): counted as implicit transfers, lists becoming
    arrays. A boolean mask makes a result whose size depends on the data: CuPy reads the count to
    the host (counted), unless the mask is empty; a ``True`` / ``False`` index is such a mask (of
    one element)."""
    if type(key) is StandinArray:
        k = on_device(key, cur, "an index")
        if k.dtype == np.bool_ and k.size:
            data_dependent_size("boolean mask")
        return k
    if type(key) is tuple:
        return tuple(index_for_device(k, cur) for k in key)
    if isinstance(key, np.ndarray) or type(key) is list:
        host = np.asarray(key)
        transfers.record("h2d", True, "index", host)
        if host.dtype == np.bool_ and host.size:
            data_dependent_size("boolean mask")
        return host
    if type(key) in (bool, np.bool_):
        data_dependent_size("boolean mask")
    return key


def data_dependent_size(what):
    """CuPy learns the size of a result that depends on the data (a boolean mask's selection,
    ``nonzero``, ``unique``) by reading a count from the device: an implicit transfer."""
    transfers.record("d2h", True, "%s (result size)" % what, np.zeros((), np.int64))


def value_for_device(v, what, cur):
    """The value a scatter writes: a device array of the current device, a scalar, or host data
    (copied in by CuPy: an implicit transfer)."""
    if type(v) is StandinArray:
        return on_device(v, cur, what)
    if isinstance(v, np.ndarray) or type(v) in (list, tuple):
        host = np.asarray(v)
        transfers.record("h2d", True, what, host)
        return host
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


class MemoryPointer:
    """``a.data`` of a device array: its address and device (CuPy's ``cupy.cuda.MemoryPointer``)."""

    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr, device_id):
        self.ptr, self.device_id = ptr, device_id


_launch = transfers.record_launch


class StandinArray:
    """An array on the stand-in device (see :mod:`fluidist.device.standin_array`).
    ``StandinArray(shape, dtype)`` allocates one on the current device, as ``cupy.ndarray(shape,
    dtype)`` does; ``xp.asarray(host)`` copies one in."""

    __slots__ = ("_a", "_dev", "__weakref__")
    __array_priority__ = 100
    __hash__ = None  # type: ignore[assignment]  # unhashable, as NumPy's arrays

    def __init__(self, shape, dtype=float, order="C"):
        self._a = np.empty(shape, dtype=dtype, order=order)
        self._dev = current_device()

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
            cur = current_device()
            a, b = (operand(x, cur) for x in inputs)
            _launch(ufunc.__name__)
            return wrap_result(ufunc(a, b))
        raise TypeError("numpy.%s%s given a device array: call the place's array module instead "
                        "(ctx.xp.%s); the stand-in refuses NumPy on device arrays"
                        % (ufunc.__name__, "" if method == "__call__" else "." + method, ufunc.__name__))

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError("numpy.%s given a device array: call the place's array module instead (ctx.xp.%s); "
                        "the stand-in refuses NumPy functions on device arrays" % (func.__name__, func.__name__))

    # ---------------------------------------------------------------- transfers
    def get(self, stream=None, order="C", out=None):
        """A host copy (an explicit device-to-host transfer), from any current device; CuPy copies
        nothing for an empty array (unless given ``out``: a copy of no bytes, and a wait)."""
        if self._a.size or out is not None:
            transfers.record("d2h", False, "get", self._a)
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr, stream=None):
        """Copy the host array ``arr`` (same shape and dtype) into this array (host-to-device), as
        CuPy's ``set``: TypeError for another type or dtype, ValueError for another shape,
        RuntimeError into an array that is neither C- nor F-contiguous."""
        if not isinstance(arr, np.ndarray):
            raise TypeError("only a numpy.ndarray can be set into a device array, got %r" % type(arr).__name__)
        if arr.dtype != self._a.dtype:
            raise TypeError("set: a %s array cannot be set into a %s device array" % (arr.dtype, self._a.dtype))
        if arr.shape != self._a.shape:
            raise ValueError("set: shape mismatch, %s into %s" % (list(arr.shape), list(self._a.shape)))
        if not (self._a.flags.c_contiguous or self._a.flags.f_contiguous):
            raise RuntimeError("set: cannot set into a non-contiguous device array (CuPy copies whole buffers; "
                               "set a contiguous array, or assign a device array through the index)")
        transfers.record("h2d", False, "set", arr)
        self._a[...] = arr

    def _scalar(self, what):
        if self._a.size:        # (CuPy's get() of an empty array copies nothing)
            transfers.record("d2h", True, what, self._a)
        return self._a

    def __float__(self):
        return float(self._scalar("float()"))

    def __int__(self):
        return int(self._scalar("int()"))

    def __complex__(self):
        return complex(self._scalar("complex()"))

    def __bool__(self):
        if self._a.size == 0:       # CuPy: False, with NumPy 1's deprecation warning (no read)
            warnings.warn("The truth value of an empty array is ambiguous. Returning False, but in future this "
                          "will result in an error. Use `array.size > 0` to check that an array is not empty.",
                          DeprecationWarning, stacklevel=2)
            return False
        if self._a.size != 1:
            return bool(self._a)      # NumPy's error (CuPy raises the same)
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
    T = property(lambda self: self if self._a.ndim < 2 else wrap(self._a.T, self._dev))
    device = property(lambda self: Device(self._dev))
    data = property(lambda self: MemoryPointer(self._a.__array_interface__["data"][0], self._dev))

    @property
    def flags(self):
        f = self._a.flags
        return Flags(f.c_contiguous, f.f_contiguous, self._a.base is None)

    @property
    def base(self):
        return None if self._a.base is None else wrap(self._a.base, self._dev)

    @property
    def real(self):
        return wrap(self._a.real, self._dev)

    @property
    def imag(self):
        return wrap(self._a.imag, self._dev)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (wrap_result(self._a[i], self._dev) for i in range(self._a.shape[0]))

    # ---------------------------------------------------------------- indexing
    def __getitem__(self, key):
        cur = current_device()
        k = index_for_device(key, cur)
        if not _ix.is_advanced(k):
            return wrap_result(self._a[k], self._dev)      # a view: no kernel
        a = on_device(self, cur, "a gather (advanced index)")
        if gpu_semantics_enabled():
            k = _ix.wrap_index(k, a.shape)
        _launch("getitem")
        return wrap_result(a[k])

    def __setitem__(self, key, value):
        cur = current_device()
        a = on_device(self, cur, "setitem")
        k = index_for_device(key, cur)
        _launch("setitem")
        if not _ix.is_advanced(k):
            a[k] = on_device(value, cur, "setitem value") if type(value) is StandinArray else \
                _ix.fill_value(value, a.dtype)
            return
        v = value_for_device(value, "setitem value", cur)
        if gpu_semantics_enabled():
            k = _ix.wrap_index(k, a.shape)
            if _ix.has_integer_array(k):
                _ix.scrambled_setitem(a, k, v)
                return
        a[k] = v

    def _scatter(self, op, ufunc, slices, value, what):
        """``self[slices] op= value`` with repeated indices combined (CuPy's ``_scatter_op``)."""
        cur = current_device()
        a = on_device(self, cur, what)
        k = index_for_device(slices, cur)
        _launch(what)
        if not _ix.is_advanced(k):      # a view: the ufunc in place (host values refused as ufunc operands)
            ufunc(a[k] if k != () else a, operand(value, cur, what), out=a[k] if k != () else a)
            return
        if _ix.has_integer_array(k):
            _ix.check_scatter_dtype(op, a.dtype, what)
            if gpu_semantics_enabled():
                k = _ix.wrap_index(k, a.shape)
        ufunc.at(a, k, value_for_device(value, "scatter value", cur))

    def scatter_add(self, slices, value):
        """CuPy's ``ndarray.scatter_add``: ``self[slices] += value`` with repeated indices summed."""
        self._scatter("add", np.add, slices, value, "scatter_add")

    def scatter_max(self, slices, value):
        self._scatter("maximum", np.maximum, slices, value, "scatter_max")

    def scatter_min(self, slices, value):
        self._scatter("minimum", np.minimum, slices, value, "scatter_min")

    def fill(self, value):
        """Fill with a scalar (a host scalar, or a 0-d device array), as CuPy's ``fill``."""
        cur = current_device()
        a = on_device(self, cur, "fill")
        if type(value) is StandinArray:
            v = on_device(value, cur, "fill")
            if v.shape != ():
                raise ValueError("non-scalar cupy.ndarray cannot be used for fill (shape %s)" % list(v.shape))
            # CuPy tests ``value == 0`` on the host (zero: a memset instead of a kernel): a read back
            transfers.record("d2h", True, "fill(device value): value == 0", v)
        else:
            v = _ix.fill_value(value, a.dtype)
        _launch("fill")
        a.fill(v)

    def put(self, indices, values, mode="wrap"):
        """CuPy's ``put``: flat ``indices`` (wrapped by default, as CuPy), ``values`` repeated."""
        cur = current_device()
        a = on_device(self, cur, "put")
        idx = value_for_device(indices, "put() indices", cur)
        vals = value_for_device(values, "put() values", cur)
        for why in method_syncs("put", a, (idx, vals), {"mode": mode}):
            transfers.record("d2h", True, why, _COUNT)
        _launch("put")
        if gpu_semantics_enabled():
            _ix.scrambled_put(a, idx, vals, mode)
        else:
            a.put(idx, vals, mode="raise" if mode == "wrap" else mode)

    def copy(self, order="C"):
        """A copy on the current device (from another device too, as CuPy's: a peer copy)."""
        if self._dev != current_device():
            transfers.record("d2d", False, "copy", self._a)
        else:
            _launch("copy")
        return wrap(self._a.copy(order=order))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()


def _restore(host):
    transfers.record("h2d", True, "unpickle", host)
    return wrap(host)


def _method(name):
    view = name in _VIEW_METHODS
    in_place = name in _IN_PLACE_METHODS
    what = "ndarray." + name
    host_params = HOST_PARAMS - DEVICE_PARAMS.get(name, frozenset())

    def method(self, *args, **kwargs):
        cur = current_device()
        a = self._a if view else on_device(self, cur, what)
        out_arg = kwargs.get("out")
        if name in _SHAPE_METHODS:
            args = tuple(host_param(x) for x in args)
        else:
            args = tuple(_method_arg(name, x, cur) for x in args)
        kwargs = {k: (host_param(v) if k in host_params else _method_arg(name, v, cur)) for k, v in kwargs.items()}
        for why, host in hidden_uploads(name, args, kwargs, method=True):
            transfers.record("h2d", True, why, host)
        for why in method_syncs(name, a, args, kwargs):
            transfers.record("d2h", True, why, _COUNT)
        if name == "take" and gpu_semantics_enabled():
            kwargs.setdefault("mode", "wrap")       # CuPy's take wraps indices out of range
        res = getattr(a, name)(*args, **kwargs)
        if res is a:
            if in_place:
                _launch(what)
            return self
        if type(out_arg) is StandinArray and res is out_arg._a:
            _launch(what)
            return out_arg
        if in_place or (isinstance(res, np.ndarray) and is_new(res, (a,))) or isinstance(res, (np.generic, tuple)):
            _launch(what)
        return wrap_result(res, self._dev if view else None)
    method.__name__ = name
    method.__doc__ = "``numpy.ndarray.%s`` on the device (results stay on the device)." % name
    return method


def _method_arg(name, a, cur):
    if type(a) is StandinArray:
        return on_device(a, cur, "ndarray.%s()" % name)
    if isinstance(a, np.ndarray):
        if name in _INDEX_METHODS:
            transfers.record("h2d", True, "%s() indices" % name, a)
            return a
        raise host_array_error("device array method %s()" % name, a)
    return a


for _name in ("reshape", "astype", "ravel", "flatten", "transpose", "swapaxes", "squeeze", "repeat",
              "take", "sum", "mean", "max", "min", "argmax", "argmin", "prod", "cumsum", "cumprod", "all", "any",
              "clip", "round", "var", "std", "dot", "view", "nonzero", "diagonal", "conj", "conjugate", "choose",
              "compress", "partition", "argpartition", "trace", "ptp", "argsort", "sort"):
    setattr(StandinArray, _name, _method(_name))


def _binary(name):
    what = "operator " + name

    def op(self, other):
        cur = current_device()
        o = operand(other, cur, what)
        if o is NotImplemented:
            return NotImplemented
        out = getattr(on_device(self, cur, what), name)(o)
        if out is NotImplemented:
            return out
        _launch(what)
        return self if out is self._a else wrap_result(out)
    op.__name__ = name
    return op


def _unary(name):
    what = "operator " + name

    def op(self):
        a = on_device(self, current_device(), what)
        _launch(what)
        return wrap_result(getattr(a, name)())
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
