"""Per-op timing, with Paddle fluid 1.x's names: ``profiler()``, ``start_profiler``, ``stop_profiler``,
``reset_profiler``.

    import fluidist.profiler as profiler
    with profiler.profiler("CPU", sorted_key="total"):
        for batch in batches:
            exe.run(main, feed=batch, fetch_list=[loss])
    # prints a table of op types: calls, total, min, max, average (ms), ratio

While the profiler is on, every plan the Executor builds calls each kernel through a timing wrapper;
turning it on or off drops the executors' cached plans so that the next run plans again with or
without the wrappers. When it is off the Executor runs exactly the plain kernels: the profiler costs
nothing unless it is on. Timings are kept per (op type, op_role), since the same op type can be
compute in one place and communication in another (``concat`` after ``recv``, say);
``op_stats()`` returns them for programs that want the numbers rather than the table, and
``op_events()`` each call (op type, op_role, start, seconds) for per-step breakdowns.

A Chrome trace of this process is written too, at ``<profile_path>.<role>.trace.json`` (see
:mod:`fluidist.timeline`: ops, RPC and collective spans with peer and bytes, waits), which
``python -m fluidist.timeline`` merges across processes as Paddle's ``tools/timeline.py`` did. In a job
(the launcher's variables name the role) the report goes to ``<profile_path>.<role>.json``, so ranks that
share a ``profile_path`` do not overwrite each other's; a process on its own writes ``profile_path``.

Differences from Paddle: the report is a Python table (and a JSON file at ``profile_path``), not
Paddle's protobuf profile; ``state="GPU"``/``"All"`` synchronizes the device after each kernel so
that the time of its asynchronous launches is counted (there is no per-kernel CUDA event trace).
Nested ops are timed inclusively: ``listen_and_serv`` counts its whole serving loop, the ops of
the optimize blocks it runs are counted again on their own lines.
"""
from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import threading
import time
from typing import Iterator

from . import timeline as _timeline
from .compat import refused
from .executor import executor as _executor_mod

logger = logging.getLogger(__name__)

__all__ = ["profiler", "start_profiler", "stop_profiler", "reset_profiler", "is_profiler_enabled", "op_stats",
           "op_events", "trace_path", "summary_path"]

_STATES = ("CPU", "GPU", "All")
_SORT_KEYS = (None, "calls", "total", "max", "min", "ave")

_lock = threading.Lock()
_stats: dict = {}    # (op type, op_role) -> [calls, total s, min s, max s]
_MAX_EVENTS = 200000
_events: collections.deque = collections.deque(maxlen=_MAX_EVENTS)   # (op type, op_role, start, seconds), the latest ones
_active_state = None


def _record(key, t0, dt):
    if _timeline.enabled:
        _timeline.complete("op", key[0], t0, dt, op_role=key[1])
    with _lock:
        _events.append((key[0], key[1], t0, dt))
        s = _stats.get(key)
        if s is None:
            _stats[key] = [1, dt, dt, dt]
        else:
            s[0] += 1
            s[1] += dt
            if dt < s[2]:
                s[2] = dt
            if dt > s[3]:
                s[3] = dt


def _device_sync(xp):
    cuda = getattr(xp, "cuda", None)
    if cuda is not None:
        cuda.Device().synchronize()


def _timed_kernel(kernel, op):
    """``kernel`` wrapped to add its wall time to the (op type, op_role) line of the report."""
    key = (op.type, int(op.attrs.get("op_role", 0) or 0))
    sync = _active_state in ("GPU", "All")
    perf = time.perf_counter

    def timed(ctx, ins, attrs):
        t0 = perf()
        try:
            out = kernel(ctx, ins, attrs)
            if sync:
                _device_sync(ctx.xp)
            return out
        finally:
            _record(key, t0, perf() - t0)

    timed.__wrapped__ = kernel
    return timed


def _set_hook(hook):
    _executor_mod.set_kernel_wrapper(hook)


