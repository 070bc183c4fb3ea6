"""Start pservers and trainers as real processes on 127.0.0.1 and collect what they wrote."""
import os
import subprocess
import sys
import time

from fluidist.distributed.launch_utils import find_free_ports as free_ports  # noqa: F401 (re-exported)

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


class Cluster:
    """Processes of one run; ``wait`` gives their exit codes and outputs, ``close`` kills leftovers."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.procs = []

    def start(self, name, script, args, env=None):
        log = open(os.path.join(str(self.tmp), name + ".log"), "w")
        p = subprocess.Popen([sys.executable, os.path.join(HERE, script)] + [str(a) for a in args],
                             stdout=log, stderr=subprocess.STDOUT, env=child_env(env), cwd=str(self.tmp))
        self.procs.append((name, p, log))
        return p

    def log(self, name):
        with open(os.path.join(str(self.tmp), name + ".log")) as f:
            return f.read()

    def wait(self, names=None, timeout=120):
        deadline = time.monotonic() + timeout
        codes = {}
        for name, p, log in self.procs:
            if names is not None and name not in names:
                continue
            try:
                codes[name] = p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                codes[name] = None
        return codes

    def close(self):
        for name, p, log in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
