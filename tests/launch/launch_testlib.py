"""Helpers for the launcher tests: run the real launcher as a process, find free ports, tell
whether a pid is still alive (through /proc, so without psutil), wait with deadlines."""
import json
import os
import signal
import subprocess
import sys

from child_procs import free_port, free_port_block, wait_until  # noqa: F401 (the launcher tests import them from here)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(HERE, "scripts")


def script(name):
    return os.path.join(SCRIPTS, name)


def base_env(extra=None, out_dir=None):
    """The environment of a launcher under test: this checkout on PYTHONPATH, a CPU-only node, and
    none of the variables the launcher reads from its own environment."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FLUIDIST_LAUNCH_", "PADDLE_", "FLAGS_selected")) and k != "POD_IP"}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["OMP_NUM_THREADS"] = "1"
    env["OPENBLAS_NUM_THREADS"] = "1"
    if out_dir is not None:
        env["OUT_DIR"] = str(out_dir)
    env.update(extra or {})
    return env


def launch_cmd(args, module="fluidist.distributed.launch"):
    return [sys.executable, "-m", module, "--print_config", "0"] + [str(a) for a in args]


def run_launcher(args, cwd, env=None, timeout=90, module="fluidist.distributed.launch", prefix=()):
    """Run the launcher to its end; returns the CompletedProcess (stdout and stderr as text)."""
    cmd = list(prefix) + launch_cmd(args, module)
    return subprocess.run(cmd, cwd=str(cwd), env=env or base_env(), capture_output=True, text=True,
                          timeout=timeout)


class Launcher:
    """A launcher started in the background; ``close()`` kills it if it is still running (its
    children follow it: they die with their launcher)."""

    def __init__(self, args, cwd, env=None, name="launcher", prefix=()):
        self.out_path = os.path.join(str(cwd), name + ".stdout")
        self.err_path = os.path.join(str(cwd), name + ".stderr")
        self._out = open(self.out_path, "w")
        self._err = open(self.err_path, "w")
        self.proc = subprocess.Popen(list(prefix) + launch_cmd(args), cwd=str(cwd), env=env or base_env(),
                                     stdout=self._out, stderr=self._err)

    @property
    def pid(self):
        return self.proc.pid

    def wait(self, timeout=60):
        return self.proc.wait(timeout)

    def stdout(self):
        with open(self.out_path) as f:
            return f.read()

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
        self._out.close()
        self._err.close()


def pid_alive(pid):
    """True while ``pid`` runs (a zombie counts as dead), read from /proc."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")




def read_json(path):
    with open(path) as f:
        return json.load(f)


def read(path):
    with open(path) as f:
        return f.read()
