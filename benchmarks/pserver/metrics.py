"""Per-step metrics of the parameter-server benchmark: how steps are cut into phases, summaries
(median, p90) and the tables printed at the end.

A trainer step is split into
  compute  forward and backward (and the loss),
  send     handing the gradient blocks to the transport (fluidist: ``split_byref`` + ``send`` ops;
           PyTorch: the ``rpc_async`` calls),
  wait     barriers (fluidist: ``send_barrier`` + ``fetch_barrier``; PyTorch: waiting on the futures
           of the servers' answers, which is where it waits for the other trainers),
  recv     getting the new parameters in place (fluidist: ``recv`` ops + the ``concat`` of blocks;
           PyTorch: copying the answered blocks into the model),
  other    the rest of the step's wall time (executor feed/fetch, Python between ops),
and ``step`` is the step's wall time.
"""
import math

PHASES = ("compute", "send", "wait", "recv", "other")

DIST_ROLE = 0x0008
_FLUIDIST_PHASE = {"send": "send", "split_byref": "send", "split_selected_rows": "send", "split_ids": "send",
                   "send_barrier": "wait", "fetch_barrier": "wait", "recv": "recv", "prefetch": "recv"}


def fluidist_phase(op_type, op_role):
    """The phase an op of a fluidist trainer program belongs to (``concat`` after ``recv`` carries
    the Dist role bit; a ``concat`` of the model itself is compute)."""
    phase = _FLUIDIST_PHASE.get(op_type)
    if phase is not None:
        return phase
    if op_type in ("concat", "merge_ids") and op_role & DIST_ROLE:
        return "recv"
    return "compute"


def fluidist_step_phases(events, step_seconds):
    """Sum profiler events (op type, op role, start, seconds) of one step into phases. A kernel
    called within another's call (the look-ahead's ``split_ids`` inside ``send_barrier`` or ``recv``)
    is part of that call's time and counted there only."""
    out = dict.fromkeys(PHASES, 0.0)
    end = float("-inf")      # where the last counted (outermost) call ended
    for op_type, role, start, dt in sorted(events, key=lambda e: (e[2], -e[3])):
        if start + dt <= end:
            continue
        out[fluidist_phase(op_type, role)] += dt
        end = max(end, start + dt)
    out["other"] = max(step_seconds - sum(out[p] for p in PHASES if p != "other"), 0.0)
    out["step"] = step_seconds
    return out


