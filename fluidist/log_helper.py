"""Logging: every module logs to a child of the ``"fluidist"`` logger (``fluidist.transpiler``,
``fluidist.launch``, ...), so an application silences or routes all of them at one place::

    import logging
    logging.getLogger("fluidist").setLevel(logging.WARNING)

fluidist attaches no handler of its own, except where ``FLUIDIST_LOG_LEVEL`` is set (the launcher sets it
for its children from ``--log_level``): then the ``"fluidist"`` logger gets that level and one handler
writing to stderr, so the children's logs show the records the launcher's level asks for. Warnings a user
should act on go through :mod:`warnings` instead.

:func:`get_logger` is Paddle 1.8's ``paddle.fluid.log_helper.get_logger``.
"""
from __future__ import annotations

import logging
import os
import time

__all__ = ["get_logger", "ROOT", "configure_from_env"]

ROOT = "fluidist"
"""The name of the logger above all of fluidist's (``logging.getLogger(ROOT)`` sets their level at once)."""
DEFAULT_FORMAT = "%(levelname)s %(asctime)s %(name)s] %(message)s"


def get_logger(name, level, fmt=None):
    """The logger ``name`` with level ``level`` and a handler writing to stderr (formatted by ``fmt`` when
    given), not propagating to the root logger (as Paddle's: nothing is printed twice). Calling it again
    for the same name does not add a second handler."""
    logger = logging.getLogger(name)
    logger.setLevel(level)
    logger.propagate = False
    handler = next((h for h in logger.handlers if getattr(h, "_fluidist_get_logger", False)), None)
    if handler is None:
        handler = logging.StreamHandler()
        handler._fluidist_get_logger = True
        logger.addHandler(handler)
    if fmt:
        handler.setFormatter(logging.Formatter(fmt=fmt))
    return logger


def _level(text):
    text = str(text).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    level = logging.getLevelName(text.upper())
    return level if isinstance(level, int) else None


def configure_from_env(environ=None):
    """Apply ``FLUIDIST_LOG_LEVEL`` (a number or a level name) to the ``"fluidist"`` logger, with a stderr
    handler; returns the level, or None when the variable is unset or not a level."""
    env = os.environ if environ is None else environ
    text = env.get("FLUIDIST_LOG_LEVEL", "")
    if not text.strip():
        return None
    level = _level(text)
    if level is None:
        import warnings
        warnings.warn("FLUIDIST_LOG_LEVEL=%r is not a logging level (a number or DEBUG/INFO/WARNING/ERROR); "
                      "ignored" % text, stacklevel=2)
        return None
    get_logger(ROOT, level, DEFAULT_FORMAT)
    return level


class LineBudget:
    """At most ``lines`` log lines per ``window_s`` seconds for one kind of event (a refused handshake, a
    refused rendezvous line): a peer that repeats the event cannot flood the log. ``take()`` says whether
    this event may be logged, and how many were left unlogged since the last line (say that number in it)."""

    def __init__(self, lines: int = 5, window_s: float = 60.0):
        self.lines = int(lines)
        self.window_s = float(window_s)
        self._window_start: float | None = None
        self._used = 0
        self._unlogged = 0

    def take(self, now: float | None = None) -> tuple[bool, int]:
        """``(log it?, events left unlogged before it)``; the count restarts once it was said."""
        now = time.monotonic() if now is None else now
        if self._window_start is None or now - self._window_start >= self.window_s:
            self._window_start, self._used = now, 0
        if self._used >= self.lines:
            self._unlogged += 1
            return False, self._unlogged
        self._used += 1
        unlogged, self._unlogged = self._unlogged, 0
        return True, unlogged
