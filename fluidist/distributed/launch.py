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

Each child gets the Paddle environment variables (``PADDLE_TRAINER_ID``, ``PADDLE_TRAINER_ENDPOINTS``,
``TRAINING_ROLE``, ...) that role makers read, and torchrun's ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``GROUP_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` (collective trainers and
parameter-server workers); ``FLUIDIST_LOG_LEVEL`` carries ``--log_level`` to the children's ``fluidist``
loggers. Each child's output goes to ``log_dir/workerlog.N`` (and
``serverlog.N``), ``endpoints.log`` lists every endpoint, and rank 0's output is copied to the console.
A child that fails stops the others; the launcher prints one root-cause report (rank, endpoint, exit
code, log path, the log's last lines) and exits with that child's exit code. SIGINT / SIGTERM are
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
import argparse
import logging
import os
import shutil
import socket
import sys
import time

from .launch_utils import (LaunchError, LaunchInterrupted, LocalJob, ProcSpec, SignalCatcher, check_ports_free,
                           child_base_env, cluster_from_nodes, exit_code_of, find_free_ports, format_endpoint,
                           get_cluster, get_gpus, parse_endpoints, parse_ips, pick_node_ip, split_devices,
                           split_endpoint, write_endpoints_log, logger)
from . import launch_utils
from .launch_secret import child_security_env, resolve_job_secret
from .master_rendezvous import (accept_member, connect_until, join_exchange, let_clients_close_first,
                                master_rendezvous, parse_nnodes, reply_member)
from .security import FROM_ENV

__all__ = ["main", "build_parser", "parse_args", "run", "run_collective", "run_ps", "build_collective",
           "start_collective", "add_base_arguments", "add_collective_arguments", "add_ps_arguments",
           "add_elastic_arguments", "print_arguments", "slurm_defaults"]

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
    ``FLUIDIST_LAUNCH_<DEST>``), then ``default``. argparse applies ``type`` to string defaults.
    The help says the built-in default and the variables."""
    shown = default
    for name in (_env_name(dest),) + tuple(env):
        if os.environ.get(name, "") != "":
            default = os.environ[name]
            break
    names = ", ".join((_env_name(dest),) + tuple(env))
    dflt = "" if shown is None else "; default: %s" % ("''" if shown == "" else shown)
    group.add_argument(*flags, dest=dest, default=default, help="%s (env: %s%s)" % (help, names, dflt), **kw)


_BOOL_WORDS = ("1", "true", "yes", "y", "on", "0", "false", "no", "n", "off")


def _flag(group, *flags, dest, help):
    """A boolean option that may stand alone (``--print_config``) or take a value (``--print_config 0``,
    as Paddle 1.8 wrote it); :func:`normalize_argv` gives a lone one its ``true``."""
    _add(group, *flags, dest=dest, type=_str2bool, nargs="?", const=True, default=False, metavar="BOOL", help=help)


def normalize_argv(parser, argv):
    """``argv`` with ``true`` after each lone boolean flag (one not followed by a boolean word), up to the
    training script: so ``--use_paddlecloud train.py`` and ``-m pkg.mod`` do not take the script as the
    flag's value. The script's own arguments are never touched."""
    argv = list(argv)
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--" or not tok.startswith("-") or tok == "-":
            return out + argv[i:]
        action = parser._option_string_actions.get(tok.split("=", 1)[0])
        out.append(tok)
        i += 1
        if action is None or "=" in tok or action.nargs == 0:
            continue
        if action.nargs == "?" and action.const is True:
            if i < len(argv) and argv[i].lower() in _BOOL_WORDS:
                out.append(argv[i])
                i += 1
            else:
                out.append("true")
            continue
        if i < len(argv):
            out.append(argv[i])
            i += 1
    return out


def _log_level(v):
    """An int (Paddle's ``--log_level 20``) or a level name (``INFO``, ``debug``)."""
    if isinstance(v, int) or str(v).strip().lstrip("-").isdigit():
        return int(v)
    level = logging.getLevelName(str(v).strip().upper())
    if not isinstance(level, int):
        raise argparse.ArgumentTypeError("expected a logging level (a number or DEBUG/INFO/WARNING/ERROR), got %r" % v)
    return level


def add_base_arguments(parser):
    g = parser.add_argument_group("base")
    _add(g, "--log_dir", dest="log_dir", default="log",
         help="directory of workerlog.N / serverlog.N and endpoints.log; '' sends children to the console")
    _add(g, "--log_level", dest="log_level", type=_log_level, default=20,
         help="logging level (number or name) of the launcher and of the children's 'fluidist' loggers")
    _flag(g, "--print_config", dest="print_config", help="print the arguments before starting")
    _add(g, "--run_mode", dest="run_mode", default=None, choices=["collective", "ps", "ps-heter"],
         help="collective (default) or ps; chosen from the other options when not given")
    _add(g, "--grace_period", dest="grace_period", type=float, default=3.0,
         help="seconds between SIGTERM and SIGKILL when stopping children")
    _add(g, "--node_ip", dest="node_ip", default=None, env=("POD_IP",),
         help="this node's IP; default: the listed IP that belongs to this machine")
    _add(g, "--started_port", "--start_port", dest="started_port", type=int, default=None,
         help="first port on each node (collective: default free ports on one node, else %d)"
              % DEFAULT_COLLECTIVE_PORT)
    _add(g, "--secret_file", dest="secret_file", default=None, env=("FLUIDIST_SECRET_FILE",),
         help="file holding the job secret every node shares (mode 0600; make one with `python -m "
              "fluidist.distributed.security new FILE`); required on several nodes; a job on one node gets a fresh one")
    _flag(g, "--insecure", dest="insecure",
          help="plain sockets: no authentication, no encryption (a warning says so)")
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
    _add(g, "--nnodes", dest="nnodes", default=None,
         help="number of nodes, N or MIN:MAX (with --master: start once MAX nodes, or MIN nodes and no newcomer "
              "for --rendezvous_last_call seconds, have joined); default: 1, or the length of --ips")
    _add(g, "--node_rank", dest="node_rank", type=int, default=None,
         help="this node's rank, 0..N-1 (default: with --master, the master numbers the nodes as they join; "
              "with --ips, the position of this node's IP)")
    _add(g, "--master", dest="master", default=None,
         help="host:port where the nodes meet ([v6]:port for IPv6); node 0 (or the first launcher there) "
              "listens on it: no etcd, no node list")
    _add(g, "--rendezvous_last_call", dest="rendezvous_last_call", type=float, default=5.0,
         help="with --nnodes MIN:MAX, seconds without a newcomer after MIN nodes joined before starting")
    _flag(g, "--use_paddlecloud", dest="use_paddlecloud", help="take the nodes from the PaddleCloud environment (PADDLE_TRAINERS, POD_IP, PADDLE_TRAINER_ID; "
              "TRAINER_PORT/TRAINER_PORTS_NUM) when PADDLE_TRAINERS_NUM is not 1, as Paddle 1.8")
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
         help="Paddle's Gloo HTTP store: not supported by fluidist (refused with a message)")
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
    _add(g, "--elastic_ca", dest="elastic_ca", default=None,
         help="CA certificate (PEM) that signed etcd's: talk to etcd over TLS (https)")
    _add(g, "--elastic_cert", dest="elastic_cert", default=None,
         help="this node's client certificate (PEM), when etcd asks for one (with --elastic_key)")
    _add(g, "--elastic_key", dest="elastic_key", default=None, help="the key of --elastic_cert (PEM)")
    _add(g, "--elastic_user", dest="elastic_user", default=None,
         help="etcd user to log in as (etcd's auth; with --elastic_password_file)")
    _add(g, "--elastic_password_file", dest="elastic_password_file", default=None,
         help="file holding the password of --elastic_user (never on the command line)")
    return g


