"""What every launcher shares: the cluster model, GPU and node-IP selection, port checks, and the
local process group (start, watch, stop, log tailing).

The cluster model keeps Paddle's names: a :class:`Cluster` holds one :class:`Pod` per node, in the
order of the node list (the order defines node ranks); a pod holds its :class:`Trainer` s (collective)
or its servers and workers (parameter server). Global trainer ranks grow over nodes first, then over
the processes of a node: node k, local i has rank ``k * nproc + i``.

Processes are started each in its own session (so in its own process group) with ``-u`` and their
output in ``log_dir/<role>log.<local index>``; stopping one means SIGTERM to its whole group, a
grace period, then SIGKILL. A child whose launcher dies gets SIGKILL from the kernel
(``PR_SET_PDEATHSIG``), so no orphan survives even a ``kill -9`` of the launcher.
"""
import ctypes
import errno
import ipaddress
import logging
import os
import signal
import socket
import subprocess
import sys
import time

logger = logging.getLogger("fluidist.launch")

__all__ = [
    "LaunchError", "Trainer", "Pod", "Cluster", "get_cluster", "cluster_from_nodes", "get_gpus", "cuda_device_count",
    "split_devices", "parse_ips", "parse_endpoints", "format_endpoint", "split_endpoint", "strip_brackets", "pick_node_ip", "find_free_ports",
    "check_ports_free", "ProcSpec", "LocalJob", "SignalCatcher", "LaunchInterrupted", "tail_lines",
    "write_endpoints_log", "child_base_env", "describe_exit", "exit_code_of",
]


class LaunchError(Exception):
    """A launch that cannot go on; the message names the culprit (argument, node, port)."""


class LaunchInterrupted(Exception):
    """The launcher got SIGINT or SIGTERM; ``signum`` says which."""

    def __init__(self, signum):
        super().__init__("interrupted by %s" % signal.Signals(signum).name)
        self.signum = signum


# --------------------------------------------------------------------------------------------
# Cluster model
# --------------------------------------------------------------------------------------------
class Trainer:
    """One training process: its device ids (strings; empty on CPU), endpoint and global rank."""

    def __init__(self, gpus=(), endpoint=None, rank=None):
        self.gpus = list(gpus)
        self.endpoint = endpoint
        self.rank = rank

    def __eq__(self, other):
        return (isinstance(other, Trainer) and self.gpus == other.gpus
                and self.endpoint == other.endpoint and self.rank == other.rank)

    def __repr__(self):
        return "Trainer(rank=%s, endpoint=%s, gpus=%s)" % (self.rank, self.endpoint, self.gpus)


class Pod:
    """One node: its rank (position in the node list), address, trainers (collective) or
    servers / workers (parameter server, each a Trainer-like record with an endpoint and rank)."""

    def __init__(self, rank=None, addr=None):
        self.rank = rank
        self.addr = addr
        self.trainers = []
        self.servers = []
        self.workers = []

    def get_visible_gpus(self):
        return ",".join(g for t in self.trainers for g in t.gpus)

    def __repr__(self):
        return "Pod(rank=%s, addr=%s, trainers=%s, servers=%s, workers=%s)" % (
            self.rank, self.addr, self.trainers, self.servers, self.workers)


class Cluster:
    def __init__(self):
        self.pods = []

    def trainers_nranks(self):
        return len(self.trainers_endpoints())

    def trainers_endpoints(self):
        """Every trainer endpoint in rank order."""
        return [t.endpoint for p in self.pods for t in p.trainers]

    def pods_endpoints(self):
        return [p.addr for p in self.pods]

    def get_pod_by_id(self, pod_id):
        for p in self.pods:
            if p.rank == pod_id:
                return p
        return None

    def __repr__(self):
        return "Cluster(pods=%s)" % self.pods


