"""torchrun's options, mapped onto the launcher's own before the job's mode is chosen.

- ``--standalone``: a one-node job (``--nnodes 1``, no rendezvous); it refuses ``--master`` and the like.
- ``--master_addr`` / ``--master_port``: the ``--master`` address (port 29500 by default).
- ``--rdzv_backend c10d|static`` with ``--rdzv_endpoint host[:port]`` (port 29400 by default): the ``--master``
  rendezvous there; ``static`` gives this node ``--node_rank 0`` unless told otherwise (as torchrun), ``c10d``
  numbers the nodes as they join. ``--rdzv_id`` names the job: a node of another job is refused.
- ``--rdzv_backend etcd|etcd-v2``: the elastic job on etcd (``--elastic_server`` the endpoint, port 2379 by
  default; ``--job_id`` the ``--rdzv_id``; ``--np`` the ``--nnodes``).
- ``--rdzv_conf join_timeout=S,last_call_timeout=S``: ``--rendezvous_timeout`` / ``--rendezvous_last_call``.
- ``--nproc_per_node auto|gpu|cpu``: one process per visible GPU (auto: else per CPU), or per CPU.

Every flag also has its hyphenated spelling (``--nproc-per-node``); see :mod:`fluidist.launch.args`.
"""
import os

from .cluster import format_endpoint, get_gpus, split_endpoint
from .common import LaunchError
from .master_rendezvous import parse_nnodes

__all__ = ["apply_torchrun", "DEFAULT_RDZV_PORT", "DEFAULT_MASTER_PORT", "DEFAULT_ETCD_PORT"]

DEFAULT_RDZV_PORT = 29400
DEFAULT_MASTER_PORT = 29500
DEFAULT_ETCD_PORT = 2379
_CONF_KEYS = {"join_timeout": "rendezvous_timeout", "last_call_timeout": "rendezvous_last_call"}


def _with_port(text, default_port, what):
    """``host`` or ``host:port`` (``[v6]`` or ``[v6]:port``) -> the endpoint with a port."""
    text = str(text).strip()
    has_port = text.rsplit("]", 1)[-1].count(":") == 1 if text.startswith("[") else text.count(":") == 1
    if not has_port:
        host = text[1:-1] if text.startswith("[") else text
        if not host:
            raise LaunchError("%s is empty: give host[:port]" % what)
        return format_endpoint(host, default_port)
    return format_endpoint(*split_endpoint(text, what))


def _nproc(args):
    word = getattr(args, "nproc_per_node", None)
    if not isinstance(word, str):
        return
    gpus = [] if getattr(args, "backend", "auto") == "gloo" else get_gpus(getattr(args, "gpus", None))
    if word == "gpu" and not gpus:
        raise LaunchError("--nproc_per_node gpu: no CUDA device is visible (CUDA_VISIBLE_DEVICES=%s)"
                          % os.environ.get("CUDA_VISIBLE_DEVICES"))
    args.nproc_per_node = len(gpus) if word == "gpu" or (word == "auto" and gpus) else (os.cpu_count() or 1)


def _set_master(args, master, how):
    if getattr(args, "master", None) and _with_port(args.master, DEFAULT_MASTER_PORT, "--master") != master:
        raise LaunchError("--master %s and %s name different rendezvous addresses; give one" % (args.master, how))
    args.master = master


def _rdzv_conf(args):
    text = getattr(args, "rdzv_conf", None)
    if not text:
        return
    for item in str(text).split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _CONF_KEYS:
            raise LaunchError("--rdzv_conf %s: %r is not one of %s (key=value)" % (text, item.strip(),
                                                                                   ", ".join(sorted(_CONF_KEYS))))
        try:
            setattr(args, _CONF_KEYS[key], float(value))
        except ValueError:
            raise LaunchError("--rdzv_conf %s: %s must be a number of seconds, got %r" % (text, key, value)) from None


def _standalone(args):
    others = [f for f in ("master", "rdzv_endpoint", "rdzv_backend", "master_addr", "ips", "elastic_server")
              if getattr(args, f, None)]
    if others:
        raise LaunchError("--standalone is a one-node job with no rendezvous; drop --%s" % others[0])
    if getattr(args, "nnodes", None) is not None and parse_nnodes(args.nnodes) != (1, 1):
        raise LaunchError("--standalone is a one-node job but --nnodes is %s" % args.nnodes)
    args.nnodes = "1"


def _rendezvous(args):
    backend = getattr(args, "rdzv_backend", None)
    endpoint = getattr(args, "rdzv_endpoint", None)
    if backend is None and not endpoint:
        return
    backend = backend or "static"   # torchrun's default backend
    if backend in ("etcd", "etcd-v2"):
        if not endpoint:
            raise LaunchError("--rdzv_backend %s needs --rdzv_endpoint host[:port] (etcd's)" % backend)
        if getattr(args, "master", None):
            raise LaunchError("--rdzv_backend %s runs an elastic job on etcd; drop --master %s"
                              % (backend, args.master))
        if not getattr(args, "rdzv_id", None) and not getattr(args, "job_id", None):
            raise LaunchError("--rdzv_backend %s needs --rdzv_id (the job's id in etcd)" % backend)
        args.elastic_server = _with_port(endpoint, DEFAULT_ETCD_PORT, "--rdzv_endpoint")
        args.job_id = args.job_id or args.rdzv_id
        args.np = args.np or args.nnodes or "1"
        args.nnodes = None
        return
    if not endpoint and not getattr(args, "master", None):
        raise LaunchError("--rdzv_backend %s needs --rdzv_endpoint host[:port] (where the nodes meet)" % backend)
    if endpoint:
        _set_master(args, _with_port(endpoint, DEFAULT_RDZV_PORT, "--rdzv_endpoint"), "--rdzv_endpoint " + endpoint)
    if backend == "static" and args.node_rank is None:
        args.node_rank = 0   # torchrun's static rendezvous: the node rank is given (0 by default)


def apply_torchrun(args):
    """Map torchrun's options in ``args`` onto the launcher's own (in place); LaunchError when they contradict
    each other or the launcher's options."""
    _nproc(args)
    _rdzv_conf(args)
    if getattr(args, "master_addr", None) or getattr(args, "master_port", None) is not None:
        if not getattr(args, "master_addr", None):
            raise LaunchError("--master_port %s needs --master_addr" % args.master_port)
        port = args.master_port if args.master_port is not None else DEFAULT_MASTER_PORT
        _set_master(args, format_endpoint(args.master_addr.strip("[]"), port), "--master_addr/--master_port")
    if getattr(args, "standalone", False):
        _standalone(args)
        return
    _rendezvous(args)
