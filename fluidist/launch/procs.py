"""The local process group: start, watch, stop, log tailing.

Processes are started each in its own session (so in its own process group) with ``-u`` and their
output in ``log_dir/<role>log.<local index>``; stopping one means SIGTERM to its whole group, a
grace period, then SIGKILL. A child whose launcher dies gets SIGKILL from the kernel
(``PR_SET_PDEATHSIG``), and what the child started in its process group gets it from the launcher's
watchdog (:mod:`fluidist.launch.watchdog`), so no orphan survives even a ``kill -9`` of the launcher.
"""
import atexit
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

from .common import LaunchError, LaunchInterrupted, logger
from .watchdog import Watchdog

__all__ = [
    "ProcSpec", "LocalJob", "SignalCatcher", "tail_lines", "write_endpoints_log", "child_base_env",
    "describe_exit", "exit_code_of", "run_local", "script_command", "log_path", "apply_tee"
]


# --------------------------------------------------------------------------------------------
# Logs
# --------------------------------------------------------------------------------------------
def tail_lines(path, n=20, max_bytes=64 * 1024):
    """The last ``n`` lines of a text file (at most the last ``max_bytes``); [] if unreadable."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()[-n:]


def write_endpoints_log(log_dir, sections):
    """``log_dir/endpoints.log``: for each ``(header, endpoints)``, the header line then one
    endpoint per line (rewritten at every start)."""
    if not log_dir:
        return None
    path = os.path.join(log_dir, "endpoints.log")
    with open(path, "w") as f:
        for header, eps in sections:
            f.write(header + ":\n")
            for ep in eps:
                f.write(ep + "\n")
    return path


class _LogEcho:
    """Copies what a child appends to its log file to the launcher's stdout (each line after ``prefix``)."""

    def __init__(self, path, prefix=""):
        self.path = path
        self.prefix = prefix
        self._partial = ""   # a prefixed echo holds back a line until it is complete
        try:
            self.pos = os.path.getsize(path)
        except OSError:
            self.pos = 0

    def pump(self, final=False):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read(1 << 20)
        except OSError:
            data = b""
        self.pos += len(data)
        text = data.decode("utf-8", "replace")
        if self.prefix:
            lines = (self._partial + text).split("\n")
            self._partial = lines.pop()
            if final and self._partial:
                lines.append(self._partial)
                self._partial = ""
            text = "".join(self.prefix + line + "\n" for line in lines)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()


def apply_tee(specs, tee):
    """torchrun's ``--tee``: which local processes' output is copied to the console, each line prefixed with
    the process (``[trainer 1] ...``). ``0`` none; ``1``, ``2`` or ``3`` every one (the log holds stdout and
    stderr together, so the three are one here); ``I:N,...`` per process, ``I`` its place among this node's
    processes in start order (LOCAL_RANK for trainers). None leaves the default: local rank 0, unprefixed."""
    if tee is None:
        return specs
    text = str(tee).strip()
    try:
        if ":" in text:
            per = {int(k): int(v) for k, v in (item.split(":", 1) for item in text.split(",") if item.strip())}
            every = 0
        else:
            per, every = {}, int(text)
    except ValueError:
        raise LaunchError("--tee %s: expected 0..3 or LOCAL_RANK:N,... (e.g. 0:3,1:0)" % tee) from None
    if any(v not in (0, 1, 2, 3) for v in list(per.values()) + [every]):
        raise LaunchError("--tee %s: each value must be 0 (none), 1 (stdout), 2 (stderr) or 3 (both)" % tee)
    for k, spec in enumerate(specs):
        on = per.get(k, every) != 0
        spec.echo = on and spec.log_path is not None
        spec.echo_prefix = "[%s %d] " % (spec.role, spec.rank) if on else ""
    return specs


# --------------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------------
# The launcher's --log_level, passed to the children as FLUIDIST_LOG_LEVEL (None: the environment's own)
CHILD_LOG_LEVEL = None
# The job secret's variables for the children (secret.child_security_env; None values are removed)
CHILD_SECURITY: dict = {}