def add_script_arguments(parser):
    g = parser.add_argument_group("what each process runs")
    _flag(g, "-m", "--module", dest="module", help="run training_script as a Python module (python -m training_script)")
    _flag(g, "--no_python", dest="no_python", help="run training_script as a program itself, not through Python (a shell script, a binary)")
    parser.add_argument("training_script", nargs="?", default=os.environ.get(_env_name("training_script")) or None,
                        help="the training script (a module with -m, a program with --no_python) "
                             "(env: %s)" % _env_name("training_script"))
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER,
                        help="the arguments passed on to every process")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog):
        super().__init__(prog, max_help_position=32)


EXAMPLES = """examples:
  # one node, 4 CPU processes (collective, gloo)
  %(prog)s --nproc_per_node 4 train.py --lr 0.1
  # one node, the GPUs 0 and 1
  %(prog)s --gpus 0,1 train.py
  # two nodes: run the same line on both, node 0 listens on the master address
  %(prog)s --nnodes 2 --master 10.0.0.1:29500 --nproc_per_node 4 train.py
  # a module, and a program that is not Python
  %(prog)s --nproc_per_node 2 -m mypkg.train --epochs 3
  %(prog)s --nproc_per_node 2 --no_python ./run.sh
  # parameter servers: a local cluster of 2 servers and 2 workers, or explicit lists
  %(prog)s --server_num 2 --worker_num 2 train.py
  %(prog)s --servers 10.0.0.1:6170,10.0.0.2:6170 --workers 10.0.0.1,10.0.0.2 train.py
  # elastic collective job over etcd (2 to 4 nodes)
  %(prog)s --elastic_server 10.0.0.9:2379 --job_id j1 --np 2:4 train.py

Every child gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and Paddle's PADDLE_* variables;
its output goes to LOG_DIR/workerlog.N (serverlog.N), rewritten at every run."""


