"""Ids, labels and indices checked against their bound on a device place without the host waiting.

On the host a kernel checks its ids eagerly (``int(ids.min())`` costs nothing there) and raises its
own error naming the id and the tensor. On a device that read would make the host wait for the device
at every step, so there a kernel instead

- clips each id into ``[0, bound)`` (:func:`clip_ids`: one launch), so that no gather or scatter
  leaves the array (CuPy would wrap such an index silently; the stand-in refuses it), and
- where an id was out of range, makes its rows of the result NaN (:func:`ids_or_mask` gives the
  mask, :func:`nan_where` applies it; :func:`nan_if_any` makes all of a scatter's result NaN, as its
  lost rows have no place of their own): the fetched loss shows the mistake, as
  ``softmax_with_cross_entropy`` does for labels. A gradient kernel only clips
  (:func:`ids_or_clipped`): its forward op already reported the id.

``lookup_table`` does all three in one fused kernel for float tables (:func:`.device_fused.lookup_rows`:
the same rows, in one launch instead of four). A negative id read as an unsigned integer is a huge
one, so one comparison finds ids on both sides.
A result that cannot hold NaN (an integer gather, an integer one-hot) has no way to show the mistake:
there the kernel checks on the host after all, reading back.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np


def _unsigned(flat):
    return flat.view(np.uint64)


def clip_ids(xp: Any, flat: Any, bound: int) -> Any:
    """``flat`` (1-D int64 on ``xp``'s place) with each id outside ``[0, bound)`` made ``bound - 1``:
    one launch, nothing read back."""
    return xp.minimum(_unsigned(flat), max(bound - 1, 0)).view(np.int64)


def out_of_range(xp: Any, flat: Any, bound: int) -> Any:
    """The mask of the ids of ``flat`` (int64) outside ``[0, bound)``: one launch."""
    return _unsigned(flat) >= bound


def checked_ids(xp: Any, flat: Any, bound: int) -> Tuple[Any, Any]:
    """(``clip_ids(xp, flat, bound)``, ``out_of_range(xp, flat, bound)``): two launches."""
    return clip_ids(xp, flat, bound), out_of_range(xp, flat, bound)


def _on_host(xp, ids, bound, dtype):
    return xp is np or bound <= 0 or ids.dtype.kind not in "iu" or \
        (dtype is not None and np.dtype(dtype).kind not in "fc")


def ids_or_mask(xp: Any, ids: Any, bound: int, host_ids: Callable[[], Any],
                dtype: Any = None) -> Tuple[Any, Optional[Any]]:
    """The ids of the tensor ``ids`` for a kernel whose result has ``dtype``: (flat int64 ids, the mask
    of those outside ``[0, bound)`` or None).

    On the host, for ids that are not integers (``host_ids`` names that mistake), for an empty bound
    (no row any id could name) and for a result that cannot hold NaN: ``(host_ids(), None)``, where
    ``host_ids()`` is the kernel's own check (it raises its error for an id out of range). On a
    device otherwise: the ids clipped into range and the mask, in two launches."""
    if _on_host(xp, ids, bound, dtype):
        return host_ids(), None
    return checked_ids(xp, ids.reshape(-1).astype(np.int64, copy=False), bound)


def ids_or_clipped(xp: Any, ids: Any, bound: int, host_ids: Callable[[], Any]) -> Any:
    """A gradient kernel's flat int64 ids: ``host_ids()`` (checked) on the host; on a device clipped
    into ``[0, bound)`` in one launch (the forward op made its result NaN for an id out of range)."""
    if _on_host(xp, ids, bound, None):
        return host_ids()
    return clip_ids(xp, ids.reshape(-1).astype(np.int64, copy=False), bound)


def nan_where(xp: Any, bad: Optional[Any], out: Any, axis: int = 0) -> Any:
    """``out`` with NaN in the slices along ``axis`` whose entry of ``bad`` (1-D, one per slice, or
    ``out``'s leading shape) is True; ``out`` itself when ``bad`` is None (the host checked)."""
    if bad is None:
        return out
    shape = [1] * out.ndim
    if bad.ndim == 1:
        shape[axis] = bad.shape[0]
    else:
        shape[:bad.ndim] = bad.shape
    return xp.where(bad.reshape(shape), out.dtype.type(np.nan), out)


def nan_if_any(xp: Any, bad: Optional[Any], out: Any) -> Any:
    """``out``, all NaN if any entry of ``bad`` is True (two launches); itself when ``bad`` is None."""
    if bad is None:
        return out
    return xp.where(bad.any(), out.dtype.type(np.nan), out)
