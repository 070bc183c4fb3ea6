"""A stand-in GPU: run fluidist programs as if on CUDA, on any machine, and see what only a GPU would.

CuPy refuses to mix host (NumPy) and device arrays, has no ``flags.writeable``, returns 0-d arrays
from reductions and makes every host read of a device value a synchronisation. Code written against
NumPy alone meets these differences only on a GPU. The stand-in device brings them to any machine:

- :data:`xp` is an array module with NumPy's numerics and CuPy's manners: its functions take device
  arrays (:class:`StandinArray`) and refuse host ones, except ``array`` / ``asarray`` /
  ``asanyarray``, which copy host data in (counted); names CuPy lacks are missing.
- :class:`StandinPlace` is a Place whose kernels get :data:`xp`: ``fluid.Executor(StandinPlace())``
  runs a program there, feeds and fetches crossing through the place.
- :func:`count_transfers` records every copy each way, explicit or hidden (see
  :mod:`fluidist.device.transfers`).

``FLUIDIST_TEST_DEVICE=standin`` makes every ``fluid.CPUPlace()`` a script or test creates a
``StandinPlace`` (see ``docs/guide/standin.md``).
"""
from __future__ import annotations

import contextlib
import inspect
import types

import numpy as np

from . import transfers
from .standin_array import (HOST_PARAMS, StandinArray, _check_scatter_dtype, data_dependent_size,  # noqa: F401
                            host_array_error, host_param, index_for_device, value_for_device, wrap, wrap_result)
from .transfers import Transfer, TransferLog, count_transfers, totals  # noqa: F401

__all__ = ["StandinPlace", "StandinArray", "xp", "count_transfers", "totals", "Transfer", "TransferLog"]

# NumPy top-level callables that CuPy 14 does not provide (read from cupy/__init__.py): code that runs
# on the stand-in must not need them
NOT_IN_CUPY = frozenset((
    "asmatrix", "block", "bmat", "busday_count", "busday_offset", "datetime_as_string", "datetime_data",
    "einsum_path", "frompyfunc", "fromregex", "geomspace", "get_include", "getbufsize", "geterr", "geterrcall",
    "histogram_bin_edges", "info", "insert", "is_busday", "isnat", "matvec", "nanpercentile", "nanquantile",
    "nested_iters", "polyder", "polydiv", "polyint", "setbufsize", "seterr", "seterrcall", "show_runtime",
    "spacing", "test", "unstack", "vecdot", "vecmat"))
# functions that copy host data in (counted host-to-device transfers)
_FROM_HOST = frozenset(("array", "asarray", "asanyarray"))
# functions about dtypes and shapes: their results are not arrays
_METADATA = frozenset(("result_type", "can_cast", "promote_types", "dtype", "iinfo", "finfo", "issubdtype",
                       "isscalar", "ndim", "shape", "size", "min_scalar_type", "common_type", "broadcast_shapes",
                       "isdtype", "get_printoptions", "set_printoptions", "printoptions", "errstate"))
# functions whose result's size depends on the data: CuPy reads a count from the device for them
_DATA_DEPENDENT = frozenset(("nonzero", "argwhere", "flatnonzero", "unique", "compress", "extract"))
# CuPy's ufunc methods exist for these ufuncs only (others raise NotImplementedError there)
_UFUNC_METHODS = {"reduce": ("add", "multiply"), "accumulate": ("add", "multiply"), "reduceat": ("add",),
                  "at": ("add", "maximum", "minimum")}


def _device_args(what, values, allow_lists=True, names=()):
    """NumPy values for the arguments of a device function: device arrays unwrapped, host arrays
    refused, except for parameters that CuPy reads on the host (shapes, axes, split points: see
    ``host_param``); ``names`` are the parameters' names, in order."""
    out = []
    for i, v in enumerate(values):
        if i < len(names) and names[i] in HOST_PARAMS:
            out.append(host_param(v))
            continue
        if type(v) is StandinArray:
            v = v._a
        elif isinstance(v, np.ndarray):
            raise host_array_error(what, v)
        elif type(v) in (list, tuple):
            if not allow_lists:
                raise TypeError("%s: unsupported operand type %s (CuPy's ufuncs take device arrays and scalars)"
                                % (what, type(v).__name__))
            v = type(v)(_device_args(what, v))
        out.append(v)
    return out