def peak_rss_bytes():
    """This process's peak resident memory: VmHWM of /proc/self/status (ru_maxrss would carry the
    launching process's peak over the exec on Linux), else ru_maxrss (KiB on Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentile(values, q):
    """Linear-interpolated percentile (numpy's default), without numpy."""
    if not values:
        return float("nan")
    v = sorted(values)
    pos = (len(v) - 1) * q / 100.0
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(values):
    if not values:
        return {"n": 0, "median": None, "p90": None, "mean": None, "min": None, "max": None}
    return {"n": len(values), "median": percentile(values, 50), "p90": percentile(values, 90),
            "mean": sum(values) / len(values), "min": min(values), "max": max(values)}


def trainer_record(rank, steps, bytes_sent, bytes_recv, wall_seconds, losses, extra=None, examples_per_step=None):
    """The JSON record of one trainer: ``steps`` is a list of per-step phase dicts (timed steps only),
    ``bytes_*`` per step, ``wall_seconds`` the wall time of the timed steps. ``extra`` may carry
    ``rows_in_per_step`` / ``rows_out_per_step`` (embedding rows fetched / gradient rows sent) and
    ``peak_rss`` (bytes)."""
    n = len(steps)
    phases = {p: summarize([s[p] for s in steps]) for p in PHASES + ("step",)}
    comm = [s["send"] + s["wait"] + s["recv"] for s in steps]
    moved = bytes_sent + bytes_recv
    comm_med = percentile(comm, 50) if n else 0.0
    rec = {
        "rank": rank, "steps": n, "wall_seconds": wall_seconds,
        "steps_per_sec": n / wall_seconds if wall_seconds > 0 else None,
        "phases": phases,
        "comm": summarize(comm),
        "bytes_sent_per_step": bytes_sent, "bytes_recv_per_step": bytes_recv,
        # bytes moved per second of the step's communication phases (send + wait + recv), median step
        "comm_bytes_per_sec": moved / comm_med if comm_med > 0 else None,
        # bytes moved per second of wall time, compute included
        "wall_bytes_per_sec": moved * n / wall_seconds if wall_seconds > 0 else None,
        "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
        "per_step": {p: [s[p] for s in steps] for p in PHASES + ("step",)},
    }
    if extra:
        rec.update(extra)
    if examples_per_step and wall_seconds > 0:
        rec["examples_per_sec"] = examples_per_step * n / wall_seconds
    if "rows_in_per_step" in rec and wall_seconds > 0:
        rec["rows_per_sec"] = (rec["rows_in_per_step"] + rec["rows_out_per_step"]) * n / wall_seconds
    return rec


def _noncompute_share(trainer):
    """(send + wait + recv + other) / compute of a trainer's phase medians: what its step spends
    outside the forward and backward ops, as a share of them."""
    ph = trainer["phases"]
    medians = [ph[p]["median"] for p in PHASES]
    if any(m is None for m in medians) or not ph["compute"]["median"]:
        return None
    return (sum(medians) - ph["compute"]["median"]) / ph["compute"]["median"]


def side_summary(trainers, servers=None):
    """What one implementation achieved over its trainers."""
    sps = [t["steps_per_sec"] for t in trainers if t.get("steps_per_sec")]
    bps = [t["comm_bytes_per_sec"] for t in trainers if t.get("comm_bytes_per_sec")]
    def total(key):
        vals = [t[key] for t in trainers if t.get(key) is not None]
        return sum(vals) if vals else None

    def peak(items):
        vals = [x.get("peak_rss") for x in items or [] if x.get("peak_rss")]
        return max(vals) if vals else None

    return {
        "steps_per_sec": min(sps) if sps else None,   # a sync job goes at its slowest trainer's pace
        "examples_per_sec": total("examples_per_sec"),   # all trainers together
        "rows_per_sec": total("rows_per_sec"),           # embedding rows in + out, all trainers together
        "trainer_peak_rss": peak(trainers),
        "server_peak_rss": peak(servers),
        "step_median": max(t["phases"]["step"]["median"] for t in trainers) if trainers else None,
        # the slowest trainer's compute, and the largest share of a trainer's step outside its compute
        "compute_median": max((t["phases"]["compute"]["median"] or 0 for t in trainers), default=None),
        "noncompute_over_compute": max((x for x in map(_noncompute_share, trainers) if x is not None),
                                       default=None),
        "comm_bytes_per_sec": sum(bps) / len(bps) if bps else None,
        "aggregate_wall_bytes_per_sec": sum(t["wall_bytes_per_sec"] or 0 for t in trainers),
    }


# ------------------------------------------------------------------ printing
def _ms(x):
    return "-" if x is None else "%.2f" % (x * 1e3)


def _mb(x):
    return "-" if x is None else "%.1f" % (x / 1e6)


def format_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    line = "  ".join("%*s" % (w, h) for w, h in zip(widths, headers))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join("%*s" % (w, c) for w, c in zip(widths, r)))
    return "\n".join(out)


def trainer_table_multi(impls):
    """One table of every trainer of every implementation: ``impls`` is [(name, {"trainers": [...]})]."""
    headers = ["impl", "trainer", "steps", "steps/s"]
    for p in PHASES + ("step",):
        headers += [p + " med", "p90"]
    headers += ["MB out/step", "MB in/step", "comm MB/s"]
    rows = []
    for name, side in impls:
        for t in side["trainers"]:
            r = [name, t["rank"], t["steps"], "%.2f" % t["steps_per_sec"] if t["steps_per_sec"] else "-"]
            for p in PHASES + ("step",):
                r += [_ms(t["phases"][p]["median"]), _ms(t["phases"][p]["p90"])]
            r += [_mb(t["bytes_sent_per_step"]), _mb(t["bytes_recv_per_step"]), _mb(t["comm_bytes_per_sec"])]
            rows.append(r)
    return "trainers (times in ms)\n" + format_table(headers, rows)


def server_table_multi(impls):
    """One table of every server: optimize time per step (async: only the mean per trainer step, as
    updates then run per arriving gradient), busy share of the serving time, bytes."""
    headers = ["impl", "server", "steps", "optimize med", "p90", "mean", "serve s", "busy %", "MB in/step",
               "MB out/step"]
    rows = []
    for name, side in impls:
        for s in side["servers"]:
            opt = s.get("optimize", {})
            busy = s.get("busy_fraction")
            mean = opt.get("mean", opt.get("mean_per_trainer_step"))
            rows.append([name, s["rank"], s.get("steps") or "-", _ms(opt.get("median")), _ms(opt.get("p90")), _ms(mean),
                         "%.2f" % s["serve_seconds"] if s.get("serve_seconds") is not None else "-",
                         "%.1f" % (100 * busy) if busy is not None else "-",
                         _mb(s.get("bytes_recv_per_step")), _mb(s.get("bytes_sent_per_step"))])
    return "servers (times in ms unless said)\n" + format_table(headers, rows)
