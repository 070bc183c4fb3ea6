"""Paddle's ``.pdparams`` / ``.pdopt`` files: a pickled dict of NumPy arrays.

Reading uses an unpickler that resolves no global name except a handful that NumPy's and
Python's pickles of arrays use, and each of those resolves to a small stand-in of ours that only
records its arguments: no function of NumPy or anything else runs while the stream is read.
Once the stream is read, the stand-ins become arrays through ``np.frombuffer`` with a dtype checked
to be a plain numeric one. The result may hold dicts, lists, tuples, strings, numbers, ``None``
and NumPy arrays; any other name in the stream is refused, naming it.

Writing emits, opcode by opcode, the protocol-2 stream that ``pickle.dump(d, f, protocol=2)``
gives under NumPy 1.x for a dict of arrays (the form Paddle 1.8 writes and reads), whatever the
NumPy version here.
"""
import collections
import io
import pickle
import pickletools
import struct

import numpy as np

from .tensor_stream import PaddleFormatError

_PLAIN_KINDS = {"b1": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16",
                "i4": "int32", "u4": "uint32", "i8": "int64", "u8": "uint64",
                "f2": "float16", "f4": "float32", "f8": "float64"}


class _DtypeStub:
    """What ``numpy.dtype(descr, align, copy)`` and its ``__setstate__`` were asked to make."""

    def __init__(self, descr="", align=False, copy=False, *rest):
        self.descr = descr
        self.order = "="
        self.extra = rest

    def __setstate__(self, state):
        if not isinstance(state, tuple) or len(state) < 2 or not isinstance(state[1], str):
            raise pickle.UnpicklingError("malformed dtype state in the stream")
        if len(state) >= 5 and (state[2] is not None or state[3] is not None or state[4] is not None):
            raise pickle.UnpicklingError("structured or sub-array dtypes are refused")
        self.order = state[1]

    def resolve(self):
        descr = self.descr
        if isinstance(descr, bytes):
            descr = descr.decode("latin1")
        if not isinstance(descr, str) or descr not in _PLAIN_KINDS or self.extra:
            raise pickle.UnpicklingError("dtype %r is refused: only plain numeric and bool dtypes are read"
                                         % (descr,))
        if self.order not in ("<", ">", "|", "="):
            raise pickle.UnpicklingError("byte order %r is refused" % (self.order,))
        dt = np.dtype(_PLAIN_KINDS[descr])
        return dt.newbyteorder(">") if self.order == ">" else dt.newbyteorder("<")


class _ArrayStub:
    """What ``numpy.core.multiarray._reconstruct`` and ``ndarray.__setstate__`` were asked to make."""

    def __init__(self, shape=None, dtype=None, fortran=False, data=None):
        self.shape, self.dtype, self.fortran, self.data = shape, dtype, fortran, data

    def __setstate__(self, state):
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise pickle.UnpicklingError("malformed ndarray state in the stream")
        if len(state) == 5:
            state = state[1:]
        self.shape, self.dtype, self.fortran, self.data = state

    def resolve(self):
        if not isinstance(self.dtype, _DtypeStub):
            raise pickle.UnpicklingError("an array without a plain dtype is refused")
        dtype = self.dtype.resolve()
        shape = self.shape
        if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise pickle.UnpicklingError("array shape %r is refused" % (shape,))
        data = self.data
        if isinstance(data, str):  # a Python 2 ``str`` read with encoding="latin1"
            data = data.encode("latin1")
        if isinstance(data, list):
            raise pickle.UnpicklingError("an array of Python objects is refused")
        if not isinstance(data, (bytes, bytearray)):
            raise pickle.UnpicklingError("array data of type %s is refused" % type(data).__name__)
        numel = 1
        for d in shape:
            numel *= d
        if numel * dtype.itemsize != len(data):
            raise pickle.UnpicklingError("array of shape %s and dtype %s needs %d bytes, the stream holds %d"
                                         % (list(shape), dtype.name, numel * dtype.itemsize, len(data)))
        arr = np.frombuffer(bytes(data), dtype=dtype)
        arr = arr.reshape(shape, order="F" if self.fortran else "C")
        return arr.astype(dtype.newbyteorder("="), order="C", copy=True)