def child_base_env():
    """The launcher's environment minus the proxy variables (children talk to peers directly), with
    ``FLUIDIST_LOG_LEVEL`` from ``--log_level``, the job secret's variables, and
    ``FLUIDIST_QUIET_INTERRUPT=1``: a child that ctrl-C interrupts logs its traceback at DEBUG only,
    the launcher says it once."""
    env = dict(os.environ, FLUIDIST_QUIET_INTERRUPT="1")
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env.pop(k, None)
    if CHILD_LOG_LEVEL is not None:
        env["FLUIDIST_LOG_LEVEL"] = str(CHILD_LOG_LEVEL)
    for k, v in CHILD_SECURITY.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def describe_exit(code):
    if code is None:
        return "still running"
    if code < 0:
        try:
            return "killed by signal %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return "exit code %d" % code


def exit_code_of(code):
    """A Popen return code as a shell exit status (a signal becomes 128 + its number)."""
    return 128 - code if code < 0 else code


class ProcSpec:
    """What to start: ``role`` (``trainer``, ``worker`` or ``server``), global ``rank`` within
    the role, ``local_index`` (names the log file), ``endpoint``, ``env`` (complete), ``cmd``, ``log_path``,
    ``echo`` (copy its log to stdout)."""

    def __init__(self, role, rank, local_index, endpoint, env, cmd, log_path=None, echo=False):
        self.echo = echo  # copy this child's log to the launcher's stdout (rank 0)
        self.echo_prefix = ""   # before each copied line (--tee)
        self.role = role
        self.rank = rank
        self.local_index = local_index
        self.endpoint = endpoint
        self.env = env
        self.cmd = cmd
        self.log_path = log_path

    def describe(self):
        return "%s rank %d (local %d, endpoint %s)" % (self.role, self.rank, self.local_index, self.endpoint)


def _pdeathsig_preexec():
    """In the child before exec: die with SIGKILL when the launcher dies (Linux only)."""
    parent = os.getpid()  # the launcher: the child checks it is still its parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return lambda: None

    def preexec():
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the launcher died between fork and prctl
            os._exit(1)
    return preexec


_watchdog = None


def _close_watchdog_at_exit():
    """At interpreter exit: end the watchdog's pipe (it kills what is left of the groups still listed,
    normally none) and reap it."""
    global _watchdog
    if _watchdog is not None:
        _watchdog.hang_up()
        _watchdog = None


atexit.register(_close_watchdog_at_exit)


def job_watchdog():
    """This launcher's watchdog (started on first use): it kills the children's groups if we die."""
    global _watchdog
    if _watchdog is None or _watchdog._proc.poll() is not None:
        _watchdog = Watchdog()
    return _watchdog


def release_watchdog():
    """The launcher exits normally: its watchdog goes without killing anything."""
    global _watchdog
    if _watchdog is not None:
        _watchdog.release()
        _watchdog = None


class _Proc:
    def __init__(self, spec, popen, log_file, watchdog=None):
        self.spec = spec
        self.popen = popen
        self.log_file = log_file
        self.watchdog = watchdog
        self.stopped = False  # True once the launcher itself signalled it
        self.swept = False

    @property
    def pid(self):
        return self.popen.pid

    def check(self):
        """The exit code (None while running). The first time an exit is seen, whatever the child
        left in its process group (grandchildren) gets SIGKILL: nothing outlives its parent."""
        code = self.popen.poll()
        if code is not None and not self.swept:
            self.swept = True
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            if self.watchdog is not None:
                self.watchdog.forget(self.popen.pid)
        return code


