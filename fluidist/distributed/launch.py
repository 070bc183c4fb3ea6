"""``python -m fluidist.distributed.launch`` (also the console script ``fluidist-launch``).

Starts the processes of a distributed job on this node, as ``paddle.distributed.launch`` and
``fleetrun`` do::

    # collective: one process per GPU (or --nproc_per_node processes on a CPU node)
    python -m fluidist.distributed.launch --gpus 0,1 train.py --lr 0.1
    python -m fluidist.distributed.launch --ips 10.0.0.1,10.0.0.2 --nproc_per_node 2 train.py
    # parameter server: a local cluster, or explicit lists (run the same line on every node)
    python -m fluidist.distributed.launch --server_num 2 --worker_num 2 train.py
    python -m fluidist.distributed.launch --servers 10.0.0.1:6170,10.0.0.2:6170 --workers 10.0.0.1,10.0.0.2 train.py
    # elastic collective job over etcd
    python -m fluidist.distributed.launch --elastic_server 10.0.0.9:2379 --job_id j1 --np 2 train.py

Each child gets the Paddle environment variables (``PADDLE_TRAINER_ID``, ``PADDLE_TRAINER_ENDPOINTS``,
``TRAINING_ROLE``, ...) that role makers read, its output goes to ``log_dir/workerlog.N`` (and
``serverlog.N``), ``endpoints.log`` lists every endpoint, and rank 0's output is copied to the console.
A child that fails stops the others; the launcher prints one root-cause report (rank, endpoint, exit
code, log path, the log's last lines) and exits with that child's exit code. SIGINT / SIGTERM are
forwarded to every child's process group (then SIGKILL after ``--grace_period``); 128 + the signal
number is the launcher's exit code then.

Every option may also come from an environment variable, ``FLUIDIST_LAUNCH_<OPTION>`` (for example
``FLUIDIST_LAUNCH_SERVER_NUM=2``); ``--node_ip`` and ``--host`` default to ``POD_IP`` and the elastic
options to Paddle's ``PADDLE_ELASTIC_*`` variables. Where fluidist differs from Paddle 1.8: ports are
checked before any child starts; nodes of a static multi-node collective job meet once before starting
(node 0's first port) to check they agree on the node list and run the same number of processes;
``ps-heter`` / ``--heter_workers`` are not supported.
"""
import argparse
import json
import logging
import os
import socket
import sys
import time

from .launch_utils import (LaunchError, LaunchInterrupted, LocalJob, ProcSpec, SignalCatcher, check_ports_free,
                           child_base_env, exit_code_of, find_free_ports, get_cluster, get_gpus, parse_endpoints,
                           parse_ips, pick_node_ip, split_devices, write_endpoints_log, logger)

__all__ = ["main", "build_parser", "parse_args", "run", "run_collective", "run_ps", "build_collective",
           "start_collective", "add_base_arguments", "add_collective_arguments", "add_ps_arguments",
           "add_elastic_arguments", "print_arguments"]

DEFAULT_COLLECTIVE_PORT = 6070
DEFAULT_PS_PORT = 6170


# --------------------------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------------------------
def _str2bool(v):
    if isinstance(v, bool):
        return v
    if str(v).lower() in ("1", "true", "yes", "y", "on"):
        return True
    if str(v).lower() in ("0", "false", "no", "n", "off", ""):
        return False
    raise argparse.ArgumentTypeError("expected a boolean, got %r" % v)


def _env_name(dest):
    return "FLUIDIST_LAUNCH_" + dest.upper()


def _add(group, *flags, dest, default=None, env=(), help="", **kw):
    """An option whose default comes from the first set variable of ``env`` (plus
    ``FLUIDIST_LAUNCH_<DEST>``), then ``default``. argparse applies ``type`` to string defaults."""
    for name in (_env_name(dest),) + tuple(env):
        if os.environ.get(name, "") != "":
            default = os.environ[name]
            break
    names = ", ".join((_env_name(dest),) + tuple(env))
    group.add_argument(*flags, dest=dest, default=default, help="%s (env: %s)" % (help, names), **kw)


