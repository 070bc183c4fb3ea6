"""ctrl-C in a job of several processes: one line from the process that started them, not one
traceback from each.

A process that another one started and stops (the launcher's children, the examples' local jobs) gets
``FLUIDIST_QUIET_INTERRUPT=1`` in its environment; ``import fluidist`` then makes an uncaught
``KeyboardInterrupt`` end it without printing its traceback: the traceback goes to the ``fluidist``
logger at DEBUG (``--log_level DEBUG`` shows it), and the process still ends as Python ends one on
SIGINT (exit status 130 in a shell, -2 to ``subprocess``). The starting process says what happened,
once (the launcher: ``got interrupted by SIGINT: stopping 4 local process(es)``). Any other exception
is printed as before, by the hook that was there.
"""
from __future__ import annotations

import logging
import os
import sys
from types import TracebackType
from typing import Mapping, Optional, Type

__all__ = ["QUIET_INTERRUPT_ENV", "install_quiet_interrupt_hook"]

QUIET_INTERRUPT_ENV = "FLUIDIST_QUIET_INTERRUPT"
"""The variable that marks a process whose ctrl-C its parent reports (``1``)."""

_log = logging.getLogger("fluidist.interrupts")


def install_quiet_interrupt_hook(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Where ``FLUIDIST_QUIET_INTERRUPT`` is ``1``, route an uncaught ``KeyboardInterrupt``'s traceback
    to DEBUG instead of stderr (once per process; other exceptions go to the previous
    ``sys.excepthook``). Returns whether the hook is in place."""
    env = os.environ if environ is None else environ
    if env.get(QUIET_INTERRUPT_ENV, "") != "1":
        return False
    previous = sys.excepthook
    if getattr(previous, "_fluidist_quiet_interrupt", False):
        return True

    def hook(kind: Type[BaseException], value: BaseException, tb: Optional[TracebackType]) -> None:
        if issubclass(kind, KeyboardInterrupt):
            _log.debug("interrupted (the process that started this one reports it)", exc_info=(kind, value, tb))
            return
        previous(kind, value, tb)

    hook._fluidist_quiet_interrupt = True  # type: ignore[attr-defined]
    sys.excepthook = hook
    return True
