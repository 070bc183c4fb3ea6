"""Fused device kernels: one launch where the array module's calls would take several.

On a GPU each kernel launch costs the host a few microseconds whatever the size, so a step of small
arrays is bounded by its count of launches. A :class:`FusedKernel` does in one launch what a kernel
would otherwise write as a chain of array-module calls (a gather and its id check, a product of
three factors), with two bodies that compute the same numbers:

- a CUDA body, a CuPy ``ElementwiseKernel`` (``in_params``, ``out_params``, ``operation``: CuPy's
  own notation), compiled the first time a place of CuPy calls it;
- a NumPy body (``host``), which is the kernel on the stand-in device (``xp.kernel``: device arrays
  in and out, one counted launch) and the reference the CUDA body is tested against.

On the stand-in the call is refused as CuPy refuses it (``TypeError``) where the arguments do not fit
the parameters: their count, a type placeholder (``T``) bound to two dtypes, an array of another
dtype than its parameter's, a host array anywhere. Kernels call fused kernels on device places only;
the host keeps its own code, so the CPU's numbers and errors do not depend on them.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

__all__ = ["FusedKernel", "is_cupy"]


def is_cupy(xp: Any) -> bool:
    """Whether ``xp`` is CuPy itself (not the stand-in device's module, not NumPy)."""
    return getattr(xp, "__name__", "") == "cupy"


def _params(spec: str):
    """CuPy's parameter list ``"raw T a, int64 n"`` as (raw, type, name) triples."""
    out = []
    for part in spec.split(","):
        words = part.split()
        raw = words[0] == "raw"
        words = words[1:] if raw else words
        out.append((raw, words[0], words[1]))
    return out


class FusedKernel:
    """One device launch computing ``host(*inputs)``: CuPy's ``ElementwiseKernel(in_params,
    out_params, operation, name)`` on a GPU, ``host`` on the stand-in device and on the host.

    ``out_params`` names one output. Its shape is that of the non-``raw`` inputs broadcast together,
    or, where every array input is ``raw``, ``out_shape`` given to the call (with ``out_dtype``)."""

    def __init__(self, name: str, in_params: str, out_params: str, operation: str,
                 host: Callable[..., Any]) -> None:
        self.name = name
        self.in_params = in_params
        self.out_params = out_params
        self.operation = operation
        self.host = host
        self._inputs = _params(in_params)
        self._outputs = _params(out_params)
        self._compiled: Any = None      # CuPy's ElementwiseKernel, made at its first call

    def __call__(self, xp: Any, *inputs: Any, out_shape: Optional[Sequence[int]] = None,
                 out_dtype: Any = None) -> Any:
        if xp is np:
            return self.host(*inputs)
        if is_cupy(xp):
            if self._compiled is None:
                self._compiled = xp.ElementwiseKernel(self.in_params, self.out_params, self.operation, self.name)
            if out_shape is None:
                return self._compiled(*inputs)
            return self._compiled(*inputs, xp.empty(tuple(out_shape), dtype=out_dtype))
        self._check(inputs, out_dtype)
        return xp.kernel(self.host)(*inputs)

    def _check(self, inputs, out_dtype):
        """Refuse, as CuPy's ElementwiseKernel does (TypeError), arguments that do not fit: their
        count, an array's dtype other than its parameter's, a type placeholder bound to two dtypes
        (the output's first, as CuPy binds it)."""
        if len(inputs) != len(self._inputs):
            raise TypeError("Wrong number of arguments for %r: %d given, %d expected"
                            % (self.name, len(inputs), len(self._inputs)))
        bound = {}
        typed = [(typ, pname, out_dtype) for _, typ, pname in self._outputs] + \
            [(typ, pname, getattr(value, "dtype", None)) for (_, typ, pname), value in zip(self._inputs, inputs)]
        for typ, pname, dtype in typed:
            if dtype is None:      # (a scalar: CuPy casts it to its parameter's type)
                continue
            want = bound.setdefault(typ, np.dtype(dtype)) if len(typ) == 1 else np.dtype(typ)
            if want != np.dtype(dtype):
                raise TypeError("Type is mismatched: parameter %r of %r is %s, its type %s is %s"
                                % (pname, self.name, np.dtype(dtype), typ, want))
