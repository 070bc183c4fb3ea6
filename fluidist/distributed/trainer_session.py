"""A trainer's side of the parameter-server protocol, kept per process: how many steps (send
barriers) each (pserver, trainer id) pair has seen, and which pservers each executor talked to, so
that ``Executor.close()`` (or ``fleet.stop_worker()``) tells each of them "complete"."""
import functools
import threading
import weakref

from . import rpc

_steps = {}                                   # (endpoint, trainer id) -> send_barriers sent
_steps_lock = threading.Lock()
_close_targets = weakref.WeakKeyDictionary()  # executor -> {(endpoint, trainer id)} to notify


def remember(executor, endpoints, trainer_id):
    """Register (once per executor, through its public ``on_close``) the hook that tells these
    pservers "complete" when the executor closes."""
    if executor is None:
        return
    targets = _close_targets.get(executor)
    if targets is None:
        targets = _close_targets[executor] = set()
        executor.on_close(functools.partial(_notify_complete, targets))
    for ep in endpoints:
        targets.add((ep, trainer_id))


def _notify_complete(targets):
    pairs = sorted(targets)
    targets.clear()
    if not pairs:
        return
    rpc.call_all([(ep, dict(kind="complete", trainer=tid, step=step(ep, tid), what="complete"))
                  for ep, tid in pairs])
    with _steps_lock:
        for key in pairs:
            _steps.pop(key, None)
            _fetched.pop(key, None)


def notify_all_complete():
    """Tell every pserver that any executor of this process talked to that its trainer is done (what
    ``fleet.stop_worker()`` does when the user trained with an executor of their own). Several
    executors may have talked to one pserver: it is told once."""
    union = set()
    for targets in list(_close_targets.values()):
        union.update(targets)
        targets.clear()
    _notify_complete(union)


_fetched = {}                                 # (endpoint, trainer id) -> step of its last answered recv


def mark_fetched(pairs):
    """Every (endpoint, trainer id) in ``pairs`` answered a ``recv`` at the current step: in sync mode a
    pserver answers those only once it has finished that step, which is all a fetch_barrier waits for."""
    with _steps_lock:
        for key in pairs:
            _fetched[key] = _steps.get(key, 0)


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
