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

import numpy as np

from . import standin_index as _ix
from . import transfers
from .standin_cuda import Device, current_device, gpu_semantics_enabled

IMPLICIT_CONVERSION = ("Implicit conversion to a NumPy array is not allowed: this is a device array (the "
                       "stand-in device, which refuses what CuPy refuses). Copy it to the host with .get() or "
                       "the array module's asnumpy(), through the Place that owns it")
_SCALAR_TYPES = (bool, int, float, complex, np.generic)
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
# array methods whose positional arguments are such parameters
_SHAPE_METHODS = frozenset(("reshape", "transpose", "repeat", "swapaxes", "squeeze"))
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
    the host (counted)."""
    if type(key) is StandinArray:
        k = on_device(key, cur, "an index")
        if k.dtype == np.bool_:
            data_dependent_size("boolean mask")
        return k
    if type(key) is tuple:
        return tuple(index_for_device(k, cur) for k in key)
    if isinstance(key, np.ndarray) or type(key) is list:
        host = np.asarray(key)
        transfers.record("h2d", True, "index", host)
        if host.dtype == np.bool_:
            data_dependent_size("boolean mask")
        return host
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


from .standin_methods import StandinArray, _restore  # noqa: E402,F401  (the class, built on the helpers above)
