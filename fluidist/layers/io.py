"""Data layers: ``fluid.data`` (exact shape, checked at feed time) and ``layers.data``."""
from __future__ import annotations

from ..framework.dtypes import VarType, convert_dtype
from typing import Sequence

from ..framework.program import Variable, default_main_program


def data(name: str, shape: Sequence[int | None], dtype: str = "float32", lod_level: int = 0) -> Variable:
    """A variable fed at run time; ``None`` or -1 in ``shape`` is any size. Feeds are checked for
    dtype and shape against it."""
    shape = [-1 if d is None else int(d) for d in shape]
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=convert_dtype(dtype), type=VarType.LOD_TENSOR, lod_level=lod_level,
        stop_gradient=True, is_data=True, need_check_feed=True)


def layers_data(name, shape, append_batch_size=True, dtype="float32", lod_level=0, type=VarType.LOD_TENSOR,
                stop_gradient=True):
    """Paddle's ``layers.data``: prepends a batch dimension (-1) unless ``shape`` has one already."""
    shape = [-1 if d is None else int(d) for d in shape]
    if any(d < 0 for d in shape):
        append_batch_size = False
    if append_batch_size:
        shape = [-1] + shape
    return default_main_program().global_block().create_var(
        name=name, shape=shape, dtype=convert_dtype(dtype), type=type, lod_level=lod_level,
        stop_gradient=stop_gradient, is_data=True, need_check_feed=False)


def load(out, file_path, load_as_fp16=None):
    """Fill the Variable ``out`` from ``file_path`` at run time (a ``load`` op; the file is one that a
    ``save`` op or ``fluid.io.save_vars`` wrote). ``load_as_fp16`` converts the value to float16."""
    from ..framework.program import Variable
    if not isinstance(out, Variable):
        raise TypeError("load: out must be a Variable, got %r" % type(out).__name__)
    attrs = {"file_path": str(file_path)}
    if load_as_fp16 is not None:
        attrs["load_as_fp16"] = bool(load_as_fp16)
    default_main_program().current_block().append_op("load", outputs={"Out": [out]}, attrs=attrs)
