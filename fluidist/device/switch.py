"""Run code written for ``fluid.CPUPlace()`` on another device, when a script asks for it.

``import fluidist`` alone never changes a place: ``fluid.CPUPlace()`` is the CPU in every process,
whatever the environment says. A script (or a test harness) that wants its CPU code on a device says
so with :func:`use`::

    import fluidist as fluid
    import fluidist.device
    fluidist.device.use("standin")     # or "cuda"; "cpu" goes back

From then on the public ``fluid.CPUPlace`` (also ``fluid.core.CPUPlace`` and
``fluidist.executor.CPUPlace``) makes a ``StandinPlace(0)`` (or a ``CUDAPlace(0)``), and
``Executor()`` without a place runs there; under ``standin`` the public ``cpu_places(n)`` gives
stand-in devices 0 .. n-1 (under ``cuda`` it stays on the CPU: one GPU cannot be several places).
Places fluidist makes for itself stay on the CPU. ``isinstance(p, fluid.CPUPlace)`` stays true for a
real ``CPUPlace`` and holds for the places the switch hands out.

A process started by a switched one does not inherit the switch: it calls :func:`use` itself, or
:func:`use_from_env`, which reads ``FLUIDIST_TEST_DEVICE`` (and ``FLUIDIST_STANDIN_GPU_SEMANTICS``)
and is the only reader of those variables: fluidist's test suite exports them and its test plugin
and the processes its tests start call it. :func:`suspended` undoes the switch for a block, in the
processes started inside that call ``use_from_env`` too (tests of CPU-only behaviour).
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator, Optional

from . import places as _places
from .base import Place
from .standin import StandinPlace
from .standin_cuda import set_gpu_semantics

DEVICES = ("cpu", "standin", "cuda")
DEVICE_VAR = "FLUIDIST_TEST_DEVICE"                       # read by use_from_env() only
GPU_SEMANTICS_VAR = "FLUIDIST_STANDIN_GPU_SEMANTICS"      # read by use_from_env() only

_active = "cpu"                         # the device fluid.CPUPlace() makes now
_default: Optional[str] = None          # the device Executor() uses without a place (None: Paddle's choice)


def _make(name):
    return StandinPlace(0) if name == "standin" else _places.CUDAPlace(0)


def _target_type(name):
    return StandinPlace if name == "standin" else _places.CUDAPlace


class _SwitchedMeta(type):
    def __call__(cls, *args, **kwargs):
        return _make(cls.device)

    def __instancecheck__(cls, obj):
        return isinstance(obj, (_places.CPUPlace, _target_type(cls.device)))

    def __subclasscheck__(cls, sub):
        return issubclass(sub, (_places.CPUPlace, _target_type(cls.device)))


def _switched_class(name):
    return _SwitchedMeta("CPUPlace", (), {
        "device": name, "__module__": "fluidist.device.places",
        "__doc__": "fluid.CPUPlace after fluidist.device.use(%r): makes %s." % (
            name, "StandinPlace(0)" if name == "standin" else "CUDAPlace(0)")})


def _faces():
    """The modules whose ``CPUPlace`` is the public one (those imported so far)."""
    return [m for m in (sys.modules.get("fluidist"), sys.modules.get("fluidist.core"),
                        sys.modules.get("fluidist.executor")) if m is not None]


def _checked(name, source="device"):
    key = str(name).strip().lower()
    if key not in DEVICES:
        raise ValueError("%s %r: expected one of %s" % (source, name, ", ".join(DEVICES)))
    return key


def use(name: str) -> None:
    """Make the public ``fluid.CPUPlace()`` (and ``Executor()``'s default place) the device ``name``:
    ``"standin"`` (``StandinPlace(0)``), ``"cuda"`` (``CUDAPlace(0)``) or ``"cpu"`` (the CPU place
    again). Call it after ``import fluidist`` and before the script makes its places; it holds in this
    process only (see the module's docstring).

    Examples:
        >>> import fluidist as fluid
        >>> import fluidist.device
        >>> fluidist.device.use("standin")
        >>> fluid.CPUPlace()
        StandinPlace(0)
        >>> fluidist.device.use("cpu")
        >>> fluid.CPUPlace()
        CPUPlace
    """
    global _active
    name = _checked(name)
    faces = _faces()
    if name == "cpu":
        for m in faces:
            m.CPUPlace = _places.CPUPlace
            m.cpu_places = _places.cpu_places
    else:
        cls = _switched_class(name)
        for m in faces:
            m.CPUPlace = cls
            m.cpu_places = _standin_places if name == "standin" else _places.cpu_places
    _active = name


def use_from_env() -> str:
    """:func:`use` the device ``FLUIDIST_TEST_DEVICE`` names (``cpu`` when unset), and turn the
    stand-in's GPU semantics on where ``FLUIDIST_STANDIN_GPU_SEMANTICS`` is 1 (``true``, ``yes``,
    ``on``); returns the device's name. The one place those variables are read: fluidist's test
    plugin calls it, and so do the processes its tests start (an unknown name is a ValueError)."""
    name = _checked(os.environ.get(DEVICE_VAR, "").strip() or "cpu", DEVICE_VAR)
    semantics = os.environ.get(GPU_SEMANTICS_VAR, "").strip().lower() in ("1", "true", "yes", "on")
    use(name)
    set_gpu_semantics(semantics)
    return name


def _standin_places(device_count=None):
    """``fluid.cpu_places(n)`` under the stand-in switch: stand-in devices 0 .. n-1 (as ``cuda_places``)."""
    return [StandinPlace(i) for i in range(len(_places.cpu_places(device_count)))]


def active() -> str:
    """The device ``fluid.CPUPlace()`` makes now: ``"cpu"``, ``"standin"`` or ``"cuda"``."""
    return _active


def default_place() -> Place:
    """The place ``Executor()`` runs on when given none: the device :func:`use` chose, else
    ``CUDAPlace(0)`` where CuPy sees a GPU, else the CPU (Paddle's GPU build does the same); the CPU
    inside :func:`suspended`."""
    name = _default or _active
    if name == "standin":
        return StandinPlace(0)
    if name == "cuda":
        return _places.CUDAPlace(0)
    if _default is None and _places.is_compiled_with_cuda():
        return _places.CUDAPlace(0)
    return _places.CPUPlace()


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Inside, ``fluid.CPUPlace()`` is the real CPU place again, and so is ``Executor()``'s default;
    ``FLUIDIST_TEST_DEVICE`` says ``cpu`` to the processes started inside."""
    global _default
    saved, saved_default = _active, _default
    env = os.environ.get(DEVICE_VAR)
    use("cpu")
    _default = "cpu"
    os.environ[DEVICE_VAR] = "cpu"
    try:
        yield
    finally:
        _default = saved_default
        if env is None:
            os.environ.pop(DEVICE_VAR, None)
        else:
            os.environ[DEVICE_VAR] = env
        use(saved)
