"""Run under mpirun by test_fleet_mpi_role_makers.py: one rank's view of an MPI role maker, written
as JSON to <out>/rank<r>.json."""
import json
import os
import sys

import numpy as np

from fluidist.role_maker import MPIRoleMaker, MPISymetricRoleMaker


def main():
    kind, out = sys.argv[1], sys.argv[2]
    rm = MPISymetricRoleMaker() if kind == "symetric" else MPIRoleMaker()
    rank = rm._get_rank()
    res = {"rank": rank, "size": rm._get_size()}
    try:
        rm.worker_num()
    except NameError as e:
        res["before_generate"] = str(e)
    rm.generate_role()
    try:
        rm.generate_role()
    except Exception as e:  # noqa: BLE001 - Paddle raises a bare Exception here
        res["second_generate"] = str(e)
    res.update(is_worker=rm.is_worker(), is_server=rm.is_server(), is_first_worker=rm.is_first_worker(),
               worker_num=rm.worker_num(), worker_index=rm.worker_index(), server_index=rm.server_index(),
               server_num=rm.server_num(), workers=rm.get_trainer_endpoints(), servers=rm.get_pserver_endpoints())
    res["gather"] = rm.all_gather("r%d" % rank)
    rm.barrier_all()
    rm.barrier_worker()
    if rm.is_worker():
        x = np.array([rank, -rank, 10 * rank + 1], dtype=np.float64)
        out_arr = np.zeros(3)
        rm.all_reduce_worker(x, out_arr, "sum")
        res["sum"] = out_arr.tolist()
        res["max"] = rm.all_reduce_worker(x, None, "max").tolist()
        res["min"] = rm.all_reduce_worker(x, mode="min").tolist()
        try:
            rm.all_reduce_worker(x, mode="prod")
        except ValueError as e:
            res["bad_mode"] = str(e)
    else:
        res["sum"] = rm.all_reduce_worker(np.ones(3))
    with open(os.path.join(out, "rank%d.json" % rank), "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main()
