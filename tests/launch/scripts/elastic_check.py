"""An elastic trainer stand-in: writes its environment to $OUT_DIR/g<generation>_r<rank>.json, then
waits for $OUT_DIR/stop (exit 0). With --fail_gen G --fail_rank R, rank R of generation G exits 5."""
import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--fail_gen", type=int, default=-1)
ap.add_argument("--fail_rank", type=int, default=-1)
a = ap.parse_args()
out = os.environ["OUT_DIR"]
gen = int(os.environ["FLUIDIST_ELASTIC_GENERATION"])
rank = int(os.environ["PADDLE_TRAINER_ID"])
info = {k: v for k, v in os.environ.items() if k.startswith(("PADDLE_", "FLUIDIST_", "POD_IP", "FLAGS_"))}
info["pid"] = os.getpid()
path = os.path.join(out, "g%d_r%d.json" % (gen, rank))
with open(path + ".tmp", "w") as f:
    json.dump(info, f)
os.replace(path + ".tmp", path)
print("generation %d rank %d of %s" % (gen, rank, os.environ["PADDLE_TRAINERS_NUM"]), flush=True)
if gen == a.fail_gen and rank == a.fail_rank:
    time.sleep(0.3)
    sys.exit(5)
deadline = time.monotonic() + 120
while not os.path.exists(os.path.join(out, "stop")) and time.monotonic() < deadline:
    time.sleep(0.1)
