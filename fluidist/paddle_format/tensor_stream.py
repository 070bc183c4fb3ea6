"""Paddle 1.x's binary tensor files: one LoDTensor (or SelectedRows) per file as the ``save`` op
writes it, or several LoDTensors back to back as ``save_combine`` writes them.

A LoDTensor is, little-endian::

    uint32 version (0)
    uint64 number of LoD levels, then per level: uint64 byte count, that many bytes of uint64 offsets
    uint32 tensor version (0)
    int32  size of the TensorDesc message, then the message (data type and dims)
    the raw data, C order, numel * itemsize bytes

A SelectedRows is ``uint32 version, uint64 row count, int64 rows..., int64 height`` followed by the
tensor part above. Every length read from a file is checked against what the file still holds
before anything is allocated, so a truncated or forged file is an error naming it, never a huge
allocation.
"""
import os
import struct

import numpy as np

from ..framework.dtypes import DTYPE_CODES
from . import framework_pb2 as pb

TENSOR_VERSION = 0
_MAX_DESC_BYTES = 1 << 20
_MAX_LOD_LEVELS = 64

# VarType.Type value <-> numpy dtype name: the data types of fluid.core.VarDesc.VarType, and SIZE_T
# (uint64), which is read but never written
_PB_TO_DTYPE = {code: name for name, code in DTYPE_CODES.items()}
_PB_TO_DTYPE[pb.VarType.SIZE_T] = "uint64"
_DTYPE_TO_PB = dict(DTYPE_CODES)


class PaddleFormatError(ValueError):
    """A file in one of Paddle's formats that cannot be read: the message names the file (and the
    variable, where there is one)."""


def dtype_from_pb(code, what):
    try:
        return _PB_TO_DTYPE[code]
    except KeyError:
        raise PaddleFormatError("%s: data type %s is not a tensor data type fluidist can hold"
                                % (what, _enum_name(code)))


def dtype_to_pb(dtype, what):
    name = np.dtype(dtype).name
    try:
        return _DTYPE_TO_PB[name]
    except KeyError:
        raise PaddleFormatError("%s: dtype %s has no Paddle data type" % (what, name))


def _enum_name(code):
    try:
        return pb.VarType.Type.Name(code)
    except ValueError:
        return str(code)


