"""Collective jobs: one process per device on each node; a static multi-node job's nodes meet first."""
import os
import socket
import time

from ..distributed.security import FROM_ENV
from .args import DEFAULT_COLLECTIVE_PORT
from .cluster import (check_ports_free, cluster_from_nodes, find_free_ports, format_endpoint, get_cluster, get_gpus,
                      parse_ips, pick_node_ip, split_devices, split_endpoint)
from .common import LaunchError, logger
from .master_rendezvous import (MemberGate, connect_until, join_exchange, let_clients_close_first,
                                master_rendezvous, parse_nnodes, reply_member)
from .procs import ProcSpec, child_base_env, log_path, run_local, script_command, write_endpoints_log
from .restarts import run_generations

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


def _ports(args, ip, nproc, free):
    """This node's trainer ports: free ones (``free``) unless ``--started_port`` says where to start."""
    if free and args.started_port is None:
        return find_free_ports(nproc, ip)
    start = args.started_port or DEFAULT_COLLECTIVE_PORT
    if start + nproc - 1 > 65535:
        raise LaunchError("--started_port %d leaves no room for %d ports" % (start, nproc))
    return list(range(start, start + nproc))


def cloud_nodes(args, nproc, env=None):
    """Paddle 1.8's ``--use_paddlecloud``: ``(node IPs, this node's IP, started port)`` from the PaddleCloud
    environment, or None when the option is off or ``PADDLE_TRAINERS_NUM`` is 1 (a one-node job)."""
    env = os.environ if env is None else env
    if not getattr(args, "use_paddlecloud", False) or env.get("PADDLE_TRAINERS_NUM", "1").strip() == "1":
        return None
    missing = [k for k in ("PADDLE_TRAINERS", "POD_IP", "PADDLE_TRAINER_ID") if not env.get(k, "").strip()]
    if missing:
        raise LaunchError("--use_paddlecloud with PADDLE_TRAINERS_NUM=%s needs %s in the environment"
                          % (env.get("PADDLE_TRAINERS_NUM"), ", ".join(missing)))
    ips = parse_ips(env["PADDLE_TRAINERS"], "PADDLE_TRAINERS")
    node_ip = pick_node_ip(ips, env["POD_IP"])
    rank = env["PADDLE_TRAINER_ID"].strip()
    if not rank.isdigit() or int(rank) >= len(ips) or ips[int(rank)] != node_ip:
        raise LaunchError("PADDLE_TRAINER_ID=%s does not name this node: POD_IP %s is node %d of PADDLE_TRAINERS %s"
                          % (rank, node_ip, ips.index(node_ip), ",".join(ips)))
    if args.ips and parse_ips(args.ips) != ips:
        logger.warning("--use_paddlecloud: the nodes come from PADDLE_TRAINERS (%s), not --ips %s",
                       ",".join(ips), args.ips)
    port = args.started_port
    try:      # Paddle 1.8 reads PADDLE_PORT (the cloud's first port) when TRAINER_PORTS_NUM leaves room
        if int(env["TRAINER_PORTS_NUM"]) >= nproc:
            port = int(env.get("PADDLE_PORT") or env["TRAINER_PORT"])
    except (KeyError, ValueError):
        pass
    return ips, node_ip, port


def build_collective(args, gpus=None):
    """``(cluster, pod, use_gpu)`` from the arguments (``gpus``: logical ids already chosen) for a job whose
    nodes are listed (``--ips``, PaddleCloud's variables, or this node alone)."""
    use_gpu, devices = collective_devices(args, gpus)
    nproc = len(devices)
    cloud = cloud_nodes(args, nproc)
    if cloud is not None:
        ips, node_ip, started = cloud
        args.started_port = started
    else:
        ips = parse_ips(args.ips or "127.0.0.1", "--ips")
        if args.nnodes is not None:
            lo, hi = parse_nnodes(args.nnodes)
            if not args.ips and hi > 1:
                raise LaunchError("--nnodes %s: a multi-node job needs --master host:port (or --ips)" % args.nnodes)
            if (lo, hi) != (len(ips), len(ips)):
                raise LaunchError("--nnodes %s but --ips lists %d node(s)" % (args.nnodes, len(ips)))
        if args.node_rank is not None:
            if not 0 <= args.node_rank < len(ips):
                raise LaunchError("--node_rank %d is not in 0..%d (--ips %s)" % (args.node_rank, len(ips) - 1,
                                                                               ",".join(ips)))
            node_ip = ips[args.node_rank]
            if args.node_ip and pick_node_ip(ips, args.node_ip) != node_ip:
                raise LaunchError("--node_rank %d is node %s of --ips but --node_ip says %s"
                                  % (args.node_rank, node_ip, args.node_ip))
        else:
            node_ip = pick_node_ip(ips, args.node_ip)
    ports = _ports(args, node_ip, nproc, free=len(ips) == 1)
    cluster, pod = get_cluster(ips, node_ip, [[format_endpoint(ip, p) for p in ports] for ip in ips], devices)
    logger.debug("get cluster from args: %s", cluster)
    return cluster, pod, use_gpu


