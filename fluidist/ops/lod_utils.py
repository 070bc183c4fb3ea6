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
    """A mask the op reads on the host (``host_inputs``) as a flat bool array."""
    return np.asarray(mask).reshape(-1).astype(bool)


def seq_offsets(ctx, slot="X", value=None, level=-1):
    """LoD level ``level`` (the last by default) of input ``slot`` as host int offsets, checked to
    cover its rows; a clear error naming the input when it has no LoD."""
    name = ctx.op.inputs[slot][0]
    lod = ctx.lod(slot)
    if not lod:
        raise ValueError("op %r: input %s %r has no LoD; %s" % (ctx.op.type, slot, name, _lod_source(ctx.op, name)))
    offsets = [int(o) for o in lod[level]]
    rows = value.shape[0] if value is not None else None
    bad = offsets[0] != 0 or any(b < a for a, b in zip(offsets, offsets[1:]))
    if level in (-1, len(lod) - 1) and rows is not None and offsets[-1] != rows:
        bad = True
    if bad:
        raise ValueError("op %r: the LoD %s of %s %r does not match its %s rows"
                         % (ctx.op.type, offsets, slot, name, rows))
    return offsets


def _lod_source(op, name):
    """Where the missing LoD of ``name`` should have come from: the op of the block that wrote it,
    or else the feed."""
    writer = None
    for o in op.block.ops:
        if o is op:
            break
        if name in o.output_arg_names:
            writer = o
    if writer is not None:
        return "op %r wrote it and passed on no LoD" % writer.type
    return "feed it as a LoDTensor with sequence lengths (fluid.create_lod_tensor)"


def segments(offsets):
    """Host arrays: the sequence of each row, each row's position in its sequence, the lengths."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    seg = np.repeat(np.arange(len(lengths)), lengths)
    pos = np.arange(int(offsets[-1]) if len(offsets) else 0) - offsets[seg]
    return seg, pos, lengths
