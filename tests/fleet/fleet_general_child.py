"""One process of a GeneralRoleMaker job (test_fleet_general_role_maker.py): roles from the
launcher's variables, then gathers, reductions and barriers through the shared directory; the
results go to <out> as JSON."""
import argparse
import json
import time

import numpy as np

from fluidist.role_maker import GeneralRoleMaker


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--path", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--init_timeout", type=float, default=60)
    ap.add_argument("--run_timeout", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip_barrier", action="store_true", help="leave after the rendezvous")
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep (alive) after the rendezvous")
    a = ap.parse_args()
    rm = GeneralRoleMaker(path=a.path, init_timeout_seconds=a.init_timeout, run_timeout_seconds=a.run_timeout,
                          unknown_kwarg_is_ignored=1)
    rm.generate_role()
    res = {"is_worker": rm.is_worker(), "is_server": rm.is_server(), "is_first_worker": rm.is_first_worker(),
           "worker_num": rm.worker_num(), "server_num": rm.server_num(), "endpoint": rm.get_local_endpoint(),
           "index": rm.worker_index() if rm.is_worker() else rm.server_index()}
    if a.skip_barrier:
        json.dump(res, open(a.out, "w"))
        return
    time.sleep(a.sleep)
    me = ("w%d" if rm.is_worker() else "s%d") % res["index"]
    res["gather"] = []
    res["sum"], res["min"], res["max"] = [], [], []
    for r in range(a.rounds):
        res["gather"].append(rm.all_gather([me, r]))
        rm.barrier_worker()
        if rm.is_worker():
            i = res["index"]
            x = np.array([[i + r, -i], [0.5 * i, 3.0]], dtype=np.float32)
            out = np.zeros((2, 2), np.float32)
            rm.all_reduce_worker(x, out)                      # mode defaults to sum
            res["sum"].append(out.tolist())
            res["min"].append(rm.all_reduce_worker(x, mode="min").tolist())
            res["max"].append(rm.all_reduce_worker(np.array(i + r), mode="max").tolist())
        else:
            assert rm.all_reduce_worker(np.ones(2)) is None
        rm.barrier_all()
    json.dump(res, open(a.out, "w"))


if __name__ == "__main__":
    main()