def add_base_arguments(parser):
    g = parser.add_argument_group("base")
    _add(g, "--log_dir", dest="log_dir", default="log",
         help="directory of workerlog.N / serverlog.N and endpoints.log; '' sends children to the console")
    _add(g, "--log_level", dest="log_level", type=int, default=20, help="the launcher's logging level")
    _add(g, "--print_config", dest="print_config", type=_str2bool, default=True,
         help="print the arguments before starting")
    _add(g, "--run_mode", dest="run_mode", default=None, choices=["collective", "ps", "ps-heter"],
         help="collective (default) or ps; chosen from the other options when not given")
    _add(g, "--grace_period", dest="grace_period", type=float, default=3.0,
         help="seconds between SIGTERM and SIGKILL when stopping children")
    _add(g, "--node_ip", dest="node_ip", default=None, env=("POD_IP",),
         help="this node's IP; default: the listed IP that belongs to this machine")
    _add(g, "--started_port", "--start_port", dest="started_port", type=int, default=None,
         help="first port on each node (collective: default free ports on one node, else %d)"
              % DEFAULT_COLLECTIVE_PORT)
    return g


def add_collective_arguments(parser):
    g = parser.add_argument_group("collective")
    _add(g, "--ips", "--cluster_node_ips", dest="ips", default=None,
         help="comma list of node IPs; its order gives node ranks and must be the same on every node")
    _add(g, "--gpus", "--selected_gpus", dest="gpus", default=None,
         help="physical GPU ids to use on this node, e.g. 0,1 (default: all visible)")
    _add(g, "--nproc_per_node", dest="nproc_per_node", type=int, default=None,
         help="processes per node (CPU nodes: how many to start; GPU nodes: GPUs split among them)")
    _add(g, "--backend", dest="backend", default="auto", env=("PADDLE_DISTRI_BACKEND",),
         choices=["auto", "nccl", "gloo"], help="auto: nccl where CUDA devices are visible, else gloo (CPU)")
    _add(g, "--rendezvous_timeout", dest="rendezvous_timeout", type=float, default=300.0,
         help="seconds the nodes of a multi-node job wait for each other before starting")
    return g


def add_ps_arguments(parser):
    g = parser.add_argument_group("parameter server")
    _add(g, "--servers", "--endpoints", dest="servers", default=None, help="server ip:port list")
    _add(g, "--workers", dest="workers", default=None, help="worker ip:port list (ports optional)")
    _add(g, "--server_num", dest="server_num", type=int, default=None,
         help="number of servers of a local (127.0.0.1) cluster")
    _add(g, "--worker_num", dest="worker_num", type=int, default=None,
         help="number of workers of a local (127.0.0.1) cluster")
    _add(g, "--http_port", dest="http_port", type=int, default=None,
         help="port of the HTTP rendezvous store on the first server's node (PADDLE_GLOO_HTTP_ENDPOINT)")
    _add(g, "--server_exit_timeout", dest="server_exit_timeout", type=float, default=30.0,
         help="seconds servers get to exit by themselves once the workers are done, before SIGTERM")
    for flag in ("--heter_workers", "--heter_worker_num", "--heter_devices"):
        _add(g, flag, dest=flag[2:], default=None, help="not supported by fluidist")
    return g


def add_elastic_arguments(parser):
    g = parser.add_argument_group("elastic (collective jobs over etcd)")
    _add(g, "--elastic_server", dest="elastic_server", default=None, env=("PADDLE_ELASTIC_SERVER",),
         help="etcd host:port")
    _add(g, "--job_id", dest="job_id", default=None, env=("PADDLE_ELASTIC_JOB_ID",), help="the job's unique id")
    _add(g, "--np", dest="np", default=None, env=("PADDLE_ELASTIC_NP",),
         help="nodes: N (fault tolerance) or MIN:MAX (elastic)")
    _add(g, "--host", dest="host", default=None, env=("POD_IP",), help="this node's address in the job")
    _add(g, "--max_restarts", dest="max_restarts", type=int, default=3, env=("PADDLE_ELASTIC_MAX_RESTARTS",),
         help="restarts (membership changes or failures) allowed before giving up")
    _add(g, "--elastic_timeout", dest="elastic_timeout", type=float, default=600.0,
         env=("PADDLE_ELASTIC_TIMEOUT",), help="seconds to wait for enough nodes")
    _add(g, "--elastic_ttl", dest="elastic_ttl", type=int, default=10, env=("PADDLE_ELASTIC_TTL",),
         help="seconds a node's registration outlives its launcher")
    return g


