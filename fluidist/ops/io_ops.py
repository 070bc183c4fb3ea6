"""``save`` / ``load`` of one variable as a NumPy file (no pickle), as the pserver's table
checkpoint block uses them. ``file_path`` "none" means: the directory held by the RAW variable
``kLookupTablePath`` (set by a checkpoint request), file named after the variable."""
import os

import numpy as np

from ..core.tensor import SelectedRows
from ..framework.registry import register_op

_HOST = 'reads and writes files'

CHECKPOINT_PATH_VAR = "kLookupTablePath"


def _path(ctx, attrs, name):
    path = attrs["file_path"]
    if not path or path == "none":
        d = ctx.scope._find_value(CHECKPOINT_PATH_VAR)
        if not d:
            raise ValueError("save/load of %r: no file_path and no %r directory set" % (name, CHECKPOINT_PATH_VAR))
        path = os.path.join(str(d), name.replace("/", "%2F") + ".npy")
    return path


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
    with open(path, "wb") as f:   # a file object: np.save given a name would add ".npy" to it
        np.save(f, np.asarray(x), allow_pickle=False)
    return {}


@register_op("load", host=_HOST, outputs=["Out"], attrs={"file_path": "", "load_as_fp16": False}, side_effect=True)
def load(ctx, ins, attrs):
    name = ctx.op.outputs["Out"][0]
    path = _path(ctx, attrs, name)
    if not os.path.exists(path):
        raise ValueError("load: no file %r for variable %r" % (path, name))
    value = np.load(path, allow_pickle=False)
    if attrs.get("load_as_fp16"):
        value = value.astype(np.float16)
    return {"Out": ctx.xp.asarray(value)}
