"""``FLUIDIST_TEST_DEVICE``: run code written for the CPU on another place without editing it.

With ``FLUIDIST_TEST_DEVICE=standin`` (or ``cuda``) set when fluidist is imported, the public
``fluid.CPUPlace`` (also ``fluid.core.CPUPlace`` and ``fluidist.executor.CPUPlace``) makes a
``StandinPlace(0)`` (or a ``CUDAPlace(0)``), and ``Executor()`` without a place runs there; under
``standin`` the public ``cpu_places(n)`` gives stand-in devices 0 .. n-1 (under ``cuda`` it stays on
the CPU: one GPU cannot be several places). Places fluidist makes for itself stay on the CPU. The
variable is inherited by child processes, which switch when they import fluidist.

``isinstance(p, fluid.CPUPlace)`` stays true for a real ``CPUPlace`` and holds for the places the
switch hands out. ``suspended()`` undoes the switch for a block, in the processes it starts too
(tests of CPU-only behaviour: the ``cpu_only`` marker of fluidist's test suite).
"""
from __future__ import annotations

import contextlib
import os
import sys

from . import place as _place

_installed = None   # (device name, the switched class) while installed


def _make(name):
    return _place.StandinPlace(0) if name == "standin" else _place.CUDAPlace(0)


def _target_type(name):
    return _place.StandinPlace if name == "standin" else _place.CUDAPlace


class _SwitchedMeta(type):
    def __call__(cls, *args, **kwargs):
        return _make(cls.device)

    def __instancecheck__(cls, obj):
        return isinstance(obj, (_place.CPUPlace, _target_type(cls.device)))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_place.CPUPlace, _target_type(cls.device)))


def _switched_class(name):
    return _SwitchedMeta("CPUPlace", (), {
        "device": name, "__module__": "fluidist.core.place",
        "__doc__": "fluid.CPUPlace under FLUIDIST_TEST_DEVICE=%s: makes %s." % (
            name, "StandinPlace(0)" if name == "standin" else "CUDAPlace(0)")})


def _faces():
    """The modules whose ``CPUPlace`` is the public one (those imported so far)."""
    return [m for m in (sys.modules.get("fluidist"), sys.modules.get("fluidist.core"),
                        sys.modules.get("fluidist.executor")) if m is not None]


def install(name=None):
    """Switch ``fluid.CPUPlace`` to the device ``name`` (default: ``FLUIDIST_TEST_DEVICE``); ``cpu``
    undoes the switch."""
    global _installed
    name = name or _place.test_device()
    if name == "cpu":
        uninstall()
        return
    if name not in _place.TEST_DEVICES:
        raise ValueError("unknown test device %r (one of %s)" % (name, ", ".join(_place.TEST_DEVICES)))
    cls = _switched_class(name)
    for m in _faces():
        m.CPUPlace = cls
        if name == "standin":
            m.cpu_places = _standin_places
    _installed = (name, cls)


def _standin_places(device_count=None):
    """``fluid.cpu_places(n)`` under the stand-in switch: stand-in devices 0 .. n-1 (as ``cuda_places``)."""
    return [_place.StandinPlace(i) for i in range(len(_place.cpu_places(device_count)))]


def uninstall():
    global _installed
    for m in _faces():
        m.CPUPlace = _place.CPUPlace
        m.cpu_places = _place.cpu_places
    _installed = None


def active():
    """The device ``fluid.CPUPlace()`` makes now: ``"cpu"``, ``"standin"`` or ``"cuda"``."""
    return _installed[0] if _installed else "cpu"


@contextlib.contextmanager
def suspended():
    """Inside, ``fluid.CPUPlace()`` is the real CPU place again, and so is ``Executor()``'s default."""
    saved = _installed
    env = os.environ.get("FLUIDIST_TEST_DEVICE")
    uninstall()
    override = _place.set_default_override("cpu")
    os.environ["FLUIDIST_TEST_DEVICE"] = "cpu"      # and in the processes started inside
    try:
        yield
    finally:
        _place.set_default_override(override)
        if env is None:
            os.environ.pop("FLUIDIST_TEST_DEVICE", None)
        else:
            os.environ["FLUIDIST_TEST_DEVICE"] = env
        if saved:
            install(saved[0])
