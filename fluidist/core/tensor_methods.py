"""The underscored methods Paddle 1.8's pybind gives ``Tensor`` / ``LoDTensor`` and scripts call
(``t._get_dims()``, ``t._get_float_element(0)``, ``t._alloc_float(place)``, ...), defined here and
bound into :class:`fluidist.core.tensor.Tensor`. As in Paddle: element access is by flat offset and
checks the offset and the element type (``_get_float_element`` on an int64 tensor is an error);
``_alloc_*`` allocate memory of the tensor's dims (set with ``_set_dims``) and that type."""
import numpy as np

from ..device.base import checked_place
from ..device.places import CPUPlace, place_of, to_host


def _value(t, what):
    a = t._get()
    if a is None:
        raise RuntimeError("%s: tensor %r is not initialized (set() or _alloc_*() it first)"
                           % (what, t._name or "<tensor>"))
    return a


def _get_dims(self):
    """The tensor's dims as a list (those given to ``_set_dims`` while it holds no memory)."""
    return self.shape()


def _set_dims(self, dims):
    """Resize: the data keeps its elements when their number is unchanged, else the tensor holds no
    memory until it is allocated again (Paddle's Resize)."""
    dims = [int(d) for d in dims]
    a = self._get()
    if a is not None and int(np.prod(dims)) == a.size:
        self._put(a.reshape(dims))
    elif a is not None:
        self._put(None)
    self._dims = dims


def _element(self, offset, dtype, what):
    a = _value(self, what)
    if np.dtype(a.dtype) != np.dtype(dtype):
        raise TypeError("%s: the tensor holds %s, not %s" % (what, a.dtype, dtype))
    if not 0 <= int(offset) < a.size:
        raise IndexError("%s: offset %d is outside the tensor's %d elements" % (what, offset, a.size))
    return a


def _get_float_element(self, offset):
    """The float32 element at flat ``offset``, as a Python float."""
    a = _element(self, offset, np.float32, "_get_float_element")
    return float(to_host(a.reshape(-1)[int(offset)]))


def _set_float_element(self, offset, value):
    a = _element(self, offset, np.float32, "_set_float_element")
    a.reshape(-1)[int(offset)] = value


def _get_double_element(self, offset):
    """The float64 element at flat ``offset``, as a Python float."""
    a = _element(self, offset, np.float64, "_get_double_element")
    return float(to_host(a.reshape(-1)[int(offset)]))


def _set_double_element(self, offset, value):
    a = _element(self, offset, np.float64, "_set_double_element")
    a.reshape(-1)[int(offset)] = value


def _is_initialized(self):
    """Whether the tensor holds memory."""
    return self._get() is not None


def _clear(self):
    """Free the tensor's memory (its dims are kept)."""
    a = self._get()
    if a is not None:
        self._dims = list(a.shape)
    self._put(None)


def _mutable_data(self, place, dtype):
    """Allocate memory of the tensor's dims (``[0]`` when none were set, as a new Paddle tensor's)
    and ``dtype`` on ``place`` (kept when it already fits); returns the memory's address, as Paddle
    returns its data pointer."""
    place = checked_place(place, "Tensor._mutable_data")
    dims = self.shape()
    if not dims and self._dims is None:
        dims = [0]
    a = self._get()
    dtype = np.dtype(dtype)
    if a is None or a.dtype != dtype or list(a.shape) != list(dims):
        zeros = np.zeros(dims, dtype=dtype)
        a = place.to_device(zeros) if place.is_device else zeros
        self._put(a)
    return int(a.data.ptr) if hasattr(a.data, "ptr") else int(a.ctypes.data)


def _alloc_float(self, place):
    _mutable_data(self, place, np.float32)


def _alloc_double(self, place):
    _mutable_data(self, place, np.float64)


def _alloc_int(self, place):
    _mutable_data(self, place, np.int32)


def _place(self):
    """The place whose memory holds the tensor (CPUPlace for a NumPy array)."""
    a = self._get()
    return CPUPlace() if a is None else place_of(a)


def _copy(self, place):
    """A new tensor (of this one's class, LoD included) holding a copy of the data on ``place``."""
    out = type(self)()
    out.set(np.array(self), place)
    if hasattr(self, "lod") and self.lod():
        out.set_lod(self.lod())
    return out


def _share_data_with(self, other):
    """Hold the same memory as ``other`` (writes through either are seen by both)."""
    self._put(_value(other, "_share_data_with"))


def _set_layout(self, layout):
    """Paddle's data layout tag (NCHW / NHWC); fluidist's kernels take layouts as op attrs."""
    self._layout = str(layout)