def build_collective_master(args, catcher=None):
    """``(cluster, pod, use_gpu)`` of a ``--master`` job: each node chooses its own ports, the nodes meet at the
    master address (:mod:`fluidist.launch.master_rendezvous`) and learn each other's endpoints."""
    use_gpu, devices = collective_devices(args)
    if args.ips:
        raise LaunchError("--master and --ips both say where the nodes are; give one of them")
    node_ip = args.node_ip.strip() if args.node_ip else None
    rank, nodes = master_rendezvous(
        args.master, args.nnodes or "1", args.node_rank, node_ip, len(devices),
        lambda ip: [format_endpoint(ip, p) for p in _ports(args, ip, len(devices), free=True)],
        timeout=args.rendezvous_timeout, last_call=args.rendezvous_last_call, catcher=catcher,
        secret=getattr(args, "job_secret", FROM_ENV), job_id=getattr(args, "rdzv_id", None))
    cluster = cluster_from_nodes(nodes, devices)
    logger.debug("get cluster from the rendezvous at %s: %s", args.master, cluster)
    return cluster, cluster.pods[rank], use_gpu


def master_address(args, cluster):
    """``(MASTER_ADDR, MASTER_PORT)`` for the children: the ``--master`` address; else node 0's IP and the port
    after its last trainer port; on one node, a port free now."""
    if getattr(args, "master", None):
        return split_endpoint(args.master, "--master")
    node0 = cluster.pods[0]
    if len(cluster.pods) == 1:
        return node0.addr, find_free_ports(1, node0.addr)[0]
    return node0.addr, _port_of(node0.trainers[-1].endpoint) + 1


def collective_specs(args, cluster, pod, use_gpu, extra_env=None):
    cmd = script_command(args)
    eps = cluster.trainers_endpoints()
    base = child_base_env()
    backend = "nccl" if use_gpu else "gloo"
    master_ip, master_port = master_address(args, cluster)
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
            # torchrun's names for the same facts
            "RANK": str(t.rank), "LOCAL_RANK": str(i), "WORLD_SIZE": str(len(eps)),
            "LOCAL_WORLD_SIZE": str(len(pod.trainers)), "GROUP_RANK": str(pod.rank),
            "MASTER_ADDR": master_ip, "MASTER_PORT": str(master_port),
        })
        if use_gpu:
            env["FLAGS_selected_gpus"] = ",".join(t.gpus)
        else:
            env.pop("FLAGS_selected_gpus", None)
        env.update(extra_env or {})
        specs.append(ProcSpec("trainer", t.rank, i, t.endpoint, env, cmd,
                              log_path(args, "workerlog.%d" % i), echo=(i == 0)))
    return specs


def _port_of(endpoint):
    return split_endpoint(endpoint)[1]


def start_collective(args, cluster, pod, use_gpu, catcher, met=False, log_mode="w", extra_env=None):
    """Check ports, meet the other nodes (unless they ``met`` already), start and watch this node's
    trainers; the exit code."""
    check_ports_free([(pod.addr, _port_of(t.endpoint), "trainer rank %d, endpoint %s" % (t.rank, t.endpoint))
                      for t in pod.trainers])
    specs = collective_specs(args, cluster, pod, use_gpu, extra_env)
    if len(cluster.pods) > 1 and not met:
        node_rendezvous(cluster, pod, _port_of(cluster.pods[0].trainers[0].endpoint),
                        {"nproc": len(pod.trainers), "ips": cluster.pods_endpoints(),
                         "endpoints": cluster.trainers_endpoints()},
                        timeout=args.rendezvous_timeout, catcher=catcher, secret=getattr(args, "job_secret", FROM_ENV))
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        write_endpoints_log(args.log_dir, [("PADDLE_TRAINER_ENDPOINTS", cluster.trainers_endpoints())])
    logger.info("node %d of %d: starting %d trainer(s), ranks %d..%d of %d", pod.rank, len(cluster.pods),
                len(pod.trainers), pod.trainers[0].rank, pod.trainers[-1].rank, cluster.trainers_nranks())
    return run_local(specs, catcher, args, log_mode=log_mode)


