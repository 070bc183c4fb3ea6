"""Places: where kernels run. Each place knows its array module (numpy or cupy)."""
import numpy as np


class CPUPlace:
    xp = np

    def __eq__(self, other):
        return isinstance(other, CPUPlace)

    def __hash__(self):
        return hash("cpu")

    def __repr__(self):
        return "CPUPlace"

    def device_context(self):
        import contextlib
        return contextlib.nullcontext()


class CUDAPlace:
    """A GPU. Kernels run through CuPy; ``pip install fluidist[gpu]`` brings it."""

    def __init__(self, device_id=0):
        self.device_id = int(device_id)

    @property
    def xp(self):
        return cupy_module()

    def __eq__(self, other):
        return isinstance(other, CUDAPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(("cuda", self.device_id))

    def __repr__(self):
        return "CUDAPlace(%d)" % self.device_id

    def device_context(self):
        return cupy_module().cuda.Device(self.device_id)


class CUDAPinnedPlace(CPUPlace):
    def __repr__(self):
        return "CUDAPinnedPlace"


def cupy_module():
    try:
        import cupy
    except ImportError as e:
        raise RuntimeError("CUDAPlace needs CuPy (pip install fluidist[gpu]): %s" % e) from None
    return cupy


def cupy_status():
    """``(cupy module, None)`` when CuPy imports and sees a GPU, else ``(None, why not)``: the reason
    (not installed, no CUDA driver, no device, ...) is kept for the errors a user sees."""
    try:
        import cupy
    except Exception as e:   # ImportError, or CUDA libraries that fail to load
        return None, "CuPy cannot be imported (%s: %s); pip install fluidist[gpu]" % (type(e).__name__, e)
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return None, "CuPy sees no usable CUDA runtime (%s: %s)" % (type(e).__name__, e)
    if n < 1:
        return None, "CuPy finds no CUDA device"
    return cupy, None


def is_compiled_with_cuda():
    """True when CuPy can run kernels on a GPU here (``cupy_status()`` says why not)."""
    return cupy_status()[0] is not None


def cuda_places(device_ids=None):
    if device_ids is None:
        import os
        sel = os.environ.get("FLAGS_selected_gpus")
        if sel:
            device_ids = [int(s) for s in sel.split(",") if s.strip()]
        else:
            device_ids = list(range(cupy_module().cuda.runtime.getDeviceCount()))
    return [CUDAPlace(i) for i in device_ids]


def cpu_places(device_count=None):
    if device_count is None:
        import os
        device_count = int(os.environ.get("CPU_NUM", "1"))
    return [CPUPlace() for _ in range(device_count)]


def cuda_pinned_places(device_count=None):
    """``device_count`` CUDAPinnedPlaces (default ``CPU_NUM``, else 1): host memory staged for the GPU."""
    if device_count is None:
        import os
        device_count = int(os.environ.get("CPU_NUM", "1"))
    return [CUDAPinnedPlace() for _ in range(device_count)]


def to_host(value):
    """A numpy array for a numpy or cupy array (other values unchanged)."""
    if isinstance(value, np.ndarray) or value is None:
        return value
    get = getattr(value, "get", None)
    if get is not None and type(value).__module__.startswith("cupy"):
        return get()
    return value