def cluster_from_nodes(nodes, devices_per_proc):
    """The collective cluster of ``nodes`` (node rank order; each ``{"ip": ..., "endpoints": [...]}``, one
    endpoint per process); ``devices_per_proc[i]`` is the device list of local process i on every node."""
    cluster = Cluster()
    rank = 0
    for k, node in enumerate(nodes):
        pod = Pod(rank=k, addr=node["ip"])
        if len(node["endpoints"]) != len(devices_per_proc):
            raise LaunchError("node %s has %d endpoints for %d processes"
                              % (node["ip"], len(node["endpoints"]), len(devices_per_proc)))
        for ep, devs in zip(node["endpoints"], devices_per_proc):
            pod.trainers.append(Trainer(gpus=devs, endpoint=ep, rank=rank))
            rank += 1
        cluster.pods.append(pod)
    return cluster


def get_cluster(node_ips, node_ip, trainer_endpoints, devices_per_proc):
    """Build the collective cluster and return ``(cluster, local pod)``.

    ``trainer_endpoints[k]`` lists node k's endpoints (one per process); ``devices_per_proc[i]`` is
    the device list of local process i (empty lists on CPU). Every node runs as many processes as
    this one (checked across nodes by the launcher's rendezvous)."""
    if len(trainer_endpoints) != len(node_ips):
        raise LaunchError("%d nodes but endpoints for %d" % (len(node_ips), len(trainer_endpoints)))
    if node_ip not in node_ips:
        raise LaunchError("this node's IP %s is not in the node list %s" % (node_ip, ",".join(node_ips)))
    cluster = cluster_from_nodes([{"ip": ip, "endpoints": eps} for ip, eps in zip(node_ips, trainer_endpoints)],
                                 devices_per_proc)
    return cluster, cluster.pods[node_ips.index(node_ip)]


# --------------------------------------------------------------------------------------------
# Devices
# --------------------------------------------------------------------------------------------
def cuda_device_count():
    """How many CUDA devices this process may use: 0 when ``CUDA_VISIBLE_DEVICES`` is empty, else
    CuPy's count if CuPy works, else ``nvidia-smi -L`` narrowed by ``CUDA_VISIBLE_DEVICES``; None
    when neither can tell (no CuPy, no nvidia-smi: treated as a CPU node, ids are not checked)."""
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None and cvd.strip() in ("", "-1"):
        return 0
    try:
        import cupy  # noqa: F401
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # no CuPy, no driver, or no device
        pass
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    physical = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
    if cvd is not None:
        return min(physical, len([x for x in cvd.split(",") if x.strip()]))
    return physical


def _parse_id_list(text, what):
    ids = [x.strip() for x in str(text).split(",") if x.strip()]
    for x in ids:
        if not x.isdigit():
            raise LaunchError("%s: %r is not a device id (in %r)" % (what, x, text))
    if len(set(ids)) != len(ids):
        raise LaunchError("%s lists a device twice: %r" % (what, text))
    return ids


_ENV = object()


def get_gpus(selected_gpus, device_count=_ENV, cuda_visible_devices=_ENV):
    """The logical GPU ids (strings) the children will see, from the user's physical ``selected_gpus``.

    - ``selected_gpus`` None: every visible device, ``0 .. device_count-1`` (none on a CPU node).
    - ``CUDA_VISIBLE_DEVICES`` unset or empty: the ids as given.
    - ``CUDA_VISIBLE_DEVICES`` set: each selected id must be listed there and is replaced by its
      position (CVD=4,5,6,7 and selected 4,5,6,7 give 0,1,2,3); the children keep the parent's CVD.

    ``device_count`` and ``cuda_visible_devices`` default to this machine's; tests pass them."""
    if cuda_visible_devices is _ENV:
        cuda_visible_devices = os.environ.get("CUDA_VISIBLE_DEVICES")
    if selected_gpus is None or str(selected_gpus).strip() == "":
        n = cuda_device_count() if device_count is _ENV else device_count
        return [str(i) for i in range(n or 0)]
    selected = _parse_id_list(selected_gpus, "--gpus")
    visible = [x.strip() for x in (cuda_visible_devices or "").split(",") if x.strip()]
    if visible:
        logical = []
        for g in selected:
            if g not in visible:
                raise LaunchError("Can't find your selected_gpus %s in CUDA_VISIBLE_DEVICES[%s]"
                                  % (g, ",".join(visible)))
            logical.append(str(visible.index(g)))
        selected = logical
    if device_count is _ENV:
        device_count = cuda_device_count()
    if device_count is not None:
        for g in selected:
            if int(g) >= device_count:
                raise LaunchError("--gpus %s: GPU %s is not visible here (%d CUDA device%s visible%s)"
                                  % (selected_gpus, g, device_count, "" if device_count == 1 else "s",
                                     ", CUDA_VISIBLE_DEVICES=%s" % cuda_visible_devices
                                     if cuda_visible_devices is not None else ""))
    return selected