def run_collective(args, catcher):
    """This node's part of a collective job, started again after a failure while ``--max_restarts`` allows
    (each generation with fresh ports, meeting the other nodes again)."""
    def generation(restart, log_mode, env):
        if getattr(args, "master", None):
            cluster, pod, use_gpu = build_collective_master(args, catcher)
            return start_collective(args, cluster, pod, use_gpu, catcher, True, log_mode, env)
        cluster, pod, use_gpu = build_collective(args)
        return start_collective(args, cluster, pod, use_gpu, catcher, False, log_mode, env)
    return run_generations(args, catcher, generation)


# The rendezvous of a static multi-node job: node 0 listens on its first trainer port before its
# trainers start; every other node sends a JSON line saying what it is about to run; node 0 answers
# all of them at once, with the first disagreement if there is one. Clients close first, so node 0's
# port is not left in TIME_WAIT when its trainer 0 binds it.
def _listed(value):
    """A list another node sent, for a message (whatever it holds)."""
    return ",".join(map(str, value)) if isinstance(value, list) else repr(value)[:200]


def _disagreement(mine, theirs, my_ip, their_ip):
    if theirs.get("ips") != mine["ips"]:
        return ("node %s has --ips %s but node %s has %s; the list and its order must be the same on every node"
                % (their_ip, _listed(theirs.get("ips")), my_ip, ",".join(mine["ips"])))
    if theirs.get("nproc") != mine["nproc"]:
        return ("node %s runs %s processes but node %s runs %d; every node must use the same number of GPUs "
                "(--gpus) or --nproc_per_node" % (their_ip, theirs.get("nproc"), my_ip, mine["nproc"]))
    if theirs.get("endpoints") != mine["endpoints"]:
        return ("node %s computed trainer endpoints %s but node %s computed %s; use the same --started_port "
                "on every node" % (their_ip, _listed(theirs.get("endpoints")), my_ip,
                                   ",".join(mine["endpoints"])))
    return None


def node_rendezvous(cluster, pod, port, info, timeout, catcher=None, secret=FROM_ENV):
    """Node 0 waits on ``port`` for every other node of the list; each proves the job secret (see
    :mod:`fluidist.launch.master_rendezvous`) and says what it is about to run."""
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
        gate = MemberGate(srv, secret)
        try:
            logger.info("rendezvous: waiting on %s:%d for nodes %s", root, port, ",".join(ips[1:]))
            while len(peers) < len(ips) - 1 and error is None:
                if catcher is not None:
                    catcher.check()
                if time.monotonic() > deadline:
                    missing = [ip for ip in ips[1:] if ip not in peers]
                    raise LaunchError("rendezvous: waited %.0f s on %s:%d for the launchers of nodes %s"
                                      % (timeout, root, port, ",".join(missing)))
                got = gate.next(deadline, catcher)
                if got is None:
                    continue
                conn, msg = got
                peer = msg.get("node_ip")
                if peer not in ips[1:] or peer in peers:
                    why = "lists a node IP %s that is not among %s" % (peer, ",".join(ips[1:])) \
                        if peer not in ips[1:] else "node %s connected twice" % peer
                    reply_member(conn, {"ok": False, "error": why}, msg, secret)
                    conn.close()
                    continue
                peers[peer] = (conn, msg)
                error = _disagreement(info, msg, root, peer)
            for conn, msg in peers.values():
                try:
                    reply_member(conn, {"ok": error is None, "error": error}, msg, secret)
                except OSError:
                    pass
            let_clients_close_first([conn for conn, _ in peers.values()])
        finally:
            gate.close()
            for conn, _ in peers.values():
                conn.close()
            srv.close()
        if error:
            raise LaunchError("rendezvous: " + error)
        logger.info("rendezvous: all %d nodes agree", len(ips))
        return
    # every other node
    what = "node 0 (%s:%d)" % (root, port)
    conn = connect_until(root, port, deadline, catcher, what, timeout)
    try:
        reply = join_exchange(conn, info, deadline, catcher, what, secret)
    except OSError as e:
        raise LaunchError("rendezvous with %s failed: %s" % (what, e))
    finally:
        conn.close()
    if not reply.get("ok"):
        raise LaunchError("rendezvous: %s" % reply.get("error"))
