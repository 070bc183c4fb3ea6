"""Inside a Slurm step: ``--nnodes``, ``--node_rank`` and ``--master`` from Slurm's variables."""
import os

from .common import LaunchError, logger

# --------------------------------------------------------------------------------------------
# Slurm
# --------------------------------------------------------------------------------------------
def first_slurm_host(nodelist):
    """The first host of a Slurm node list (``node[03-05,9],gpu1`` -> ``node03``), as ``scontrol show
    hostnames`` would print it first."""
    text = str(nodelist).strip()
    depth, end = 0, len(text)
    for i, c in enumerate(text):
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            end = i
            break
    first = text[:end]
    if "[" not in first:
        return first
    prefix, _, rest = first.partition("[")
    inside, _, suffix = rest.partition("]")
    return prefix + inside.split(",")[0].split("-")[0] + suffix


def slurm_defaults(env=None):
    """``{"nnodes", "node_rank", "master"}`` for a launcher started by ``srun`` on several nodes (one launcher
    per node), from ``SLURM_NNODES``, ``SLURM_NODEID`` and ``SLURM_JOB_NODELIST``; None outside a
    multi-node Slurm step. The master port is ``MASTER_PORT``, else 29500 + ``SLURM_JOB_ID`` mod 1000."""
    env = os.environ if env is None else env
    need = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NNODES", "SLURM_NODEID", "SLURM_JOB_NODELIST")
    if any(not env.get(k, "").strip() for k in need):
        return None
    try:
        nnodes, node_rank, job = int(env["SLURM_NNODES"]), int(env["SLURM_NODEID"]), int(env["SLURM_JOB_ID"])
    except ValueError as e:
        raise LaunchError("the Slurm environment is not what srun sets: %s" % e) from None
    if nnodes < 2:
        return None
    ntasks = env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS")
    if ntasks and ntasks.strip().isdigit() and int(ntasks) != nnodes:
        raise LaunchError("srun started %s launchers on %d nodes; run one launcher per node (srun --ntasks-per-node=1) "
                          "and let it start the processes (--nproc_per_node)" % (ntasks, nnodes))
    port = env.get("MASTER_PORT", "").strip() or str(29500 + job % 1000)
    host = first_slurm_host(env["SLURM_JOB_NODELIST"])
    return {"nnodes": str(nnodes), "node_rank": node_rank, "master": "%s:%s" % ("[%s]" % host if ":" in host else host,
                                                                              port)}


def apply_slurm(args, env=None):
    """Fill ``--nnodes`` / ``--node_rank`` / ``--master`` from Slurm where the command line and the
    ``FLUIDIST_LAUNCH_*`` variables left them unset and no node list (``--ips``) was given."""
    if getattr(args, "ips", None) or getattr(args, "elastic_server", None) or not hasattr(args, "master"):
        return False
    if getattr(args, "standalone", False):
        return False
    if any(getattr(args, f, None) is not None for f in ("servers", "workers", "server_num", "worker_num")):
        return False
    got = slurm_defaults(env)
    if got is None:
        return False
    for k, v in got.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    logger.info("Slurm step: --nnodes %s --node_rank %s --master %s", args.nnodes, args.node_rank, args.master)
    return True
