"""``fluid.log_helper.get_logger``: a logger with its own stream handler, as Paddle 1.x builds it."""
import logging

__all__ = ["get_logger"]


def get_logger(name, level, fmt=None):
    """The logger ``name`` at ``level``, writing to stderr through a handler of its own (formatted with
    ``fmt`` when given) and not propagating to the root logger, so nothing is printed twice."""
    logger = logging.getLogger(name)
    logger.setLevel(level)
    handler = logging.StreamHandler()
    if fmt:
        handler.setFormatter(logging.Formatter(fmt=fmt))
    logger.addHandler(handler)
    logger.propagate = False
    return logger