def split_devices(gpus, nproc_per_node=None):
    """Devices per local process: one GPU each, or ``len(gpus) / nproc_per_node`` each when
    ``nproc_per_node`` is given; on a CPU node (no gpus) ``nproc_per_node`` empty lists."""
    if not gpus:
        n = 1 if nproc_per_node is None else int(nproc_per_node)
        if n < 1:
            raise LaunchError("--nproc_per_node must be at least 1, got %d" % n)
        return [[] for _ in range(n)]
    if nproc_per_node is None:
        return [[g] for g in gpus]
    n = int(nproc_per_node)
    if n < 1 or len(gpus) % n != 0:
        raise LaunchError("--nproc_per_node %d does not divide the %d selected GPUs (%s)"
                          % (n, len(gpus), ",".join(gpus)))
    per = len(gpus) // n
    return [gpus[i * per:(i + 1) * per] for i in range(n)]


# --------------------------------------------------------------------------------------------
# Addresses and ports
# --------------------------------------------------------------------------------------------
def strip_brackets(host):
    """``"[::1]"`` -> ``"::1"``; other hosts unchanged."""
    host = str(host).strip()
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1]
    return host


def format_endpoint(ip, port):
    """``ip:port``, with an IPv6 address in brackets (``[::1]:6170``), as URLs and ZeroMQ write it."""
    return "[%s]:%d" % (ip, int(port)) if ":" in ip else "%s:%d" % (ip, int(port))


def split_endpoint(ep, what="endpoint"):
    """``"ip:port"`` or ``"[v6]:port"`` -> ``(ip, port)`` (the IP without brackets)."""
    ep = str(ep).strip()
    host, sep, port = ep.rpartition(":")
    if ep.startswith("[") and "]" not in host:  # "[::1]" alone: brackets but no port
        sep = ""
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise LaunchError("%s: %r is not ip:port (IPv6 in brackets: [::1]:6170)" % (what, ep))
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise LaunchError("%s: %r: write an IPv6 address in brackets, e.g. [%s]:%s" % (what, ep, host, port))
    return strip_brackets(host), int(port)


def _is_ipv6(text):
    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False


def parse_ips(text, what="--ips"):
    """A comma list of node IPs (IPv6 bare or in brackets) as a list without brackets."""
    ips = []
    for x in str(text or "").split(","):
        x = x.strip()
        if not x:
            continue
        ip = strip_brackets(x)
        if ":" in ip and not _is_ipv6(ip):
            raise LaunchError("%s takes IPs without ports, got %r" % (what, x))
        ips.append(ip)
    if not ips:
        raise LaunchError("%s is empty" % what)
    if len(set(ips)) != len(ips):
        raise LaunchError("%s lists an IP twice: %s" % (what, text))
    return ips


def parse_endpoints(text, what, default_port=None):
    """``"ip:port,ip:port"`` (IPv6 as ``[v6]:port``) as a list of ``(ip, port)``; with
    ``default_port(i)`` an entry may be an IP alone and gets that port."""
    out = []
    for i, ep in enumerate(x.strip() for x in str(text or "").split(",")):
        if not ep:
            continue
        ip_only = ep.endswith("]") if ep.startswith("[") else (":" not in ep or _is_ipv6(ep))
        if ip_only:
            if default_port is None:
                raise LaunchError("%s: %r has no port (expected ip:port)" % (what, ep))
            out.append((strip_brackets(ep), int(default_port(i))))
            continue
        out.append(split_endpoint(ep, what))
    if not out:
        raise LaunchError("%s is empty" % what)
    if len(set(out)) != len(out):
        raise LaunchError("%s lists an endpoint twice: %s" % (what, text))
    return out


def _bindable(ip):
    try:
        fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.bind((ip, 0))
        return True
    except OSError:
        return False


