"""LoD arithmetic shared by the sequence, tensor-array and control-flow ops (host-side lists)."""
import numpy as np

from ..core.tensor import lengths_to_offsets


def sub_lod(lod, level, begin, end):
    """Rows ``[b, e)`` of units ``[begin, end)`` of LoD level ``level`` (a unit of the level past
    the last is a row), and the lengths of each level from ``level`` down inside them."""
    lengths = []
    for k in range(level, len(lod)):
        lengths.append([lod[k][i + 1] - lod[k][i] for i in range(begin, end)])
        begin, end = lod[k][begin], lod[k][end]
    return begin, end, lengths


def merge_lengths(parts):
    """Per-level lengths of pieces laid one after another (``sub_lod``'s lengths), as LoD offsets."""
    if not parts or not parts[0]:
        return []
    return [lengths_to_offsets([n for p in parts for n in p[k]]) for k in range(len(parts[0]))]


def host_bools(mask):
    return np.asarray(mask.get() if hasattr(mask, "get") else mask).reshape(-1).astype(bool)
