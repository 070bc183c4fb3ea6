"""The sums of a row-sparse value's repeated rows on the host, added as Paddle 1.8's CPU MergeAdd adds
them: each distinct row starts from zeros and receives its value rows one after another, in the order
they came (``out[id] += row`` for every row in turn).

NumPy's ``add.reduceat`` is no substitute: it adds to a group's first row the pairwise sum of the
others, which rounds differently for a row met three times or more (``1e8, 1, -1e8, 1, 1`` in float32:
0.0 there, 2.0 in Paddle). Adding the k-th rows of all groups at once, one round per k, gives Paddle's
order but costs one NumPy call per round, and a Zipf-drawn batch has ids met hundreds of times. Here
the rounds are cut into a few blocks: ``np.add.reduce`` over the first axis of a C-contiguous block adds
its layers one after another, element by element (it reduces pairwise only along the innermost axis,
so each layer must have at least two elements; the tests check the result bit for bit against a loop).
"""
from __future__ import annotations

import numpy as np


def sums_in_order(value: np.ndarray, order: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For each group ``g`` of ``counts[g]`` (at least 1) consecutive entries of ``order``, the sum of
    the rows ``value[order[...]]`` of the group, as Paddle 1.8 sums them: ``0 + r0 + r1 + ...`` in
    that order (so a group of -0.0 rows sums to +0.0)."""
    starts = np.cumsum(counts) - counts
    out = np.take(value, np.take(order, starts), axis=0)
    repeated = np.flatnonzero(counts > 1)
    if repeated.size:
        ranking, sums = _repeated_sums(value, order, starts[repeated], counts[repeated])
        out[np.take(repeated, ranking)] = sums
    np.add(out, out.dtype.type(0), out=out)
    return out


def _repeated_sums(value, order, starts, counts):
    """``sums_in_order`` of groups of two rows or more, less the leading zero, in another order:
    (``ranking``, sums): the sum of group ``ranking[i]`` is ``sums[i]``.

    The groups are ranked by their number of rows (most first), so the groups that have a k-th row
    are a prefix of that ranking; the rows are gathered once, round after round (``layers``), each
    round the k-th rows of that prefix, with one zero row after them for the blocks' padding."""
    most_first = np.argsort(-counts, kind="stable")
    sizes = counts[most_first]
    rounds = int(sizes[0])
    alive = sizes.size - np.cumsum(np.bincount(sizes, minlength=rounds + 1))[:rounds]   # groups with a k-th row
    offsets = np.cumsum(alive) - alive
    total = int(offsets[-1] + alive[-1])
    k_th = np.repeat(np.arange(rounds), alive)
    group = np.arange(total) - np.repeat(offsets, alive)
    layers = np.empty((total + 1,) + value.shape[1:], value.dtype)
    np.take(value, np.take(order, np.take(starts[most_first], group) + k_th), axis=0, out=layers[:total],
            mode="clip")     # the indices are in range; with ``out``, mode "raise" would buffer the copy
    layers[total] = 0
    _add_rounds(layers, alive, offsets)
    return most_first, layers[:sizes.size]


_ROUND_BY_ROUND = 64      # rounds of at least this many rows are added in place, one NumPy call each


def _add_rounds(layers, alive, offsets):
    """Add the rounds ``1..`` of ``layers`` (round k: the ``alive[k]`` rows from ``offsets[k]``) onto
    round 0 (the first ``alive[0]`` rows), in place. Rounds of many rows are added one at a time; the
    others go by blocks over which at least half the groups of the block's first round go on: a
    block of rounds is one gather (the missing rows read the zero row at the end, which leaves a sum
    as it is, its sign aside) and one ``add.reduce`` over its first axis, with the running sums as its
    first layer; at most twice the rows of its rounds, and a few blocks for a batch of 26,624
    Zipf-drawn ids."""
    if layers[0].size == 0:
        return
    k = 1
    while k < len(alive) and alive[k] >= _ROUND_BY_ROUND:
        groups, start = int(alive[k]), int(offsets[k])
        layers[:groups] += layers[start:start + groups]
        k += 1
    pad = len(layers) - 1
    while k < len(alive):
        groups = int(alive[k])
        end = k + int(np.count_nonzero(alive[k:] * 2 >= groups))
        width = groups if groups * layers[0].size > 1 else 2      # a layer of one element would reduce pairwise
        column = np.arange(width)
        index = np.empty((end - k + 1, width), dtype=np.intp)
        index[0] = np.where(column < groups, column, pad)
        index[1:] = np.where(column < alive[k:end, None], offsets[k:end, None] + column, pad)
        layers[:groups] = np.add.reduce(np.take(layers, index, axis=0), axis=0)[:groups]
        k = end
