"""Chrome traces of a job: one per process (rank), merged into one with a track per process.

While :mod:`fluidist.profiler` is on, this process records spans: every kernel the Executor calls (category
``op``), every RPC a trainer sends and the wait for its reply (``rpc`` / ``wait``, with the peer endpoint and
the bytes), every request a pserver receives (``rpc``, with the trainer and the bytes), and every collective
call (``collective``, with the ring, the ranks and the bytes). ``stop_profiler`` writes them as a Chrome
trace (chrome://tracing, https://ui.perfetto.dev) beside its report, at ``<profile_path>.<role>.trace.json``
(the role from the launcher's variables: ``trainer0``, ``pserver1``; ``pid<N>`` without them); or call
:func:`write_trace` yourself.

``python -m fluidist.timeline`` merges the traces of several processes into one, a track per process,
aligned on the wall clock each trace records (exact between processes of one machine; as good as the
machines' clock sync across machines), with a flow arrow from each request a trainer sent to the span
where its pserver received it::

    python -m fluidist.timeline -o job.json /tmp/profile.trainer0.trace.json /tmp/profile.pserver0.trace.json
    python -m fluidist.timeline --profile_path trainer0=t0.json,pserver0=p0.json --timeline_path job.json

(the second form has the flags of Paddle's ``tools/timeline.py``). The trace keeps the spans since
``start_profiler`` (at most the latest million); ``reset_profiler`` clears the report's numbers, not the trace.
"""
import collections
import json
import os
import threading
import time

from .. import bounded_json
from .flows import request_flows

__all__ = ["enabled", "start", "stop", "reset", "complete", "frame_bytes", "events", "role_name", "to_chrome", "write_trace",
           "merge"]

MAX_SPANS = 1000000

enabled = False
"""Whether this process records spans now: the runtime's hooks read it before they record anything."""
_lock = threading.Lock()
_spans: collections.deque = collections.deque(maxlen=MAX_SPANS)   # (cat, name, start perf s, seconds, thread id, args or None)


def start():
    """Record spans from now on, from an empty trace."""
    global enabled
    reset()
    enabled = True


def stop():
    """Record no more spans; those recorded stay (for :func:`write_trace`)."""
    global enabled
    enabled = False


def reset():
    """Drop the spans recorded so far (recording goes on if it was on)."""
    with _lock:
        _spans.clear()


def complete(cat, name, t0, dt, **args):
    """Add a span that started at ``t0`` (``time.perf_counter()``) and lasted ``dt`` seconds."""
    tid = threading.get_ident()
    with _lock:
        _spans.append((cat, name, t0, dt, tid, args or None))


def frame_bytes(frames):
    """The bytes of a message's frames (bytes, memoryviews, arrays or ZeroMQ frames)."""
    n = 0
    for f in frames:
        try:
            n += memoryview(getattr(f, "buffer", f)).nbytes
        except TypeError:
            n += len(f)
    return n


def events():
    """The spans recorded so far: ``(category, name, start, seconds, thread id, args)``."""
    with _lock:
        return list(_spans)


def role_name(environ=None):
    """``trainer<id>`` / ``pserver<id>`` from the launcher's variables, else ``pid<N>``."""
    env = os.environ if environ is None else environ
    role = env.get("TRAINING_ROLE", "").upper()
    if role == "PSERVER":
        return "pserver%s" % env.get("PADDLE_PSERVER_ID", env.get("PADDLE_PORT", os.getpid()))
    if role == "TRAINER" or env.get("PADDLE_TRAINER_ID") is not None:
        return "trainer%s" % env.get("PADDLE_TRAINER_ID", 0)
    return "pid%d" % os.getpid()


def to_chrome(spans=None, name=None):
    """This process's spans as a Chrome trace dict (timestamps in microseconds of ``perf_counter``; the
    ``otherData.fluidist.clock`` pair maps them to the wall clock for :func:`merge`)."""
    spans = events() if spans is None else spans
    pid = os.getpid()
    name = name or role_name()
    out = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}]
    tids = {}
    for cat, op, t0, dt, tid, args in spans:
        if tid not in tids:
            tids[tid] = len(tids)
            out.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tids[tid],
                        "args": {"name": "main" if tids[tid] == 0 else "thread %d" % tids[tid]}})
        ev = {"name": op, "cat": cat, "ph": "X", "pid": pid, "tid": tids[tid], "ts": t0 * 1e6, "dur": dt * 1e6}
        if args:
            ev["args"] = args
        out.append(ev)
    clock = {"perf": time.perf_counter(), "wall": time.time()}
    return {"traceEvents": out, "displayTimeUnit": "ms",
            "otherData": {"fluidist": {"name": name, "pid": pid, "clock": clock}}}


def write_trace(path, name=None):
    """Write this process's trace to ``path`` (JSON); returns the path."""
    trace = to_chrome(name=name)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(trace, f)
    os.replace(path + ".tmp", path)
    return path


def _load(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
        trace = bounded_json.loads(raw, "the trace", len(raw), 16)
    except (OSError, ValueError) as e:
        raise ValueError("cannot read the trace %s: %s" % (path, e)) from None
    if isinstance(trace, list):
        trace = {"traceEvents": trace}
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise ValueError("%s is not a Chrome trace (no traceEvents list)" % path)
    return trace


def _order(name):
    """Trainers first, then pservers, each by number; anything else after them."""
    for k, prefix in enumerate(("trainer", "worker", "pserver", "server")):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return (k // 2, int(name[len(prefix):]), name)
    return (2, 0, name)


def merge(inputs):
    """One trace from ``inputs``: ``(name, path)`` pairs (name None: the one the trace recorded). Each input
    becomes process ``k`` named ``name``; times are moved to the wall clock and start at 0; each request a
    trainer sent gets a flow arrow to where its pserver received it (:mod:`fluidist.timeline.flows`)."""
    loaded = []
    for name, path in inputs:
        trace = _load(path)
        meta = (trace.get("otherData") or {}).get("fluidist") or {}
        clock = meta.get("clock") or {}
        offset = (clock["wall"] - clock["perf"]) * 1e6 if "wall" in clock and "perf" in clock else 0.0
        loaded.append((name or meta.get("name") or os.path.basename(path), trace, offset))
    loaded.sort(key=lambda x: _order(x[0]))
    spans = [(k, ev, off) for k, (_, trace, off) in enumerate(loaded) for ev in trace["traceEvents"]
             if ev.get("ph") != "M"]
    t_min = min((ev["ts"] + off for _, ev, off in spans if "ts" in ev), default=0.0)
    out = []
    for k, (name, trace, _) in enumerate(loaded):
        out.append({"name": "process_name", "ph": "M", "pid": k, "tid": 0, "args": {"name": name}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": k, "tid": 0, "args": {"sort_index": k}})
        for ev in trace["traceEvents"]:
            if ev.get("ph") == "M" and ev.get("name") == "thread_name":
                out.append(dict(ev, pid=k))
    for k, ev, off in spans:
        ev = dict(ev, pid=k)
        if "ts" in ev:
            ev["ts"] = ev["ts"] + off - t_min
        out.append(ev)
    flows = request_flows(out)
    return {"traceEvents": out + flows, "displayTimeUnit": "ms",
            "otherData": {"fluidist": {"merged": [name for name, _, _ in loaded], "flows": len(flows) // 2}}}


def _pairs(text):
    out = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, path = item.partition("=")
        out.append((name, path) if sep else (None, item))
    return out
