"""``save`` / ``load`` of one variable as a NumPy file (no pickle), as the pserver's table
checkpoint block uses them. ``file_path`` "none" means: the directory held by the RAW variable
``kLookupTablePath`` (set by a checkpoint request), file named after the variable.

A ``save`` replaces the file whole (``io.durable``: written and flushed under a temporary name, then
renamed), so a kill or a full disk leaves the previous file, and ends the ``.npy`` data with a trailer
holding its SHA-256 (NumPy's readers stop at the data's end and never see it). ``load`` checks the
trailer where there is one; a plain ``.npy`` (``np.save``'s) loads as it is."""
import hashlib
import io
import os

import numpy as np

from ..core.tensor import SelectedRows
from ..framework.registry import register_op
from ..io import durable

_HOST = 'reads and writes files'

CHECKPOINT_PATH_VAR = "kLookupTablePath"
TRAILER_MAGIC = b"\n#fluidist-sha256:"
_TRAILER_BYTES = len(TRAILER_MAGIC) + 64 + 1


def _path(ctx, attrs, name):
    path = attrs["file_path"]
    if not path or path == "none":
        d = ctx.scope._find_value(CHECKPOINT_PATH_VAR)
        if not d:
            raise ValueError("save/load of %r: no file_path and no %r directory set" % (name, CHECKPOINT_PATH_VAR))
        path = os.path.join(str(d), name.replace("/", "%2F") + ".npy")
    return path


def checked_npy_bytes(arr):
    """The ``.npy`` bytes of ``arr`` followed by the trailer with their SHA-256."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    data = buf.getvalue()
    return data + TRAILER_MAGIC + hashlib.sha256(data).hexdigest().encode("ascii") + b"\n"


def read_checked_npy(path):
    """The array in ``path``; its trailer's SHA-256, where it has one, must match the data."""
    with open(path, "rb") as f:
        blob = f.read()
    tail = blob[-_TRAILER_BYTES:]
    data = memoryview(blob)
    if len(blob) >= _TRAILER_BYTES and tail.startswith(TRAILER_MAGIC) and tail.endswith(b"\n"):
        data = data[:-_TRAILER_BYTES]
        if hashlib.sha256(data).hexdigest().encode("ascii") != tail[len(TRAILER_MAGIC):-1]:
            raise ValueError("load: %s is corrupt: its data does not match the SHA-256 its save recorded" % path)
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise ValueError("load: %s is not a readable NumPy file (truncated?): %s" % (path, e)) from None


@register_op("save", host=_HOST, inputs=["X"], attrs={"file_path": "", "overwrite": True}, side_effect=True)
def save(ctx, ins, attrs):
    name = ctx.op.inputs["X"][0]
    path = _path(ctx, attrs, name)
    if os.path.exists(path) and not attrs["overwrite"]:
        raise ValueError("save: %r exists and overwrite is False" % path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    x = ins["X"]
    if isinstance(x, SelectedRows):
        x = x.to_dense(np)
    durable.write_file(path, checked_npy_bytes(x))
    return {}


@register_op("load", host=_HOST, outputs=["Out"], attrs={"file_path": "", "load_as_fp16": False}, side_effect=True)
def load(ctx, ins, attrs):
    name = ctx.op.outputs["Out"][0]
    path = _path(ctx, attrs, name)
    if not os.path.exists(path):
        raise ValueError("load: no file %r for variable %r" % (path, name))
    value = read_checked_npy(path)
    if attrs.get("load_as_fp16"):
        value = value.astype(np.float16)
    return {"Out": ctx.xp.asarray(value)}
