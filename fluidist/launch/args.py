"""The launcher's command line: options (each also from ``FLUIDIST_LAUNCH_<OPTION>``), parsing, printing."""
import argparse
import difflib
import logging
import os
import sys

__all__ = [
    "DEFAULT_COLLECTIVE_PORT", "DEFAULT_PS_PORT", "build_parser", "parse_args", "normalize_argv",
    "add_base_arguments", "add_collective_arguments", "add_ps_arguments", "add_elastic_arguments",
    "add_torchrun_arguments", "add_script_arguments", "print_arguments", "env_name"
]

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


def env_name(dest):
    return "FLUIDIST_LAUNCH_" + dest.upper()


def _spellings(flags):
    """``flags`` plus the hyphenated spelling of each underscored long flag (torchrun's
    ``--nproc-per-node`` beside Paddle's ``--nproc_per_node``)."""
    out = list(flags)
    for f in flags:
        if f.startswith("--") and "_" in f and f.replace("_", "-") not in out:
            out.append(f.replace("_", "-"))
    return out


def _add(group, *flags, dest, default=None, env=(), help="", **kw):
    """An option whose default comes from the first set variable of ``env`` (plus
    ``FLUIDIST_LAUNCH_<DEST>``), then ``default``. argparse applies ``type`` to string defaults.
    The help says the built-in default and the variables. Underscored flags also take hyphens."""
    flags = _spellings(flags)
    shown = default
    for name in (env_name(dest),) + tuple(env):
        if os.environ.get(name, "") != "":
            default = os.environ[name]
            break
    names = ", ".join((env_name(dest),) + tuple(env))
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
    flag's value. Abbreviated options are spelled out; an unknown one is an error naming it and the nearest
    known option. The script's own arguments are never touched."""
    argv = list(argv)
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--" or not tok.startswith("-") or tok == "-":
            return out + argv[i:]
        if not tok.startswith("--") and len(tok) > 2 and tok[:2] in parser._option_string_actions:
            out.append(tok)   # a short option with its value attached: -t3
            i += 1
            continue
        flag, eq, value = tok.partition("=")
        action = _known_option(parser, flag)
        if flag not in action.option_strings:   # an abbreviation: spelled out, so argparse finds one option
            tok = next(o for o in action.option_strings if o.startswith("--")) + eq + value
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


_TORCHRUN_OUTPUT = ("each process's output goes to its log in --log_dir (workerlog.N); --tee copies it to the "
                    "console, --log_dir '' sends it there instead")
# torchrun's options this launcher does not take, and what does the same here (underscored spellings)
TORCHRUN_ONLY = {
    "--redirects": _TORCHRUN_OUTPUT,
    "-r": _TORCHRUN_OUTPUT,
    "--logs_specs": _TORCHRUN_OUTPUT,
    "--local_ranks_filter": "--tee LOCAL_RANK:N,... picks the processes whose output reaches the console",
    "--start_method": "every process is a new Python interpreter (torchrun's spawn)",
    "--role": "a process's role comes from the job: trainers, or pservers with --server_num / --worker_num",
    "--run_path": "the training script is run as a file (-m runs a module)",
}


def _torchrun_only(flag):
    """What this launcher does instead of torchrun's ``flag`` (either spelling), or None."""
    return TORCHRUN_ONLY.get(flag if not flag.startswith("--") else "--" + flag[2:].replace("-", "_"))


