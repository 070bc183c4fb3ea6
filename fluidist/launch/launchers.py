"""The launcher classes: ``ps_launcher`` (CPU parameter-server jobs), ``launcher`` (collective jobs,
one process per GPU, or ``--nproc_per_node`` processes on CPU) and ``openKS_launcher(mode)`` that
picks one of them.

Arguments come from the command line (``argv``, default ``sys.argv[1:]``) or, for any option not
given there, from the environment variable ``FLUIDIST_LAUNCH_<OPTION>`` (for example
``FLUIDIST_LAUNCH_SERVER_NUM=2``, ``FLUIDIST_LAUNCH_TRAINING_SCRIPT=train.py``); ``--node_ip`` also
reads ``POD_IP``. ``ps_launcher`` requires the server and worker counts (``--server_num`` /
``--worker_num``, or the explicit ``--servers`` / ``--workers`` lists).

``launch()`` runs the job to its end and returns None when every process succeeded; otherwise it
raises ``SystemExit`` with the failing child's exit code (128 + signal number when the launcher was
interrupted), after printing the failing rank and the tail of its log.

Also runnable: ``python -m fluidist.launch.launchers --mode cpu --server_num 2 --worker_num 2 train.py``.
"""
import argparse
import sys

from . import args as _args
from .cli import decide_mode, setup_logging
from .cluster import get_gpus as _get_gpus
from .collective import build_collective, start_collective
from .common import LaunchError, LaunchInterrupted, logger
from .procs import SignalCatcher
from .ps import run_ps

__all__ = ["ps_launcher", "launcher", "openKS_launcher"]


def _finish(code):
    sys.stdout.flush()
    if code:
        raise SystemExit(code)


def _run_guarded(fn):
    """Run ``fn(catcher)`` under a SignalCatcher; LaunchError is printed and becomes exit code 1."""
    try:
        with SignalCatcher() as catcher:
            return fn(catcher)
    except LaunchError as e:
        sys.stdout.flush()
        logger.error("error: %s", e)
        return 1
    except LaunchInterrupted as e:
        return 128 + e.signum


class ps_launcher(object):
    """Parameter-server training on CPU: servers and workers as local processes of this node."""

    def __init__(self, argv=None):
        self.args = ps_launcher.parse_args(argv)

    @staticmethod
    def parse_args(argv=None):
        """Node IP, start port, server and worker counts (or lists), log directory, training script
        and its arguments; returns the parsed ``argparse.Namespace``."""
        parser = argparse.ArgumentParser(prog="ps_launcher", description="fluidist parameter-server launcher (CPU)")
        _args.add_base_arguments(parser)
        _args.add_ps_arguments(parser)
        _args.add_script_arguments(parser)
        args = parser.parse_args(_args.normalize_argv(parser, sys.argv[1:] if argv is None else argv))
        if args.server_num is None and args.servers is None:
            parser.error("the number of servers is required: --server_num N (or FLUIDIST_LAUNCH_SERVER_NUM), "
                         "or --servers ip:port,...")
        if args.worker_num is None and args.workers is None:
            parser.error("the number of workers is required: --worker_num N (or FLUIDIST_LAUNCH_WORKER_NUM), "
                         "or --workers ip[:port],...")
        if not args.training_script:
            parser.error("the training script is required (or FLUIDIST_LAUNCH_TRAINING_SCRIPT)")
        args.run_mode = "ps"
        return args

    def start_procs(self):
        """Start the servers and workers of this node, watch them until the workers finish, stop the
        servers; returns the exit code (0, or the failing child's)."""
        setup_logging(self.args.log_level)

        def go(catcher):
            decide_mode(self.args)  # refuses ps-heter options
            return run_ps(self.args, catcher)
        return _run_guarded(go)

    def launch(self):
        if self.args.print_config:
            _args.print_arguments(self.args)
        _finish(self.start_procs())


