"""Helpers for the launcher tests: run the real launcher as a process, find free ports, tell
whether a pid is still alive (through /proc, so without psutil), wait with deadlines."""
import json
import os
import random
import signal
import socket
import subprocess
import sys

from child_procs import wait_until  # noqa: F401 (the launcher tests import it from here)

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


def _port_range():
    """The ports this test process hands out: below the kernel's ephemeral range (which bind(0) and the
    source ports of outgoing connections come from, so no other process is handed them by the kernel),
    split between pytest-xdist workers (so two workers never pick the same one)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    low = 10000 if ephemeral_low > 12000 else 1024
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1))
    worker = int((os.environ.get("PYTEST_XDIST_WORKER", "gw0") or "gw0").lstrip("gw") or 0) % workers
    size = (ephemeral_low - low) // workers
    return low + worker * size, low + (worker + 1) * size


def _bindable(host, port):
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host="127.0.0.1"):
    """A port free on ``host`` now, from this worker's range (see ``_port_range``)."""
    return free_port_block(1, host)


def free_port_block(n, host="127.0.0.1", tries=200):
    """A start port p with p .. p+n-1 all free right now, from this worker's range."""
    low, high = _port_range()
    for _ in range(tries):
        p = random.randrange(low, high - n)
        if all(_bindable(host, q) for q in range(p, p + n)):
            return p
    raise RuntimeError("no block of %d free ports on %s in %d-%d" % (n, host, low, high))


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
