"""Big host arrays reused instead of mapped afresh at every step.

glibc's ``malloc`` serves an allocation above its mmap threshold (128 KiB at start, raised as blocks
are freed, but never above 32 MiB) with a fresh ``mmap`` and hands it back to the system on ``free``.
A kernel whose output is bigger than that - the weight gradient of a 3160 x 3160 ``fc`` is 40 MB -
then pays at every step for the mapping, its page faults and the system's zeroing of each
page: on the development machine 4.5 ms of the 11.8 ms that ``mul_grad``'s product takes (7.4 ms into
a reused buffer). Paddle's CPU allocator keeps freed chunks for the next allocation; this does the same
for NumPy's arrays: the first ``Executor`` of a process raises glibc's mmap and trim thresholds, so
that blocks up to ``MMAP_THRESHOLD`` come from and go back to malloc's heap, and a step's outputs
reuse the memory of the last step's.

The cost is that up to ``TRIM_THRESHOLD`` of freed memory at the top of the heap stays with the
process instead of going back to the system. ``FLUIDIST_HOST_MALLOC_KEEP=0`` leaves malloc as it is.
Elsewhere than glibc (musl, macOS) nothing changes.
"""
from __future__ import annotations

import ctypes
import os
import platform

MMAP_THRESHOLD = 256 << 20      # blocks up to this size come from the heap (glibc's M_MMAP_THRESHOLD)
TRIM_THRESHOLD = 512 << 20      # free memory kept at the heap's top (glibc's M_TRIM_THRESHOLD)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # mallopt's parameter numbers (malloc.h)
ENV = "FLUIDIST_HOST_MALLOC_KEEP"

_state: dict = {"done": False, "kept": False}


def keep_freed_blocks() -> bool:
    """Raise glibc's thresholds once per process (see the module's docstring); ``True`` when freed
    big blocks are now kept for reuse. ``FLUIDIST_HOST_MALLOC_KEEP`` must be ``1`` (the default) or
    ``0`` (malloc left as it is)."""
    if _state["done"]:
        return _state["kept"]
    setting = os.environ.get(ENV, "1").strip()
    if setting not in ("0", "1"):
        raise ValueError("%s must be 0 (leave malloc as it is) or 1 (keep freed big host blocks for "
                         "reuse, the default), got %r" % (ENV, setting))
    _state["done"] = True
    if setting == "0" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _state["kept"] = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _state["kept"]
