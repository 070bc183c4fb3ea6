"""``--max_restarts`` (torchrun's ``--max-restarts``): a failed group of processes is started again.

When one of this node's processes fails, the launcher stops the others (as always) and, while restarts
are left, starts them all again: a new generation, with fresh ports, meeting the other nodes again when the
job has several (each node's processes fail too when a peer is lost, so every node comes back to the
rendezvous). The children learn the generation from ``FLUIDIST_RESTART_COUNT`` (also torchrun's
``TORCHELASTIC_RESTART_COUNT``, with ``TORCHELASTIC_MAX_RESTARTS``), to resume from their checkpoint; their
logs are appended to, after a line saying so. A signal to the launcher is never a reason to restart, nor is
a job that succeeded. Elastic jobs (etcd) keep their own restarts (:mod:`fluidist.launch.elastic`).
"""
from .common import LaunchError, logger

__all__ = ["max_restarts", "restart_env", "run_generations", "RESTART_ENV"]

RESTART_ENV = "FLUIDIST_RESTART_COUNT"


def max_restarts(args):
    """``--max_restarts`` of a static job (default 0)."""
    n = getattr(args, "max_restarts", None)
    n = 0 if n is None else int(n)
    if n < 0:
        raise LaunchError("--max_restarts must be >= 0, got %d" % n)
    return n


def restart_env(restart, limit):
    """The variables that tell a child which generation it is."""
    return {RESTART_ENV: str(restart), "TORCHELASTIC_RESTART_COUNT": str(restart),
            "TORCHELASTIC_MAX_RESTARTS": str(limit)}


def run_generations(args, catcher, run_once):
    """``run_once(restart, log_mode, env)`` until it returns 0, the launcher got a signal, or the restarts are
    spent; returns the last exit code. ``env`` holds :func:`restart_env` for the children."""
    limit = max_restarts(args)
    restart = 0
    while True:
        code = run_once(restart, "w" if restart == 0 else "a", restart_env(restart, limit))
        interrupted = catcher is not None and catcher.signum is not None
        if code == 0 or interrupted or limit == 0:
            return code
        if restart >= limit:
            logger.error("giving up after %d restart(s) (--max_restarts %d): the last run ended with exit code %d",
                         restart, limit, code)
            return code
        restart += 1
        logger.warning("restarting this node's processes (restart %d of %d, --max_restarts): the last run ended "
                       "with exit code %d", restart, limit, code)
