"""The cluster model, GPU and node-IP selection, addresses and port checks.

The cluster model keeps Paddle's names: a :class:`Cluster` holds one :class:`Pod` per node, in the
order of the node list (the order defines node ranks); a pod holds its :class:`Trainer` s (collective)
or its servers and workers (parameter server). Global trainer ranks grow over nodes first, then over
the processes of a node: node k, local i has rank ``k * nproc + i``.
"""
import errno
import ipaddress
import os
import random
import socket
import subprocess

from ..distributed import ports as _ports
from ..distributed.ports import format_endpoint, strip_brackets
from .common import LaunchError

__all__ = [
    "Trainer", "Pod", "Cluster", "get_cluster", "cluster_from_nodes", "get_gpus", "cuda_device_count",
    "split_devices", "parse_ips", "parse_endpoints", "format_endpoint", "split_endpoint", "strip_brackets",
    "pick_node_ip", "find_free_ports", "check_ports_free", "port_range"
]


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
def split_endpoint(ep, what="endpoint"):
    """``"ip:port"`` or ``"[v6]:port"`` -> ``(ip, port)`` (the IP without brackets), as
    :func:`fluidist.distributed.ports.split_endpoint` parses it; a bad one is a :class:`LaunchError`."""
    try:
        return _ports.split_endpoint(str(ep), what)
    except _ports.EndpointError as e:
        raise LaunchError(str(e)) from None


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


PORT_RANGE_ENV = "FLUIDIST_PORT_RANGE"
_RANDOM = random.SystemRandom()


def port_range(env=None):
    """``FLUIDIST_PORT_RANGE`` ("LOW-HIGH", both included) as ``(low, high)``, or None when unset."""
    raw = (os.environ if env is None else env).get(PORT_RANGE_ENV, "").strip()
    if not raw:
        return None
    low, sep, high = raw.partition("-")
    if not (sep and low.strip().isdigit() and high.strip().isdigit()
            and 1 <= int(low) <= int(high) <= 65535):
        raise LaunchError("%s must be LOW-HIGH, two port numbers from 1 to 65535 with LOW <= HIGH, got %r"
                          % (PORT_RANGE_ENV, raw))
    return int(low), int(high)


def find_free_ports(n, host="127.0.0.1"):
    """``n`` distinct ports free on ``host`` right now (all bound at once, then released): drawn at random
    from ``FLUIDIST_PORT_RANGE`` when it is set (a firewall's open range; a range of its own for each of
    several jobs on one host), else the kernel's choice (its ephemeral range)."""
    rng = port_range()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if rng is None:
        candidates = [0] * n
    else:       # a generator of its own: programs (and tests) seed the random module
        candidates = list(range(rng[0], rng[1] + 1))
        random.Random(_RANDOM.getrandbits(64)).shuffle(candidates)
    socks = []
    try:
        for port in candidates:
            if len(socks) == n:
                break
            s = socket.socket(family, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
            except OSError as e:
                s.close()
                if rng is None or e.errno == errno.EADDRNOTAVAIL:
                    raise
                continue        # taken: the next one of the range
            socks.append(s)
        if len(socks) < n:
            raise LaunchError("cannot find %d free port(s) on %s in %s=%d-%d (%d free)"
                              % (n, host, PORT_RANGE_ENV, rng[0], rng[1], len(socks)))
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
