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

``fluidist.device.use("standin")`` makes every ``fluid.CPUPlace()`` a script creates afterwards a
``StandinPlace`` (see ``docs/guide/devices.md``).
"""
from __future__ import annotations

import inspect
import operator
import types
from typing import Any

import numpy as np

from . import transfers
from .base import Place
from .standin_array import (HOST_PARAMS, StandinArray, data_dependent_size, holds_new_array,  # noqa: F401
                            host_array_error, host_param, on_device, wrap, wrap_result)
from .standin_cuda import Device, cuda, current_device, gpu_semantics, gpu_semantics_enabled  # noqa: F401
from .standin_index import SCATTER_DTYPES
from .standin_syncs import DEVICE_PARAMS, UNREAD_PARAMS, hidden_syncs, hidden_uploads, randint_syncs
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
_device_of = operator.attrgetter("_dev")     # a stand-in array's device id
_COUNT = np.zeros((), np.int64)      # what a hidden synchronisation reads: a count or a flag
# CuPy's ufunc methods exist for these ufuncs only (others raise NotImplementedError there)
_UFUNC_METHODS = {"reduce": ("add", "multiply"), "accumulate": ("add", "multiply"), "reduceat": ("add",),
                  "at": tuple(SCATTER_DTYPES)}
# functions CuPy answers on the host, from the arrays' metadata (no kernel, no synchronisation)
# (``shares_memory`` reads its answer from a kernel: a synchronisation)
_HOST_RESULTS = frozenset(("may_share_memory", "shares_memory", "iscomplexobj", "isrealobj", "isfortran"))
# functions that allocate or give views without a kernel
_NO_KERNEL = frozenset(("empty", "empty_like", "broadcast_to", "broadcast_arrays", "expand_dims", "squeeze",
                        "moveaxis", "swapaxes", "transpose", "atleast_1d", "atleast_2d", "atleast_3d", "split",
                        "array_split", "hsplit", "vsplit", "dsplit"))
# positional parameters of functions whose signature NumPy does not give (C functions)
_POSITIONAL = {"arange": ("start", "stop", "step"), "empty": ("shape",), "zeros": ("shape",),
               "ones": ("shape",), "full": ("shape",)}


def _device_args(what, values, cur, found, allow_lists=True, names=(), host=HOST_PARAMS, unread=frozenset()):
    """NumPy values for the arguments of a device function: device arrays (of the current device
    ``cur``) unwrapped and appended to ``found``, host arrays refused, except for the parameters
    ``host`` that CuPy reads on the host (shapes, axes, sizes: see ``host_param``), and those of them
    (``unread``) it takes as host values or device arrays without reading them; ``names`` are the
    parameters' names, in order."""
    out = []
    for i, v in enumerate(values):
        if i < len(names) and names[i] in host:
            out.append(on_device(v, cur, what) if names[i] in unread and type(v) is StandinArray else host_param(v))
            continue
        if type(v) is StandinArray:
            v = on_device(v, cur, what)
            found.append(v)
        elif isinstance(v, np.ndarray):
            raise host_array_error(what, v)
        elif type(v) in (list, tuple):
            if not allow_lists:
                raise TypeError("%s: unsupported operand type %s (CuPy's ufuncs take device arrays and scalars)"
                                % (what, type(v).__name__))
            v = type(v)(_device_args(what, v, cur, found))
        out.append(v)
    return out


def _device_kwargs(what, kwargs, cur, found, host=HOST_PARAMS, unread=frozenset()):
    return {k: _device_args(what, [v], cur, found, names=(k,), host=host, unread=unread)[0] for k, v in kwargs.items()}


def _positional_names(name, fn):
    """The names of ``fn``'s positional parameters (empty where NumPy gives no signature)."""
    if name in _POSITIONAL:
        return _POSITIONAL[name]
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


def _result(what, res, args, kwargs, found):
    """The device-side result of a call, its launch counted when it made or wrote a device array."""
    out = kwargs.get("out")
    if type(out) is StandinArray and res is out._a:
        transfers.record_launch(what)
        return out
    if isinstance(res, (bool, int, float)) and not isinstance(res, np.generic) and \
            (_any_device(args) or _any_device(kwargs.values())):
        transfers.record_launch(what)
        return wrap(np.asarray(res))      # CuPy answers with a 0-d device array
    if holds_new_array(res, found):
        transfers.record_launch(what)
    return wrap_result(res)


