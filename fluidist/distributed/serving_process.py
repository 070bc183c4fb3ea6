"""What a serving ``listen_and_serv`` does to its process, as Paddle 1.8's does:

- once it listens, it writes the port it got (the one asked for, or the free one that port 0 drew)
  into ``/tmp/paddle.<pid>.port``: scripts and tests wait for that file to know the server is up,
  and read the port from it. The file is removed when serving ends, however it ends.
- while it serves, SIGINT and SIGTERM end the process with exit status 0 (Paddle's handler calls
  ``exit(0)``): here by ``SystemExit(0)`` raised in the serving thread, so the socket is closed and
  the port file removed on the way out. Handlers can only be set from the main thread; a server
  run in another thread leaves the process's handlers as they are.
"""
import contextlib
import logging
import os
import signal
import tempfile
import threading

logger = logging.getLogger("fluidist.distributed.serving_process")

PORT_FILE_DIR = "/tmp"


def port_file_path(pid=None):
    """``/tmp/paddle.<pid>.port`` (this process's by default)."""
    return os.path.join(PORT_FILE_DIR, "paddle.%d.port" % (os.getpid() if pid is None else pid))


def _write_port_file(port):
    """The port, written whole before the file appears under its name (a reader never sees it empty)."""
    path = port_file_path()
    fd, tmp = tempfile.mkstemp(prefix=".paddle.%d." % os.getpid(), dir=PORT_FILE_DIR)
    try:
        with os.fdopen(fd, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _stop(signum, _frame):
    logger.info("listen_and_serv: signal %d received, the server stops and the process exits", signum)
    raise SystemExit(0)


@contextlib.contextmanager
def serving(port):
    """Inside: the port file exists and SIGINT / SIGTERM end the process (exit status 0)."""
    try:
        path = _write_port_file(port)
    except OSError as e:    # a read-only /tmp must not stop a server: only the announcement is lost
        logger.warning("listen_and_serv: cannot write %s: %s", port_file_path(), e)
        path = None
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, _stop)
    try:
        yield path
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