def _prog_name():
    argv0 = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "")
    if argv0 in ("", "-c", "launch.py", "__main__.py") or argv0.startswith("python"):
        return "python -m fluidist.distributed.launch"
    return argv0


def build_parser(prog=None):
    from .. import __version__
    parser = argparse.ArgumentParser(
        prog=prog or _prog_name(), formatter_class=_HelpFormatter, epilog=EXAMPLES,
        usage="%(prog)s [options] [-m | --no_python] training_script [script arguments ...]",
        description="Start the processes of a fluidist distributed job (collective or parameter server).")
    parser.add_argument("--version", action="version", version="%(prog)s (fluidist " + __version__ + ")")
    add_base_arguments(parser)
    add_collective_arguments(parser)
    add_ps_arguments(parser)
    add_elastic_arguments(parser)
    add_script_arguments(parser)
    return parser


def parse_args(argv=None, prog=None):
    parser = build_parser(prog)
    args = parser.parse_args(normalize_argv(parser, sys.argv[1:] if argv is None else argv))
    if not args.training_script:
        parser.error("the training script is required (or set %s)" % _env_name("training_script"))
    if args.module and args.no_python:
        parser.error("-m/--module and --no_python exclude each other")
    return args


def print_arguments(args, out=None):
    out = out or sys.stdout
    out.write("-----------  Configuration Arguments -----------\n")
    for k, v in sorted(vars(args).items()):
        if k == "job_secret":
            continue   # never printed
        out.write("%s: %s\n" % (k, v))
    out.write("------------------------------------------------\n")
    out.flush()


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