def add_script_arguments(parser):
    parser.add_argument("training_script", nargs="?", default=os.environ.get(_env_name("training_script")) or None,
                        help="the training script, then its arguments (env: %s)" % _env_name("training_script"))
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m fluidist.distributed.launch",
        description="Start the processes of a fluidist distributed job (collective or parameter server).")
    add_base_arguments(parser)
    add_collective_arguments(parser)
    add_ps_arguments(parser)
    add_elastic_arguments(parser)
    add_script_arguments(parser)
    return parser


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.training_script:
        parser.error("the training script is required (or set %s)" % _env_name("training_script"))
    return args


def print_arguments(args, out=None):
    out = out or sys.stdout
    out.write("-----------  Configuration Arguments -----------\n")
    for k, v in sorted(vars(args).items()):
        out.write("%s: %s\n" % (k, v))
    out.write("------------------------------------------------\n")
    out.flush()


def _setup_logging(level):
    if not any(getattr(h, "_fluidist_launch", False) for h in logger.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(levelname)s %(asctime)s launch] %(message)s"))
        h._fluidist_launch = True
        logger.addHandler(h)
        logger.propagate = False
    logger.setLevel(level)


def decide_mode(args):
    """``collective``, ``ps`` or ``elastic``; errors for unsupported or contradictory options."""
    heter = [f for f in ("heter_workers", "heter_worker_num", "heter_devices") if getattr(args, f, None)]
    if args.run_mode == "ps-heter" or heter:
        raise LaunchError("heterogeneous parameter-server jobs (%s) are not supported by fluidist; use "
                          "--run_mode ps with --servers/--workers or --server_num/--worker_num"
                          % ("--run_mode ps-heter" if args.run_mode == "ps-heter" else "--" + heter[0]))
    ps_opts = [f for f in ("servers", "workers", "server_num", "worker_num") if getattr(args, f, None) is not None]
    elastic_opts = {f: getattr(args, f, None) for f in ("elastic_server", "job_id", "np")}
    if any(v is not None for v in elastic_opts.values()):
        missing = [f for f, v in elastic_opts.items() if v is None]
        if missing:
            raise LaunchError("elastic mode needs --elastic_server, --job_id and --np; missing: %s"
                              % ", ".join("--" + m for m in missing))
        if args.run_mode == "ps" or ps_opts:
            raise LaunchError("elastic mode runs collective jobs only; drop %s"
                              % (", ".join("--" + f for f in ps_opts) or "--run_mode ps"))
        return "elastic"
    if args.run_mode == "collective":
        if ps_opts:
            raise LaunchError("--run_mode collective does not take parameter-server options (%s)"
                              % ", ".join("--" + f for f in ps_opts))
        return "collective"
    if args.run_mode == "ps" or ps_opts:
        if getattr(args, "ips", None) is not None:
            raise LaunchError("--ips is a collective option but %s select parameter-server mode; give one kind"
                              % (", ".join("--" + f for f in ps_opts) or "--run_mode ps"))
        if getattr(args, "gpus", None) is not None:
            raise LaunchError("--gpus is a collective option; parameter-server jobs run on CPU")
        return "ps"
    return "collective"


def _script_cmd(args):
    script = args.training_script
    if not os.path.isfile(script):
        raise LaunchError("training script %r not found (cwd %s)" % (script, os.getcwd()))
    return [sys.executable, "-u", script] + list(args.training_script_args or [])


def _log_path(args, name):
    return os.path.join(args.log_dir, name) if args.log_dir else None


