"""The child processes of the examples' local jobs: each one's output is printed as it comes, every line
prefixed by the child's role (``[trainer 0] epoch  3 ...``), and kept for a summary at the end.

The children run in sessions of their own, so a ctrl-C at the terminal reaches only the example's main
process: it stops them and says so in one line (:func:`stop_on_interrupt`), exit status 130."""
import contextlib
import logging
import subprocess
import sys
import threading

from fluidist.log_helper import DEFAULT_FORMAT, get_logger


def phase_logger(name):
    """The examples' INFO lines, one per phase of a job (``INFO <time> dist_digits] ...``), on stderr."""
    return get_logger(name, logging.INFO, DEFAULT_FORMAT)


@contextlib.contextmanager
def stop_on_interrupt(what):
    """ctrl-C inside: the children are stopped (the local job's own ``finally``), one line says so, and
    the example exits with 130, as a shell reports a process that SIGINT stopped."""
    try:
        yield
    except KeyboardInterrupt:
        sys.stderr.write("interrupted (ctrl-C): stopped %s\n" % what)
        sys.exit(130)

_print_lock = threading.Lock()


class Child:
    """A started child whose stdout and stderr stream to ours, prefixed by ``[role]``."""

    def __init__(self, role, cmd, env=None):
        self.role = role
        self.lines = []
        self.popen = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()

    def _pump(self):
        for line in self.popen.stdout:
            self.lines.append(line)
            with _print_lock:
                sys.stdout.write("[%s] %s" % (self.role, line if line.endswith("\n") else line + "\n"))
                sys.stdout.flush()

    @property
    def returncode(self):
        return self.popen.returncode

    def wait(self, timeout=None):
        """The exit code, once the child ended and all its output was printed."""
        code = self.popen.wait(timeout)
        self._reader.join(10)
        return code

    def output(self):
        return "".join(self.lines)

    def kill(self):
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        self._reader.join(10)


def python_cmd(script, args=()):
    """``python -u script args``: unbuffered, so lines arrive when they are printed."""
    return [sys.executable, "-u", script] + list(args)
