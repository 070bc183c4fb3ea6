"""Helpers of the fleet tests: free ports, child environments, processes with a time limit."""
import os
import subprocess
import sys
import time
from fluidist.distributed.launch_utils import find_free_ports as free_ports  # noqa: E402

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


class Procs:
    """Child processes of one test, each logging to <tmp>/<name>.log; leftovers are killed."""

    def __init__(self, tmp_path):
        self.tmp = str(tmp_path)
        self.procs = []

    def start(self, name, script, args=(), env=None):
        log = open(os.path.join(self.tmp, name + ".log"), "w")
        path = script if os.path.isabs(script) else os.path.join(HERE, script)
        p = subprocess.Popen([sys.executable, "-u", path] + [str(a) for a in args], stdout=log,
                             stderr=subprocess.STDOUT, env=child_env(env), cwd=self.tmp)
        self.procs.append((name, p, log))
        return p

    def log(self, name):
        with open(os.path.join(self.tmp, name + ".log")) as f:
            return f.read()

    def wait(self, names=None, timeout=120):
        deadline = time.monotonic() + timeout
        codes = {}
        for name, p, _ in self.procs:
            if names is not None and name not in names:
                continue
            try:
                codes[name] = p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[name] = None
        return codes

    def check(self, names=None, timeout=120):
        codes = self.wait(names, timeout)
        for name, code in codes.items():
            assert code == 0, "%s exited with %s (None: still running after %d s):\n%s" % (
                name, code, timeout, self.log(name)[-6000:])
        return codes

    def close(self):
        for _, p, log in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