def _known_option(parser, flag):
    """The action of ``flag`` (exact, or an unambiguous prefix of a long option, as argparse allows); an
    unknown or ambiguous one is a usage error naming it and the nearest known option, before the flag's
    value could be taken for the training script."""
    actions = parser._option_string_actions
    if flag in actions:
        return actions[flag]
    if flag.startswith("--") and len(flag) > 2:
        prefixed = sorted({a for o, a in actions.items() if o.startswith(flag)}, key=lambda a: a.dest)
        if len(prefixed) == 1:
            return prefixed[0]
        if prefixed:
            names = sorted(o for o, a in actions.items() if o.startswith(flag) and a in prefixed)
            parser.error("ambiguous option %s: it could be %s" % (flag, ", ".join(names)))
    instead = _torchrun_only(flag)
    if instead:
        parser.error("%s is torchrun's option, which this launcher does not take: %s" % (flag, instead))
    near = difflib.get_close_matches(flag, [o for o in actions if o.startswith("--")], n=1, cutoff=0.6)
    parser.error("unknown option %s%s (the training script's own options go after it; see --help)"
                 % (flag, " (did you mean %s?)" % near[0] if near else ""))


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
    _add(g, "--node_ip", "--local_addr", dest="node_ip", default=None, env=("POD_IP",),
         help="this node's IP; default: the listed IP that belongs to this machine")
    _add(g, "--started_port", "--start_port", dest="started_port", type=int, default=None,
         help="first port on each node (collective: default free ports on one node, else %d)"
              % DEFAULT_COLLECTIVE_PORT)
    _add(g, "--secret_file", dest="secret_file", default=None, env=("FLUIDIST_SECRET_FILE",),
         help="file holding the job secret every node shares (mode 0600; make one with `python -m "
              "fluidist.distributed.security new FILE`); required on several nodes; a job on one node gets a fresh one")
    _flag(g, "--insecure", dest="insecure",
          help="plain sockets: no authentication, no encryption (a warning says so)")
    _add(g, "--max_restarts", dest="max_restarts", type=int, default=None,
         help="times this node's processes are all restarted after one of them failed (multi-node jobs: every "
              "node's, meeting again); default 0, elastic jobs PADDLE_ELASTIC_MAX_RESTARTS or 3")
    _add(g, "-t", "--tee", dest="tee", default=None,
         help="copy the children's output (stdout and stderr, as their logs hold it) to the console, each line "
              "prefixed with its process: 0 none, 1/2/3 every local process, or LOCAL_RANK:N,... per process; "
              "default: local rank 0's, unprefixed")
    _add(g, "--monitor_interval", dest="monitor_interval", type=float, default=0.2,
         help="seconds between two looks at the children")
    return g


def add_collective_arguments(parser):
    g = parser.add_argument_group("collective")
    _add(g, "--ips", "--cluster_node_ips", dest="ips", default=None,
         help="comma list of node IPs; its order gives node ranks and must be the same on every node")
    _add(g, "--gpus", "--selected_gpus", dest="gpus", default=None,
         help="physical GPU ids to use on this node, e.g. 0,1 (default: all visible)")
    _add(g, "--nproc_per_node", dest="nproc_per_node", type=_nproc, default=None,
         help="processes per node (CPU nodes: how many to start; GPU nodes: GPUs split among them); or torchrun's "
              "auto (one per GPU, else one per CPU), gpu, cpu")
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
              "PADDLE_PORT or TRAINER_PORT with TRAINER_PORTS_NUM) when PADDLE_TRAINERS_NUM is not 1, as Paddle 1.8")
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


def add_torchrun_arguments(parser):
    g = parser.add_argument_group("torchrun's spellings (mapped onto the options above)")
    _flag(g, "--standalone", dest="standalone",
          help="a one-node job: no rendezvous, free ports (--nnodes 1, no --master)")
    _add(g, "--rdzv_backend", dest="rdzv_backend", default=None, choices=["c10d", "static", "etcd", "etcd-v2"],
         help="c10d: the --master rendezvous at --rdzv_endpoint (nodes numbered as they join, unless --node_rank); "
              "static: the same with --node_rank (default 0); etcd / etcd-v2: the elastic job on etcd at "
              "--rdzv_endpoint (--rdzv_id the job id, --nnodes its size)")
    _add(g, "--rdzv_endpoint", dest="rdzv_endpoint", default=None,
         help="host[:port] of the rendezvous (c10d / static: default port 29400; etcd: 2379)")
    _add(g, "--rdzv_id", dest="rdzv_id", default=None,
         help="the job's id: nodes of another job are refused at the rendezvous (etcd: the elastic job id)")
    _add(g, "--rdzv_conf", dest="rdzv_conf", default=None,
         help="key=value,...: join_timeout (--rendezvous_timeout), last_call_timeout (--rendezvous_last_call)")
    _add(g, "--master_addr", dest="master_addr", default=None, help="with --master_port: the --master address")
    _add(g, "--master_port", dest="master_port", type=int, default=None,
         help="with --master_addr: the --master port (default 29500)")
    return g