def pick_node_ip(node_ips, node_ip=None, env=None):
    """This node's IP among ``node_ips``: ``node_ip`` if given, else ``POD_IP``, else the only IP,
    else the one listed IP that is an address of this machine. Errors name the list."""
    env = os.environ if env is None else env
    listed = ",".join(node_ips)
    node_ip = strip_brackets(node_ip) if node_ip else node_ip
    if node_ip:
        if node_ip not in node_ips:
            raise LaunchError("this node's IP %s (--node_ip or POD_IP) is not in the node list %s"
                              % (node_ip, listed))
        return node_ip
    pod_ip = strip_brackets(env.get("POD_IP", ""))
    if pod_ip:
        if pod_ip not in node_ips:
            raise LaunchError("this node's IP %s (POD_IP) is not in the node list %s; pass --node_ip"
                              % (pod_ip, listed))
        return pod_ip
    if len(node_ips) == 1:
        return node_ips[0]
    mine = [ip for ip in node_ips if _bindable(ip)]
    if len(mine) == 1:
        return mine[0]
    if not mine:
        raise LaunchError("none of the node IPs %s is an address of this machine; the list must "
                          "contain this node's IP (or pass --node_ip / set POD_IP)" % listed)
    raise LaunchError("several node IPs (%s) are addresses of this machine; pass --node_ip or set "
                      "POD_IP to say which node this is" % ",".join(mine))


def find_free_ports(n, host="127.0.0.1"):
    """``n`` distinct ports free on ``host`` right now (all bound at once, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    except OSError as e:
        raise LaunchError("cannot find %d free port(s) on %s: %s%s" % (
            n, host, e, " (not an address of this machine)" if e.errno == errno.EADDRNOTAVAIL else "")) from None
    finally:
        for s in socks:
            s.close()


def check_ports_free(needed):
    """``needed``: ``(ip, port, who)`` triples for this node. Raise LaunchError naming the first
    port already in use (or the address this machine does not have)."""
    for ip, port, who in needed:
        fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            # SO_REUSEADDR: a port left in TIME_WAIT by a finished run is free; a listener is not
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((ip, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise LaunchError("port %d on %s is already in use (needed by %s); free it or choose "
                                  "other ports" % (port, ip, who)) from None
            if e.errno == errno.EADDRNOTAVAIL:
                raise LaunchError("cannot bind %s:%d for %s: %s is not an address of this machine"
                                  % (ip, port, who, ip)) from None
            raise LaunchError("cannot bind %s:%d for %s: %s" % (ip, port, who, e)) from None
        finally:
            s.close()


# --------------------------------------------------------------------------------------------
# Logs
# --------------------------------------------------------------------------------------------
def tail_lines(path, n=20, max_bytes=64 * 1024):
    """The last ``n`` lines of a text file (at most the last ``max_bytes``); [] if unreadable."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()[-n:]


def write_endpoints_log(log_dir, sections):
    """``log_dir/endpoints.log``: for each ``(header, endpoints)``, the header line then one
    endpoint per line (rewritten at every start)."""
    if not log_dir:
        return None
    path = os.path.join(log_dir, "endpoints.log")
    with open(path, "w") as f:
        for header, eps in sections:
            f.write(header + ":\n")
            for ep in eps:
                f.write(ep + "\n")
    return path


