"""What every part of the launcher shares: its logger and its two exceptions."""
import logging
import signal

logger = logging.getLogger("fluidist.launch")

__all__ = ["LaunchError", "LaunchInterrupted", "logger"]


class LaunchError(Exception):
    """A launch that cannot go on; the message names the culprit (argument, node, port)."""


class LaunchInterrupted(Exception):
    """The launcher got SIGINT or SIGTERM; ``signum`` says which."""

    def __init__(self, signum):
        super().__init__("interrupted by %s" % signal.Signals(signum).name)
        self.signum = signum
