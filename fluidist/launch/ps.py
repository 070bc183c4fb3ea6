"""Parameter-server jobs: servers and workers, a local cluster, explicit lists, or nodes meeting at
``--master`` (each running ``--server_num`` servers and ``--worker_num`` workers)."""
import os

from ..distributed.security import FROM_ENV
from .args import DEFAULT_PS_PORT, env_name
from .cluster import (check_ports_free, find_free_ports, format_endpoint, parse_endpoints, pick_node_ip,
                      split_endpoint)
from .common import LaunchError, logger
from .master_rendezvous import master_rendezvous
from .procs import ProcSpec, child_base_env, log_path, run_local, script_command, write_endpoints_log
from .restarts import run_generations

# --------------------------------------------------------------------------------------------
# Parameter server
# --------------------------------------------------------------------------------------------
def build_ps(args):
    """``(servers, workers, node_ip)``: lists of ``(ip, port)`` in rank order, and this node's IP."""
    if args.servers is None and args.server_num is None:
        raise LaunchError("parameter-server mode needs --servers or --server_num (%s)" % env_name("server_num"))
    if args.workers is None and args.worker_num is None:
        raise LaunchError("parameter-server mode needs --workers or --worker_num (%s)" % env_name("worker_num"))
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
        raise LaunchError("endpoint %s is both a server and a worker" % format_endpoint(*sorted(clash)[0]))
    node_ips = []
    for ip, _ in servers + workers:
        if ip not in node_ips:
            node_ips.append(ip)
    node_ip = pick_node_ip(node_ips, args.node_ip)
    return servers, workers, node_ip


def build_ps_master(args, catcher=None):
    """``(servers, workers, node_ip, local)`` of a job whose nodes meet at ``--master``: every node runs
    ``--server_num`` servers and ``--worker_num`` workers on free ports of its IP; the rendezvous gives the
    node ranks, and the servers (workers) are node 0's, then node 1's, ...; ``local`` holds the indices of this
    node's servers and workers in those lists."""
    counts = []
    for flag in ("server_num", "worker_num"):
        n = getattr(args, flag)
        if n < 1:
            raise LaunchError("--%s must be at least 1, got %d" % (flag, n))
        counts.append(n)
    n_servers, n_workers = counts
    node_ip = args.node_ip.strip() if args.node_ip else None
    rank, nodes = master_rendezvous(
        args.master, args.nnodes or "1", args.node_rank, node_ip, [n_servers, n_workers],
        lambda ip: [format_endpoint(ip, p) for p in find_free_ports(n_servers + n_workers, ip)],
        timeout=args.rendezvous_timeout, last_call=args.rendezvous_last_call, catcher=catcher,
        secret=getattr(args, "job_secret", FROM_ENV), job_id=getattr(args, "rdzv_id", None), kind="ps")
    servers = [split_endpoint(ep) for node in nodes for ep in node["endpoints"][:n_servers]]
    workers = [split_endpoint(ep) for node in nodes for ep in node["endpoints"][n_servers:]]
    local = (list(range(rank * n_servers, (rank + 1) * n_servers)),
             list(range(rank * n_workers, (rank + 1) * n_workers)))
    logger.info("rendezvous at %s: node %d of %d runs servers %s and workers %s", args.master, rank, len(nodes),
                ",".join(map(str, local[0])), ",".join(map(str, local[1])))
    return servers, workers, nodes[rank]["ip"], local


def ps_specs(args, servers, workers, node_ip, local=None, extra_env=None):
    """The specs of this node's servers and workers: those on ``node_ip``, or the indices ``local``
    (``(server indices, worker indices)``: nodes that share an IP)."""
    cmd = script_command(args)
    server_list = ",".join(format_endpoint(*ep) for ep in servers)
    worker_list = ",".join(format_endpoint(*ep) for ep in workers)
    base = child_base_env()
    base.update({"PADDLE_PSERVERS_IP_PORT_LIST": server_list, "PADDLE_TRAINER_ENDPOINTS": worker_list,
                 "PADDLE_TRAINERS_NUM": str(len(workers)), "PADDLE_PSERVER_NUMS": str(len(servers))})
    specs = []
    if extra_env:
        base.update(extra_env)
    if local is None:
        local = ([i for i, ep in enumerate(servers) if ep[0] == node_ip], [i for i, ep in enumerate(workers)
                                                                           if ep[0] == node_ip])
    local_servers = [(i, servers[i]) for i in local[0]]
    local_workers = [(i, workers[i]) for i in local[1]]
    echo_worker = local_workers[0][0] if local_workers else None
    for j, (i, (ip, port)) in enumerate(local_servers):
        env = dict(base)
        for k in ("PADDLE_TRAINER_ID", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
            env.pop(k, None)  # a server is no trainer; nothing of the launcher's own environment leaks in
        env.update({"TRAINING_ROLE": "PSERVER", "PADDLE_PSERVER_ID": str(i), "PADDLE_PORT": str(port),
                    "POD_IP": ip, "PADDLE_CURRENT_ENDPOINT": format_endpoint(ip, port)})
        specs.append(ProcSpec("server", i, j, format_endpoint(ip, port), env, cmd, log_path(args, "serverlog.%d" % j),
                              echo=(echo_worker is None and j == 0)))
    for j, (i, (ip, port)) in enumerate(local_workers):
        env = dict(base)
        env.pop("PADDLE_PSERVER_ID", None)
        env.update({"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": str(i), "PADDLE_PORT": str(port),
                    "POD_IP": ip, "PADDLE_CURRENT_ENDPOINT": format_endpoint(ip, port),
                    "RANK": str(i), "LOCAL_RANK": str(j), "WORLD_SIZE": str(len(workers)),
                    "LOCAL_WORLD_SIZE": str(len(local_workers))})
        specs.append(ProcSpec("worker", i, j, format_endpoint(ip, port), env, cmd, log_path(args, "workerlog.%d" % j),
                              echo=(i == echo_worker)))
    return specs


def run_ps(args, catcher):
    """This node's part of a parameter-server job, started again after a failure while ``--max_restarts``
    allows (all its servers and workers: the scripts resume from their checkpoints)."""
    def generation(restart, log_mode, env):
        local = None
        if getattr(args, "master", None):
            servers, workers, node_ip, local = build_ps_master(args, catcher)
        else:
            servers, workers, node_ip = build_ps(args)
        logger.info("parameter servers %s, workers %s; this node %s",
                    ",".join(format_endpoint(*ep) for ep in servers), ",".join(format_endpoint(*ep) for ep in workers),
                    node_ip)
        mine = local[0] if local is not None else [i for i, ep in enumerate(servers) if ep[0] == node_ip]
        check_ports_free([(servers[i][0], servers[i][1], "server %d, endpoint %s" % (i, format_endpoint(*servers[i])))
                          for i in mine])
        specs = ps_specs(args, servers, workers, node_ip, local, env)
        if args.log_dir:
            os.makedirs(args.log_dir, exist_ok=True)
            write_endpoints_log(args.log_dir, [
                ("PADDLE_PSERVERS_IP_PORT_LIST", [format_endpoint(*ep) for ep in servers]),
                ("PADDLE_TRAINER_ENDPOINTS", [format_endpoint(*ep) for ep in workers])])
        return run_local(specs, catcher, args, essential_roles={"worker"}, log_mode=log_mode)
    return run_generations(args, catcher, generation)
