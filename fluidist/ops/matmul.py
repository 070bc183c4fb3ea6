"""The ``matmul`` op and its gradient, with Paddle 1.8's shape rules.

Paddle views a 1-D ``X`` of length K as the row ``[1, K]`` and a 1-D ``Y`` as the column ``[K, 1]``
*before* ``transpose_X`` / ``transpose_Y`` apply (so a transposed 1-D ``X`` is a column and a
transposed 1-D ``Y`` a row), multiplies, then drops the output's second-to-last axis when ``X`` was
1-D and that axis is 1, and its last axis when ``Y`` was 1-D and that axis is 1; a product with
no axis left is ``[1]``. Batch axes come from ``X`` when it has them, else from ``Y``.

``head_number`` (multi-head attention, Paddle's MKL build): ``X``'s columns split into that many
equal blocks. When ``X``'s width equals ``Y``'s height, ``Y``'s rows split alike and the head
products (each ``[M, N]``) are laid side by side: ``[M, heads * N]``. When they differ, ``Y``'s
columns split into the blocks instead (each head's ``X`` block is as wide as ``Y`` is high) and the
result is ``[M, N]``.
"""
import numpy as np

from ..framework.registry import register_grad, register_op
from .math import _reduce_grad


def _t(a):
    return a.swapaxes(-1, -2)


def _matrix_dims(shape, transposed, vector_is_row):
    """(batch dims, height, width) of an operand as Paddle's matmul views it."""
    dims = list(shape)
    if len(dims) == 1:
        dims = [1, dims[0]] if vector_is_row else [dims[0], 1]
    height, width = dims[-2], dims[-1]
    if transposed:
        height, width = width, height
    return dims[:-2], height, width


def _drop_vector_axes(out, x_rank, y_rank):
    """Paddle's squeeze of the axes a 1-D operand contributed (when they are 1)."""
    out = list(out)
    if x_rank == 1 and out[-2] == 1:
        del out[-2]
    if y_rank == 1 and out and out[-1] == 1:
        del out[-1]
    return out or [1]


def _matmul_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    x_batch, x_height, x_width = _matrix_dims(xs, ctx.attr("transpose_X"), True)
    y_batch, y_height, y_width = _matrix_dims(ys, ctx.attr("transpose_Y"), False)
    heads = ctx.attr("head_number")
    known = x_width >= 0 and y_height >= 0
    if heads <= 1 and known and x_width != y_height:
        raise ValueError("matmul: inner dimensions differ: X %s vs Y %s (transpose_X=%s, transpose_Y=%s)"
                         % (list(xs), list(ys), ctx.attr("transpose_X"), ctx.attr("transpose_Y")))
    out_width = y_width
    if heads > 1 and y_width >= 0 and not (known and x_width != y_height):
        out_width = heads * y_width
    batch = x_batch if x_batch else y_batch
    out = _drop_vector_axes(list(batch) + [x_height, out_width], len(xs), len(ys))
    ctx.set_output("Out", out, ctx.input_dtype("X"))


def _operands(x, y, attrs):
    """X and Y as the matrices (stacks) that are multiplied."""
    xx = x.reshape(1, -1) if x.ndim == 1 else x
    yy = y.reshape(-1, 1) if y.ndim == 1 else y
    if attrs["transpose_X"]:
        xx = _t(xx)
    if attrs["transpose_Y"]:
        yy = _t(yy)
    return xx, yy


def _head_slices(xx, yy, heads):
    """Per head: (the slice of X's last axis, the axis of Y it splits, the slice of Y on that axis,
    the slice of the output's last axis)."""
    if heads <= 1:
        return [(slice(None), -1, slice(None), slice(None))]
    x_width, y_height, y_width = xx.shape[-1], yy.shape[-2], yy.shape[-1]
    if x_width % heads:
        raise ValueError("matmul: head_number %d does not divide X's width %d" % (heads, x_width))
    step = x_width // heads
    if x_width == y_height:   # Y's rows split with X's columns; head outputs side by side
        return [(slice(i * step, (i + 1) * step), -2, slice(i * step, (i + 1) * step),
                 slice(i * y_width, (i + 1) * y_width)) for i in range(heads)]
    if step != y_height or y_width % heads:
        raise ValueError("matmul: with head_number %d, X's width %d split in heads must equal Y's height %d "
                         "and Y's width %d must split in heads" % (heads, x_width, y_height, y_width))
    y_step = y_width // heads
    return [(slice(i * step, (i + 1) * step), -1, slice(i * y_step, (i + 1) * y_step),
             slice(i * y_step, (i + 1) * y_step)) for i in range(heads)]


def _y_block(yy, axis, part):
    return yy[..., part, :] if axis == -2 else yy[..., part]


@register_op("matmul", inputs=["X", "Y"], outputs=["Out"],
             attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0, "head_number": 1},
             infer=_matmul_infer)
def matmul(ctx, ins, attrs):
    """``alpha * op(X) @ op(Y)`` batched over leading axes (see the module docstring)."""
    xp, x, y = ctx.xp, ins["X"], ins["Y"]
    xx, yy = _operands(x, y, attrs)
    blocks = _head_slices(xx, yy, attrs["head_number"])
    if len(blocks) == 1:
        out = xp.matmul(xx, yy)
    else:
        out = xp.concatenate([xp.matmul(xx[..., xs], _y_block(yy, axis, ys)) for xs, axis, ys, _ in blocks],
                             axis=-1)
    if attrs["alpha"] != 1.0:
        out = out * attrs["alpha"]
    return {"Out": out.reshape(_drop_vector_axes(out.shape, x.ndim, y.ndim))}


@register_grad("matmul", inputs=["X", "Y", "Out@GRAD"])
def matmul_grad(ctx, ins, attrs):
    xp, x, y = ctx.xp, ins["X"], ins["Y"]
    xx, yy = _operands(x, y, attrs)
    blocks = _head_slices(xx, yy, attrs["head_number"])
    out_width = blocks[-1][3].stop or yy.shape[-1]
    batch = np.broadcast_shapes(xx.shape[:-2], yy.shape[:-2])
    d = ins["Out@GRAD"].reshape(tuple(batch) + (xx.shape[-2], out_width))
    d = d * attrs["alpha"] if attrs["alpha"] != 1.0 else d
    res = {}
    if ctx.op.outputs.get("X@GRAD"):
        parts = [xp.matmul(d[..., os], _t(_y_block(yy, axis, ys))) for _, axis, ys, os in blocks]
        dxx = _reduce_grad(xp, parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=-1),
                           xx.shape, xx.shape)
        res["X@GRAD"] = (_t(dxx) if attrs["transpose_X"] else dxx).reshape(x.shape)
    if ctx.op.outputs.get("Y@GRAD"):
        parts = [xp.matmul(_t(xx[..., xs]), d[..., os]) for xs, _, _, os in blocks]
        dyy = _reduce_grad(xp, parts[0] if len(parts) == 1 else xp.concatenate(parts, axis=blocks[0][1]),
                           yy.shape, yy.shape)
        res["Y@GRAD"] = (_t(dyy) if attrs["transpose_Y"] else dyy).reshape(y.shape)
    return res
