"""Index tables made on the host (from a LoD, a shape, attributes) and read by kernels on a device,
kept there per key: a step whose LoD and shapes repeat uploads none of them again.

A kernel on a device must not copy data itself (``docs/guide/devices.md``): tables computed from
host values (the rows of each sequence, the padded layout of an RNN batch, per-sequence scales)
would otherwise be uploaded at every call. ``device_table`` uploads one the first time its key is
seen on the current device and hands out the same device array afterwards; on the host it returns
the NumPy table as made. Callers must treat the tables as read-only (they are shared).
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Hashable

import numpy as np

_MAX_TABLES = 512        # per device; the least recently used ones go first
_tables: dict = {}
_lock = threading.Lock()


def device_table(xp: Any, key: Hashable, make: Callable[[], Any]) -> Any:
    """``make()`` (a NumPy array, or a tuple of them) on ``xp``'s current device, made and uploaded
    once per ``key`` and device; on the host (``xp`` is NumPy), ``make()`` itself."""
    if xp is np:
        return make()
    where = (xp, xp.cuda.runtime.getDevice())
    with _lock:
        cache = _tables.get(where)
        if cache is None:
            cache = _tables[where] = collections.OrderedDict()
        got = cache.get(key)
        if got is not None:
            cache.move_to_end(key)
            return got
    host = make()
    got = tuple(xp.asarray(t) for t in host) if isinstance(host, tuple) else xp.asarray(host)
    with _lock:
        cache[key] = got
        if len(cache) > _MAX_TABLES:
            cache.popitem(last=False)
    return got


def offsets_key(offsets) -> bytes:
    """A cache key for LoD offsets (host ints)."""
    return np.asarray(offsets, dtype=np.int64).tobytes()
