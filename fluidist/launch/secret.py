"""The launcher's job secret: which one a job uses, and how its children get it.

- ``--insecure``: plain sockets everywhere (a warning says so); the children get ``FLUIDIST_INSECURE=1``.
- ``--secret_file FILE`` (or ``FLUIDIST_SECRET_FILE`` / ``FLUIDIST_JOB_SECRET`` in the launcher's
  environment): that secret, the same on every node.
- Otherwise a job on this node alone gets a fresh secret, made now: no other job, and no process the
  launcher did not start, can talk to its children. A job on several nodes needs a secret they share,
  so it is an error to start one without.

Children get the secret as ``FLUIDIST_JOB_SECRET`` (see :mod:`fluidist.distributed.security`); the
launcher's own rendezvous with the other nodes proves it with an HMAC.
"""
import os

from ..distributed import security
from .cluster import parse_endpoints, parse_ips
from .common import LaunchError, logger

__all__ = ["resolve_job_secret", "spans_nodes", "child_security_env"]


def spans_nodes(args, mode):
    """True when the job may have processes on other nodes than this one."""
    if mode == "elastic":
        return True
    if mode == "ps":
        ips = set()
        for flag in ("servers", "workers"):
            text = getattr(args, flag, None)
            if text:
                ips |= {ip for ip, _ in parse_endpoints(text, "--" + flag, default_port=lambda i: 1)}
        return len(ips) > 1
    if getattr(args, "master", None):
        from .master_rendezvous import parse_nnodes
        return parse_nnodes(getattr(args, "nnodes", None) or "1")[1] > 1
    if getattr(args, "use_paddlecloud", False) and os.environ.get("PADDLE_TRAINERS_NUM", "1").strip() != "1":
        return True
    return bool(getattr(args, "ips", None)) and len(parse_ips(args.ips)) > 1


def resolve_job_secret(args, mode):
    """The job's secret (None: plain sockets, asked for with ``--insecure``)."""
    if getattr(args, "insecure", False):
        logger.warning("--insecure: the job's sockets are neither authenticated nor encrypted; any process that "
                       "reaches their ports can read and change its parameters")
        return None
    path = getattr(args, "secret_file", None)
    try:
        if path:
            return security.read_secret_file(path)
        if security.insecure_requested() or os.environ.get(security.SECRET_ENV, "").strip() \
                or os.environ.get(security.SECRET_FILE_ENV, "").strip():
            return security.job_secret()   # None (with its warning) when plain sockets were asked for
    except security.SecurityError as e:
        raise LaunchError(str(e)) from None
    if spans_nodes(args, mode):
        raise LaunchError("a job on several nodes needs the same secret on every node: pass --secret_file FILE (make "
                          "one with `python -m fluidist.distributed.security new FILE` and copy it to every node), or "
                          "--insecure for plain sockets")
    return security.new_secret()


def child_security_env(secret):
    """The variables that hand ``secret`` (None: plain sockets) to a child; None values are removed."""
    if secret is None:
        return {security.INSECURE_ENV: "1", security.SECRET_ENV: None, security.SECRET_FILE_ENV: None}
    return {security.SECRET_ENV: secret, security.INSECURE_ENV: None, security.SECRET_FILE_ENV: None}