class LocalJob:
    """The processes this launcher started on this node."""

    def __init__(self, catcher=None, grace=3.0, poll_interval=0.2):
        self.catcher = catcher
        self.grace = float(grace)
        self.poll_interval = float(poll_interval)
        self.procs = []
        self._echoes = []

    # -- start ------------------------------------------------------------------------------------
    def start(self, specs, log_mode="w"):
        """Start every spec in order, each in its own session. A signal between starts raises
        LaunchInterrupted; the caller then stops what was started (``terminate`` / ``close``).

        ``log_mode`` ``"w"`` starts each log afresh (a failure report then shows only this run);
        ``"a"`` appends after a separator line (an elastic job's later generations)."""
        preexec = _pdeathsig_preexec()
        watchdog = job_watchdog()
        for spec in specs:
            if self.catcher is not None:
                self.catcher.check()
            log_file = None
            if spec.log_path:
                os.makedirs(os.path.dirname(spec.log_path) or ".", exist_ok=True)
                log_file = open(spec.log_path, log_mode + "b")
                if log_file.tell() > 0:
                    log_file.write(("\n==== fluidist.launch: %s restarted at %s ====\n"
                                    % (spec.describe(), time.strftime("%Y-%m-%d %H:%M:%S"))).encode())
                    log_file.flush()
                if spec.echo:  # from the current end: an appended log's older runs are not repeated
                    self._echoes.append(_LogEcho(spec.log_path, spec.echo_prefix))
            try:
                popen = subprocess.Popen(spec.cmd, env=spec.env, stdin=subprocess.DEVNULL,
                                         stdout=log_file, stderr=subprocess.STDOUT if log_file else None,
                                         start_new_session=True, preexec_fn=preexec)
            except OSError as e:
                if log_file:
                    log_file.close()
                raise LaunchError("cannot start %s: %s" % (spec.describe(), e)) from None
            watchdog.watch(popen.pid)   # its group is its pid: start_new_session
            self.procs.append(_Proc(spec, popen, log_file, watchdog))
            logger.info("started %s pid %d%s", spec.describe(), popen.pid,
                        ", log " + spec.log_path if spec.log_path else "")
        return self

    def pump(self, final=False):
        for echo in self._echoes:
            echo.pump(final)

    # -- watch ------------------------------------------------------------------------------------
    def poll(self):
        """``(failed _Proc or None, [procs still running])``; a child the launcher stopped is not a failure."""
        failed, running = None, []
        for p in self.procs:
            code = p.check()
            if code is None:
                running.append(p)
            elif code != 0 and not p.stopped and failed is None:
                failed = p
        return failed, running

    def watch(self, essential=None, check=None, deadline=None):
        """Wait until every proc in ``essential`` (default: all) exited 0, one proc failed, a
        signal came, ``check()`` returned something true, or ``deadline`` (monotonic) passed.

        Returns ``("done", None)``, ``("failed", proc)``, ``("check", value)`` or ``("deadline", None)``;
        raises LaunchInterrupted on SIGINT/SIGTERM."""
        essential = self.procs if essential is None else essential
        while True:
            self.pump()
            failed, _ = self.poll()
            if failed is not None:
                return "failed", failed
            if all(p.check() == 0 for p in essential):
                return "done", None
            if self.catcher is not None:
                self.catcher.check()
            if check is not None:
                value = check()
                if value:
                    return "check", value
            if deadline is not None and time.monotonic() > deadline:
                return "deadline", None
            time.sleep(self.poll_interval)

    # -- stop -------------------------------------------------------------------------------------
    def _signal_group(self, p, sig):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def terminate(self, procs=None, sig=signal.SIGTERM, grace=None):
        """Stop ``procs`` (default: all): ``sig`` to each process group, up to ``grace`` seconds for
        them to exit, then SIGKILL to the groups that remain, and reap. Returns the procs that
        could not be reaped (normally none)."""
        procs = self.procs if procs is None else procs
        grace = self.grace if grace is None else grace
        live = [p for p in procs if p.check() is None]
        signalled = list(live)
        for p in live:
            p.stopped = True
            self._signal_group(p, sig)
        signals_seen = self.catcher.count if self.catcher is not None else 0
        end = time.monotonic() + grace
        while live and time.monotonic() < end:
            self.pump()
            live = [p for p in live if p.check() is None]
            if self.catcher is not None and self.catcher.count > signals_seen:
                break  # a second Ctrl-C: do not wait out the grace period
            time.sleep(0.05)
        for p in live:
            self._signal_group(p, signal.SIGKILL)
        stuck = []
        for p in signalled:
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                stuck.append(p)
                logger.error("%s (pid %d) did not die after SIGKILL", p.spec.describe(), p.pid)
            p.check()  # sweeps the group (grandchildren) once the leader is reaped
        self.pump(final=not any(p.check() is None for p in self.procs))
        for p in procs:
            if p.log_file is not None and not p.log_file.closed:
                p.log_file.close()
        return stuck

    def close(self):
        """Stop everything still running and close the logs (safe to call twice)."""
        self.terminate()

    # -- reports ----------------------------------------------------------------------------------
    def failure_report(self, p, tail=20):
        """The root-cause line (and the tail of the failed child's log) for a failed proc."""
        code = p.popen.returncode
        stopped = sum(1 for q in self.procs if q is not p and q.stopped)
        lines = ["ABORT: %s, pid %d, %s; log: %s; stopped the other %d local process%s"
                 % (p.spec.describe(), p.pid, describe_exit(code), p.spec.log_path or "(console)",
                    stopped, "" if stopped == 1 else "es")]
        if p.spec.log_path:
            last = tail_lines(p.spec.log_path, tail)
            lines.append("---- last %d lines of %s ----" % (len(last), p.spec.log_path))
            lines.extend(last)
            lines.append("---- end of %s ----" % p.spec.log_path)
        return "\n".join(lines)