def is_profiler_enabled() -> bool:
    """Whether the profiler is on."""
    return _active_state is not None


def start_profiler(state: str = "CPU", tracer_option: str = "Default") -> None:
    """Start timing kernels, from a clean slate (no-op when already on).

    Args:
        state: ``"CPU"``, ``"GPU"`` or ``"All"`` (the last two synchronise the device after each
            kernel, so that its time is counted).
        tracer_option: ``"Default"``, ``"OpDetail"`` or ``"AllOpDetail"``; accepted for Paddle's
            signature, it changes nothing here.

    Raises:
        ValueError: an unknown ``state`` or ``tracer_option``.
    """
    global _active_state
    if state not in _STATES:
        raise ValueError("start_profiler: state must be one of %s, got %r" % (list(_STATES), state))
    if tracer_option not in ("Default", "OpDetail", "AllOpDetail"):
        raise ValueError("start_profiler: tracer_option must be 'Default', 'OpDetail' or 'AllOpDetail', "
                         "got %r" % (tracer_option,))
    if _active_state is not None:
        return
    reset_profiler()
    _timeline.start()
    _active_state = state
    _set_hook(_timed_kernel)


def reset_profiler() -> None:
    """Forget what has been timed so far for the report (the profiler stays on if it was; the trace keeps
    its spans)."""
    with _lock:
        _stats.clear()
        _events.clear()


def op_stats() -> list[dict]:
    """The timings so far: a list of dicts with op_type, op_role, calls, total, min, max, ave (seconds)."""
    with _lock:
        items = [(k, list(v)) for k, v in _stats.items()]
    return [{"op_type": t, "op_role": r, "calls": c, "total": tot, "min": mn, "max": mx, "ave": tot / c}
            for (t, r), (c, tot, mn, mx) in items]


def op_events() -> list[tuple]:
    """Each timed call (the latest 200000): a list of (op type, op_role, start, seconds), start being
    ``time.perf_counter()`` when the kernel was called, in the order the calls ended."""
    with _lock:
        return list(_events)


def _report(sorted_key):
    by_type = {}
    for s in op_stats():
        d = by_type.setdefault(s["op_type"], {"calls": 0, "total": 0.0, "min": float("inf"), "max": 0.0})
        d["calls"] += s["calls"]
        d["total"] += s["total"]
        d["min"] = min(d["min"], s["min"])
        d["max"] = max(d["max"], s["max"])
    rows = [dict(event=t, ave=d["total"] / d["calls"], **d) for t, d in by_type.items()]
    if sorted_key is not None:
        rows.sort(key=lambda r: r[sorted_key], reverse=sorted_key != "min")
    return rows


def stop_profiler(sorted_key: str | None = None, profile_path: str | None = "/tmp/profile") -> None:
    """Stop timing, print the report and write it (and this process's Chrome trace).

    The timings stay readable through ``op_stats()`` until the next start or reset.

    Args:
        sorted_key: the report's order: None (first seen), ``"calls"``, ``"total"``, ``"max"``,
            ``"min"`` or ``"ave"``.
        profile_path: the JSON report's path (None or ``""`` writes nothing); a process of a job
            writes :func:`summary_path` of it, so every rank has its own, and the Chrome trace goes
            to :func:`trace_path` of it; a missing folder is created.

    Raises:
        ValueError: an unknown ``sorted_key``.
    """
    global _active_state
    if sorted_key not in _SORT_KEYS:
        raise ValueError("stop_profiler: sorted_key must be one of %s, got %r" % (list(_SORT_KEYS), sorted_key))
    if _active_state is None:
        return
    _active_state = None
    _set_hook(None)
    _timeline.stop()
    rows = _report(sorted_key)
    grand = sum(r["total"] for r in rows) or 1.0
    print("------------------------->     Profiling Report     <-------------------------")
    print("%-28s %8s %12s %10s %10s %10s %8s" % ("Event", "Calls", "Total(ms)", "Min.", "Max.", "Ave.", "Ratio."))
    for r in rows:
        print("%-28s %8d %12.4f %10.4f %10.4f %10.4f %8.4f"
              % (r["event"], r["calls"], r["total"] * 1e3, r["min"] * 1e3, r["max"] * 1e3, r["ave"] * 1e3,
                 r["total"] / grand))
    if profile_path:
        _prepare_folder(profile_path, "stop_profiler")
        report = summary_path(profile_path)
        with open(report, "w") as f:
            json.dump({"events": rows, "by_role": op_stats(), "process": _timeline.role_name()}, f, indent=1)
        trace = _timeline.write_trace(trace_path(profile_path))
        logger.info("profiler: report in %s, Chrome trace in %s", report, trace)


