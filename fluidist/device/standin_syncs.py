"""The synchronisations CuPy makes inside its own functions, counted by the stand-in as CuPy's code
makes them (read from CuPy 14's sources: ``cupy/_statistics/histogram.py``,
``cupy/_manipulation/add_remove.py``, ``cupy/_sorting/search.py``, ``cupy/_core``).

Each is a value read from the device to decide something on the host, so each makes the host wait:

- a result whose size depends on the data (``nonzero``, ``argwhere``, ``flatnonzero``, ``compress``,
  ``extract``, ``where`` with one argument, a boolean mask) reads its size: one;
- ``bincount`` checks ``(x < 0).any()`` and reads ``int(x.max()) + 1``: two (one for an empty input,
  which returns after the check);
- ``unique`` of a flat array selects with a mask (one), ``return_index`` selects again (one),
  ``return_counts`` calls ``nonzero`` (one); along an axis it sorts the rows with a quicksort run on
  the host: the row order is read (``tolist``), each comparison reads the first non-zero position of
  a difference (``trim_zeros``) and, where the rows differ, its sign; then the mask selection, the
  row count (``.item()``) and the extra outputs' selections;
- ``shares_memory`` runs a kernel and reads its answer.

``may_share_memory`` compares the arrays' address ranges on the host: no synchronisation.
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

# functions whose result's size depends on the data: CuPy reads a count from the device for them
DATA_DEPENDENT = frozenset(("nonzero", "argwhere", "flatnonzero", "compress", "extract"))


def hidden_syncs(name: str, args: tuple, kwargs: dict) -> Tuple[str, ...]:
    """Why CuPy's ``name`` called with these (NumPy) arguments waits for the device, once per item."""
    if name == "bincount":
        x: Any = args[0] if args else kwargs.get("x")
        return ("bincount: any(x < 0)",) if np.size(x) == 0 else ("bincount: any(x < 0)", "bincount: max(x) + 1")
    if name == "unique":
        return _unique_syncs(args, kwargs)
    if name == "shares_memory":
        return ("shares_memory: bool(any(...))",)
    if name in DATA_DEPENDENT or (name == "where" and len(args) == 1 and not kwargs):
        return ("xp.%s (result size)" % name,)
    return ()


def _unique_syncs(args, kwargs):
    def option(name, pos):
        return kwargs[name] if name in kwargs else (args[pos] if len(args) > pos else None)
    extra = tuple("xp.unique: %s (result size)" % k
                  for k, pos in (("return_index", 1), ("return_counts", 3)) if option(k, pos))
    axis = option("axis", 4)
    if axis is None:
        return ("xp.unique (result size)",) + extra
    ar = np.moveaxis(np.asarray(args[0] if args else kwargs["ar"]), axis, 0)
    rows = ar.reshape(ar.shape[0], -1) if ar.shape[0] else ar.reshape(0, 0)
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