def _function(qualname, fn):
    name = qualname.rpartition(".")[2]
    what = "xp.%s" % qualname
    names = _positional_names(name, fn)
    host_result = name in _HOST_RESULTS
    no_kernel = name in _NO_KERNEL
    params = {"host": HOST_PARAMS - DEVICE_PARAMS.get(name, frozenset()),
              "unread": UNREAD_PARAMS.get(name, frozenset())}

    def device_function(*args, **kwargs):
        cur = current_device()
        found = []
        np_args = _device_args(what, args, cur, found, names=names, **params)
        np_kwargs = _device_kwargs(what, kwargs, cur, found, **params)
        if name == "take" and gpu_semantics_enabled():
            np_kwargs.setdefault("mode", "wrap")     # CuPy's take wraps indices out of range
        for why, host in hidden_uploads(name, np_args, np_kwargs):
            transfers.record("h2d", True, why, host)
        for why in hidden_syncs(name, np_args, np_kwargs):
            transfers.record("d2h", True, why, _COUNT)
        if name == "where" and len(args) == 3 and type(args[0]) is StandinArray and np_args[0].dtype != np.bool_:
            transfers.record_launch("ndarray.astype")     # CuPy's where casts its condition to bool first
        res = fn(*np_args, **np_kwargs)
        if host_result:
            return res
        if no_kernel:
            return wrap_result(res)
        return _result(what, res, args, kwargs, found)
    device_function.__name__ = name
    device_function.__qualname__ = qualname
    device_function.__doc__ = "``numpy.%s`` on stand-in device arrays (host arrays refused)." % qualname
    return device_function


def _from_host(name, fn):
    what = "xp." + name

    def from_host(obj, *args, **kwargs):
        cur = current_device()
        if type(obj) is StandinArray:
            if obj._dev != cur:      # CuPy copies an array of another device to the current one
                transfers.record("d2d", False, name, obj._a)
                return wrap(np.array(fn(obj._a, *args, **kwargs), copy=True))
            res = fn(obj._a, *args, **kwargs)
            if res is obj._a:
                if name == "array":
                    transfers.record_launch(what)
                    return wrap(res.copy())
                return obj
            transfers.record_launch(what)
            return wrap(res)
        if _any_device([obj]):      # a list of device arrays: stacked on the device
            transfers.record_launch(what)
            return wrap(np.asarray(fn(_device_args(what, [obj], cur, [])[0], *args, **kwargs)))
        host = fn(obj, *args, **kwargs)
        transfers.record("h2d", False, name, host)
        return wrap(np.array(host, copy=True))
    from_host.__name__ = name
    from_host.__doc__ = "``%s`` onto the stand-in device: host data is copied in (a counted transfer)." % name
    return from_host