def _prepare_folder(profile_path, what):
    """Create the folder ``profile_path`` goes in (a missing one is made, not a crash at the end of the run);
    a path that cannot hold files is refused, naming it."""
    folder = os.path.dirname(os.path.abspath(profile_path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise ValueError("%s: cannot write the profile %r: its folder %s cannot be created (%s)"
                         % (what, profile_path, folder, e.strerror or e)) from None
    if not os.access(folder, os.W_OK):
        raise ValueError("%s: cannot write the profile %r: its folder %s is not writable"
                         % (what, profile_path, folder))


def summary_path(profile_path: str, name: str | None = None) -> str:
    """Where ``stop_profiler`` writes this process's report: ``profile_path`` itself for a process on its own,
    ``<profile_path>.<role>.json`` (``trainer0``, ``pserver1``: see :func:`fluidist.timeline.role_name`) for a
    process of a job, so that each rank keeps its own file."""
    role = name or _timeline.role_name()
    return profile_path if role.startswith("pid") else "%s.%s.json" % (profile_path, role)


def trace_path(profile_path: str, name: str | None = None) -> str:
    """Where ``stop_profiler`` writes this process's Chrome trace: ``<profile_path>.<role>.trace.json``."""
    return "%s.%s.trace.json" % (profile_path, name or _timeline.role_name())


@contextlib.contextmanager
def profiler(state: str = "CPU", sorted_key: str | None = None, profile_path: str | None = "/tmp/profile",
             tracer_option: str = "Default") -> Iterator[None]:
    """``with profiler.profiler("CPU", "total"):`` times the kernels run inside and reports at the end
    (``start_profiler`` then ``stop_profiler``, whose arguments these are).

    Args:
        state: ``"CPU"``, ``"GPU"`` or ``"All"``.
        sorted_key: the report's order (see ``stop_profiler``).
        profile_path: where the report goes (see ``stop_profiler``); its folder is checked first.
        tracer_option: accepted for Paddle's signature.

    Raises:
        ValueError: an unknown argument value, or a ``profile_path`` whose folder cannot hold files.

    Examples:
        >>> import contextlib, io
        >>> import fluidist.profiler as profiler
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> y = fluid.layers.fc(x, size=2)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> with contextlib.redirect_stdout(io.StringIO()) as table:
        ...     with profiler.profiler("CPU", sorted_key="total", profile_path=None):
        ...         _ = exe.run(feed={"x": np.ones((2, 4), "float32")}, fetch_list=[y])
        >>> sorted({s["op_type"] for s in profiler.op_stats()})
        ['elementwise_add', 'mul']
    """
    if sorted_key not in _SORT_KEYS:
        raise ValueError("profiler: sorted_key must be one of %s, got %r" % (list(_SORT_KEYS), sorted_key))
    if profile_path:
        _prepare_folder(profile_path, "profiler")   # up front, not at the end of the run
    start_profiler(state, tracer_option)
    try:
        yield
    finally:
        stop_profiler(sorted_key, profile_path)


cuda_profiler = refused("fluid.profiler.cuda_profiler",
                        "it drives NVIDIA's nvprof; use fluid.profiler.profiler('All') for per-op times, or run "
                        "the script under Nsight Systems (nsys profile python train.py)")
