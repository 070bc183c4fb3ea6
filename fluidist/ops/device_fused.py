"""Ops' fused device kernels (:class:`~fluidist.device.fused_kernels.FusedKernel`): one launch on a
device for what would otherwise take a chain of array-module calls, the numbers unchanged.

- :func:`lookup_rows`: ``lookup_table``'s rows with its check of ids and its padding rows: the
  gather, the rows of ids outside ``[0, height)`` made NaN (see :mod:`.device_ids`), the padding
  id's rows zero: one launch instead of four (clip, compare, gather, where);
- :func:`square_grad`: ``dOut * 2 * X``: one launch instead of two;
- :func:`negated_product`: ``g * -lr`` (the row-wise SGD update added through ``add.at``, as CuPy
  has no float ``subtract.at``): one launch instead of two.

Each applies to float32 and float64 values of one dtype on a device; elsewhere (the host, other
dtypes) the caller's own array-module code runs, so the host's numbers and errors are untouched.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..device.fused_kernels import FusedKernel

_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_NO_PADDING = -1


def _fits(xp: Any, *arrays: Any) -> bool:
    """Whether a fused kernel takes ``arrays``: on a device, all of one float32 / float64 dtype."""
    if xp is np:
        return False
    dtype = arrays[0].dtype
    return dtype in _FUSED_DTYPES and all(a.dtype == dtype for a in arrays)


def _lookup_rows_host(table, ids, height, width, pad):
    """NumPy's body of :data:`_LOOKUP_ROWS` (``width``: the CUDA body's, implied here by ``table``)."""
    bad = (ids < 0) | (ids >= height)
    out = np.take(table, np.where(bad, 0, ids), axis=0)
    if pad != _NO_PADDING:
        out[ids == pad] = 0
    out[bad] = np.nan
    return out


_LOOKUP_ROWS = FusedKernel(
    "fluidist_lookup_rows", "raw T table, raw I ids, int64 height, int64 width, int64 pad", "T out",
    """
    const long long row = i / width;
    const long long key = static_cast<long long>(ids[row]);
    if (key < 0 || key >= height) {
        out = static_cast<T>(__longlong_as_double(0x7ff8000000000000LL));
    } else if (key == pad) {
        out = static_cast<T>(0);
    } else {
        out = table[key * width + (i - row * width)];
    }
    """, _lookup_rows_host)


def lookup_rows(xp: Any, table: Any, ids: Any, pad: Optional[int]) -> Optional[Any]:
    """The rows ``[len(ids), width]`` of the 2-D ``table`` for the flat integer ``ids``, on a device in
    one launch: NaN rows for ids outside ``[0, rows of table)`` (the device's report of a bad id, as
    :mod:`.device_ids` gives it), zero rows for the padding id ``pad`` (None: no padding). None where
    it does not apply (the host, a table that is not float32 / float64, non-integer ids, an empty
    table): the caller's own check and gather run there."""
    if not _fits(xp, table) or ids.dtype.kind not in "iu" or table.shape[0] == 0:
        return None
    height, width = table.shape
    return _LOOKUP_ROWS(xp, table, ids, height, width, _NO_PADDING if pad is None else pad,
                        out_shape=(ids.shape[0], width), out_dtype=table.dtype)


_SQUARE_GRAD = FusedKernel("fluidist_square_grad", "T d, T x", "T dx", "dx = d * static_cast<T>(2) * x",
                           lambda d, x: d * 2 * x)


def square_grad(xp: Any, d: Any, x: Any) -> Any:
    """``d * 2 * x`` (square's gradient, Paddle's formula in its order): one launch on a device."""
    return _SQUARE_GRAD(xp, d, x) if _fits(xp, d, x) else d * 2 * x


_NEGATED_PRODUCT = FusedKernel("fluidist_negated_product", "T g, T lr", "T out", "out = g * -lr",
                               lambda g, lr: g * -lr)


def negated_product(xp: Any, g: Any, lr: Any) -> Any:
    """``g * -lr`` (``lr``: one value, a 0-d array): one launch on a device."""
    return _NEGATED_PRODUCT(xp, g, lr) if _fits(xp, g, lr) else g * -lr