# --------------------------------------------------------------------------------------------
# Running the local processes
# --------------------------------------------------------------------------------------------
def run_local(specs, catcher, args, essential_roles=None, log_mode="a"):
    """Start ``specs``, watch them, stop them; returns the launcher's exit code."""
    job = LocalJob(catcher, grace=args.grace_period)
    try:
        job.start(specs, log_mode=log_mode)
        essential = [p for p in job.procs if essential_roles is None or p.spec.role in essential_roles]
        essential = essential or job.procs
        kind, failed = job.watch(essential)
        if kind == "done":
            rest = [p for p in job.procs if p not in essential]
            if rest:
                timeout = getattr(args, "server_exit_timeout", 30.0)
                kind, failed = job.watch(rest, deadline=time.monotonic() + timeout)
                if kind == "deadline":
                    logger.info("%d process(es) still running %.0f s after the workers finished; stopping them",
                                sum(1 for p in rest if p.check() is None), timeout)
                    job.terminate(rest)
                    kind = "done"
        if kind == "failed":
            job.terminate()
            sys.stdout.flush()
            sys.stderr.write(job.failure_report(failed) + "\n")
            sys.stderr.flush()
            return exit_code_of(failed.popen.returncode)
        logger.info("all %d local process(es) finished", len(job.procs))
        return 0
    except LaunchInterrupted as e:
        logger.warning("got %s: stopping %d local process(es)", e, sum(1 for p in job.procs if p.check() is None))
        job.terminate(sig=e.signum)
        return 128 + e.signum
    finally:
        job.close()


# --------------------------------------------------------------------------------------------
# Collective
# --------------------------------------------------------------------------------------------
def collective_devices(args, gpus=None):
    """``(use_gpu, devices per local process)``."""
    backend = getattr(args, "backend", "auto") or "auto"
    if backend == "gloo":
        if args.gpus:
            raise LaunchError("--gpus %s with --backend gloo: gloo runs on CPU" % args.gpus)
        gpus = []
    elif gpus is None:
        gpus = get_gpus(args.gpus)
    if backend == "nccl" and not gpus:
        raise LaunchError("--backend nccl needs CUDA devices but none is visible (CUDA_VISIBLE_DEVICES=%s)"
                          % os.environ.get("CUDA_VISIBLE_DEVICES"))
    return bool(gpus), split_devices(gpus, args.nproc_per_node)


def build_collective(args, gpus=None):
    """``(cluster, pod, use_gpu)`` from the arguments (``gpus``: logical ids already chosen)."""
    use_gpu, devices = collective_devices(args, gpus)
    ips = parse_ips(args.ips or "127.0.0.1", "--ips")
    node_ip = pick_node_ip(ips, args.node_ip)
    nproc = len(devices)
    if len(ips) == 1 and args.started_port is None:
        ports = find_free_ports(nproc, node_ip)
    else:
        start = args.started_port or DEFAULT_COLLECTIVE_PORT
        ports = list(range(start, start + nproc))
        if ports[-1] > 65535:
            raise LaunchError("--started_port %d leaves no room for %d ports" % (start, nproc))
    endpoints = [["%s:%d" % (ip, p) for p in ports] for ip in ips]
    cluster, pod = get_cluster(ips, node_ip, endpoints, devices)
    logger.info("get cluster from args: %s", cluster)
    return cluster, pod, use_gpu


def collective_specs(args, cluster, pod, use_gpu, extra_env=None):
    cmd = _script_cmd(args)
    eps = cluster.trainers_endpoints()
    base = child_base_env()
    backend = "nccl" if use_gpu else "gloo"
    specs = []
    for i, t in enumerate(pod.trainers):
        env = dict(base)
        env.update({
            "PADDLE_TRAINER_ID": str(t.rank),
            "PADDLE_CURRENT_ENDPOINT": t.endpoint,
            "PADDLE_TRAINERS_NUM": str(len(eps)),
            "PADDLE_TRAINER_ENDPOINTS": ",".join(eps),
            "POD_IP": pod.addr,
            "PADDLE_RANK_IN_NODE": str(i),
            "PADDLE_DISTRI_BACKEND": backend,
        })
        if use_gpu:
            env["FLAGS_selected_gpus"] = ",".join(t.gpus)
        else:
            env.pop("FLAGS_selected_gpus", None)
        env.update(extra_env or {})
        specs.append(ProcSpec("trainer", t.rank, i, t.endpoint, env, cmd,
                              _log_path(args, "workerlog.%d" % i), echo=(i == 0)))
    return specs


