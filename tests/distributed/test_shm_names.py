"""A process that made shared-memory segments and then ``exec``s (same pid, same start time) makes new ones
without meeting the names of its former program."""
import os
import subprocess
import sys

from cluster import ROOT
from fluidist.distributed import shm_payload

SCRIPT = """
import os, sys
import numpy as np
from fluidist.distributed import shm_payload, wire
os.environ[shm_payload.MIN_BYTES_ENV] = "1024"
frames, seg = shm_payload.pack(wire.encode("send", 1, "w", np.ones(4096, np.float32)), ("t", "w"), owner=None)
np.testing.assert_array_equal(wire.decode(shm_payload.unpack(frames)).value, np.ones(4096, np.float32))
print(sys.argv[1], os.getpid(), seg.name, flush=True)
if sys.argv[1] == "before":
    os.execv(sys.executable, [sys.executable, "-c", sys.argv[2], "after", ""])
"""


def test_segments_made_after_exec_do_not_meet_the_former_program_s_names():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-c", SCRIPT, "before", SCRIPT], capture_output=True, text=True, env=env,
                         timeout=60)
    lines = [line.split() for line in run.stdout.splitlines()]
    try:
        assert run.returncode == 0, run.stderr[-3000:]
        assert [stage for stage, _, _ in lines] == ["before", "after"], run.stdout
        (_, pid_before, name_before), (_, pid_after, name_after) = lines
        assert pid_before == pid_after and name_before != name_after
    finally:
        pid = lines[0][1] if lines else None
        for name in os.listdir(shm_payload.SHM_DIR) if pid else ():
            if name.startswith("%s%s-" % (shm_payload.PREFIX, pid)):
                os.unlink(os.path.join(shm_payload.SHM_DIR, name))
