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
    # torchrun's habits: the same line on every node, no node list, no external service
    fluidist-launch --nnodes 2 --master 10.0.0.1:29500 --nproc_per_node 4 train.py
    fluidist-launch --nnodes 2 --node_rank 1 --master 10.0.0.1:29500 -m mypkg.train --lr 0.1
    # and its spellings (fluidist.launch.torchrun): hyphens, --standalone, --rdzv-*, --max-restarts, --tee
    fluidist-launch --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint 10.0.0.1:29400 train.py
    fluidist-launch --standalone --nproc-per-node 2 --max-restarts 3 --tee 3 train.py
    # a parameter-server job whose nodes meet at --master: 1 server and 2 workers on each node
    fluidist-launch --nnodes 2 --master 10.0.0.1:29500 --server_num 1 --worker_num 2 train.py

Each child gets the Paddle environment variables (``PADDLE_TRAINER_ID``, ``PADDLE_TRAINER_ENDPOINTS``,
``TRAINING_ROLE``, ...) that role makers read, and torchrun's ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` (collective trainers and
parameter-server workers); ``FLUIDIST_LOG_LEVEL`` carries ``--log_level`` to the children's ``fluidist``
loggers. Each child's output goes to ``log_dir/workerlog.N`` (and
``serverlog.N``), ``endpoints.log`` lists every endpoint, and rank 0's output is copied to the console.
A child that fails stops the others; the launcher prints one root-cause report (rank, endpoint, exit
code, log path, the log's last lines) and exits with that child's exit code, unless ``--max_restarts``
allows starting them all again (:mod:`fluidist.launch.restarts`). An option the launcher does not know is
an error naming it and the nearest known one. SIGINT / SIGTERM are
forwarded to every child's process group (then SIGKILL after ``--grace_period``); 128 + the signal
number is the launcher's exit code then.

Every option may also come from an environment variable, ``FLUIDIST_LAUNCH_<OPTION>`` (for example
``FLUIDIST_LAUNCH_SERVER_NUM=2``); ``--node_ip`` and ``--host`` default to ``POD_IP`` and the elastic
options to Paddle's ``PADDLE_ELASTIC_*`` variables. Where fluidist differs from Paddle 1.8: ports are
checked before any child starts; nodes of a static multi-node collective job meet once before starting
(node 0's first port, or the ``--master`` address) to check they agree on the node list and run the same
number of processes; logs are rewritten at every run (Paddle appended); the configuration is printed only
with ``--print_config``; ``ps-heter`` / ``--heter_workers`` and ``--http_port`` (Paddle's Gloo HTTP store)
are not supported. Inside a Slurm step (``srun``) with several nodes, ``--nnodes``, ``--node_rank`` and
``--master`` default to ``SLURM_NNODES``, ``SLURM_NODEID`` and the first host of ``SLURM_JOB_NODELIST``
(port ``MASTER_PORT``, else 29500 + ``SLURM_JOB_ID`` mod 1000).
"""
import logging
import sys

from . import procs
from .args import parse_args, print_arguments
from .collective import collective_devices, collective_specs, run_collective
from .common import LaunchError, LaunchInterrupted, logger
from .master_rendezvous import parse_nnodes
from .procs import SignalCatcher
from .ps import run_ps
from .secret import child_security_env, resolve_job_secret
from .slurm import apply_slurm
from .torchrun import apply_torchrun

__all__ = ["main", "run", "decide_mode", "check_ps_nodes", "setup_logging"]


class _StderrHandler(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record comes (so a redirected or captured
    stderr gets the launcher's messages too)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


class _LaunchFormatter(logging.Formatter):
    """Progress lines with level and time; errors (and failure reports) as ``fluidist.launch: <message>``."""

    def __init__(self):
        super().__init__("%(levelname)s %(asctime)s launch] %(message)s")

    def format(self, record):
        if record.levelno >= logging.ERROR:
            return "fluidist.launch: " + record.getMessage()
        return super().format(record)


def setup_logging(level):
    """The launcher's own messages go to the ``fluidist.launch`` logger, printed on stderr at ``level``;
    the children get ``level`` as ``FLUIDIST_LOG_LEVEL``."""
    procs.CHILD_LOG_LEVEL = level  # the children's fluidist loggers (see fluidist.log_helper)
    if not any(getattr(h, "_fluidist_launch", False) for h in logger.handlers):
        h = _StderrHandler()
        h.setFormatter(_LaunchFormatter())
        h._fluidist_launch = True
        logger.addHandler(h)
        logger.propagate = False
    logger.setLevel(level)


def check_ps_nodes(args):
    """A parameter-server job's nodes: listed (``--servers`` / ``--workers``), or counted per node and met at
    ``--master`` (``--server_num`` / ``--worker_num`` on every node)."""
    lists = [f for f in ("servers", "workers") if getattr(args, f, None) is not None]
    if getattr(args, "master", None):
        if lists:
            raise LaunchError("--master and --%s both say where the parameter-server job's processes are; with "
                              "--master give --server_num and --worker_num (per node)" % lists[0])
        missing = [f for f in ("server_num", "worker_num") if getattr(args, f, None) is None]
        if missing:
            raise LaunchError("a parameter-server job meeting at --master needs --server_num and --worker_num (per "
                              "node); missing: --%s" % missing[0])
        return
    multi = [f for f in ("nnodes", "node_rank") if getattr(args, f, None) is not None]
    if multi and (getattr(args, "node_rank", None) is not None or parse_nnodes(args.nnodes) != (1, 1)):
        raise LaunchError("--%s: a parameter-server job on several nodes meets at --master host:port (with "
                          "--server_num / --worker_num per node), or lists its processes in --servers and --workers"
                          % multi[0])


def decide_mode(args):
    """``collective``, ``ps`` or ``elastic``; errors for unsupported or contradictory options."""
    if getattr(args, "http_port", None) is not None:
        raise LaunchError("--http_port %s: Paddle's Gloo HTTP rendezvous store is not supported by fluidist (its role "
                          "makers meet over the trainer endpoints, or GeneralRoleMaker's path=); drop --http_port"
                          % args.http_port)
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
        check_ps_nodes(args)
        return "ps"
    return "collective"


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------
def run(args, mode=None):
    """Run a parsed command line; returns the exit code (errors are printed, not raised)."""
    setup_logging(args.log_level)
    try:
        apply_torchrun(args)
        apply_slurm(args)
        mode = mode or decide_mode(args)
        args.job_secret = resolve_job_secret(args, mode)
        procs.CHILD_SECURITY = child_security_env(args.job_secret)
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
        logger.error("error: %s", e)
        return 1
    except LaunchInterrupted as e:  # before any child started
        logger.error("%s before the job started", e)
        return 128 + e.signum
    finally:
        procs.release_watchdog()


def main(argv=None):
    """The console script ``fluidist-launch``: exits with the job's exit code."""
    sys.exit(run(parse_args(argv)))


if __name__ == "__main__":
    main()