class _NdarrayClass:
    """Stands for ``numpy.ndarray`` as the first argument of ``_reconstruct``."""


def _reconstruct(cls, shape, typecode):
    if cls is not _NdarrayClass:
        raise pickle.UnpicklingError("_reconstruct of anything but numpy.ndarray is refused")
    return _ArrayStub()


def _frombuffer(buf, dtype, shape, order):
    if not isinstance(dtype, _DtypeStub):
        raise pickle.UnpicklingError("an array without a plain dtype is refused")
    if isinstance(buf, pickle.PickleBuffer):
        buf = bytes(buf.raw())
    return _ArrayStub(tuple(shape), dtype, order == "F", buf)


def _scalar(dtype, data):
    return _ArrayStub((), dtype, False, data)


def _codecs_encode(text, encoding="utf-8"):
    if not isinstance(text, str) or str(encoding).lower().replace("-", "") not in ("latin1", "iso88591"):
        raise pickle.UnpicklingError("_codecs.encode is admitted only for latin-1 text")
    return text.encode("latin1")


def _bytes_ctor(*args):
    if not args:
        return b""
    return _codecs_encode(*args)


_ADMITTED = {
    ("__builtin__", "bytes"): _bytes_ctor,
    ("builtins", "bytes"): _bytes_ctor,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): _NdarrayClass,
    ("numpy", "dtype"): _DtypeStub,
    ("numpy.core.multiarray", "scalar"): _scalar,
    ("numpy._core.multiarray", "scalar"): _scalar,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("_codecs", "encode"): _codecs_encode,
    ("collections", "OrderedDict"): collections.OrderedDict,
}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        fn = _ADMITTED.get((module, name))
        if fn is None:
            raise pickle.UnpicklingError(
                "refused to load %s.%s: only dicts, lists, strings, numbers and NumPy arrays are admitted"
                % (module, name))
        return fn

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("persistent ids are refused")


MAX_DEPTH = 100


def _finish(obj, path, done=None, depth=0):
    """Turn stand-ins into arrays and check every value is of an admitted type. ``done`` maps the id of
    each object already finished to its result: an object the stream references many times (its memo
    lets a few hundred bytes describe a tree of 2**60 nodes) is finished once, and its references share
    the result."""
    if done is None:
        done = {}
    if depth > MAX_DEPTH:
        raise PaddleFormatError("%s nests deeper than %d levels (or refers to itself)" % (path, MAX_DEPTH))
    key = id(obj)
    if key in done:
        return done[key][1]
    if isinstance(obj, _ArrayStub):
        out = obj.resolve()
    elif isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise PaddleFormatError("%s: a dict key of type %s is refused" % (path, type(k).__name__))
            out[k] = _finish(v, path, done, depth + 1)
    elif isinstance(obj, (list, tuple)):
        items = [_finish(v, path, done, depth + 1) for v in obj]
        out = items if isinstance(obj, list) else tuple(items)
    elif obj is None or isinstance(obj, (str, bytes, bool, int, float, np.ndarray)):
        return obj
    else:
        raise PaddleFormatError("%s: a value of type %s is refused" % (path, type(obj).__name__))
    done[key] = (obj, out)     # the input is kept with its result, so that its id is not reused meanwhile
    return out


_MEMO_PUTS = ("PUT", "BINPUT", "LONG_BINPUT")
_MEMO_GETS = ("GET", "BINGET", "LONG_BINGET")