class SignalCatcher:
    """Catches SIGINT and SIGTERM while active (a context manager): the handler only records the
    signal; the launcher's loops call :meth:`check`, which raises LaunchInterrupted at a safe point.
    Outside the main thread it does nothing (signals can only be caught there)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum = None
        self.count = 0
        self._old = {}

    def _handler(self, signum, frame):
        self.signum = signum
        self.count += 1

    def check(self):
        if self.signum is not None:
            raise LaunchInterrupted(self.signum)

    def __enter__(self):
        try:
            for s in self.SIGNALS:
                self._old[s] = signal.signal(s, self._handler)
        except ValueError:  # not the main thread
            self._old = {}
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        self._old = {}


def script_command(args):
    """The command line of every child: ``python -u script``, ``python -u -m module`` or the program."""
    script = args.training_script
    rest = list(args.training_script_args or [])
    if getattr(args, "module", False):
        return [sys.executable, "-u", "-m", script] + rest
    if getattr(args, "no_python", False):
        found = shutil.which(script) if os.sep not in script else (script if os.access(script, os.X_OK) else None)
        if not found or os.path.isdir(found):
            raise LaunchError("--no_python: %r is not an executable program (cwd %s; give a path, or a name on PATH, "
                              "and chmod +x it)" % (script, os.getcwd()))
        return [script] + rest
    if not os.path.isfile(script):
        raise LaunchError("training script %r not found (cwd %s)" % (script, os.getcwd()))
    return [sys.executable, "-u", script] + rest


def log_path(args, name):
    return os.path.join(args.log_dir, name) if args.log_dir else None


# --------------------------------------------------------------------------------------------
# Running the local processes
# --------------------------------------------------------------------------------------------
def run_local(specs, catcher, args, essential_roles=None, log_mode="w"):
    """Start ``specs``, watch them, stop them; returns the launcher's exit code."""
    apply_tee(specs, getattr(args, "tee", None))
    interval = getattr(args, "monitor_interval", 0.2)
    if not interval > 0:
        raise LaunchError("--monitor_interval must be > 0 seconds, got %r" % interval)
    job = LocalJob(catcher, grace=args.grace_period, poll_interval=interval)
    try:
        job.start(specs, log_mode=log_mode)
        essential = [p for p in job.procs if essential_roles is None or p.spec.role in essential_roles]
        essential = essential or job.procs
        kind, failed = job.watch(essential)
        if kind == "done":
            rest = [p for p in job.procs if p not in essential]
            if rest:
                timeout = getattr(args, "server_exit_timeout", 30.0)
                kind, failed = job.watch(rest, deadline=time.monotonic() + timeout)
                if kind == "deadline":
                    logger.info("%d process(es) still running %.0f s after the workers finished; stopping them",
                                sum(1 for p in rest if p.check() is None), timeout)
                    job.terminate(rest)
                    kind = "done"
        if kind == "failed":
            job.terminate()
            sys.stdout.flush()
            logger.error(job.failure_report(failed))
            return exit_code_of(failed.popen.returncode)
        logger.info("all %d local process(es) finished", len(job.procs))
        return 0
    except LaunchInterrupted as e:
        logger.warning("got %s: stopping %d local process(es)", e, sum(1 for p in job.procs if p.check() is None))
        job.terminate(sig=e.signum)
        return 128 + e.signum
    finally:
        job.close()
