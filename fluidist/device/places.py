"""The CPU and CUDA places, and the functions that ask any array where it lives.

Every place is a :class:`~fluidist.device.base.Place`: an array module (``xp``: numpy, cupy, or the
stand-in device's) and three methods that every move of a value between host and device goes through:
``owns(array)``, ``to_device(array)`` (a host array as an array of the place) and ``to_host(array)``
(a NumPy array). The Executor's plan (feeds, fetches, host-side ops), ``LoDTensor.set`` and the
runtime (values sent and received) call them; kernels never do (``core.placement`` moves whole
values: SelectedRows, tensor arrays, ...).
"""
import operator
import os

import numpy as np

from .base import Place
from .standin import StandinArray, StandinPlace  # noqa: F401  (a Place kind, re-exported)
from .standin import xp as standin_xp


_device_id = operator.attrgetter("device.id")
# how to get CuPy from a wheel (never its source package, which compiles for an hour)
GPU_INSTALL = 'pip install "fluidist[gpu-cuda13]" (or "fluidist[gpu-cuda12]" for a CUDA 12 driver)'


class CPUPlace(Place):
    """The host. Its arrays are NumPy's; a device array given to it is copied to the host."""

    xp = np
    is_device = False
    kind = "cpu"

    def owns(self, value):
        return isinstance(value, np.ndarray)

    def to_device(self, value, into=None):
        value = to_host(value) if not isinstance(value, np.ndarray) else value
        if into is not None:
            into[...] = value
            return into
        return value

    def to_host(self, value):
        return to_host(value)

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __hash__(self):
        return hash("cpu")

    def __repr__(self):
        return "CPUPlace"


class CUDAPlace(Place):
    """A GPU. Kernels run through CuPy (see ``GPU_INSTALL``); values cross to and from the
    host through ``to_device`` / ``to_host``."""

    is_device = True
    kind = "cuda"
    _paddle_type = 0

    def __init__(self, device_id: int = 0):
        self.device_id = int(device_id)

    @property
    def xp(self):
        return cupy_module()

    def owns(self, value):
        cp = cupy_module()
        return isinstance(value, cp.ndarray) and value.device.id == self.device_id

    def owns_all(self, values):
        n = len(values)     # (C loops: every value exactly a CuPy array, then each of this device)
        return list(map(type, values)).count(cupy_module().ndarray) == n and \
            list(map(_device_id, values)).count(self.device_id) == n

    def to_device(self, value, into=None):
        cp = cupy_module()
        if into is not None:
            if isinstance(value, cp.ndarray):
                into[...] = value
            else:
                into.set(np.ascontiguousarray(value))
            return into
        if isinstance(value, cp.ndarray) and value.device.id == self.device_id:
            return value
        with cp.cuda.Device(self.device_id):
            return cp.asarray(value)

    def to_host(self, value):
        return to_host(value)

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(("cuda", self.device_id))

    def __repr__(self):
        return "CUDAPlace(%d)" % self.device_id

    def device_context(self):
        return cupy_module().cuda.Device(self.device_id)


class CUDAPinnedPlace(CPUPlace):
    _paddle_type = 2

    def __repr__(self):
        return "CUDAPinnedPlace"


def cupy_module():
    try:
        import cupy
    except ImportError as e:
        raise RuntimeError("CUDAPlace needs CuPy (%s): %s" % (GPU_INSTALL, e)) from None
    return cupy


def cupy_status():
    """``(cupy module, None)`` when CuPy imports and sees a GPU, else ``(None, why not)``: the reason
    (not installed, no CUDA driver, no device, ...) is kept for the errors a user sees."""
    try:
        import cupy
    except Exception as e:   # ImportError, or CUDA libraries that fail to load
        return None, "CuPy cannot be imported (%s: %s); %s" % (type(e).__name__, e, GPU_INSTALL)
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return None, "CuPy sees no usable CUDA runtime (%s: %s)" % (type(e).__name__, e)
    if n < 1:
        return None, "CuPy finds no CUDA device"
    return cupy, None


def is_compiled_with_cuda() -> bool:
    """True when CuPy can run kernels on a GPU here (``cupy_status()`` says why not)."""
    return cupy_status()[0] is not None


def cuda_places(device_ids: "list[int] | None" = None) -> "list[CUDAPlace]":
    """One CUDAPlace per GPU: ``device_ids``, else those of ``FLAGS_selected_gpus`` (set by the
    launcher), else every GPU CuPy sees."""
    if device_ids is None:
        sel = os.environ.get("FLAGS_selected_gpus")
        if sel:
            device_ids = [int(s) for s in sel.split(",") if s.strip()]
        else:
            device_ids = list(range(cupy_module().cuda.runtime.getDeviceCount()))
    return [CUDAPlace(i) for i in device_ids]


def cpu_places(device_count: "int | None" = None) -> "list[CPUPlace]":
    """``device_count`` CPUPlaces (default ``CPU_NUM``, else 1): the places of a data-parallel
    run on the CPU, each a thread with its slice of the batch.

    Examples:
        >>> import fluidist as fluid
        >>> len(fluid.cpu_places(4))
        4
    """
    if device_count is None:
        device_count = int(os.environ.get("CPU_NUM", "1"))
    return [CPUPlace() for _ in range(device_count)]


def cuda_pinned_places(device_count: "int | None" = None) -> list:
    """``device_count`` CUDAPinnedPlaces (default ``CPU_NUM``, else 1): host memory staged for the GPU."""
    if device_count is None:
        device_count = int(os.environ.get("CPU_NUM", "1"))
    return [CUDAPinnedPlace() for _ in range(device_count)]


def to_host(value):
    """A numpy array for a numpy, cupy or stand-in array (other values unchanged)."""
    if isinstance(value, np.ndarray) or value is None:
        return value
    if type(value) is StandinArray or _is_cupy(value):
        return value.get()
    return value


def _is_cupy(value):
    return type(value).__module__.partition(".")[0] == "cupy" and hasattr(value, "get")


def array_module(value):
    """The array module of ``value``'s place: numpy, cupy or the stand-in's."""
    if type(value) is StandinArray:
        return standin_xp
    if _is_cupy(value):
        return cupy_module()
    return np


def place_of(value):
    """The place an array lives on: ``CPUPlace()`` for a NumPy array (or anything else)."""
    if type(value) is StandinArray:
        return StandinPlace(value.device.id)
    if _is_cupy(value):
        return CUDAPlace(value.device.id)
    return CPUPlace()


def is_device_array(value):
    """True for an array of a device place (CuPy's or the stand-in's)."""
    return type(value) is StandinArray or _is_cupy(value)
