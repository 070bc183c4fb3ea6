"""A trainer stand-in for --max_restarts: each process records its generation and fails while it is
young enough.

Every process writes $OUT_DIR/gen_<rank>_<generation>.json (the restart variables, its endpoint, its pid)
and prints a line; the process of rank --fail_rank exits with --exit_code while its generation
(FLUIDIST_RESTART_COUNT) is below --fail_until; the others sleep --sleep seconds (so they are running when
it fails, and are stopped), except in the generation where nobody fails: then everyone exits 0."""
import argparse
import json
import os
import time

ap = argparse.ArgumentParser()
ap.add_argument("--fail_rank", type=int, default=0)
ap.add_argument("--fail_until", type=int, default=1)
ap.add_argument("--exit_code", type=int, default=3)
ap.add_argument("--sleep", type=float, default=60)
a = ap.parse_args()

rank = int(os.environ.get("RANK", os.environ.get("PADDLE_TRAINER_ID", "0")))
gen = int(os.environ["FLUIDIST_RESTART_COUNT"])
keys = ["FLUIDIST_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "PADDLE_CURRENT_ENDPOINT",
        "TRAINING_ROLE", "RANK", "WORLD_SIZE"]
path = os.path.join(os.environ["OUT_DIR"], "gen_%d_%d.json" % (rank, gen))
with open(path + ".tmp", "w") as f:
    json.dump(dict({k: os.environ.get(k) for k in keys}, pid=os.getpid()), f)
os.replace(path + ".tmp", path)
print("rank %d generation %d" % (rank, gen), flush=True)
failing = gen < a.fail_until
if failing and rank == a.fail_rank:
    time.sleep(0.5)
    print("rank %d fails in generation %d" % (rank, gen), flush=True)
    raise SystemExit(a.exit_code)
if failing:
    time.sleep(a.sleep)
print("rank %d done" % rank, flush=True)