def _port_of(endpoint):
    return int(endpoint.rpartition(":")[2])


def start_collective(args, cluster, pod, use_gpu, catcher):
    """Check ports, meet the other nodes, start and watch this node's trainers; the exit code."""
    check_ports_free([(pod.addr, _port_of(t.endpoint), "trainer rank %d, endpoint %s" % (t.rank, t.endpoint))
                      for t in pod.trainers])
    specs = collective_specs(args, cluster, pod, use_gpu)
    if len(cluster.pods) > 1:
        node_rendezvous(cluster, pod, _port_of(cluster.pods[0].trainers[0].endpoint),
                        {"nproc": len(pod.trainers), "ips": cluster.pods_endpoints(),
                         "endpoints": cluster.trainers_endpoints()},
                        timeout=args.rendezvous_timeout, catcher=catcher)
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        write_endpoints_log(args.log_dir, [("PADDLE_TRAINER_ENDPOINTS", cluster.trainers_endpoints())])
    return run_local(specs, catcher, args)


def run_collective(args, catcher):
    cluster, pod, use_gpu = build_collective(args)
    return start_collective(args, cluster, pod, use_gpu, catcher)


# The rendezvous of a static multi-node job: node 0 listens on its first trainer port before its
# trainers start; every other node sends a JSON line saying what it is about to run; node 0 answers
# all of them at once, with the first disagreement if there is one. Clients close first, so node 0's
# port is not left in TIME_WAIT when its trainer 0 binds it.
def _recv_line(sock, deadline, catcher, what):
    buf = b""
    while b"\n" not in buf:
        if catcher is not None:
            catcher.check()
        if time.monotonic() > deadline:
            raise LaunchError("rendezvous: timed out waiting for %s" % what)
        sock.settimeout(0.2)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            raise LaunchError("rendezvous: %s closed the connection" % what)
        buf += chunk
        if len(buf) > 1 << 20:
            raise LaunchError("rendezvous: oversized message from %s" % what)
    return json.loads(buf.split(b"\n", 1)[0].decode("utf-8"))


def _disagreement(mine, theirs, my_ip, their_ip):
    if theirs.get("ips") != mine["ips"]:
        return ("node %s has --ips %s but node %s has %s; the list and its order must be the same on every node"
                % (their_ip, ",".join(theirs.get("ips") or []), my_ip, ",".join(mine["ips"])))
    if theirs.get("nproc") != mine["nproc"]:
        return ("node %s runs %s processes but node %s runs %d; every node must use the same number of GPUs "
                "(--gpus) or --nproc_per_node" % (their_ip, theirs.get("nproc"), my_ip, mine["nproc"]))
    if theirs.get("endpoints") != mine["endpoints"]:
        return ("node %s computed trainer endpoints %s but node %s computed %s; use the same --started_port "
                "on every node" % (their_ip, ",".join(theirs.get("endpoints") or []), my_ip,
                                   ",".join(mine["endpoints"])))
    return None