def _setup_logging(level):
    """The launcher's own messages go to the ``fluidist.launch`` logger, printed on stderr at ``level``;
    the children get ``level`` as ``FLUIDIST_LOG_LEVEL``."""
    launch_utils.CHILD_LOG_LEVEL = level  # the children's fluidist loggers (see fluidist.log_helper)
    if not any(getattr(h, "_fluidist_launch", False) for h in logger.handlers):
        h = _StderrHandler()
        h.setFormatter(_LaunchFormatter())
        h._fluidist_launch = True
        logger.addHandler(h)
        logger.propagate = False
    logger.setLevel(level)


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
    multi = [f for f in ("master", "nnodes", "node_rank") if getattr(args, f, None) is not None]
    if multi and (args.run_mode == "ps" or ps_opts):
        raise LaunchError("--%s is a collective option; parameter-server jobs list their nodes in --servers and "
                          "--workers" % multi[0])
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
    """The command line of every child: ``python -u script``, ``python -u -m module`` or the program."""
    script = args.training_script
    rest = list(args.training_script_args or [])
    if getattr(args, "module", False):
        return [sys.executable, "-u", "-m", script] + rest
    if getattr(args, "no_python", False):
        found = shutil.which(script) if os.sep not in script else (script if os.access(script, os.X_OK) else None)
        if not found or os.path.isdir(found):
            raise LaunchError("--no_python: %r is not an executable program (cwd %s; give a path, or a name on PATH, "
                              "and chmod +x it)" % (script, os.getcwd()))
        return [script] + rest
    if not os.path.isfile(script):
        raise LaunchError("training script %r not found (cwd %s)" % (script, os.getcwd()))
    return [sys.executable, "-u", script] + rest


def _log_path(args, name):
    return os.path.join(args.log_dir, name) if args.log_dir else None


# --------------------------------------------------------------------------------------------
# Running the local processes
# --------------------------------------------------------------------------------------------
def run_local(specs, catcher, args, essential_roles=None, log_mode="w"):
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
            logger.error(job.failure_report(failed))
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
    try:
        if int(env["TRAINER_PORTS_NUM"]) >= nproc:
            port = int(env["TRAINER_PORT"])
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
    master address (:mod:`fluidist.distributed.master_rendezvous`) and learn each other's endpoints."""
    use_gpu, devices = collective_devices(args)
    if args.ips:
        raise LaunchError("--master and --ips both say where the nodes are; give one of them")
    node_ip = args.node_ip.strip() if args.node_ip else None
    rank, nodes = master_rendezvous(
        args.master, args.nnodes or "1", args.node_rank, node_ip, len(devices),
        lambda ip: [format_endpoint(ip, p) for p in _ports(args, ip, len(devices), free=True)],
        timeout=args.rendezvous_timeout, last_call=args.rendezvous_last_call, catcher=catcher,
        secret=getattr(args, "job_secret", FROM_ENV))
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
    cmd = _script_cmd(args)
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
                              _log_path(args, "workerlog.%d" % i), echo=(i == 0)))
    return specs


def _port_of(endpoint):
    return int(endpoint.rpartition(":")[2])


def start_collective(args, cluster, pod, use_gpu, catcher, met=False):
    """Check ports, meet the other nodes (unless they ``met`` already), start and watch this node's
    trainers; the exit code."""
    check_ports_free([(pod.addr, _port_of(t.endpoint), "trainer rank %d, endpoint %s" % (t.rank, t.endpoint))
                      for t in pod.trainers])
    specs = collective_specs(args, cluster, pod, use_gpu)
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
    return run_local(specs, catcher, args)


def run_collective(args, catcher):
    if getattr(args, "master", None):
        cluster, pod, use_gpu = build_collective_master(args, catcher)
        return start_collective(args, cluster, pod, use_gpu, catcher, met=True)
    cluster, pod, use_gpu = build_collective(args)
    return start_collective(args, cluster, pod, use_gpu, catcher)


# The rendezvous of a static multi-node job: node 0 listens on its first trainer port before its
# trainers start; every other node sends a JSON line saying what it is about to run; node 0 answers
# all of them at once, with the first disagreement if there is one. Clients close first, so node 0's
# port is not left in TIME_WAIT when its trainer 0 binds it.
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


def node_rendezvous(cluster, pod, port, info, timeout, catcher=None, secret=FROM_ENV):
    """Node 0 waits on ``port`` for every other node of the list; each proves the job secret (see
    :mod:`fluidist.distributed.master_rendezvous`) and says what it is about to run."""
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
                got = accept_member(srv, deadline, catcher, secret)
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
        raise LaunchError("endpoint %s is both a server and a worker" % format_endpoint(*sorted(clash)[0]))
    node_ips = []
    for ip, _ in servers + workers:
        if ip not in node_ips:
            node_ips.append(ip)
    node_ip = pick_node_ip(node_ips, args.node_ip)
    return servers, workers, node_ip


