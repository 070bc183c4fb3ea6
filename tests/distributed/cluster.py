"""Start pservers and trainers as real processes on 127.0.0.1 and collect what they wrote."""
import os

from child_procs import ChildProcesses
from fluidist.launch.cluster import find_free_ports as free_ports  # noqa: F401 (re-exported)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def child_env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("FLAGS_rpc_deadline", "20000")
    env["FLUIDIST_WAIT_PORT_TIMEOUT"] = "30"
    env["OMP_NUM_THREADS"] = "1"
    env["OPENBLAS_NUM_THREADS"] = "1"
    env.update(extra or {})
    return env


class Cluster(ChildProcesses):
    """Processes of one run; ``wait`` gives their exit codes, ``close`` kills leftovers."""

    script_dir = HERE

    def child_env(self, extra):
        return child_env(extra)
