"""``Place``: what every place (the CPU, a CUDA GPU, a stand-in device) is to the rest of fluidist.

A place says where kernels run and owns the only crossings of values between host and device:

- ``kind``: ``"cpu"``, ``"cuda"`` or ``"standin"`` (the registry's ``host_except`` names kinds);
- ``is_device``: whether its arrays live off the host (False for the CPU and pinned host memory);
- ``xp``: the array module its kernels compute with (numpy, cupy or the stand-in's);
- ``owns(array)``: whether an array is already one of this place's (``owns_all``: of a sequence);
- ``to_device(array, into=None)``: a host (or another place's) array as one of this place's;
- ``to_host(array)``: a NumPy array;
- ``device_context()``: a context in which this place's device is the current one.

Code that receives a place reads these attributes; it never probes for them.
"""
from __future__ import annotations

import abc
import contextlib
from typing import Any, ClassVar


class Place(abc.ABC):
    """A place of any kind: see the module's docstring for what each member means."""

    kind: ClassVar[str]
    is_device: ClassVar[bool]

    @property
    @abc.abstractmethod
    def xp(self) -> Any:
        """The array module of this place's kernels."""

    @abc.abstractmethod
    def owns(self, value: Any) -> bool:
        """Whether ``value`` is an array of this place."""

    @abc.abstractmethod
    def to_device(self, value: Any, into: Any = None) -> Any:
        """``value`` as an array of this place (copied into ``into``, an array of this place, if given)."""

    @abc.abstractmethod
    def to_host(self, value: Any) -> Any:
        """A NumPy array for an array of this place (a host array as it is)."""

    def owns_all(self, values: Any) -> bool:
        """Whether every one of ``values`` (a sequence) is an array of this place: ``owns`` of each, which
        a place may answer with fewer Python steps (the executor asks it of a block's inputs every run)."""
        return all(map(self.owns, values))

    def device_context(self) -> Any:
        """This place's device as the current one, for a ``with`` block (nothing to do on the host)."""
        return contextlib.nullcontext()

    # What Paddle's places answer: ``_type()`` (the index in Paddle's place variant: a GPU place 0, the
    # CPU 1, pinned memory 2), ``_equals(other)`` (same kind and device), and what its ``core.Place``
    # (the type of ``tensor._place()`` there) answers. The stand-in device answers as a GPU place.
    _paddle_type: ClassVar[int] = 1

    def _type(self) -> int:
        return self._paddle_type

    def _equals(self, other: Any) -> bool:
        other = getattr(other, "_place", other)          # a core.Place holding one
        return getattr(other, "_paddle_type", None) == self._paddle_type and \
            getattr(other, "device_id", 0) == getattr(self, "device_id", 0)

    def is_cpu_place(self) -> bool:
        return self._paddle_type == 1

    def is_gpu_place(self) -> bool:
        return self._paddle_type == 0

    def is_cuda_pinned_place(self) -> bool:
        return self._paddle_type == 2

    def gpu_device_id(self) -> int:
        return int(getattr(self, "device_id", 0))


def checked_place(value: Any, who: str) -> Place:
    """``value`` if it is a place, else the TypeError Paddle raises for it (its pybind functions
    take places only), naming ``who`` and what was given."""
    if not isinstance(value, Place):
        raise TypeError("%s: place must be a place (fluid.CPUPlace(), fluid.CUDAPlace(i), "
                        "fluidist.device.standin.StandinPlace(i)), got %s" % (who, _described(value)))
    return value


def _described(value):
    if isinstance(value, type):
        return "the class %s (call it to make a place)" % value.__name__
    return "%r (a %s)" % (value, type(value).__name__) if len(repr(value)) <= 60 else type(value).__name__