class launcher(object):
    """Collective training (nccl2 mode): one process per selected GPU, or ``--nproc_per_node``
    processes on a CPU node. Each process reads, in this order, ``FLAGS_selected_gpus``,
    ``PADDLE_TRAINER_ID``, ``PADDLE_CURRENT_ENDPOINT``, ``PADDLE_TRAINERS_NUM``,
    ``PADDLE_TRAINER_ENDPOINTS`` and ``POD_IP``."""

    def __init__(self, argv=None):
        self.args = launcher.parse_args(argv)
        self.pod = None

    @staticmethod
    def parse_args(argv=None):
        """Node IPs, this node's IP, start port, GPUs, log directory, training script and its
        arguments; returns the parsed ``argparse.Namespace``."""
        parser = argparse.ArgumentParser(prog="launcher", description="fluidist collective launcher")
        _args.add_base_arguments(parser)
        _args.add_collective_arguments(parser)
        _args.add_script_arguments(parser)
        args = parser.parse_args(_args.normalize_argv(parser, sys.argv[1:] if argv is None else argv))
        if not args.training_script:
            parser.error("the training script is required (or FLUIDIST_LAUNCH_TRAINING_SCRIPT)")
        args.run_mode = "collective"
        return args

    def print_argument(self):
        _args.print_arguments(self.args)

    def get_gpus(self, selected_gpus):
        """Logical GPU ids for the physical ``selected_gpus`` ("4,5" or a list; None: all visible),
        mapped through ``CUDA_VISIBLE_DEVICES`` (with CVD=4,5,6,7, selecting 4,5,6,7 gives 0,1,2,3)."""
        if isinstance(selected_gpus, (list, tuple)):
            selected_gpus = ",".join(str(g) for g in selected_gpus)
        return _get_gpus(selected_gpus)

    def get_cluster_from_args(self, selected_gpus):
        """The Cluster of the job (node IP x port endpoints, ranks) for the logical GPU ids
        ``selected_gpus`` (empty: CPU processes); this node's Pod is kept as ``self.pod``."""
        cluster, self.pod, self._use_gpu = build_collective(self.args, gpus=list(selected_gpus or []))
        return cluster

    def launch(self):
        """Start this node's processes, watch them, and stop them all if one fails."""
        setup_logging(self.args.log_level)
        if self.args.print_config:
            self.print_argument()

        def go(catcher):
            gpus = [] if self.args.backend == "gloo" else self.get_gpus(self.args.gpus)
            cluster = self.get_cluster_from_args(gpus)
            return start_collective(self.args, cluster, self.pod, self._use_gpu, catcher)
        _finish(_run_guarded(go))


class openKS_launcher(object):
    """Chooses the launcher by ``mode``: ``"cpu"`` (or ``"ps"``) gives the parameter-server
    ``ps_launcher``; ``"gpu"`` (or ``"collective"``) gives the collective ``launcher``."""

    CPU_MODES = ("cpu", "ps", "pserver", "parameter_server")
    GPU_MODES = ("gpu", "collective", "nccl", "nccl2")

    def __init__(self, mode, argv=None):
        m = str(mode).strip().lower()
        if m in self.CPU_MODES:
            self.launcher = ps_launcher(argv)
        elif m in self.GPU_MODES:
            self.launcher = launcher(argv)
        else:
            raise ValueError("openKS_launcher mode must be 'cpu' (parameter server) or 'gpu' (collective), got %r"
                             % (mode,))
        self.mode = m

    def launch(self):
        self.launcher.launch()


def main(argv=None):
    """``--mode cpu|gpu`` first, then the chosen launcher's options, script and script arguments."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m fluidist.launch.launchers",
                                     usage="%(prog)s --mode cpu|gpu [launcher options] training_script ...")
    if len(argv) >= 2 and argv[0] == "--mode":
        mode, rest = argv[1], argv[2:]
    elif argv and argv[0].startswith("--mode="):
        mode, rest = argv[0].split("=", 1)[1], argv[1:]
    else:
        parser.error("--mode cpu|gpu comes first")
    try:
        chosen = openKS_launcher(mode, rest)
    except ValueError as e:
        parser.error(str(e))
    chosen.launch()


if __name__ == "__main__":
    main()
