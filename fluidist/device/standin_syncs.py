"""The synchronisations CuPy makes inside its own functions, counted by the stand-in as CuPy's code
makes them (read from CuPy 14.2's sources: ``cupy/_core`` (``core.pyx``, ``_routines_indexing.pyx``,
``_routines_manipulation.pyx``), ``cupy/_statistics/histogram.py``, ``cupy/_manipulation/add_remove.py``,
``cupy/_sorting/search.py``, ``cupy/_creation/ranges.py``).

Each is a value read from the device to decide something on the host, so each makes the host wait:

- a result whose size depends on the data (``nonzero``, ``argwhere``, ``flatnonzero``, ``compress``,
  ``extract``, ``where`` with one argument, a boolean mask) reads its size: one, none where the input
  (the mask, the condition) is empty;
- ``bincount`` checks ``(x < 0).any()`` and reads ``int(x.max()) + 1``: two (one for an empty input,
  which returns after the check);
- ``unique`` of a flat array selects with a mask (one), ``return_index`` selects again (one),
  ``return_counts`` calls ``nonzero`` (one): none for an empty input; along an axis it sorts the rows
  with a quicksort run on the host: the row order is read (``tolist``), each comparison reads the
  first non-zero position of a difference (``trim_zeros``) and, where the rows differ, its sign;
  then the mask selection, the row count (``.item()``) and the extra outputs' selections;
- ``repeat`` with an array of repeats (a device array, or a list CuPy copies in; a NumPy array is
  refused): one element is read (``item``), more are summed and their total and minimum read (two);
- ``choose`` in its default mode ``"raise"`` reads ``all(a < n)`` and, when true, ``all(0 <= a)``;
  ``put`` with ``mode="raise"`` reads its error flag;
- ``linspace`` with an array start or stop (and ``num > 1``) reads ``any(step == 0)``;
- ``histogram`` with a number of bins and no ``range`` reads four times, with device edges once;
- ``RandomState.randint`` over a range whose size is not a power of two reads how many draws to
  redraw (``randint_syncs``);
- ``shares_memory`` runs a kernel and reads its answer.

``may_share_memory`` compares the arrays' address ranges on the host, and ``roll`` with a device
shift gathers on the device: no synchronisation.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

# functions whose result's size depends on the data: CuPy reads a count from the device for them,
# unless their first argument (the input, or the condition) is empty
DATA_DEPENDENT = frozenset(("nonzero", "argwhere", "flatnonzero", "compress", "extract"))
# parameters of these functions that the stand-in would read on the host by their name (see
# ``standin_array.HOST_PARAMS``) but that CuPy's function takes as device arrays (each function's
# own reads are counted by ``hidden_syncs``)
DEVICE_PARAMS = {"repeat": frozenset(("repeats",)), "linspace": frozenset(("start", "stop"))}
# ... and those CuPy takes on either side without reading them (a device shift: an index kernel)
UNREAD_PARAMS = {"roll": frozenset(("shift",))}
# the parameters CuPy copies to the device inside these functions when given a list: (its position
# in the function's arguments, in the array method's, its name)
_LIST_PARAMS = {"repeat": ((1, 0, "repeats"),), "linspace": ((0, None, "start"), (1, None, "stop")),
                "compress": ((0, 0, "condition"),)}


def _arg(args, kwargs, pos, name, default=None):
    if name in kwargs:
        return kwargs[name]
    return args[pos] if len(args) > pos else default


def hidden_syncs(name: str, args: tuple, kwargs: dict) -> Tuple[str, ...]:
    """Why CuPy's ``name`` called with these (NumPy) arguments waits for the device, once per item
    (a NumPy array stands for a device array; lists and scalars are host values)."""
    if name == "bincount":
        x: Any = _arg(args, kwargs, 0, "x")
        return ("bincount: any(x < 0)",) if np.size(x) == 0 else ("bincount: any(x < 0)", "bincount: max(x) + 1")
    if name == "unique":
        return _unique_syncs(args, kwargs)
    if name == "shares_memory":
        return ("shares_memory: bool(any(...))",)
    if name == "repeat":
        return repeat_syncs(_arg(args, kwargs, 1, "repeats"))
    if name == "choose":
        return _choose_syncs(_arg(args, kwargs, 0, "a"), _arg(args, kwargs, 1, "choices"),
                             _arg(args, kwargs, 3, "mode", "raise"))
    if name == "put":
        raising = _arg(args, kwargs, 3, "mode", "wrap") == "raise"
        return ("put: the error flag (mode='raise')",) if raising and np.size(_arg(args, kwargs, 2, "v")) else ()
    if name == "histogram":
        return _histogram_syncs(_arg(args, kwargs, 0, "a"), _arg(args, kwargs, 1, "bins", 10),
                                _arg(args, kwargs, 2, "range"))
    if name == "linspace":
        start, stop = _arg(args, kwargs, 0, "start"), _arg(args, kwargs, 1, "stop")
        if (np.isscalar(start) and np.isscalar(stop)) or _arg(args, kwargs, 2, "num", 50) <= 1:
            return ()
        return ("linspace: any(step == 0)",)
    if name in DATA_DEPENDENT or (name == "where" and len(args) == 1 and not kwargs):
        first: Any = args[0] if args else next(iter(kwargs.values()), None)
        return ("xp.%s (result size)" % name,) if first is not None and np.size(first) else ()
    return ()


def method_syncs(name: str, a: np.ndarray, args: tuple, kwargs: dict) -> Tuple[str, ...]:
    """``hidden_syncs`` of the array method ``a.name(*args, **kwargs)`` (NumPy values)."""
    if name == "compress":
        return hidden_syncs(name, (_arg(args, kwargs, 0, "condition"), a), {})
    if name in ("nonzero", "repeat", "choose", "put"):
        return hidden_syncs(name, (a,) + tuple(args), kwargs)
    return ()


def hidden_uploads(name: str, args: tuple, kwargs: dict, method: bool = False):
    """``(why, host array)`` for each list that CuPy's ``name`` copies to the device (as an array)
    before its kernels run; ``method``: of the array method ``a.name(*args, **kwargs)``."""
    out = []
    for pos, method_pos, param in _LIST_PARAMS.get(name, ()):
        if method and method_pos is None:
            continue
        value = _arg(args, kwargs, method_pos if method else pos, param)
        if type(value) in (list, tuple):
            out.append(("%s: %s (a list)" % (name, param), np.asarray(value)))
    return out


def repeat_syncs(repeats) -> Tuple[str, ...]:
    """CuPy 14.2's ``repeat``: an integer repeats without a read; an array of them (a device array,
    or a list or tuple copied in) is read: one element with ``item()``, more by reading the total of
    their cumulative sum and their minimum (two reads; an empty one returns first)."""
    if repeats is None or isinstance(repeats, (int, np.integer)):
        return ()
    size = np.size(repeats)
    if size == 0:
        return ()
    if size == 1:
        return ("repeat: repeats.item()",)
    return ("repeat: int(cumsum(repeats)[-1])", "repeat: int(min(repeats))")


def randint_syncs(low, high, size) -> Tuple[str, ...]:
    """CuPy 14.2's ``RandomState.randint`` with numbers for bounds (``cupy/random/_generator.py``,
    ``_interval``): a range whose size is a power of two masks its draws (no read); another range
    rejects the draws above a limit, reading how many there are (``int(csum[-1])``): one read, and
    one more for each round of redraws (rare: a draw is rejected with a chance below
    ``range / 2**32``; the stand-in counts the first read only). No draws, or a range of one value,
    read nothing."""
    lo, hi = (0, int(low)) if high is None else (int(low), int(high))
    shape = () if size is None else ((size,) if isinstance(size, (int, np.integer)) else tuple(size))
    span = hi - lo
    if int(np.prod(shape, dtype=np.int64)) == 0 or span <= 1 or span & (span - 1) == 0:
        return ()
    return ("randint: the count of draws to redraw (int(csum[-1]))",)


def _histogram_syncs(a, bins, limits):
    """CuPy 14.2's ``histogram`` (``cupy/_statistics/histogram.py``): device bin edges are checked to
    increase (one read; host edges are checked on the host); a number of bins without ``range``
    takes the data's minimum and maximum on the device and reads whether each is finite (the second
    only if the first is) and whether they are equal, then ``linspace`` between them reads once."""
    if isinstance(bins, np.ndarray) and bins.ndim == 1:
        return ("histogram: the bins increase (any)",)
    if np.ndim(bins) or limits is not None or np.size(a) == 0:
        return ()
    low, high = np.min(a), np.max(a)
    reads = ("histogram: isfinite(min)",) + (("histogram: isfinite(max)",) if np.isfinite(low) else ())
    if not (np.isfinite(low) and np.isfinite(high)):
        return reads
    return reads + ("histogram: min == max", "linspace: any(step == 0)")


def _choose_syncs(a, choices, mode):
    if mode != "raise":
        return ()
    n = np.shape(choices)[0] if np.ndim(choices) else 0
    below = bool(np.all(np.asarray(a) < n))
    return ("choose: all(a < n)",) + (("choose: all(0 <= a)",) if below else ())


def _unique_syncs(args, kwargs):
    extra = tuple("xp.unique: %s (result size)" % k
                  for k, pos in (("return_index", 1), ("return_counts", 3)) if _arg(args, kwargs, pos, k))
    axis = _arg(args, kwargs, 4, "axis")
    ar = np.asarray(_arg(args, kwargs, 0, "ar"))
    if axis is None:
        return ("xp.unique (result size)",) + extra if ar.size else ()
    ar = np.moveaxis(ar, axis, 0)
    rows = ar.reshape(ar.shape[0], int(np.prod(ar.shape[1:])))
    if not rows.shape[0]:       # nothing to sort or select; the row count is read all the same
        return ("unique: the row count (item)",)
    return (("unique: the row order (tolist)",) + _axis_sort_syncs(rows) +
            ("xp.unique (result size)", "unique: the row count (item)") + extra)


def _axis_sort_syncs(rows):
    """The reads of CuPy's host quicksort of ``rows`` (2-D): per comparison of two rows, the first
    position where they differ (``trim_zeros``), then, if they differ, whether the first is smaller."""
    if rows.dtype.kind == "u":
        rows = rows.astype(np.intp)
    reads = []
    queue = [list(range(rows.shape[0]))]
    while queue:
        current = queue.pop(0)
        if not current:
            continue
        pivot, left, right = current[0], [], []
        for i in current[1:]:
            diff = rows[i] - rows[pivot]
            reads.append("unique: trim_zeros (item)")
            nz = np.flatnonzero(diff)
            smaller = False
            if nz.size:
                reads.append("unique: the comparison (bool)")
                smaller = bool(diff[nz[0]] < 0)
            (left if smaller else right).append(i)
        queue += [left, right]
    return tuple(reads)
