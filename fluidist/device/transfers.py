"""The stand-in device's log: every copy between host and device memory, each way, every
synchronisation of the host with the device, and every kernel launch.

A transfer is *explicit* when the code asked for a copy (``a.get()``, ``xp.asnumpy(a)``,
``xp.asarray(host)``, a Place moving a value) and *implicit* when CuPy would make it silently:
a scalar read from the device (``float(a)``, ``int(a)``, ``bool(a)``, ``a.item()``, ``a.tolist()``,
printing, a device value where CuPy wants a Python number), or host data used as an index or
assigned into a device array.

A *synchronisation* makes the host wait for the device: every device-to-host copy is one, and so
is a stream's, an event's or a device's ``synchronize()`` (recorded with direction ``"sync"``,
no data moved). Host-to-device copies are not (CuPy stages them and goes on), nor are copies from
one device to another (direction ``"d2d"``: CuPy's peer copy of an array of another device, queued
on the stream like a kernel).

A *launch* is an array-module call that makes a device array or writes one: a ufunc, a function
whose result is a new array, an operator, an advanced index, a setitem, ``fill``. Views
(``reshape`` of a contiguous array, basic slicing, ``transpose``) and ``empty`` launch nothing. On a
GPU each launch costs the host a few microseconds whatever the size, so their count bounds a step's
fixed cost as the synchronisations bound its waiting.
"""
from __future__ import annotations

import collections
import contextlib
import os
import sys
import threading
import types
from typing import Iterator, List, NamedTuple, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))


class Transfer(NamedTuple):
    """One copy between host and device."""
    direction: str      # "h2d", "d2h", "d2d" (between devices), or "sync" (a synchronisation that moves no data)
    implicit: bool      # True where CuPy makes it without being asked (scalars, host indices)
    what: str           # the operation: "asarray", "get", "float()", "index", ...
    shape: tuple
    dtype: str
    where: str          # file:line (function) of the code that caused it

    def __str__(self):
        return "%s %s %s %s%s at %s" % (self.direction, "implicit" if self.implicit else "explicit", self.what,
                                        self.dtype, list(self.shape), self.where)


class TransferLog:
    """The transfers, synchronisations and launches made while it was open (see
    :func:`count_transfers`)."""

    def __init__(self) -> None:
        self.events: List[Transfer] = []
        self.launch_counts: collections.Counter = collections.Counter()   # launches by operation

    @property
    def launches(self) -> int:
        """Kernel launches (array-module calls that made or wrote a device array)."""
        return sum(self.launch_counts.values())

    @property
    def syncs(self) -> List[Transfer]:
        """The events that make the host wait for the device: device-to-host copies and
        synchronisations (``direction == "sync"``), in order."""
        return [e for e in self.events if e.direction in ("d2h", "sync")]

    @property
    def h2d(self) -> List[Transfer]:
        """Host-to-device transfers, in order."""
        return [e for e in self.events if e.direction == "h2d"]

    @property
    def d2h(self) -> List[Transfer]:
        """Device-to-host transfers, in order."""
        return [e for e in self.events if e.direction == "d2h"]

    @property
    def d2d(self) -> List[Transfer]:
        """Copies from one device to another (no host memory, no synchronisation), in order."""
        return [e for e in self.events if e.direction == "d2d"]

    @property
    def implicit(self) -> List[Transfer]:
        """The transfers CuPy would make without being asked (hidden synchronisations)."""
        return [e for e in self.events if e.implicit]

    def counts(self) -> dict:
        """``{"h2d": n, "d2h": m}``."""
        return {"h2d": len(self.h2d), "d2h": len(self.d2h)}

    def clear(self) -> None:
        del self.events[:]
        self.launch_counts.clear()

    def __str__(self):
        head = "%d launches" % self.launches
        if not self.events:
            return "no transfers, " + head
        return "%d transfers (h2d %d, d2h %d, d2d %d), %d syncs, %s:\n  %s" % (
            len(self.events), len(self.h2d), len(self.d2h), len(self.d2d), len(self.syncs), head,
            "\n  ".join(str(e) for e in self.events))


_open_logs: List[TransferLog] = []
_lock = threading.Lock()
_totals = {"h2d": 0, "d2h": 0, "d2d": 0, "sync": 0, "launch": 0}
# frames of these modules are skipped when naming where a transfer came from: they only carry it out
_CARRIERS = ("fluidist.device", "fluidist.core.placement")


@contextlib.contextmanager
def count_transfers() -> Iterator[TransferLog]:
    """Record every stand-in transfer made inside the ``with`` block (in any thread)::

        with standin.count_transfers() as log:
            exe.run(main, feed=..., fetch_list=[loss])
        assert log.counts() == {"h2d": 2, "d2h": 1}, str(log)
    """
    log = TransferLog()
    with _lock:
        _open_logs.append(log)
    try:
        yield log
    finally:
        with _lock:
            _open_logs.remove(log)


def totals() -> dict:
    """What this process did so far: ``{"h2d": n, "d2h": m, "d2d": c, "sync": s, "launch": k}`` (``sync``
    counts the synchronisations that move no data)."""
    return dict(_totals)


def _where() -> str:
    f: Optional[types.FrameType] = sys._getframe(2)
    while f is not None:
        name = f.f_globals.get("__name__", "")
        if not (name.startswith(_CARRIERS) or name.startswith("numpy")):
            return "%s:%d (%s)" % (os.path.relpath(f.f_code.co_filename, os.path.dirname(os.path.dirname(_HERE))),
                                   f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return "?"


def record(direction: str, implicit: bool, what: str, array) -> None:
    """Count one transfer of ``array`` (a NumPy array, or anything with shape and dtype), or, with
    direction ``"sync"``, one synchronisation (``array`` None)."""
    _totals[direction] += 1
    if not _open_logs:
        return
    shape = tuple(getattr(array, "shape", ()))
    dtype = "" if array is None else str(getattr(array, "dtype", type(array).__name__))
    event = Transfer(direction, implicit, what, shape, dtype, _where())
    with _lock:
        for log in _open_logs:
            log.events.append(event)


def record_sync(what: str) -> None:
    """Count one synchronisation of the host with the device that moves no data."""
    record("sync", False, what, None)


def record_launch(what: str) -> None:
    """Count one kernel launch (``what``: the operation, e.g. ``"xp.exp"``)."""
    _totals["launch"] += 1
    if _open_logs:
        with _lock:
            for log in _open_logs:
                log.launch_counts[what] += 1
