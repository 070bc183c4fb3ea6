"""A trainer's side of the parameter-server protocol, kept per process: how many steps (send
barriers) each (pserver, trainer id) pair has seen, and which pservers each executor talked to, so
that ``Executor.close()`` (or ``fleet.stop_worker()``) tells each of them "complete".

When a request fails because its pserver was lost, the other pservers get a "complete" that says why
(its ``msg``): a sync job then ends at once with the root cause everywhere, instead of each pserver
finding out later that this trainer went away."""
import atexit
import functools
import logging
import sys
import threading
import weakref

from . import rpc

logger = logging.getLogger("fluidist.distributed.trainer_session")
NOTICE_TIMEOUT = 2.0                          # seconds each other pserver gets to take the notice

_steps: dict = {}                             # (endpoint, trainer id) -> send_barriers sent
_before_complete: list = []                   # callables run before any "complete" goes out
_steps_lock = threading.Lock()
_close_targets: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # executor -> {(endpoint, trainer id)} to notify
# (a weak reference to the executor, its set of _close_targets) of every executor that talked to pservers,
# kept past the executor's life: a script that drops its executor without close() (a function's local,
# freed on return) is still done at its exit; a closed executor's set is empty
_target_sets: list = []
_target_sets_lock = threading.Lock()


def remember(executor, endpoints, trainer_id):
    """Register (once per executor, through its public ``on_close``) the hook that tells these
    pservers "complete" when the executor closes."""
    if executor is None:
        return
    _watch_process_exit()
    targets = _close_targets.get(executor)
    if targets is None:
        targets = _close_targets[executor] = set()
        with _target_sets_lock:
            _target_sets[:] = [(ref, t) for ref, t in _target_sets if t or ref() is not None]
            _target_sets.append((weakref.ref(executor), targets))
        executor.on_close(functools.partial(_notify_complete, targets))
    for ep in endpoints:
        targets.add((ep, trainer_id))


def before_complete(callback):
    """Call ``callback()`` before this process tells pservers "complete" (a background communicator
    sends what it still holds first)."""
    _before_complete.append(callback)


def _notify_complete(targets, timeout_s=None):
    pairs = sorted(targets)
    targets.clear()
    if not pairs:
        return
    failed = None
    for hook in list(_before_complete):
        try:
            hook()
        except Exception as e:    # the pservers still hear "complete"; then the failure is raised
            failed = failed or e
    rpc.call_all([(ep, dict(kind="complete", trainer=tid, step=step(ep, tid), what="complete"))
                  for ep, tid in pairs], timeout_s=timeout_s)
    rpc.release_clients({ep for ep, _ in pairs})
    for tid in sorted({t for _, t in pairs}):
        logger.info("trainer %d: done after %d step(s); told pserver(s) %s", tid,
                    max(step(ep, t) for ep, t in pairs if t == tid), ", ".join(ep for ep, t in pairs if t == tid))
    with _steps_lock:
        for key in pairs:
            _steps.pop(key, None)
            _fetched.pop(key, None)
    if failed is not None:
        raise failed


def notify_all_complete():
    """Tell every pserver that any executor of this process talked to (one since freed included) that
    its trainer is done (what ``fleet.stop_worker()`` does when the user trained with an executor of
    their own). Several executors may have talked to one pserver: it is told once."""
    _notify_complete(_take_all_targets())


def _take_all_targets():
    """Every (endpoint, trainer id) any executor of this process (one since freed included) has yet
    to tell it is done, taken: each executor's set is left empty."""
    union = set()
    for _, targets in list(_target_sets):
        union.update(targets)
        targets.clear()
    return union


EXIT_NOTICE_TIMEOUT = 5.0                     # seconds the pservers get to take a process's exit notice
_exit = {"watching": False, "failed": False}


def _watch_process_exit():
    """Once per process: at a normal exit, tell the pservers "complete" for every executor that did not
    close, freed or not (most scripts end without ``Executor.close()``; Paddle's pservers then kept
    serving until killed, and fluidist's would report a lost trainer); an uncaught exception is not a
    normal end."""
    if _exit["watching"]:
        return
    _exit["watching"] = True
    previous = sys.excepthook

    def excepthook(kind, value, tb):
        _exit["failed"] = True
        previous(kind, value, tb)
    sys.excepthook = excepthook
    atexit.register(_complete_at_exit)


