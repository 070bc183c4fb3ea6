"""No orphans, even after ``kill -9`` of the launcher: a watchdog process that kills the job's
process groups when the launcher dies.

The launcher's children die with it (``PR_SET_PDEATHSIG``), but what they started (a data loader, a
shell pipeline, the ``python`` under a ``bash`` wrapper) would live on in their process groups. So the
launcher starts this file as a process of its own, in a session of its own (so a Ctrl-C or a kill of
the launcher's group does not reach it), with a pipe on its stdin whose only write end the launcher
holds. The launcher writes ``+<pgid>`` when it starts a child (each child leads its own group),
``-<pgid>`` once it has reaped that child and swept its group, and ``exit`` before it exits normally.
When the pipe ends without ``exit`` -- the launcher died, however -- the watchdog sends SIGKILL to every
group still listed, and exits.

It runs as a plain script (``python -I watchdog.py``): standard library only, nothing of fluidist is
imported, so it starts in milliseconds.
"""
import os
import signal
import subprocess
import sys


class Watchdog:
    """The launcher's side: one watchdog process for the launcher's whole life."""

    def __init__(self):
        self._proc = subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                      close_fds=True)
        self.pid = self._proc.pid

    def _say(self, line):
        try:
            self._proc.stdin.write((line + "\n").encode())
            self._proc.stdin.flush()
        except (OSError, ValueError):   # the watchdog is gone; nothing more to tell it
            pass

    def watch(self, pgid):
        """Kill group ``pgid`` if the launcher dies."""
        self._say("+%d" % pgid)

    def forget(self, pgid):
        """Group ``pgid`` is reaped and swept: leave it alone (its number may be reused)."""
        self._say("-%d" % pgid)

    def release(self):
        """The launcher is exiting normally: the watchdog exits without killing anything."""
        self._say("exit")
        self.hang_up()

    def hang_up(self):
        """Close the pipe (without ``exit``, the groups still listed are killed) and reap the watchdog."""
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def main():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    groups = set()
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            break                      # the launcher died: its end of the pipe closed
        line = line.strip()
        if line == b"exit":
            return 0
        try:
            if line[:1] == b"+":
                groups.add(int(line[1:]))
            elif line[:1] == b"-":
                groups.discard(int(line[1:]))
        except ValueError:
            continue
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
