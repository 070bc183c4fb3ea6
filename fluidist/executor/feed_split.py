"""How a data-parallel CompiledProgram splits one feed over its places, as Paddle 1.8's ParallelExecutor
(``LoDTensor::SplitLoDTensor``) does.

A value is split along its first dimension, or along its top-level sequences when it has a LoD (each
part keeps every LoD level of its sequences). ``min(batch, places)`` parts of ``batch // parts`` rows
are made; when there are as many parts as places the last place also takes the remainder. A value
that gives fewer parts than places is refused, except a persistable variable's value of one part
(a learning rate fed as ``[1.0]``), which every place gets a copy of."""
from typing import Callable, Dict, List

import numpy as np

from ..core.enforce import as_enforce_not_met
from ..core.tensor import LoDTensor


def _sub_lod(lod, begin, end):
    """The LoD of top-level sequences ``[begin, end)`` (offsets from 0) and their rows ``(r0, r1)``."""
    levels = []
    for offsets in lod:
        part = offsets[begin:end + 1]
        levels.append([o - part[0] for o in part])
        begin, end = part[0], part[-1]
    return levels, (begin, end)


def split_value(value, n: int) -> List[object]:
    """``value`` (an array or LoDTensor) as Paddle splits it over ``n`` places (fewer parts when its
    batch is smaller than ``n``; ``n`` empty parts when it is empty)."""
    lod = value.lod() if isinstance(value, LoDTensor) else None
    arr = np.asarray(value) if isinstance(value, LoDTensor) or not hasattr(value, "shape") else value
    if arr.ndim == 0:
        raise as_enforce_not_met(ValueError("a fed value to split over places must have a batch dimension, "
                                            "got a scalar"))
    batch = len(lod[0]) - 1 if lod else arr.shape[0]
    if batch == 0:
        return [value for _ in range(n)]
    parts = min(batch, n)
    step = batch // parts
    out: List[object] = []
    for i in range(parts):
        begin, end = i * step, (i + 1) * step
        if i + 1 == n:
            end += batch % n
        if lod:
            levels, (r0, r1) = _sub_lod(lod, begin, end)
            out.append(LoDTensor(arr[r0:r1], levels))
        else:
            out.append(arr[begin:end])
    return out


def split_feed(feed: Dict[str, object], n: int, is_persistable: Callable[[str], bool]) -> List[Dict[str, object]]:
    """One feed dict per place from one feed dict (see the module docstring)."""
    per_place: List[Dict[str, object]] = [dict() for _ in range(n)]
    for name, value in feed.items():
        parts = split_value(value, n)
        if len(parts) != n:
            if len(parts) == 1 and is_persistable(name):
                parts = [parts[0]] + [_copy(parts[0]) for _ in range(n - 1)]
            else:
                raise as_enforce_not_met(ValueError(
                    "feed %r: the batch gives %d part(s) for %d places; each place needs at least one sample "
                    "(or sequence) of a batch (set CPU_NUM, or the places, to fewer)" % (name, len(parts), n)))
        for i in range(n):
            per_place[i][name] = parts[i]
    return per_place


def _copy(value):
    if isinstance(value, LoDTensor):
        return LoDTensor(np.array(value), value.lod())
    return value.copy() if hasattr(value, "copy") else value
