"""The old path of the launcher's shared pieces, kept for imports written against it (scripts take
``find_free_ports`` from here): an alias of :mod:`fluidist.launch.cluster`, :mod:`fluidist.launch.procs`
and :mod:`fluidist.launch.common`."""
from fluidist.launch.cluster import (Cluster, Pod, Trainer, check_ports_free, cluster_from_nodes,  # noqa: F401
                                     cuda_device_count, find_free_ports, format_endpoint, get_cluster, get_gpus,
                                     parse_endpoints, parse_ips, pick_node_ip, split_devices, split_endpoint,
                                     strip_brackets)
from fluidist.launch.common import LaunchError, LaunchInterrupted, logger  # noqa: F401
from fluidist.launch.procs import (LocalJob, ProcSpec, SignalCatcher, child_base_env, describe_exit,  # noqa: F401
                                   exit_code_of, tail_lines, write_endpoints_log)

__all__ = [
    "LaunchError", "Trainer", "Pod", "Cluster", "get_cluster", "cluster_from_nodes", "get_gpus", "cuda_device_count",
    "split_devices", "parse_ips", "parse_endpoints", "format_endpoint", "split_endpoint", "strip_brackets",
    "pick_node_ip", "find_free_ports", "check_ports_free", "ProcSpec", "LocalJob", "SignalCatcher",
    "LaunchInterrupted", "tail_lines", "write_endpoints_log", "child_base_env", "describe_exit", "exit_code_of",
]