class StreamReader:
    """Reads Paddle tensors from an open binary file, checking every length against the bytes left."""

    def __init__(self, f, path):
        self.f = f
        self.path = path
        f.seek(0, os.SEEK_END)
        self.size = f.tell()
        f.seek(0)

    @property
    def left(self):
        return self.size - self.f.tell()

    def at_end(self):
        return self.left == 0

    def _what(self, name):
        return "%s (variable %r)" % (self.path, name) if name is not None else self.path

    def _read(self, n, name, what):
        if n < 0 or n > self.left:
            raise PaddleFormatError("%s is truncated: %s needs %d bytes but %d are left"
                                    % (self._what(name), what, n, self.left))
        b = self.f.read(n)
        if len(b) != n:
            raise PaddleFormatError("%s is truncated while reading %s" % (self._what(name), what))
        return b

    def _unpack(self, fmt, name, what):
        return struct.unpack(fmt, self._read(struct.calcsize(fmt), name, what))[0]

    def _version(self, name, what):
        v = self._unpack("<I", name, what + " version")
        if v != TENSOR_VERSION:
            raise PaddleFormatError("%s: unsupported %s version %d (Paddle 1.x writes %d)"
                                    % (self._what(name), what, v, TENSOR_VERSION))

    def read_tensor(self, name=None):
        """The tensor part: ``(array, TensorDesc)``."""
        self._version(name, "tensor")
        n = self._unpack("<i", name, "tensor description size")
        if n < 0 or n > _MAX_DESC_BYTES:
            raise PaddleFormatError("%s: tensor description size %d is not plausible" % (self._what(name), n))
        desc = pb.VarType.TensorDesc()
        try:
            desc.ParseFromString(self._read(n, name, "tensor description"))
        except Exception as e:  # protobuf's DecodeError, or a missing required field
            raise PaddleFormatError("%s: the tensor description cannot be parsed: %s" % (self._what(name), e))
        dtype = np.dtype(dtype_from_pb(desc.data_type, self._what(name)))
        dims = list(desc.dims)
        if any(d < 0 for d in dims):
            raise PaddleFormatError("%s: negative dimension in shape %s" % (self._what(name), dims))
        numel = 1
        for d in dims:
            numel *= d
        nbytes = numel * dtype.itemsize
        data = self._read(nbytes, name, "tensor data of shape %s (%s)" % (dims, dtype.name))
        arr = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype, copy=True)
        return arr.reshape(dims), desc

    def read_lod_tensor(self, name=None):
        """``(array, lod)``: one LoDTensor as ``save`` / ``save_combine`` write it."""
        self._version(name, "LoDTensor")
        levels = self._unpack("<Q", name, "LoD level count")
        if levels > _MAX_LOD_LEVELS:
            raise PaddleFormatError("%s: %d LoD levels is not plausible" % (self._what(name), levels))
        lod = []
        for _ in range(levels):
            nbytes = self._unpack("<Q", name, "LoD level size")
            if nbytes % 8:
                raise PaddleFormatError("%s: a LoD level of %d bytes is not a list of 8-byte offsets"
                                        % (self._what(name), nbytes))
            offsets = np.frombuffer(self._read(nbytes, name, "LoD offsets"), dtype="<u8")
            lod.append([int(o) for o in offsets])
        arr, _ = self.read_tensor(name)
        _check_lod(lod, arr, self._what(name))
        return arr, lod

    def read_selected_rows(self, name=None):
        """``(rows, value, height)``: one SelectedRows as the ``save`` op writes it."""
        self._version(name, "SelectedRows")
        n = self._unpack("<Q", name, "row count")
        rows = np.frombuffer(self._read(8 * n, name, "rows"), dtype="<i8").astype(np.int64)
        height = self._unpack("<q", name, "height")
        value, _ = self.read_tensor(name)
        if value.ndim == 0 or value.shape[0] != n:
            raise PaddleFormatError("%s: %d rows but the value has shape %s"
                                    % (self._what(name), n, list(value.shape)))
        if n and (rows.min() < 0 or rows.max() >= max(height, 1)):
            raise PaddleFormatError("%s: a row id is outside [0, height=%d)" % (self._what(name), height))
        return rows, value, height


def _check_lod(lod, arr, what):
    rows = arr.shape[0] if arr.ndim else 1
    for i, level in enumerate(lod):
        if not level or level[0] != 0 or any(b < a for a, b in zip(level, level[1:])):
            raise PaddleFormatError("%s: LoD level %d %s is not a list of increasing offsets from 0"
                                    % (what, i, level[:8]))
        if i + 1 < len(lod):
            if level[-1] != len(lod[i + 1]) - 1:
                raise PaddleFormatError("%s: LoD level %d ends at %d but level %d has %d sequences"
                                        % (what, i, level[-1], i + 1, len(lod[i + 1]) - 1))
        elif level[-1] != rows:
            raise PaddleFormatError("%s: the last LoD level ends at %d but the tensor has %d rows"
                                    % (what, level[-1], rows))


# ---------------------------------------------------------------- writing
def tensor_bytes(arr, what="tensor"):
    arr = np.asarray(arr, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    desc = pb.VarType.TensorDesc()
    desc.data_type = dtype_to_pb(arr.dtype, what)
    desc.dims.extend(int(d) for d in arr.shape)
    d = desc.SerializeToString()
    data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
    return struct.pack("<Ii", TENSOR_VERSION, len(d)) + d + data


def lod_tensor_bytes(arr, lod=(), what="tensor"):
    arr = np.asarray(arr)
    parts = [struct.pack("<IQ", TENSOR_VERSION, len(lod))]
    for level in lod:
        offsets = np.asarray(level, dtype="<u8")
        parts.append(struct.pack("<Q", offsets.nbytes))
        parts.append(offsets.tobytes())
    parts.append(tensor_bytes(arr, what))
    return b"".join(parts)


def selected_rows_bytes(rows, value, height, what="tensor"):
    rows = np.asarray(rows, dtype="<i8").reshape(-1)
    return (struct.pack("<IQ", TENSOR_VERSION, rows.size) + rows.tobytes()
            + struct.pack("<q", int(height)) + tensor_bytes(value, what))
