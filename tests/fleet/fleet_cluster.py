"""Helpers of the fleet tests: free ports, child environments, processes with a time limit."""
import os

from child_procs import ChildProcesses
from fluidist.launch.cluster import find_free_ports as free_ports

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# variables a launcher may have left in the test's own environment: children get only what we set
LAUNCH_VARS = ("PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS_NUM", "TRAINING_ROLE",
               "PADDLE_TRAINER_ID", "PADDLE_PSERVER_ID", "POD_IP", "PADDLE_PORT", "PADDLE_CURRENT_ENDPOINT",
               "PADDLE_TRAINING_ROLE", "SYS_JOB_ID", "PADDLE_IS_BARRIER_ALL_ROLE")


def endpoints(n):
    return ["127.0.0.1:%d" % p for p in free_ports(n)]


def child_env(extra=None):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS}
    env["PYTHONPATH"] = ROOT + os.pathsep + HERE + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("FLAGS_rpc_deadline", "30000")
    env["FLUIDIST_WAIT_PORT_TIMEOUT"] = "60"
    env["FLUIDIST_COLLECTIVE_TIMEOUT"] = "60"
    env["OMP_NUM_THREADS"] = "1"
    env["OPENBLAS_NUM_THREADS"] = "1"
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env


class Procs(ChildProcesses):
    """Child processes of one test, each logging to <tmp>/<name>.log; leftovers are killed."""

    script_dir = HERE

    def child_env(self, extra):
        return child_env(extra)
