"""Timing bounds that hold on a busy machine.

A bound written for an idle machine ("the pserver notices within 5 s") fails on a 2-core machine running
two suites at once (load 16): every process there gets a fraction of a CPU. These bounds are scaled by
what this run measures: :func:`slowdown` is the 1-minute load average per CPU (at least 1), so a bound
is as tight as written on an idle machine and follows the load on a busy one, up to ``cap`` times.
"""
import os


def slowdown(cap=8.0):
    """How many times fewer CPU seconds a process gets now than alone: load average per CPU, 1..cap."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return 1.0
    return min(float(cap), max(1.0, load / (os.cpu_count() or 1)))


def scaled(seconds, cap=8.0):
    """``seconds`` (a bound on an idle machine) times :func:`slowdown`."""
    return seconds * slowdown(cap)
