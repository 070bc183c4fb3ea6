"""Indexing rules of the stand-in device, as CuPy 14.1's (``cupy/_core/_routines_indexing.pyx``), on
the NumPy values behind device arrays.

- A *basic* index (integers, slices, ``None``, ``...``) gives a view; assigning through it a value
  that is not a device array is a *fill*: only a scalar is accepted (a host array or a list of more
  than one value raises ValueError, so host data never enters a device array unnoticed).
- An *advanced* index (integer or boolean arrays, lists) is a gather or a scatter kernel. A scatter
  that combines (``add`` / ``subtract`` / ``maximum`` / ``minimum`` / ``bitwise_*``, behind
  ``ufunc.at`` and ``ndarray.scatter_*``) exists for the dtypes of CUDA's atomics only
  (:data:`SCATTER_DTYPES`).
- Under the opt-in GPU semantics (:mod:`fluidist.device.standin_cuda`), integer indices wrap around
  and writes through repeated indices land in a random order.
"""
from __future__ import annotations

import numpy as np

from .standin_cuda import semantics_rng

_I32_64 = ("int32", "int64", "uint32", "uint64")
# the dtypes of the array written, per scatter operation, for which CuPy >= 14.1 has an atomic kernel
SCATTER_DTYPES = {
    "add": frozenset(np.dtype(t) for t in _I32_64 + ("float16", "float32", "float64")),
    "subtract": frozenset(np.dtype(t) for t in ("int32", "uint32")),
    "maximum": frozenset(np.dtype(t) for t in _I32_64 + ("float32", "float64")),
    "minimum": frozenset(np.dtype(t) for t in _I32_64 + ("float32", "float64")),
    "bitwise_and": frozenset(np.dtype(t) for t in _I32_64),
    "bitwise_or": frozenset(np.dtype(t) for t in _I32_64),
    "bitwise_xor": frozenset(np.dtype(t) for t in _I32_64),
}


def check_scatter_dtype(op: str, dtype, what: str) -> None:
    """Refuse, as CuPy does (TypeError), a combining scatter of ``op`` into an array of ``dtype``."""
    allowed = SCATTER_DTYPES[op]
    if np.dtype(dtype) not in allowed:
        raise TypeError("%s: CuPy's %s.at (a scatter through CUDA atomics) supports %s only, got %s"
                        % (what, op, ", ".join(sorted(str(t) for t in allowed)), np.dtype(dtype)))


def is_advanced(key) -> bool:
    """Whether a NumPy index selects with arrays or lists (a gather / scatter, not a view)."""
    parts = key if type(key) is tuple else (key,)
    return any(isinstance(k, (np.ndarray, list)) for k in parts)


def has_integer_array(key) -> bool:
    parts = key if type(key) is tuple else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype.kind in "iu" for k in parts)


def fill_value(value, dtype):
    """The scalar a basic-index assignment of the host value ``value`` fills with: CuPy's ``fill``
    takes a scalar (or a 0-d array) only."""
    v = np.asarray(value, dtype=dtype)
    if v.shape != ():
        raise ValueError("non-scalar numpy.ndarray cannot be used for fill: a host value of shape %s assigned "
                         "through a basic index (a[i:j] = ..., a[...] = ...) into a device array; CuPy takes only a "
                         "scalar there. Copy it to the device first (xp.asarray, or the Place)" % list(v.shape))
    return v


def wrap_index(key, shape):
    """``key`` (a NumPy index into an array of ``shape``) with its integer arrays taken modulo the
    size of the axis each indexes, as CuPy's gather and scatter kernels do."""
    parts = key if type(key) is tuple else (key,)
    consumed = sum(_axes_of(k) for k in parts)
    out, axis = [], 0
    for k in parts:
        if k is Ellipsis:
            axis += len(shape) - consumed
            out.append(k)
            continue
        if isinstance(k, np.ndarray) and k.dtype.kind in "iu" and axis < len(shape) and shape[axis]:
            k = k % shape[axis]
        out.append(k)
        axis += _axes_of(k)
    return tuple(out) if type(key) is tuple else out[0]


def _axes_of(k):
    if k is None or k is Ellipsis:
        return 0
    if isinstance(k, np.ndarray) and k.dtype == np.bool_:
        return k.ndim
    return 1


def scrambled_setitem(a, key, value) -> None:
    """``a[key] = value`` with the writes through repeated indices made in a random order (a GPU's
    scatter gives no winner among them)."""
    flat = np.arange(a.size).reshape(a.shape)[key]
    vals = np.broadcast_to(np.asarray(value, dtype=a.dtype), flat.shape).reshape(-1)
    flat = flat.reshape(-1)
    order = semantics_rng().permutation(flat.size)
    a.flat[flat[order]] = vals[order]


def scrambled_put(a, indices, values, mode="wrap") -> None:
    """``a.put(indices, values, mode)`` as CuPy's put kernels (``_ndarray_put``) do it, the writes in
    a random order: nothing where ``values`` is empty (CuPy returns first); ``values`` repeated to the
    length of the flat ``indices``; "wrap" takes the indices modulo ``a.size``, "clip" clips them into
    ``[0, a.size)``, "raise" writes the entries in ``[-a.size, a.size)`` and then raises IndexError
    where any other is left (its kernel flags them, and the flag is read after)."""
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError("clipmode not understood")
    vals = np.asarray(values, dtype=a.dtype).reshape(-1)
    if vals.size == 0:
        return
    idx = np.asarray(indices).reshape(-1).astype(np.int64)
    vals = np.resize(vals, idx.shape)
    n = a.size
    valid = None
    if mode == "raise":
        valid = (idx >= -n) & (idx < n)
        idx, vals = idx[valid] % max(n, 1), vals[valid]
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    else:
        idx = idx % max(n, 1)
    order = semantics_rng().permutation(idx.size)
    a.flat[idx[order]] = vals[order]
    if valid is not None and not valid.all():
        raise IndexError("invalid entry in indices array")
