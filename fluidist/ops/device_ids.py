"""Ids, labels and indices checked against their bound on a device place without the host waiting.

On the host a kernel checks its ids eagerly (``int(ids.min())`` costs nothing there) and raises its
own error naming the id and the tensor. On a device that read would make the host wait for the device
at every step, so there a kernel instead

- clips each id into ``[0, bound)`` (:func:`clip_ids`: one launch), so that no gather or scatter
  leaves the array (CuPy would wrap such an index silently; the stand-in refuses it), and
- where an id was out of range, makes its rows of the result NaN (:func:`checked_ids` gives the mask,
  :func:`nan_where` applies it): the fetched loss shows the mistake, as ``softmax_with_cross_entropy``
  does for labels. A gradient kernel only clips (its forward op already reported the id).

A negative id read as an unsigned integer is a huge one, so one comparison finds ids on both sides.
An integer result cannot hold NaN: there the kernel checks on the host, reading back
(:func:`needs_host_check`).
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
    """The mask of the ids of ``flat`` (1-D int64) outside ``[0, bound)``: one launch."""
    return _unsigned(flat) >= bound


def checked_ids(xp: Any, flat: Any, bound: int) -> Tuple[Any, Any]:
    """(``clip_ids(xp, flat, bound)``, ``out_of_range(xp, flat, bound)``): two launches, nothing
    read back."""
    return clip_ids(xp, flat, bound), out_of_range(xp, flat, bound)


def ids_or_mask(xp: Any, flat: Any, bound: int, host_check: Callable[[], None]) -> Tuple[Any, Optional[Any]]:
    """On the host: ``host_check()`` (it raises the op's own error for an id out of range) and
    ``(flat, None)``. On a device: ``checked_ids(xp, flat, bound)``, or with an empty bound (no row
    any id could name) the host check after all."""
    if xp is np or bound <= 0:
        host_check()
        return flat, None
    return checked_ids(xp, flat, bound)


def needs_host_check(xp: Any, dtype: Any) -> bool:
    """Whether a kernel whose result has ``dtype`` checks its ids on the host even on a device: the
    host always does, and a result that cannot hold NaN has no other way to report an id out of
    range (an integer gather, an integer one-hot)."""
    return xp is np or np.dtype(dtype).kind not in "fc"


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
