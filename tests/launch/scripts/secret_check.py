"""Writes what the launcher handed this process about the job secret to $OUT_DIR/secret_<rank>.json."""
import json
import os

keys = ("FLUIDIST_JOB_SECRET", "FLUIDIST_SECRET_FILE", "FLUIDIST_INSECURE")
with open(os.path.join(os.environ["OUT_DIR"], "secret_%s.json" % os.environ["PADDLE_TRAINER_ID"]), "w") as f:
    json.dump({k: os.environ.get(k) for k in keys}, f)
