"""What the benchmarks here share: the median and spread of repeated rounds, the results file, the
children's environment.

Single runs on the development machines vary by up to 2x (the cores are shared), so each benchmark
repeats its comparison in interleaved rounds and reports, per quantity, the median of the rounds with
their minimum and maximum: ``median [min-max]``. Ratios between implementations are taken within a
round (both measured under the same load), then summarised the same way.
"""
import json
import os


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_env():
    """The environment of a benchmark's child processes: this checkout first on the path and one
    BLAS/OpenMP thread per process (several processes share the machine's cores)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[k] = "1"
    env.setdefault("PYTHONWARNINGS", "ignore::UserWarning")
    return env


def write_results(path, result):
    """Write ``result`` as JSON to ``path`` (its directory made if needed); ``''`` writes nothing."""
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print("wrote %s" % path)


def spread(values):
    """``{"n", "median", "min", "max", "values"}`` of the non-None ``values`` (median: the middle
    value, or the mean of the two middle ones)."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return {"n": 0, "median": None, "min": None, "max": None, "values": []}
    mid = len(v) // 2
    med = v[mid] if len(v) % 2 else 0.5 * (v[mid - 1] + v[mid])
    return {"n": len(v), "median": med, "min": v[0], "max": v[-1], "values": list(values)}


def fmt(s, pattern="%.2f", scale=1.0):
    """``"median [min-max]"`` of a ``spread`` record, each value times ``scale``; ``-`` when empty."""
    if not s or s.get("median") is None:
        return "-"
    return "%s [%s-%s]" % (pattern % (s["median"] * scale), pattern % (s["min"] * scale), pattern % (s["max"] * scale))


def interleaved(names, rounds):
    """The order of ``names`` in each round: rotated by one every round, so that no implementation
    always runs first (or right after the same other one)."""
    names = list(names)
    return [names[r % len(names):] + names[:r % len(names)] for r in range(rounds)]
