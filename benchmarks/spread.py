"""Median and spread of repeated benchmark rounds, shared by every benchmark here.

Single runs on the development machines vary by up to 2x (the cores are shared), so each benchmark
repeats its comparison in interleaved rounds and reports, per quantity, the median of the rounds with
their minimum and maximum: ``median [min-max]``. Ratios between implementations are taken within a
round (both measured under the same load), then summarised the same way.
"""


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
