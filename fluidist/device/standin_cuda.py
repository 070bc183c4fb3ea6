"""The stand-in device's ``xp.cuda``: devices, streams and events as CuPy's, and the opt-in GPU
semantics.

Devices. As with CUDA, each thread has a *current device* (0 until it says otherwise, with
``xp.cuda.Device(i)`` as a context or ``.use()``; a ``StandinPlace(i)``'s ``device_context()`` does
it). Every stand-in array is made on the current device and keeps its id (``a.device.id``). A
kernel given an array of another device is refused with CuPy's ValueError (CuPy refuses it where
the two GPUs have no peer access; the stand-in, stricter, always does: a program whose data cross
devices silently works on one machine and fails on the next).

Streams and events. Their ``synchronize()`` makes the host wait for the device: each call is a
counted synchronisation (see :mod:`fluidist.device.transfers`); so are the device's and the
runtime's ``deviceSynchronize()``. Work on the stand-in is done when the call returns, so
``record`` / ``wait_event`` order nothing and cost nothing.

GPU semantics (opt-in: :func:`gpu_semantics` for a block, :func:`set_gpu_semantics` for the
process; ``fluidist.device.use_from_env()`` turns them on where ``FLUIDIST_STANDIN_GPU_SEMANTICS=1``).
Where NumPy raises or defines an order and a GPU does not, the stand-in does by default what NumPy does (a bug shows as an error), and under GPU semantics what CuPy does:
an integer index out of range wraps around (``take``, advanced indexing), and writes through
repeated indices land in an order no one chose (``a[idx] = v`` and ``put`` with duplicates: here a
random order, so code that relies on "the last wins" gives a different answer).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Optional

import numpy as np

from . import transfers

_tls = threading.local()
DEVICE_COUNT = 16   # stand-in devices a process sees (CUDA's ordinals 0 .. 15)


def current_device() -> int:
    """The id of this thread's current stand-in device."""
    return getattr(_tls, "device", 0)


def _set_current(device_id: int) -> None:
    _tls.device = device_id


class Device:
    """A stand-in GPU, as ``cupy.cuda.Device``: ``Device()`` is the current one; ``with Device(i):``
    makes device ``i`` current in this thread for the block."""

    def __init__(self, device: Optional[int] = None) -> None:
        did = current_device() if device is None else int(device)
        if not 0 <= did < DEVICE_COUNT:
            raise ValueError("stand-in device %d does not exist (ids 0 .. %d, as CUDA's ordinals)"
                             % (did, DEVICE_COUNT - 1))
        self.id = did
        self._prev: list = []

    def __enter__(self) -> "Device":
        self._prev.append(current_device())
        _set_current(self.id)
        return self

    def __exit__(self, *exc) -> None:
        _set_current(self._prev.pop())

    def use(self) -> None:
        """Make this device current in this thread."""
        _set_current(self.id)

    def synchronize(self) -> None:
        """Wait until the device is idle: a counted synchronisation."""
        transfers.record_sync("Device.synchronize")

    @property
    def pci_bus_id(self) -> str:
        return "0000:%02x:00.0" % (0x10 + self.id)

    compute_capability = "90"

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(("standin-device", self.id))

    def __repr__(self):
        return "<CUDA Device %d (stand-in)>" % self.id


class Event:
    """A CUDA event: recording it orders nothing on the stand-in; ``synchronize()`` waits (counted)."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        self.done = True

    def record(self, stream: Optional["Stream"] = None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        transfers.record_sync("Event.synchronize")


class Stream:
    """A CUDA stream of the current device: ``synchronize()`` is a counted synchronisation;
    ``with stream:`` makes it the current stream of this thread."""

    null: "Stream"

    def __init__(self, null: bool = False, non_blocking: bool = False, ptr: int = 0) -> None:
        self.device_id = current_device()
        self.ptr = 0 if null else id(self)
        self._prev: list = []

    def synchronize(self) -> None:
        transfers.record_sync("Stream.synchronize")

    def record(self, event: Optional[Event] = None) -> Event:
        return event if event is not None else Event()

    def wait_event(self, event: Event) -> None:
        pass

    def use(self) -> "Stream":
        _tls.stream = self
        return self

    def __enter__(self) -> "Stream":
        self._prev.append(getattr(_tls, "stream", None))
        _tls.stream = self
        return self

    def __exit__(self, *exc) -> None:
        _tls.stream = self._prev.pop()

    def __repr__(self):
        return "<Stream %#x (stand-in device %d)>" % (self.ptr, self.device_id)


Stream.null = Stream(null=True)


def get_current_stream() -> Stream:
    """This thread's current stream (the null stream unless one was entered)."""
    s = getattr(_tls, "stream", None)
    return Stream.null if s is None else s


class _Runtime:
    """The few ``cupy.cuda.runtime`` calls fluidist makes."""

    @staticmethod
    def getDeviceCount() -> int:
        return DEVICE_COUNT

    @staticmethod
    def getDevice() -> int:
        return current_device()

    @staticmethod
    def setDevice(device_id: int) -> None:
        Device(device_id).use()

    @staticmethod
    def deviceSynchronize() -> None:
        transfers.record_sync("runtime.deviceSynchronize")


runtime = _Runtime()


class CudaNamespace:
    """``xp.cuda`` of the stand-in array module."""
    Device = Device
    Stream = Stream
    Event = Event
    runtime = runtime
    get_current_stream = staticmethod(get_current_stream)


cuda = CudaNamespace()


# ---------------------------------------------------------------- GPU semantics
class _Semantics:
    enabled = False
    rng = np.random.RandomState(0)


def gpu_semantics_enabled() -> bool:
    """Whether the stand-in wraps out-of-range indices and scrambles repeated-index writes."""
    return _Semantics.enabled


def set_gpu_semantics(enabled: bool, seed: int = 0) -> None:
    """Turn GPU semantics on or off for the process (every thread); ``seed`` seeds the order of
    repeated writes."""
    _Semantics.enabled, _Semantics.rng = bool(enabled), np.random.RandomState(seed)


@contextlib.contextmanager
def gpu_semantics(enabled: bool = True, seed: int = 0) -> Iterator[None]:
    """Within the block (in every thread), the stand-in does what a GPU does where NumPy would raise
    or define an order (see the module's docstring); ``seed`` seeds the order of repeated writes."""
    old, old_rng = _Semantics.enabled, _Semantics.rng
    _Semantics.enabled, _Semantics.rng = bool(enabled), np.random.RandomState(seed)
    try:
        yield
    finally:
        _Semantics.enabled, _Semantics.rng = old, old_rng


def semantics_rng() -> np.random.RandomState:
    """The random order of repeated-index writes under GPU semantics."""
    return _Semantics.rng