class StandinUfunc:
    """A NumPy ufunc on device arrays, with CuPy's rules: operands are device arrays of the current
    device or scalars (host arrays and lists raise TypeError), and ``reduce`` / ``accumulate`` /
    ``reduceat`` / ``at`` exist only where CuPy has them (``at`` for the dtypes of its atomics)."""

    def __init__(self, ufunc):
        self._u = ufunc
        self.__name__ = ufunc.__name__
        self.nin, self.nout = ufunc.nin, ufunc.nout
        self._what = "xp." + ufunc.__name__

    def __call__(self, *args, **kwargs):
        what, cur, found = self._what, current_device(), []
        res = self._u(*_device_args(what, args, cur, found, allow_lists=False), **_device_kwargs(what, kwargs, cur, found))
        out = kwargs.get("out")
        transfers.record_launch(what)
        if type(out) is StandinArray and res is out._a:
            return out
        if type(out) is tuple and len(out) == 1 and type(out[0]) is StandinArray and res is out[0]._a:
            return out[0]
        return wrap_result(res)

    def outer(self, a, b, **kwargs):
        what, cur, found = self._what + ".outer", current_device(), []
        res = self._u.outer(*_device_args(what, (a, b), cur, found), **_device_kwargs(what, kwargs, cur, found))
        return _result(what, res, (a, b), kwargs, found)

    def _supported(self, method):
        if self.__name__ not in _UFUNC_METHODS[method]:
            raise NotImplementedError("%s.%s is not supported on a device (CuPy has it for %s only)"
                                      % (self._what, method, ", ".join(_UFUNC_METHODS[method])))

    def _method(self, method, args, kwargs):
        self._supported(method)
        what, cur, found = "%s.%s" % (self._what, method), current_device(), []
        res = getattr(self._u, method)(*_device_args(what, args, cur, found), **_device_kwargs(what, kwargs, cur, found))
        return _result(what, res, args, kwargs, found)

    def reduce(self, *args, **kwargs):
        return self._method("reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        return self._method("accumulate", args, kwargs)

    def reduceat(self, *args, **kwargs):
        return self._method("reduceat", args, kwargs)

    def at(self, a, indices, b=None):
        """CuPy's ``ufunc.at``: a scatter into ``a`` (see ``standin_index.SCATTER_DTYPES``)."""
        what = self._what + ".at"
        if type(a) is not StandinArray:
            raise host_array_error(what, a)
        self._supported("at")
        a._scatter(self.__name__, self._u, indices, b, what)

    def __repr__(self):
        return "<stand-in ufunc %r>" % self.__name__


class StandinModule(types.ModuleType):
    """An array module over NumPy with CuPy's rules (see the package docstring). Attributes are made
    on first use: ufuncs, functions and submodules wrapped; dtypes and constants as NumPy's."""

    cuda: Any       # ``xp.cuda``, as ``cupy.cuda``: the stand-in's devices, streams and events

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
            cur, found = current_device(), []
            transfers.record_launch("kernel")
            return wrap_result(fn(*_device_args("kernel", args, cur, found), **_device_kwargs("kernel", kwargs, cur, found)))
        return device_kernel


class StandinRandomState:
    """``cupy.random.RandomState`` on the stand-in: draws made on the device (device arrays, each
    draw a launch, no transfer). Its numbers are NumPy's ``RandomState``'s for the same seed, not
    cuRAND's (a GPU's differ from both)."""

    def __init__(self, seed=None, method=None):
        self._rs = np.random.RandomState(seed)

    def seed(self, seed=None):
        self._rs.seed(seed)

    def _draw(self, what, values, dtype=None):
        transfers.record_launch("xp.random." + what)
        a = np.asarray(values)
        return wrap(a.astype(dtype, copy=False) if dtype is not None else a)

    def random_sample(self, size=None, dtype=float):
        return self._draw("random_sample", self._rs.random_sample(size), dtype)

    def rand(self, *size, dtype=float):
        return self._draw("rand", self._rs.random_sample(size or None), dtype)

    def randn(self, *size, dtype=float):
        return self._draw("randn", self._rs.standard_normal(size or None), dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=float):
        return self._draw("uniform", self._rs.uniform(low, high, size), dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=float):
        return self._draw("normal", self._rs.normal(loc, scale, size), dtype)

    def randint(self, low, high=None, size=None, dtype=int):
        """Integers in ``[low, high)``; CuPy draws them by rejection and reads how many draws it
        must replace (``randint_syncs``)."""
        for why in randint_syncs(low, high, size):
            transfers.record("d2h", True, why, _COUNT)
        return self._draw("randint", self._rs.randint(low, high, size), dtype)

    def permutation(self, num):
        return self._draw("permutation", self._rs.permutation(num))


xp = StandinModule("fluidist.device.standin.xp", np)
xp.cuda = cuda
xp.random.RandomState = StandinRandomState


class StandinPlace(Place):
    """A Place on stand-in device ``device_id``: kernels get :data:`xp` and run with this device
    current (:meth:`device_context`); values cross from and to the host only through
    :meth:`to_device` and :meth:`to_host`, each copy counted (:func:`count_transfers`).

    Equal to another ``StandinPlace`` with the same ``device_id``; never to a ``CPUPlace`` or a
    ``CUDAPlace``."""

    _paddle_type = 0        # Paddle's scripts see a GPU place

    is_device = True
    kind = "standin"

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = int(device_id)

    @property
    def xp(self):
        return xp

    def owns(self, value) -> bool:
        """Whether ``value`` is an array of this place (a stand-in array of its device)."""
        return type(value) is StandinArray and value._dev == self.device_id

    def owns_all(self, values) -> bool:
        n = len(values)     # (C loops: every value a stand-in array, then each of this device)
        return list(map(type, values)).count(StandinArray) == n and \
            list(map(_device_of, values)).count(self.device_id) == n

    def to_device(self, value, into=None):
        """``value`` (a host array, or a stand-in array of any device) as an array of this place;
        with ``into`` (an array of this place of the same shape and dtype), copied into it."""
        with self.device_context():
            if into is not None:
                if type(value) is StandinArray:
                    into[...] = value if value._dev == self.device_id else xp.asarray(value)
                else:
                    into.set(np.ascontiguousarray(value))
                return into
            if type(value) is StandinArray:
                return value if value._dev == self.device_id else xp.asarray(value)
            host = np.asarray(value)
            transfers.record("h2d", False, "to_device", host)
            return wrap(np.array(host, copy=True), self.device_id)

    def to_host(self, value):
        """A NumPy array for a stand-in array (a host array is returned as it is)."""
        if type(value) is StandinArray:
            return value.get()
        return value

    def device_context(self) -> "_DeviceScope":
        """This place's device as the current one, for a ``with`` block; inside it NumPy's
        floating-point warnings are off, as CuPy's kernels raise none (an overflow in ``exp`` is
        an inf on a GPU, silently)."""
        return _DeviceScope(self.device_id)

    def __eq__(self, other):
        return isinstance(other, StandinPlace) and other.device_id == self.device_id

    def __hash__(self):
        return hash(("standin", self.device_id))

    def __repr__(self):
        return "StandinPlace(%d)" % self.device_id


class _DeviceScope:
    """A stand-in device made current, with NumPy's floating-point warnings off (see
    :meth:`StandinPlace.device_context`); ``as`` gives the :class:`Device`."""

    def __init__(self, device_id: int) -> None:
        self._device = Device(device_id)
        self._quiet: list = []

    def __enter__(self) -> Device:
        self._device.__enter__()
        quiet = np.errstate(all="ignore")
        quiet.__enter__()
        self._quiet.append(quiet)
        return self._device

    def __exit__(self, *exc) -> None:
        self._quiet.pop().__exit__(*exc)
        self._device.__exit__(*exc)
