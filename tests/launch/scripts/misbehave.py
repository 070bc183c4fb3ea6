"""A trainer stand-in that fails, hangs, ignores SIGTERM or leaves a grandchild, by rank.

Every rank writes its pid (and its grandchild's) to $OUT_DIR/pids_<rank>.json, then:
--fail_rank R --exit_code C: rank R prints --lines numbered lines and exits with C;
--kill_rank R: rank R kills itself with SIGKILL;
--ignore_term_rank R: rank R ignores SIGTERM;
--grandchild: every rank starts a `sleep` child first;
every other rank sleeps (up to --sleep seconds, then exits 0)."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--fail_rank", type=int, default=-1)
ap.add_argument("--exit_code", type=int, default=1)
ap.add_argument("--lines", type=int, default=5)
ap.add_argument("--kill_rank", type=int, default=-1)
ap.add_argument("--ignore_term_rank", type=int, default=-1)
ap.add_argument("--grandchild", action="store_true")
ap.add_argument("--sleep", type=float, default=120)
a = ap.parse_args()

rank = int(os.environ.get("PADDLE_TRAINER_ID", "0"))
if rank == a.ignore_term_rank:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids = {"pid": os.getpid()}
if a.grandchild:
    pids["grandchild"] = subprocess.Popen(["sleep", "300"]).pid
path = os.path.join(os.environ["OUT_DIR"], "pids_%d.json" % rank)
with open(path + ".tmp", "w") as f:
    json.dump(pids, f)
os.replace(path + ".tmp", path)
print("rank %d started" % rank, flush=True)
if rank == a.fail_rank:
    time.sleep(0.5)
    for i in range(a.lines):
        print("rank %d line %d" % (rank, i), flush=True)
    print("rank %d is failing on purpose" % rank, file=sys.stderr, flush=True)
    sys.exit(a.exit_code)
if rank == a.kill_rank:
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGKILL)
end = time.monotonic() + a.sleep
while time.monotonic() < end:
    time.sleep(0.1)
