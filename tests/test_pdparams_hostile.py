"""Hostile ``.pdparams`` files, read by ``fluid.io.load_program_state`` in a process of their own: a few
bytes that claim a huge bytes argument, and a few hundred bytes of shared references that unfold into a
tree of 2**60 nodes. Each is refused or read at once, with memory bounded by the file's size."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from fluidist.paddle_format import safe_pickle
from load_aware import scaled  # (bounds that follow the machine's load)

pytestmark = pytest.mark.timeout(60)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

READER = """
import sys, time

def vm_peak_kib():
    with open("/proc/self/status") as f:
        return int([l for l in f if l.startswith("VmPeak:")][0].split()[1])

import fluidist as fluid
from fluidist.paddle_format import PaddleFormatError
before = vm_peak_kib()
t0 = time.monotonic()
try:
    state = fluid.io.load_program_state(sys.argv[1])
    print("READ", sorted(state))
except PaddleFormatError as e:
    print("REFUSED", e)
print("GREW_KIB", vm_peak_kib() - before, "SECONDS", round(time.monotonic() - t0, 3))
"""


def _read_in_child(path, timeout=None):
    timeout = scaled(20) if timeout is None else timeout
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        run = subprocess.run([sys.executable, "-c", READER, path], capture_output=True, text=True, env=env,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("reading %s (%d bytes) still ran after %.0f s" % (path, os.path.getsize(path), timeout))
    assert run.returncode == 0, run.stderr[-3000:]
    grew = int(run.stdout.split("GREW_KIB")[1].split()[0])
    return run.stdout, grew


def _shared_reference_tree(levels):
    """{"w": L[levels]} where L[0] = [] and L[i] = [L[i-1], L[i-1]], each list written once and referred
    to through the memo: 2**levels leaves in about 10 bytes a level."""
    out = b"\x80\x02}X\x01\x00\x00\x00w]q\x010"        # PROTO 2, {}, "w", [] into memo 1 (and off the stack)
    for i in range(1, levels + 1):                          # MARK, memo[i] twice, LIST, into memo i + 1, POP
        out += b"(h" + bytes([i]) + b"h" + bytes([i]) + b"lq" + bytes([i + 1]) + b"0"
    out += b"h" + bytes([levels + 1])
    return out + b"s."


@pytest.mark.parametrize("label,blob", [
    ("9 bytes claiming 1.57 GB", b"\x80\x02B" + struct.pack("<I", 1570000000)[:4] + b"ab"),
    ("11 bytes claiming 1.57 GB (bytes8)", b"\x80\x04\x8e" + struct.pack("<Q", 1570000000)),
])
def test_a_tiny_file_claiming_a_huge_argument_is_refused_without_allocating_it(tmp_path, label, blob):
    path = str(tmp_path / "m.pdparams")
    with open(path, "wb") as f:
        f.write(blob)
    out, grew = _read_in_child(path)
    assert grew < 64 * 1024, "%s: the reader's address space grew by %d MiB" % (label, grew // 1024)
    assert "REFUSED" in out and "bytes" in out, out


@pytest.mark.parametrize("label,blob", [
    ("9 bytes naming memo entry 98,125,000 (a 1.57 GB memo table)", b"\x80\x02}r" + struct.pack("<I", 98125000) + b"."),
    ("a BINPUT past the opcodes before it", b"\x80\x02}q\xf0."),
    ("a BINGET of an entry never defined", b"\x80\x02}q\x00X\x01\x00\x00\x00wh\x07s."),
])
def test_memo_indices_past_what_the_stream_defined_are_refused_at_once(tmp_path, label, blob):
    path = str(tmp_path / "m.pdparams")
    with open(path, "wb") as f:
        f.write(blob)
    out, grew = _read_in_child(path)
    assert grew < 64 * 1024, "%s: the reader's address space grew by %d MiB" % (label, grew // 1024)
    assert "REFUSED" in out and "memo entry" in out, out
    assert float(out.split("SECONDS")[1].split()[0]) < scaled(1.0), out


def test_shared_references_are_read_once_not_unfolded(tmp_path):
    blob = _shared_reference_tree(60)
    assert len(blob) < 600
    path = str(tmp_path / "m.pdparams")
    with open(path, "wb") as f:
        f.write(blob)
    out, grew = _read_in_child(path)
    # a list of lists is not a named array: refused, at once
    assert "REFUSED" in out and "'w' is a list, not a named array" in out, out
    seconds = float(out.split("SECONDS")[1].split()[0])
    assert seconds < scaled(5), out


def test_honest_state_files_still_read(tmp_path):
    state = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.zeros(3, np.int64)}
    path = str(tmp_path / "m.pdparams")
    with open(path, "wb") as f:
        f.write(safe_pickle.dumps_state(state))
    out, grew = _read_in_child(path)
    assert "READ ['b', 'w']" in out, out
    got = safe_pickle.load_state_file(path)
    for k, v in state.items():
        np.testing.assert_array_equal(got[k], v)