class _LogEcho:
    """Copies what a child appends to its log file to the launcher's stdout."""

    def __init__(self, path):
        self.path = path
        try:
            self.pos = os.path.getsize(path)
        except OSError:
            self.pos = 0

    def pump(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read(1 << 20)
        except OSError:
            return
        if data:
            self.pos += len(data)
            sys.stdout.write(data.decode("utf-8", "replace"))
            sys.stdout.flush()


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------
# The launcher's --log_level, passed to the children as FLUIDIST_LOG_LEVEL (None: the environment's own)
CHILD_LOG_LEVEL = None


def child_base_env():
    """The launcher's environment minus the proxy variables (children talk to peers directly), with
    ``FLUIDIST_LOG_LEVEL`` from ``--log_level``."""
    env = dict(os.environ)
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(k, None)
    if CHILD_LOG_LEVEL is not None:
        env["FLUIDIST_LOG_LEVEL"] = str(CHILD_LOG_LEVEL)
    return env


def describe_exit(code):
    if code is None:
        return "still running"
    if code < 0:
        try:
            return "killed by signal %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return "exit code %d" % code


def exit_code_of(code):
    """A Popen return code as a shell exit status (a signal becomes 128 + its number)."""
    return 128 - code if code < 0 else code


class ProcSpec:
    """What to start: ``role`` (``trainer``, ``worker`` or ``server``), global ``rank`` within
    the role, ``local_index`` (names the log file), ``endpoint``, ``env`` (complete), ``cmd``, ``log_path``,
    ``echo`` (copy its log to stdout)."""

    def __init__(self, role, rank, local_index, endpoint, env, cmd, log_path=None, echo=False):
        self.echo = echo  # copy this child's log to the launcher's stdout (rank 0)
        self.role = role
        self.rank = rank
        self.local_index = local_index
        self.endpoint = endpoint
        self.env = env
        self.cmd = cmd
        self.log_path = log_path

    def describe(self):
        return "%s rank %d (local %d, endpoint %s)" % (self.role, self.rank, self.local_index, self.endpoint)


def _pdeathsig_preexec():
    """In the child before exec: die with SIGKILL when the launcher dies (Linux only)."""
    parent = os.getpid()  # the launcher: the child checks it is still its parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return lambda: None

    def preexec():
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the launcher died between fork and prctl
            os._exit(1)
    return preexec


class _Proc:
    def __init__(self, spec, popen, log_file):
        self.spec = spec
        self.popen = popen
        self.log_file = log_file
        self.stopped = False  # True once the launcher itself signalled it
        self.swept = False

    @property
    def pid(self):
        return self.popen.pid

    def check(self):
        """The exit code (None while running). The first time an exit is seen, whatever the child
        left in its process group (grandchildren) gets SIGKILL: nothing outlives its parent."""
        code = self.popen.poll()
        if code is not None and not self.swept:
            self.swept = True
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return code


class LocalJob:
    """The processes this launcher started on this node."""

    def __init__(self, catcher=None, grace=3.0, poll_interval=0.2):
        self.catcher = catcher
        self.grace = float(grace)
        self.poll_interval = float(poll_interval)
        self.procs = []
        self._echo = None

    # -- start ------------------------------------------------------------------------------------
    def start(self, specs, log_mode="w"):
        """Start every spec in order, each in its own session. A signal between starts raises
        LaunchInterrupted; the caller then stops what was started (``terminate`` / ``close``).

        ``log_mode`` ``"w"`` starts each log afresh (a failure report then shows only this run);
        ``"a"`` appends after a separator line (an elastic job's later generations)."""
        preexec = _pdeathsig_preexec()
        for spec in specs:
            if self.catcher is not None:
                self.catcher.check()
            log_file = None
            if spec.log_path:
                os.makedirs(os.path.dirname(spec.log_path) or ".", exist_ok=True)
                log_file = open(spec.log_path, log_mode + "b")
                if log_file.tell() > 0:
                    log_file.write(("\n==== fluidist.launch: %s restarted at %s ====\n"
                                    % (spec.describe(), time.strftime("%Y-%m-%d %H:%M:%S"))).encode())
                    log_file.flush()
                if spec.echo:  # from the current end: an appended log's older runs are not repeated
                    self._echo = _LogEcho(spec.log_path)
            try:
                popen = subprocess.Popen(spec.cmd, env=spec.env, stdin=subprocess.DEVNULL,
                                         stdout=log_file, stderr=subprocess.STDOUT if log_file else None,
                                         start_new_session=True, preexec_fn=preexec)
            except OSError as e:
                if log_file:
                    log_file.close()
                raise LaunchError("cannot start %s: %s" % (spec.describe(), e)) from None
            self.procs.append(_Proc(spec, popen, log_file))
            logger.info("started %s pid %d%s", spec.describe(), popen.pid,
                        ", log " + spec.log_path if spec.log_path else "")
        return self

    def pump(self):
        if self._echo is not None:
            self._echo.pump()

    # -- watch ------------------------------------------------------------------------------------
    def poll(self):
        """``(failed _Proc or None, [procs still running])``; a child the launcher stopped is not a failure."""
        failed, running = None, []
        for p in self.procs:
            code = p.check()
            if code is None:
                running.append(p)
            elif code != 0 and not p.stopped and failed is None:
                failed = p
        return failed, running

    def watch(self, essential=None, check=None, deadline=None):
        """Wait until every proc in ``essential`` (default: all) exited 0, one proc failed, a
        signal came, ``check()`` returned something true, or ``deadline`` (monotonic) passed.

        Returns ``("done", None)``, ``("failed", proc)``, ``("check", value)`` or ``("deadline", None)``;
        raises LaunchInterrupted on SIGINT/SIGTERM."""
        essential = self.procs if essential is None else essential
        while True:
            self.pump()
            failed, _ = self.poll()
            if failed is not None:
                return "failed", failed
            if all(p.check() == 0 for p in essential):
                return "done", None
            if self.catcher is not None:
                self.catcher.check()
            if check is not None:
                value = check()
                if value:
                    return "check", value
            if deadline is not None and time.monotonic() > deadline:
                return "deadline", None
            time.sleep(self.poll_interval)

    # -- stop -------------------------------------------------------------------------------------
    def _signal_group(self, p, sig):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def terminate(self, procs=None, sig=signal.SIGTERM, grace=None):
        """Stop ``procs`` (default: all): ``sig`` to each process group, up to ``grace`` seconds for
        them to exit, then SIGKILL to the groups that remain, and reap. Returns the procs that
        could not be reaped (normally none)."""
        procs = self.procs if procs is None else procs
        grace = self.grace if grace is None else grace
        live = [p for p in procs if p.check() is None]
        signalled = list(live)
        for p in live:
            p.stopped = True
            self._signal_group(p, sig)
        signals_seen = self.catcher.count if self.catcher is not None else 0
        end = time.monotonic() + grace
        while live and time.monotonic() < end:
            self.pump()
            live = [p for p in live if p.check() is None]
            if self.catcher is not None and self.catcher.count > signals_seen:
                break  # a second Ctrl-C: do not wait out the grace period
            time.sleep(0.05)
        for p in live:
            self._signal_group(p, signal.SIGKILL)
        stuck = []
        for p in signalled:
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                stuck.append(p)
                logger.error("%s (pid %d) did not die after SIGKILL", p.spec.describe(), p.pid)
            p.check()  # sweeps the group (grandchildren) once the leader is reaped
        self.pump()
        for p in procs:
            if p.log_file is not None and not p.log_file.closed:
                p.log_file.close()
        return stuck

    def close(self):
        """Stop everything still running and close the logs (safe to call twice)."""
        self.terminate()

    # -- reports ----------------------------------------------------------------------------------
    def failure_report(self, p, tail=20):
        """The root-cause line (and the tail of the failed child's log) for a failed proc."""
        code = p.popen.returncode
        stopped = sum(1 for q in self.procs if q is not p and q.stopped)
        lines = ["ABORT: %s, pid %d, %s; log: %s; stopped the other %d local process%s"
                 % (p.spec.describe(), p.pid, describe_exit(code), p.spec.log_path or "(console)",
                    stopped, "" if stopped == 1 else "es")]
        if p.spec.log_path:
            last = tail_lines(p.spec.log_path, tail)
            lines.append("---- last %d lines of %s ----" % (len(last), p.spec.log_path))
            lines.extend(last)
            lines.append("---- end of %s ----" % p.spec.log_path)
        return "\n".join(lines)


class SignalCatcher:
    """Catches SIGINT and SIGTERM while active (a context manager): the handler only records the
    signal; the launcher's loops call :meth:`check`, which raises LaunchInterrupted at a safe point.
    Outside the main thread it does nothing (signals can only be caught there)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum = None
        self.count = 0
        self._old = {}

    def _handler(self, signum, frame):
        self.signum = signum
        self.count += 1

    def check(self):
        if self.signum is not None:
            raise LaunchInterrupted(self.signum)

    def __enter__(self):
        try:
            for s in self.SIGNALS:
                self._old[s] = signal.signal(s, self._handler)
        except ValueError:  # not the main thread
            self._old = {}
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        self._old = {}