def _check_stream(blob, path):
    """Walk the stream's opcodes (``pickletools``, which reads an argument only as far as the stream
    holds it) before the unpickler runs: the unpickler allocates a bytes argument at the length the
    stream claims before it reads it, so a 9-byte stream could make it allocate gigabytes. The memo
    is bounded the same way: the unpickler sizes its memo table by the largest index a PUT names, so
    an index is refused past the number of opcodes before it (each opcode defines at most one memo
    entry), and a GET must name an entry the stream defined."""
    defined = set()
    try:
        for count, (op, arg, pos) in enumerate(pickletools.genops(io.BytesIO(blob)), 1):
            name = op.name
            if name == "STOP":
                return
            if name in _MEMO_PUTS:
                if not 0 <= arg <= count:
                    raise PaddleFormatError("%s is not a readable Paddle state file: opcode %s at byte %d names "
                                            "memo entry %d, past the %d opcodes before it" % (path, name, pos, arg,
                                                                                              count))
                defined.add(arg)
            elif name == "MEMOIZE":
                defined.add(len(defined))
            elif name in _MEMO_GETS and arg not in defined:
                raise PaddleFormatError("%s is not a readable Paddle state file: opcode %s at byte %d names memo "
                                        "entry %r, which the stream never defined" % (path, name, pos, arg))
    except PaddleFormatError:
        raise
    except (ValueError, TypeError, struct.error) as e:
        raise PaddleFormatError("%s is not a readable Paddle state file: %s" % (path, e)) from None
    raise PaddleFormatError("%s is not a readable Paddle state file: it has no STOP opcode" % path)


def load_state_file(path):
    """The dict in a ``.pdparams`` / ``.pdopt`` file, read through the restricted unpickler."""
    with open(path, "rb") as f:
        blob = f.read()
    return loads_state(blob, path)


def loads_state(blob, path="<bytes>"):
    _check_stream(blob, path)
    try:
        obj = _RestrictedUnpickler(io.BytesIO(blob), encoding="latin1").load()
        obj = _finish(obj, path)
    except PaddleFormatError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, struct.error, MemoryError, RecursionError) as e:
        raise PaddleFormatError("%s is not a readable Paddle state file: %s" % (path, e))
    if not isinstance(obj, dict):
        raise PaddleFormatError("%s holds a %s, not a dict of arrays" % (path, type(obj).__name__))
    return obj


# ---------------------------------------------------------------- writing
_DESCR = {v: k for k, v in _PLAIN_KINDS.items()}


def _unicode(s):
    b = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(b)) + b


def _int(i):
    if 0 <= i < 256:
        return b"K" + bytes([i])
    if 0 <= i < 65536:
        return b"M" + struct.pack("<H", i)
    if -(2 ** 31) <= i < 2 ** 31:
        return b"J" + struct.pack("<i", i)
    n = i.to_bytes((i.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(n)]) + n


def _bytes(b):
    # protocol 2 has no bytes opcode: Python 3 writes _codecs.encode(<latin-1 text>, "latin1")
    return b"c_codecs\nencode\n" + _unicode(b.decode("latin1")) + _unicode("latin1") + b"\x86R"


def _array(arr, name):
    arr = np.asarray(arr, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    kind = _DESCR.get(arr.dtype.name)
    if kind is None:
        raise PaddleFormatError("variable %r has dtype %s, which a Paddle state file cannot hold"
                                % (name, arr.dtype.name))
    order = "|" if arr.dtype.itemsize == 1 else "<"
    data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
    shape = b"(" + b"".join(_int(int(d)) for d in arr.shape) + b"t"
    dtype = (b"cnumpy\ndtype\n" + _unicode(kind) + b"\x89\x88\x87R"
             + b"(" + _int(3) + _unicode(order) + b"NNN" + _int(-1) + _int(-1) + _int(0) + b"tb")
    return (b"cnumpy.core.multiarray\n_reconstruct\n" + b"cnumpy\nndarray\n" + _int(0) + b"\x85"
            + _bytes(b"b") + b"\x87R"
            + b"(" + _int(1) + shape + dtype + b"\x89" + _bytes(data) + b"tb")


def dumps_state(state):
    """The protocol-2 pickle of ``{name: array}`` that Paddle 1.8 reads with ``fluid.load``."""
    parts = [b"\x80\x02}("]
    for name, arr in state.items():
        if not isinstance(name, str):
            raise TypeError("state keys must be variable names, got %r" % (name,))
        parts.append(_unicode(name))
        parts.append(_array(np.asarray(arr), name))
    parts.append(b"u.")
    return b"".join(parts)
