"""``incubate.fleet.utils.hdfs``: Paddle's HDFS client wrapped the ``hadoop fs`` command line."""
import logging

from fluidist.compat import refused_class

__all__ = ["HDFSClient"]

HDFSClient = refused_class("fluid.incubate.fleet.utils.hdfs.HDFSClient",
                           "fluidist reads and writes local paths; copy files from and to HDFS with "
                           "`hadoop fs -get/-put` (subprocess) before and after training")


def get_logger(name, level, fmt):
    """A logger ``name`` at ``level`` with a stream handler of format ``fmt``."""
    logger = logging.getLogger(name)
    logger.setLevel(level)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(fmt=fmt))
    logger.addHandler(handler)
    return logger
