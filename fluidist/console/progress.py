"""A line now and then from a long loop, so a job that works is not mistaken for one that hangs.

``DataLoader`` iteration, ``Executor.train_from_dataset`` / ``infer_from_dataset`` and the examples'
training loops count their steps here. At most once every ``FLUIDIST_PROGRESS`` seconds (default 10;
a loop that ends sooner says nothing) one line says how far the loop is and how fast it goes::

    INFO 2026-11-28 10:40:12,345 fluidist.progress] DataLoader: 1200 batch(es) in 10.0 s (120.0/s)

``FLUIDIST_PROGRESS=0`` (or ``off``) turns the lines off, in this process and in the processes it
starts; :func:`set_interval` does so from Python. The line goes to the ``fluidist.progress`` logger:
where logging is set up (the launcher's children: ``--log_level``; your own handlers: their levels
apply) through it, else through a handler of its own on stderr, as tqdm writes its bars.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Callable, Optional

from ..log_helper import DEFAULT_FORMAT, get_logger

__all__ = ["PROGRESS_ENV", "DEFAULT_INTERVAL_S", "interval", "set_interval", "Progress"]

PROGRESS_ENV = "FLUIDIST_PROGRESS"
"""Seconds between two progress lines of one loop; ``0`` or ``off``: none."""
DEFAULT_INTERVAL_S = 10.0
"""The seconds between two lines when ``FLUIDIST_PROGRESS`` is unset."""

_log = logging.getLogger("fluidist.progress")
_override: Optional[float] = None


def interval() -> float:
    """Seconds between two progress lines now (0: none): :func:`set_interval`'s, else the variable's."""
    if _override is not None:
        return _override
    text = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if text in ("off", "false", "no"):
        return 0.0
    try:
        return max(0.0, float(text))
    except ValueError:   # unset, "on", or not a number
        return DEFAULT_INTERVAL_S


def set_interval(seconds: Optional[float]) -> None:
    """Seconds between progress lines for this process (0: none; None: ``FLUIDIST_PROGRESS`` again)."""
    global _override
    _override = None if seconds is None else max(0.0, float(seconds))


def _emit(line: str) -> None:
    if not _log.hasHandlers():   # logging is not set up: a stderr handler of its own (INFO, not propagated)
        get_logger(_log.name, logging.INFO, DEFAULT_FORMAT)
    _log.info("%s", line)


class Progress:
    """Counts a loop's steps and says, at most once per :func:`interval`, how many and how fast.

    ``what`` names the loop (``"DataLoader"``), ``unit`` its steps (``"batch(es)"``); ``total``, when
    known, is said too. ``clock`` is for tests."""

    def __init__(self, what: str, unit: str = "batch(es)", total: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what, self.unit, self.total = what, unit, total
        self.count = 0
        self._clock = clock
        self._start = self._last = clock()

    def step(self, n: int = 1) -> None:
        """``n`` more steps done; a line when the interval has passed since the last one."""
        self.count += n
        every = interval()
        if every <= 0:
            return
        now = self._clock()
        if now - self._last < every:
            return
        self._last = now
        spent = now - self._start
        of = "" if self.total is None else " of %d" % self.total
        _emit("%s: %d%s %s in %.1f s (%.1f/s)" % (self.what, self.count, of, self.unit, spent,
                                                   self.count / spent if spent > 0 else 0.0))