def ps_specs(args, servers, workers, node_ip):
    cmd = _script_cmd(args)
    server_list = ",".join(format_endpoint(*ep) for ep in servers)
    worker_list = ",".join(format_endpoint(*ep) for ep in workers)
    base = child_base_env()
    base.update({"PADDLE_PSERVERS_IP_PORT_LIST": server_list, "PADDLE_TRAINER_ENDPOINTS": worker_list,
                 "PADDLE_TRAINERS_NUM": str(len(workers)), "PADDLE_PSERVER_NUMS": str(len(servers))})
    specs = []
    local_servers = [(i, ep) for i, ep in enumerate(servers) if ep[0] == node_ip]
    local_workers = [(i, ep) for i, ep in enumerate(workers) if ep[0] == node_ip]
    echo_worker = local_workers[0][0] if local_workers else None
    for j, (i, (ip, port)) in enumerate(local_servers):
        env = dict(base)
        for k in ("PADDLE_TRAINER_ID", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
            env.pop(k, None)  # a server is no trainer; nothing of the launcher's own environment leaks in
        env.update({"TRAINING_ROLE": "PSERVER", "PADDLE_PSERVER_ID": str(i), "PADDLE_PORT": str(port),
                    "POD_IP": ip, "PADDLE_CURRENT_ENDPOINT": format_endpoint(ip, port)})
        specs.append(ProcSpec("server", i, j, format_endpoint(ip, port), env, cmd, _log_path(args, "serverlog.%d" % j),
                              echo=(echo_worker is None and j == 0)))
    for j, (i, (ip, port)) in enumerate(local_workers):
        env = dict(base)
        env.pop("PADDLE_PSERVER_ID", None)
        env.update({"TRAINING_ROLE": "TRAINER", "PADDLE_TRAINER_ID": str(i), "PADDLE_PORT": str(port),
                    "POD_IP": ip, "PADDLE_CURRENT_ENDPOINT": format_endpoint(ip, port),
                    "RANK": str(i), "LOCAL_RANK": str(j), "WORLD_SIZE": str(len(workers)),
                    "LOCAL_WORLD_SIZE": str(len(local_workers))})
        specs.append(ProcSpec("worker", i, j, format_endpoint(ip, port), env, cmd, _log_path(args, "workerlog.%d" % j),
                              echo=(i == echo_worker)))
    return specs


def run_ps(args, catcher):
    servers, workers, node_ip = build_ps(args)
    logger.info("parameter servers %s, workers %s; this node %s",
                ",".join(format_endpoint(*ep) for ep in servers), ",".join(format_endpoint(*ep) for ep in workers),
                node_ip)
    check_ports_free([(ip, port, "server %d, endpoint %s" % (i, format_endpoint(ip, port)))
                      for i, (ip, port) in enumerate(servers) if ip == node_ip])
    specs = ps_specs(args, servers, workers, node_ip)
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
        write_endpoints_log(args.log_dir, [("PADDLE_PSERVERS_IP_PORT_LIST", [format_endpoint(*ep) for ep in servers]),
                                           ("PADDLE_TRAINER_ENDPOINTS", [format_endpoint(*ep) for ep in workers])])
    return run_local(specs, catcher, args, essential_roles={"worker"}, log_mode="w")


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


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------
def run(args, mode=None):
    """Run a parsed command line; returns the exit code (errors are printed, not raised)."""
    _setup_logging(args.log_level)
    try:
        apply_slurm(args)
        mode = mode or decide_mode(args)
        args.job_secret = resolve_job_secret(args, mode)
        launch_utils.CHILD_SECURITY = child_security_env(args.job_secret)
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
        launch_utils.release_watchdog()


def main(argv=None):
    """The console script ``fluidist-launch``: exits with the job's exit code."""
    sys.exit(run(parse_args(argv)))


if __name__ == "__main__":
    main()
