"""A fluidist script that works until it is stopped: it writes ready_<rank> once it runs, then waits."""
import os
import time

import fluidist  # noqa: F401  (what a training script imports; it sets up the quiet ctrl-C)

rank = os.environ.get("PADDLE_TRAINER_ID", "0")
open(os.path.join(os.environ["OUT_DIR"], "ready_%s" % rank), "w").close()
print("rank %s running" % rank, flush=True)
while True:
    time.sleep(0.1)