def _complete_at_exit():
    if _exit["failed"]:
        return
    union = _take_all_targets()
    if not union:
        return
    try:
        _notify_complete(union, timeout_s=EXIT_NOTICE_TIMEOUT)
    except Exception as e:  # the process is ending: say it, do not raise
        logger.warning("could not tell the pservers this trainer is done at exit: %s", e)


_fetched: dict = {}                           # (endpoint, trainer id) -> step of its last answered recv


def mark_fetched(pairs):
    """Every (endpoint, trainer id) in ``pairs`` answered a ``recv`` at the current step: in sync mode a
    pserver answers those only once it has finished that step, which is all a fetch_barrier waits for."""
    with _steps_lock:
        for key in pairs:
            _fetched[key] = _steps.get(key, 0)
    _tell_story(pairs)


_told: set = set()                            # the story already logged: ("up", endpoint) / ("step", trainer id)


def _tell_story(pairs):
    """INFO, once each: the pservers a trainer reached (its first recv: the initial parameters), and its
    first step answered; per step only DEBUG."""
    for tid in sorted({t for _, t in pairs}):
        eps = list(dict.fromkeys(ep for ep, t in pairs if t == tid))  # one pair per parameter block: distinct
        new = [ep for ep in eps if ("up", ep, tid) not in _told]
        if new:
            _told.update(("up", ep, tid) for ep in new)
            logger.info("trainer %d: reached pserver(s) %s", tid, ", ".join(new))
        steps = {_steps.get((ep, tid), 0) for ep in eps}
        if max(steps) >= 1 and ("step", tid) not in _told:
            _told.add(("step", tid))
            logger.info("trainer %d: first step done (%d pserver(s) answered)", tid, len(eps))
        elif max(steps) >= 1:
            logger.debug("trainer %d: step %d done", tid, max(steps))


def fetched(endpoint, trainer_id):
    """Whether ``endpoint`` answered a ``recv`` of ``trainer_id`` at the current step."""
    key = (endpoint, trainer_id)
    return _fetched.get(key, -1) == _steps.get(key, 0)


def step(endpoint, trainer_id):
    """The steps (send barriers) this process has sent to ``endpoint`` as ``trainer_id``."""
    return _steps.get((endpoint, trainer_id), 0)


def advance(endpoints, trainer_id):
    """One more step sent to each of ``endpoints``."""
    with _steps_lock:
        for ep in endpoints:
            _steps[(ep, trainer_id)] = _steps.get((ep, trainer_id), 0) + 1


def dependent_deadline():
    """Waits that depend on other trainers (gets after a barrier) last a little longer than the
    pserver's own barrier deadline, so that the pserver's error naming the missing trainer arrives
    before the trainer's own timeout."""
    return rpc.deadline_seconds() * 1.1 + 0.2


_noticing = threading.local()


def _tell_the_others(lost_endpoint, reason):
    """``rpc.on_peer_lost`` hook: a "complete" carrying ``reason`` to every other pserver this process
    talked to (best effort, briefly); those pairs are then done (``Executor.close()`` skips them)."""
    if getattr(_noticing, "active", False):
        return
    _noticing.active = True
    try:
        pairs = {t for t in _take_all_targets() if t[0] != lost_endpoint}
        waits = []
        for ep, tid in sorted(pairs):
            try:
                c = rpc.get_client(ep)
                waits.append((c, c.request("complete", trainer=tid, step=step(ep, tid), what="complete (abort)",
                                           msg=reason)))
            except rpc.RPCError:
                continue
        for c, rid in waits:
            try:
                c.wait(rid, timeout_s=NOTICE_TIMEOUT)
            except rpc.RPCError:
                pass   # it may stop on this very notice, or be gone too
        if pairs:
            logger.info("told %d other pserver(s) that this trainer stops: %s", len(pairs), reason)
    finally:
        _noticing.active = False


rpc.on_peer_lost(_tell_the_others)
