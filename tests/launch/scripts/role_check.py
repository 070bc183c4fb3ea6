"""Asks fluidist's PaddleCloudRoleMaker who this process is, from the variables the launcher set,
and writes the answers to $OUT_DIR/role_<role>_<index>.json."""
import json
import os
import sys

from fluidist.role_maker import PaddleCloudRoleMaker

collective = sys.argv[1:] == ["--collective"]
rm = PaddleCloudRoleMaker(is_collective=collective)
rm.generate_role()
role = "worker" if rm.is_worker() else "server"
index = rm.worker_index() if rm.is_worker() else rm.server_index()
out = {"is_worker": rm.is_worker(), "is_server": rm.is_server(), "is_first_worker": rm.is_first_worker(),
       "index": index, "worker_num": rm.worker_num(), "pservers": rm.get_pserver_endpoints(),
       "trainers": rm.get_trainer_endpoints()}
with open(os.path.join(os.environ["OUT_DIR"], "role_%s_%d.json" % (role, index)), "w") as f:
    json.dump(out, f)
