"""A training script that starts a grandchild in its own process group (``sleep 300``, as a data
loader or a shell pipeline would), writes both pids to $OUT_DIR/pids_<rank>.json, then waits."""
import json
import os
import subprocess
import time

child = subprocess.Popen(["sleep", "300"])
path = os.path.join(os.environ["OUT_DIR"], "pids_%s.json" % os.environ.get("PADDLE_TRAINER_ID", "0"))
with open(path + ".tmp", "w") as f:      # (renamed when whole: the test waits for the name, then reads)
    json.dump({"script": os.getpid(), "grandchild": child.pid, "pgid": os.getpgid(0)}, f)
os.replace(path + ".tmp", path)
time.sleep(300)
