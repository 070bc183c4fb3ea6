"""How ``fluid.op``'s ops run: one op in a Program of its own, run by an Executor in the scope that
holds its variables (Paddle's ``core.Operator.run(scope, place)``)."""
from __future__ import annotations

from typing import Any, Dict, List

from ..core.tensor import LoDTensorArray, SelectedRows
from ..framework.dtypes import VarType, convert_dtype
from ..framework.program import Program


def _dtype_of(array: Any) -> Any:
    try:
        return convert_dtype(array.dtype)
    except (TypeError, AttributeError):
        return None


def _declare(block: Any, scope: Any, name: str) -> None:
    """Declare ``name`` in ``block`` as what ``scope`` holds under it: type, shape, dtype, LoD level.
    Every variable is persistable: its value is the scope's, before the run and after it."""
    value = scope._find_value(name)
    meta: Dict[str, Any] = {"type": VarType.LOD_TENSOR, "shape": None, "dtype": None, "lod_level": 0}
    if isinstance(value, SelectedRows):
        width = tuple(value.value.shape[1:]) if value.value is not None else ()
        meta.update(type=VarType.SELECTED_ROWS, shape=(value.height,) + width,
                    dtype=_dtype_of(value.value) if value.value is not None else None)
    elif isinstance(value, LoDTensorArray):
        first = next((t for t in value if t is not None and t._array is not None), None)
        meta.update(type=VarType.LOD_TENSOR_ARRAY, dtype=_dtype_of(first._array) if first is not None else None,
                    lod_level=len(first._lod) if first is not None else 0)
    elif hasattr(value, "shape") and hasattr(value, "dtype"):
        meta.update(shape=tuple(value.shape), dtype=_dtype_of(value), lod_level=len(scope._find_lod(name)))
    block.create_var(name=name, persistable=True, **meta)


def run_one_op(type: str, inputs: Dict[str, List[str]], outputs: Dict[str, List[str]], attrs: Dict[str, Any],
               scope: Any, place: Any) -> None:
    """Run op ``type`` over the values ``scope`` holds, on ``place``; its outputs land in ``scope``.

    A variable that holds a SelectedRows is a SelectedRows variable (Paddle's variables have a
    type): an op that writes a dense tensor to it writes the SelectedRows' value tensor, keeping its
    rows and height, as Paddle's filling ops (``uniform_random``, ``fill_constant``, ...) do."""
    from .executor import Executor
    program = Program()
    block = program.global_block()
    names = [n for slots in (inputs, outputs) for ns in slots.values() for n in ns]
    for name in dict.fromkeys(names):
        _declare(block, scope, name)
    held = {n: scope._find_value(n) for ns in outputs.values() for n in ns}
    block.append_op(type=type, inputs={s: ns for s, ns in inputs.items() if ns},
                    outputs={s: ns for s, ns in outputs.items() if ns}, attrs=attrs)
    Executor(place).run(program, scope=scope)
    for name, before in held.items():
        after = scope._find_value(name)
        if isinstance(before, SelectedRows) and after is not before and not isinstance(after, SelectedRows) \
                and after is not None:
            before.value = after
            scope._set_value(name, before)