def node_rendezvous(cluster, pod, port, info, timeout, catcher=None):
    ips = cluster.pods_endpoints()
    root = ips[0]
    deadline = time.monotonic() + timeout
    info = dict(info, node_ip=pod.addr, v=1)
    if pod.rank == 0:
        srv = socket.socket(socket.AF_INET6 if ":" in root else socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind((root, port))
        except OSError as e:
            srv.close()
            raise LaunchError("rendezvous: cannot listen on %s:%d (trainer rank 0's port): %s" % (root, port, e))
        srv.listen(len(ips))
        srv.settimeout(0.2)
        peers = {}
        error = None
        try:
            logger.info("rendezvous: waiting on %s:%d for nodes %s", root, port, ",".join(ips[1:]))
            while len(peers) < len(ips) - 1 and error is None:
                if catcher is not None:
                    catcher.check()
                if time.monotonic() > deadline:
                    missing = [ip for ip in ips[1:] if ip not in peers]
                    raise LaunchError("rendezvous: waited %.0f s on %s:%d for the launchers of nodes %s"
                                      % (timeout, root, port, ",".join(missing)))
                try:
                    conn, addr = srv.accept()
                except socket.timeout:
                    continue
                try:
                    msg = _recv_line(conn, min(deadline, time.monotonic() + 10), catcher, "node at %s" % addr[0])
                except (LaunchError, ValueError):
                    conn.close()
                    continue
                peer = msg.get("node_ip")
                if peer not in ips[1:] or peer in peers:
                    why = "lists a node IP %s that is not among %s" % (peer, ",".join(ips[1:])) \
                        if peer not in ips[1:] else "node %s connected twice" % peer
                    conn.sendall((json.dumps({"ok": False, "error": why}) + "\n").encode())
                    conn.close()
                    continue
                peers[peer] = conn
                error = _disagreement(info, msg, root, peer)
            reply = (json.dumps({"ok": error is None, "error": error}) + "\n").encode()
            for conn in peers.values():
                try:
                    conn.sendall(reply)
                except OSError:
                    pass
            end = time.monotonic() + 5
            for conn in peers.values():  # let the clients close first
                conn.settimeout(max(0.05, end - time.monotonic()))
                try:
                    conn.recv(1)
                except OSError:
                    pass
        finally:
            for conn in peers.values():
                conn.close()
            srv.close()
        if error:
            raise LaunchError("rendezvous: " + error)
        logger.info("rendezvous: all %d nodes agree", len(ips))
        return
    # every other node
    what = "node 0 (%s:%d)" % (root, port)
    while True:
        if catcher is not None:
            catcher.check()
        try:
            conn = socket.create_connection((root, port), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise LaunchError("rendezvous: could not reach the launcher of %s within %.0f s" % (what, timeout))
            time.sleep(0.3)
    try:
        conn.sendall((json.dumps(info) + "\n").encode())
        reply = _recv_line(conn, deadline, catcher, what)
    except OSError as e:
        raise LaunchError("rendezvous with %s failed: %s" % (what, e))
    finally:
        conn.close()
    if not reply.get("ok"):
        raise LaunchError("rendezvous: %s" % reply.get("error"))


# --------------------------------------------------------------------------------------------
# Parameter server
# --------------------------------------------------------------------------------------------
def build_ps(args):
    """``(servers, workers, node_ip)``: lists of ``(ip, port)`` in rank order, and this node's IP."""
    if args.servers is None and args.server_num is None:
        raise LaunchError("parameter-server mode needs --servers or --server_num (%s)" % _env_name("server_num"))
    if args.workers is None and args.worker_num is None:
        raise LaunchError("parameter-server mode needs --workers or --worker_num (%s)" % _env_name("worker_num"))
    for flag in ("server_num", "worker_num"):
        n = getattr(args, flag)
        if n is not None and n < 1:
            raise LaunchError("--%s must be at least 1, got %d" % (flag, n))
    need_free = (0 if args.servers is not None else args.server_num) + \
                (0 if args.workers is not None else args.worker_num)
    free = find_free_ports(need_free) if need_free else []
    if args.servers is not None:
        servers = parse_endpoints(args.servers, "--servers")
        if args.server_num is not None and args.server_num != len(servers):
            raise LaunchError("--server_num %d but --servers lists %d endpoints" % (args.server_num, len(servers)))
    elif args.started_port is not None:
        servers = [("127.0.0.1", args.started_port + i) for i in range(args.server_num)]
    else:
        servers, free = [("127.0.0.1", p) for p in free[:args.server_num]], free[args.server_num:]
    if args.workers is not None:
        workers = parse_endpoints(args.workers, "--workers",
                                  default_port=lambda i: DEFAULT_PS_PORT + len(servers) + i)
        if args.worker_num is not None and args.worker_num != len(workers):
            raise LaunchError("--worker_num %d but --workers lists %d" % (args.worker_num, len(workers)))
    else:
        workers = [("127.0.0.1", p) for p in free[:args.worker_num]]
    clash = set(servers) & set(workers)
    if clash:
        raise LaunchError("endpoint %s:%d is both a server and a worker" % sorted(clash)[0])
    node_ips = []
    for ip, _ in servers + workers:
        if ip not in node_ips:
            node_ips.append(ip)
    node_ip = pick_node_ip(node_ips, args.node_ip)
    return servers, workers, node_ip


def ps_specs(args, servers, workers, node_ip):
    cmd = _script_cmd(args)
    server_list = ",".join("%s:%d" % ep for ep in servers)
    worker_list = ",".join("%s:%d" % ep for ep in workers)
    base = child_base_env()
    base.update({"PADDLE_PSERVERS_IP_PORT_LIST": server_list, "PADDLE_TRAINER_ENDPOINTS": worker_list,
                 "PADDLE_TRAINERS_NUM": str(len(workers)), "PADDLE_PSERVER_NUMS": str(len(servers))})
    if args.http_port is not None:
        base["PADDLE_GLOO_HTTP_ENDPOINT"] = "%s:%d" % (servers[0][0], args.http_port)
    specs = []
    local_servers = [(i, ep) for i, ep in enumerate(servers) if ep[0] == node_ip]
    local_workers = [(i, ep) for i, ep in enumerate(workers) if ep[0] == node_ip]
    echo_worker = local_workers[0][0] if local_workers else None
    for j, (i, (ip, port)) in enumerate(local_servers):
        env = dict(base)
        env.pop("PADDLE_TRAINER_ID", None)
        env.update({"TRAINING_ROLE": "PSERVER", "PADDLE_PSERVER_ID": str(i), "PADDLE_PORT": str(port),
                    "POD_IP": ip, "PADDLE_CURRENT_ENDPOINT": "%s:%d" % (ip, port)})
        specs.append(ProcSpec("server", i, j, "%s:%d" % (ip, port), env, cmd, _log_path(args, "serverlog.%d" % j),
                              echo=(echo_worker is None and j == 0)))
    for j, (i, (ip, port)) in enumerate(local_workers):
        env = dict(base)
        env.pop("PADDLE_PSERVER_ID", None)
        env.update({"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": str(i), "PADDLE_PORT": str(port),
                    "POD_IP": ip, "PADDLE_CURRENT_ENDPOINT": "%s:%d" % (ip, port)})
        specs.append(ProcSpec("worker", i, j, "%s:%d" % (ip, port), env, cmd, _log_path(args, "workerlog.%d" % j),
                              echo=(i == echo_worker)))
    return specs


def run_ps(args, catcher):
    servers, workers, node_ip = build_ps(args)
    logger.info("parameter servers %s, workers %s; this node %s",
                ",".join("%s:%d" % ep for ep in servers), ",".join("%s:%d" % ep for ep in workers), node_ip)
    need = [(ip, port, "server %d, endpoint %s:%d" % (i, ip, port))
            for i, (ip, port) in enumerate(servers) if ip == node_ip]
    if args.http_port is not None and servers[0][0] == node_ip:
        need.append((node_ip, args.http_port, "--http_port"))
    check_ports_free(need)
    specs = ps_specs(args, servers, workers, node_ip)
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        write_endpoints_log(args.log_dir, [("PADDLE_PSERVERS_IP_PORT_LIST", ["%s:%d" % ep for ep in servers]),
                                           ("PADDLE_TRAINER_ENDPOINTS", ["%s:%d" % ep for ep in workers])])
    return run_local(specs, catcher, args, essential_roles={"worker"}, log_mode="w")


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------
def run(args, mode=None):
    """Run a parsed command line; returns the exit code (errors are printed, not raised)."""
    _setup_logging(args.log_level)
    try:
        mode = mode or decide_mode(args)
        if args.print_config:
            print_arguments(args)
        with SignalCatcher() as catcher:
            if mode == "elastic":
                from .elastic import run_elastic
                return run_elastic(args, catcher, collective_devices, collective_specs)
            if mode == "ps":
                return run_ps(args, catcher)
            return run_collective(args, catcher)
    except LaunchError as e:
        sys.stdout.flush()
        sys.stderr.write("fluidist.launch: error: %s\n" % e)
        sys.stderr.flush()
        return 1
    except LaunchInterrupted as e:  # before any child started
        sys.stderr.write("fluidist.launch: %s before the job started\n" % e)
        return 128 + e.signum


def main(argv=None):
    """The console script ``fluidist-launch``: exits with the job's exit code."""
    sys.exit(run(parse_args(argv)))


if __name__ == "__main__":
    main()
