"""Paddle's path for the launcher, ``python -m fluidist.distributed.launch`` (as ``paddle.distributed.launch``):
an alias of :mod:`fluidist.launch`, which holds the launcher. The in-process runtime under
``fluidist.distributed`` never imports it."""
from fluidist.launch.args import (DEFAULT_COLLECTIVE_PORT, DEFAULT_PS_PORT, add_base_arguments,  # noqa: F401
                                  add_collective_arguments, add_elastic_arguments, add_ps_arguments,
                                  add_script_arguments, build_parser, normalize_argv, parse_args, print_arguments)
from fluidist.launch.cli import decide_mode, main, run  # noqa: F401
from fluidist.launch.collective import (build_collective, build_collective_master, cloud_nodes,  # noqa: F401
                                        collective_devices, collective_specs, master_address, node_rendezvous,
                                        run_collective, start_collective)
from fluidist.launch.procs import run_local  # noqa: F401
from fluidist.launch.ps import build_ps, ps_specs, run_ps  # noqa: F401
from fluidist.launch.slurm import apply_slurm, first_slurm_host, slurm_defaults  # noqa: F401

__all__ = ["main", "build_parser", "parse_args", "run", "run_collective", "run_ps", "build_collective",
           "start_collective", "add_base_arguments", "add_collective_arguments", "add_ps_arguments",
           "add_elastic_arguments", "print_arguments", "slurm_defaults"]

if __name__ == "__main__":
    main()