def _device_kwargs(what, kwargs):
    return {k: (host_param(v) if k in HOST_PARAMS else _device_args(what, [v])[0]) for k, v in kwargs.items()}


def _positional_names(fn):
    """The names of ``fn``'s positional parameters (empty where NumPy gives no signature)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _any_device(values):
    for v in values:
        if type(v) is StandinArray:
            return True
        if type(v) in (list, tuple) and _any_device(v):
            return True
    return False


def _result(res, args, kwargs):
    out = kwargs.get("out")
    if type(out) is StandinArray and res is out._a:
        return out
    if isinstance(res, (bool, int, float)) and not isinstance(res, np.generic) and \
            (_any_device(args) or _any_device(kwargs.values())):
        return wrap(np.asarray(res))      # CuPy answers with a 0-d device array
    return wrap_result(res)


def _function(qualname, fn):
    name = qualname.rpartition(".")[2]
    what = "xp.%s" % qualname

    names = _positional_names(fn)

    def device_function(*args, **kwargs):
        if name in _DATA_DEPENDENT or (name == "where" and len(args) == 1 and not kwargs):
            data_dependent_size(what)
        res = fn(*_device_args(what, args, names=names), **_device_kwargs(what, kwargs))
        return _result(res, args, kwargs)
    device_function.__name__ = name
    device_function.__qualname__ = qualname
    device_function.__doc__ = "``numpy.%s`` on stand-in device arrays (host arrays refused)." % qualname
    return device_function


def _from_host(name, fn):
    def from_host(obj, *args, **kwargs):
        if type(obj) is StandinArray:
            res = fn(obj._a, *args, **kwargs)
            if res is obj._a:
                return wrap(res.copy()) if name == "array" else obj
            return wrap(res)
        if _any_device([obj]):      # a list of device arrays: stacked on the device
            return wrap(np.asarray(fn(_device_args("xp." + name, [obj])[0], *args, **kwargs)))
        host = fn(obj, *args, **kwargs)
        transfers.record("h2d", False, name, host)
        return wrap(np.array(host, copy=True))
    from_host.__name__ = name
    from_host.__doc__ = "``%s`` onto the stand-in device: host data is copied in (a counted transfer)." % name
    return from_host


class StandinUfunc:
    """A NumPy ufunc on device arrays, with CuPy's rules: operands are device arrays or scalars (host
    arrays and lists raise TypeError), and ``reduce`` / ``accumulate`` / ``reduceat`` / ``at`` exist
    only where CuPy has them."""

    def __init__(self, ufunc):
        self._u = ufunc
        self.__name__ = ufunc.__name__
        self.nin, self.nout = ufunc.nin, ufunc.nout

    def _what(self, method=""):
        return "xp.%s%s" % (self.__name__, "." + method if method else "")

    def __call__(self, *args, **kwargs):
        what = self._what()
        res = self._u(*_device_args(what, args, allow_lists=False), **_device_kwargs(what, kwargs))
        return _result(res, args, kwargs)

    def outer(self, a, b, **kwargs):
        what = self._what("outer")
        return _result(self._u.outer(*_device_args(what, (a, b)), **_device_kwargs(what, kwargs)), (a, b), kwargs)

    def _supported(self, method):
        if self.__name__ not in _UFUNC_METHODS[method]:
            raise NotImplementedError("%s is not supported on a device (CuPy has it for %s only)"
                                      % (self._what(method), ", ".join(_UFUNC_METHODS[method])))

    def _method(self, method, args, kwargs):
        self._supported(method)
        what = self._what(method)
        return getattr(self._u, method)(*_device_args(what, args), **_device_kwargs(what, kwargs))

    def reduce(self, *args, **kwargs):
        return _result(self._method("reduce", args, kwargs), args, kwargs)

    def accumulate(self, *args, **kwargs):
        return _result(self._method("accumulate", args, kwargs), args, kwargs)

    def reduceat(self, *args, **kwargs):
        return _result(self._method("reduceat", args, kwargs), args, kwargs)

    def at(self, a, indices, b=None):
        if type(a) is not StandinArray:
            raise host_array_error(self._what("at"), a)
        if self.__name__ == "add":
            _check_scatter_dtype("xp.add.at", a.dtype)
        self._supported("at")
        self._u.at(a._a, index_for_device(indices), *(() if b is None else (value_for_device(b, "scatter value"),)))

    def __repr__(self):
        return "<stand-in ufunc %r>" % self.__name__


class StandinModule(types.ModuleType):
    """An array module over NumPy with CuPy's rules (see the package docstring). Attributes are made
    on first use: ufuncs, functions and submodules wrapped; dtypes and constants as NumPy's."""

    def __init__(self, name, numpy_module, prefix=""):
        super().__init__(name, "The stand-in device's array module (NumPy's numerics, CuPy's rules).")
        self._numpy = numpy_module
        self._prefix = prefix

    def __getattr__(self, name):
        if name.startswith("__") or (not self._prefix and name in NOT_IN_CUPY):
            raise AttributeError("the stand-in array module has no %r (%s)" % (
                name, "CuPy lacks it" if name in NOT_IN_CUPY else "not an array function"))
        try:
            target = getattr(self._numpy, name)
        except AttributeError:
            raise AttributeError("the stand-in array module has no %r (NumPy has none either)" % name) from None
        value = self._make(name, target)
        setattr(self, name, value)
        return value

    def _make(self, name, target):
        qual = self._prefix + name
        if isinstance(target, np.ufunc):
            return StandinUfunc(target)
        if isinstance(target, types.ModuleType):
            return StandinModule("%s.%s" % (self.__name__, name), target, qual + ".")
        if isinstance(target, type):
            return StandinArray if target is np.ndarray else target
        if not callable(target) or name in _METADATA:
            return target
        if name in _FROM_HOST and not self._prefix:
            return _from_host(name, target)
        return _function(qual, target)

    # what CuPy has and NumPy has not
    @staticmethod
    def asnumpy(a, stream=None, order="C", out=None):
        """A host copy of device array ``a`` (an explicit transfer); a host value is returned as NumPy's."""
        if type(a) is StandinArray:
            return a.get(stream, order, out)
        return np.asarray(a, order=order)

    @staticmethod
    def get_array_module(*args):
        return xp if _any_device(args) else np

    @staticmethod
    def kernel(fn):
        """``fn`` (a function of NumPy arrays) as a device kernel: device arrays in, device arrays out,
        no transfer (what a CuPy ``ElementwiseKernel`` or a cupyx routine is on a GPU)."""
        def device_kernel(*args, **kwargs):
            return wrap_result(fn(*_device_args("kernel", args), **_device_kwargs("kernel", kwargs)))
        return device_kernel


