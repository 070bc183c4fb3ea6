"""Packing synthetic files the way the real ones are packed: gzip'd tar archives and MATLAB level 5
``.mat`` files, byte for byte the same on every call (no time stamps, no owner names), so that a
file written by one process is the file every other process would write."""
import gzip
import io
import struct
import tarfile
from typing import Dict, Iterable, Sequence, Tuple

import numpy as np

_FIXED_MTIME = 1262304000  # 2010-01-01, any constant does


def _tar_info(name: str, size: int, is_dir: bool) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 0 if is_dir else size
    info.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    info.mode = 0o755 if is_dir else 0o644
    info.mtime = _FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def tar_gz(members: Iterable[Tuple[str, bytes]], folders: Sequence[str] = (), compresslevel: int = 6) -> bytes:
    """A gzip'd tar (``.tar.gz``/``.tgz``) of ``folders`` (empty folder entries, first) and then
    ``members`` ((name inside the archive, contents), in this order); ``compresslevel`` 1 for
    archives of noisy pictures, which barely compress."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=compresslevel, mtime=0) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for folder in folders:
                tar.addfile(_tar_info(folder, 0, is_dir=True))
            for name, payload in members:
                tar.addfile(_tar_info(name, len(payload), is_dir=False), io.BytesIO(payload))
    return raw.getvalue()


# MATLAB level 5 data types and array classes (the MAT-File Format, "Data Element" tables)
_MI_INT8, _MI_INT32, _MI_UINT32, _MI_DOUBLE, _MI_MATRIX = 1, 5, 6, 9, 14
_MX_DOUBLE_CLASS = 6


def _element(data_type: int, payload: bytes) -> bytes:
    """A data element: its tag (type, byte count) and the payload padded to 8 bytes."""
    padding = -len(payload) % 8
    return struct.pack("<II", data_type, len(payload)) + payload + b"\0" * padding


def mat_v5(arrays: Dict[str, np.ndarray]) -> bytes:
    """A MATLAB level 5 ``.mat`` file (uncompressed, little-endian) holding each named array as a
    real double matrix; 1-D arrays are stored as 1 x n rows, as MATLAB keeps a vector. What
    ``scipy.io.loadmat`` reads back as ``{name: float64 array of shape (1, n) or (rows, cols)}``."""
    text = b"MATLAB 5.0 MAT-file, synthetic stand-in written for the fluidist conformance runner"
    out = [text.ljust(116, b" "), b"\0" * 8, struct.pack("<H", 0x0100), b"IM"]
    for name, array in arrays.items():
        matrix = np.asarray(array, dtype="<f8")
        matrix = matrix.reshape(1, -1) if matrix.ndim == 1 else matrix
        if matrix.ndim != 2:
            raise ValueError("mat_v5 stores matrices: %r has %d dimensions" % (name, matrix.ndim))
        body = (_element(_MI_UINT32, struct.pack("<II", _MX_DOUBLE_CLASS, 0))
                + _element(_MI_INT32, struct.pack("<ii", *matrix.shape))
                + _element(_MI_INT8, name.encode("ascii"))
                + _element(_MI_DOUBLE, matrix.tobytes(order="F")))  # MATLAB stores by column
        out.append(struct.pack("<II", _MI_MATRIX, len(body)) + body)
    return b"".join(out)


def text_lines(lines: Iterable[str]) -> bytes:
    """``lines`` as UTF-8 text, each ended by a newline."""
    return "".join(line + "\n" for line in lines).encode("utf-8")
