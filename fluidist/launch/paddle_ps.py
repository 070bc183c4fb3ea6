"""Paddle 1.8's ``python -m paddle.distributed.launch_ps`` (here ``python -m fluidist.distributed.launch_ps``):
a parameter-server job on this machine, its command line translated onto the launcher's.

Paddle's options and defaults: ``--worker_num`` 2, ``--server_num`` 2, ``--start_port`` 6170 (the servers
listen on 127.0.0.1 from there), ``--endpoints`` (the servers' ``ip:port`` list, the first
``--server_num`` of it used, instead of the local ones), ``--log_dir`` ``logs``; ``--cluster_node_ips``,
``--node_ip`` and ``--print_config`` are accepted, as Paddle reads none of them either.
"""
import argparse
import sys

__all__ = ["parse_args", "launcher_argv", "main"]


def parse_args(argv=None):
    """Paddle's ``launch_ps`` command line."""
    parser = argparse.ArgumentParser(prog="python -m fluidist.distributed.launch_ps",
                                     description="Paddle 1.8's launch_ps: servers and workers on this machine.")
    parser.add_argument("--cluster_node_ips", type=str, default="127.0.0.1", help="accepted; not read (as in Paddle)")
    parser.add_argument("--node_ip", type=str, default="127.0.0.1", help="accepted; not read (as in Paddle)")
    parser.add_argument("--start_port", type=int, default=6170, help="the first server's port on 127.0.0.1")
    parser.add_argument("--print_config", type=str, default="True", help="accepted; not read")
    parser.add_argument("--endpoints", type=str, default="", help="the servers' ip:port list")
    parser.add_argument("--worker_num", type=int, default=2, help="number of workers")
    parser.add_argument("--server_num", type=int, default=2, help="number of servers")
    parser.add_argument("--log_dir", type=str, default="logs", help="directory of serverlog.N / workerlog.N")
    parser.add_argument("training_script", type=str, help="the training script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return parser.parse_args(sys.argv[1:] if argv is None else argv)


def launcher_argv(args):
    """The launcher's command line for Paddle's ``launch_ps`` arguments ``args``."""
    out = ["--run_mode", "ps", "--worker_num", str(args.worker_num), "--log_dir", args.log_dir]
    if args.endpoints:
        servers = [e.strip() for e in args.endpoints.split(",") if e.strip()][:args.server_num]
        out += ["--servers", ",".join(servers)]
    else:
        out += ["--server_num", str(args.server_num), "--started_port", str(args.start_port)]
    return out + ["--", args.training_script] + list(args.training_script_args)


def main(argv=None):
    """Run Paddle's ``launch_ps`` command line; exits with the job's exit code."""
    from .args import parse_args as launcher_args
    from .cli import run
    sys.exit(run(launcher_args(launcher_argv(parse_args(argv)))))


if __name__ == "__main__":
    main()