xp = StandinModule("fluidist.device.standin.xp", np)


class StandinPlace:
    """A Place on the stand-in device: kernels get :data:`xp`; values cross from and to the host only
    through :meth:`to_device` and :meth:`to_host`, each copy counted (:func:`count_transfers`).

    Equal to another ``StandinPlace`` with the same ``device_id``; never to a ``CPUPlace`` or a
    ``CUDAPlace``."""

    is_device = True
    kind = "standin"

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = int(device_id)

    @property
    def xp(self):
        return xp

    def owns(self, value) -> bool:
        """Whether ``value`` is an array of this place."""
        return type(value) is StandinArray

    def to_device(self, value, into=None):
        """``value`` (a host array, or one of this place) as an array of this place; with ``into``
        (an array of this place of the same shape and dtype), copied into it."""
        if into is not None:
            if type(value) is StandinArray:
                into[...] = value
            else:
                into.set(np.asarray(value))
            return into
        if type(value) is StandinArray:
            return value
        host = np.asarray(value)
        transfers.record("h2d", False, "to_device", host)
        return wrap(np.array(host, copy=True))

    def to_host(self, value):
        """A NumPy array for an array of this place (a host array is returned as it is)."""
        if type(value) is StandinArray:
            return value.get()
        return value

    def device_context(self):
        return contextlib.nullcontext()

    def __eq__(self, other):
        return isinstance(other, StandinPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(("standin", self.device_id))

    def __repr__(self):
        return "StandinPlace(%d)" % self.device_id