def _nproc(v):
    """``--nproc_per_node``: a count, or torchrun's ``auto`` / ``gpu`` / ``cpu`` (resolved later)."""
    text = str(v).strip().lower()
    if text in ("auto", "gpu", "cpu"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number of processes, or auto / gpu / cpu, got %r" % v) from None


def add_script_arguments(parser):
    g = parser.add_argument_group("what each process runs")
    _flag(g, "-m", "--module", dest="module", help="run training_script as a Python module (python -m training_script)")
    _flag(g, "--no_python", "--no-python", dest="no_python",
          help="run training_script as a program itself, not through Python (a shell script, a binary)")
    parser.add_argument("training_script", nargs="?", default=os.environ.get(env_name("training_script")) or None,
                        help="the training script (a module with -m, a program with --no_python) "
                             "(env: %s)" % env_name("training_script"))
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
  # torchrun's spellings: one node; two nodes meeting at a rendezvous; restarts after a failure
  %(prog)s --standalone --nproc-per-node 4 train.py
  %(prog)s --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint 10.0.0.1:29400 --rdzv-id j1 train.py
  %(prog)s --nproc-per-node 2 --max-restarts 3 --tee 3 train.py
  # parameter servers on several nodes, meeting at --master: each node runs 1 server and 2 workers
  %(prog)s --nnodes 2 --master 10.0.0.1:29500 --server_num 1 --worker_num 2 train.py

Every child gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and Paddle's PADDLE_* variables;
its output goes to LOG_DIR/workerlog.N (serverlog.N), rewritten at every run."""


def _prog_name():
    argv0 = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "")
    if argv0 in ("", "-c", "cli.py", "__main__.py") or argv0.startswith("python"):   # cli.py: Paddle's path runs it
        return "python -m fluidist.distributed.launch"
    return argv0


def build_parser(prog=None):
    from .._version import __version__
    parser = argparse.ArgumentParser(
        prog=prog or _prog_name(), formatter_class=_HelpFormatter, epilog=EXAMPLES,
        usage="%(prog)s [options] [-m | --no_python] training_script [script arguments ...]",
        description="Start the processes of a fluidist distributed job (collective or parameter server).")
    parser.add_argument("--version", action="version", version="%(prog)s (fluidist " + __version__ + ")")
    add_base_arguments(parser)
    add_collective_arguments(parser)
    add_ps_arguments(parser)
    add_elastic_arguments(parser)
    add_torchrun_arguments(parser)
    add_script_arguments(parser)
    return parser


def parse_args(argv=None, prog=None):
    """The launcher's command line (``argv``, else ``sys.argv[1:]``) as an ``argparse.Namespace``.

    Paddle 1.8's flags and torchrun's spellings of them are both taken (``--nproc_per_node`` and
    ``--nproc-per-node``); a flag left out falls back to its environment variables (``--help`` lists
    them; ``FLUIDIST_LAUNCH_<DEST>`` for each), then its default. A usage mistake (no training script, an unknown option) exits with
    argparse's status 2 and a message naming it."""
    parser = build_parser(prog)
    args = parser.parse_args(normalize_argv(parser, sys.argv[1:] if argv is None else argv))
    if not args.training_script:
        parser.error("the training script is required (or set %s)" % env_name("training_script"))
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
