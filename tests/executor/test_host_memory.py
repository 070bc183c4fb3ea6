"""The Executor keeps freed big host blocks in malloc's heap for the next step (executor/host_memory.py).

Each case runs in a fresh interpreter: the setting is per process, and this one has made Executors
already. What is looked at is glibc's own account of its memory (``mallinfo2``): a 40 MB array made
after an Executor lives in the heap, where it is reused by the next allocation of its size, instead of
a private mapping that is made, faulted in page by page and unmapped at every step.
"""
import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

_PROBE = textwrap.dedent("""
    import ctypes, json, numpy as np
    import fluidist as fluid

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                     "fordblks", "keepcost")]

    info = ctypes.CDLL(None).mallinfo2
    info.restype = MallInfo2
    fluid.Executor(fluid.CPUPlace())
    before = info().hblkhd
    grad = np.ones((3160, 3160), np.float32)          # the size of mlp_10m's weight gradient
    live = info()
    del grad
    after_free = info()
    print(json.dumps({"mapped": live.hblkhd - before, "heap_in_use": live.uordblks,
                      "heap_kept_after_free": after_free.arena}))
""")


def _probe(keep):
    env = dict(os.environ, FLUIDIST_HOST_MALLOC_KEEP=keep)
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    env.pop("MALLOC_TRIM_THRESHOLD_", None)
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_big_array_after_an_executor_lives_in_the_heap_and_stays_there_when_freed():
    nbytes = 3160 * 3160 * 4
    kept = _probe("1")
    assert kept["mapped"] < nbytes, kept                 # not a mapping of its own
    assert kept["heap_in_use"] >= nbytes, kept
    assert kept["heap_kept_after_free"] >= nbytes, kept  # freed, still the process's for the next step


def test_malloc_left_as_it_is_maps_the_array_on_its_own():
    system = _probe("0")
    assert system["mapped"] >= 3160 * 3160 * 4, system


def test_a_bad_setting_names_the_variable():
    env = dict(os.environ, FLUIDIST_HOST_MALLOC_KEEP="yes")
    out = subprocess.run([sys.executable, "-c", "import fluidist as f; f.Executor(f.CPUPlace())"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "FLUIDIST_HOST_MALLOC_KEEP must be 0" in out.stderr and "'yes'" in out.stderr
