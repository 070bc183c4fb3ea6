"""Child processes of one test, each logging to <tmp>/<name>.log, with a time limit; whatever is
still running at the end is killed. Subclasses say where their scripts live and what env they get."""
import os
import random
import socket
import subprocess
import sys
import time


class ChildProcesses:
    script_dir = os.path.dirname(os.path.abspath(__file__))

    def __init__(self, tmp_path):
        self.tmp = str(tmp_path)
        self.procs = []

    def child_env(self, extra):
        env = dict(os.environ)
        env.update({k: str(v) for k, v in (extra or {}).items()})
        return env

    def start(self, name, script, args=(), env=None):
        log = open(os.path.join(self.tmp, name + ".log"), "w")
        path = script if os.path.isabs(script) else os.path.join(self.script_dir, script)
        p = subprocess.Popen([sys.executable, "-u", path] + [str(a) for a in args], stdout=log,
                             stderr=subprocess.STDOUT, env=self.child_env(env), cwd=self.tmp)
        self.procs.append((name, p, log))
        return p

    def log(self, name):
        with open(os.path.join(self.tmp, name + ".log")) as f:
            return f.read()

    def wait(self, names=None, timeout=120):
        """Exit codes by name (None: still running when the time was up)."""
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


def wait_until(pred, timeout, what, interval=0.1):
    """``pred()``'s first true value, polled every ``interval`` s; AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


_RANDOM = random.SystemRandom()


def worker_port_range():
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
    return low + worker * size, low + (worker + 1) * size - 1


def _bindable(host, port):
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def free_port(host="127.0.0.1"):
    """A port free on ``host`` now, from this worker's range (see ``worker_port_range``)."""
    return free_port_block(1, host)


def free_port_block(n, host="127.0.0.1", tries=200):
    """A start port p with p .. p+n-1 all free right now, from this worker's range."""
    low, high = worker_port_range()
    for _ in range(tries):
        p = _RANDOM.randrange(low, high + 2 - n)   # not the random module: tests seed it
        if all(_bindable(host, q) for q in range(p, p + n)):
            return p
    raise RuntimeError("no block of %d free ports on %s in %d-%d" % (n, host, low, high))
