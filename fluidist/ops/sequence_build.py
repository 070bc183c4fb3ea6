"""Ops that give tensors a new sequence structure: ``lod_reset`` (and ``lod_append``: a LoD from an
attr or from another tensor) and ``im2sequence`` (an image's patches as a sequence), each with its
gradient."""
import numpy as np

from ..core.tensor import lengths_to_offsets, scatter_add
from ..framework.registry import register_grad, register_op
from .sequence import _host


# ------------------------------------------------------------------ lod_reset / lod_append
def _target_lod(ctx, x, ins, attrs):
    y = ins.get("Y")
    if y is not None:
        y_lod = ctx.lod("Y")
        if y_lod:
            level = [list(l) for l in y_lod]
        else:
            level = [[int(v) for v in _host(y).reshape(-1)]]
    else:
        target = [int(v) for v in attrs["target_lod"]]
        if not target:
            raise ValueError("op 'lod_reset': give Y or target_lod")
        level = [target]
    new = level[-1] if attrs["append"] else None
    if attrs["append"]:
        lod = [list(l) for l in ctx.lod("X")] + [new]
    else:
        lod = level
    last = lod[-1]
    if last[0] != 0 or last[-1] != x.shape[0] or any(b < a for a, b in zip(last, last[1:])):
        raise ValueError("op 'lod_reset': the LoD %s does not fit X %r of %d rows (offsets from 0 to the rows)"
                         % (lod, ctx.op.inputs["X"][0], x.shape[0]))
    return lod


def _infer_lod_reset(ctx):
    """Out is shaped like X; its LoD level is Y's (at least 1) when Y is given, else one more than
    X's with ``append``, else 1 (as Paddle's compile-time var-type inference sets it)."""
    x, y = ctx.input_var("X"), ctx.input_var("Y")
    if x is None:
        return
    if y is not None:
        level = max(y.lod_level, 1)
    elif ctx.attrs.get("append"):
        level = x.lod_level + 1
    else:
        level = 1
    ctx.set_output("Out", x.shape, x.dtype, level)


@register_op("lod_reset", host_inputs=("Y",), inputs=["X", "Y?"], outputs=["Out"], attrs={"target_lod": [], "append": False},
             no_grad=("Y",), infer=_infer_lod_reset)
def lod_reset(ctx, ins, attrs):
    """X with a new LoD: Y's LoD, or Y's values as offsets, or ``target_lod``; with ``append`` the
    new level is added under X's levels."""
    ctx.set_lod("Out", _target_lod(ctx, ins["X"], ins, attrs))
    return {"Out": ins["X"]}


@register_grad("lod_reset", inputs=["X", "Out@GRAD"])
def lod_reset_grad(ctx, ins, attrs):
    ctx.set_lod("X@GRAD", ctx.lod("X"))
    return {"X@GRAD": ins["Out@GRAD"]}


# ------------------------------------------------------------------ im2sequence
_IM2SEQ_ATTRS = {"kernels": [1, 1], "strides": [1, 1], "paddings": [0, 0, 0, 0], "out_stride": [1, 1]}


def _out_size(size, k, pad_a, pad_b, stride):
    return (size + pad_a + pad_b - k) // stride + 1


def _im2seq_plan(x, attrs, real=None):
    """Per image: (output rows, output cols) of its patch grid."""
    kh, kw = attrs["kernels"]
    sh, sw = attrs["strides"]
    up, left, down, right = attrs["paddings"]
    n, _, h, w = x.shape
    if real is None:
        oh, ow = _out_size(h, kh, up, down, sh), _out_size(w, kw, left, right, sw)
        return [(oh, ow)] * n
    out = []
    osh, osw = attrs["out_stride"]
    for i in range(n):
        rh = (int(real[i][0]) + osh - 1) // osh
        rw = (int(real[i][1]) + osw - 1) // osw
        out.append((_out_size(rh, kh, up, down, sh), _out_size(rw, kw, left, right, sw)))
    return out


def _grid(x, attrs, plan):
    """The patch grid covering the images and every image's real grid: a real size larger than X's
    (Paddle reads the area beyond the image as zeros) makes it larger than X's own."""
    kh, kw = attrs["kernels"]
    sh, sw = attrs["strides"]
    up, left, down, right = attrs["paddings"]
    oh, ow = _out_size(x.shape[2], kh, up, down, sh), _out_size(x.shape[3], kw, left, right, sw)
    return max([oh] + [a for a, _ in plan]), max([ow] + [b for _, b in plan])


def _patches(xp, x, attrs, grid):
    """All patches of the padded images: [n, oh, ow, c * kh * kw] over the ``grid`` (oh, ow), the
    images padded with zeros as far as it reaches."""
    kh, kw = attrs["kernels"]
    sh, sw = attrs["strides"]
    up, left, down, right = attrs["paddings"]
    n, c, h, w = x.shape
    oh, ow = grid
    down = max(down, (oh - 1) * sh + kh - up - h)
    right = max(right, (ow - 1) * sw + kw - left - w)
    padded = xp.pad(x, ((0, 0), (0, 0), (up, down), (left, right)))
    rows = (np.arange(oh) * sh)[:, None] + np.arange(kh)[None, :]          # [oh, kh]
    cols = (np.arange(ow) * sw)[:, None] + np.arange(kw)[None, :]          # [ow, kw]
    p = padded[:, :, xp.asarray(rows)[:, None, :, None], xp.asarray(cols)[None, :, None, :]]  # n c oh ow kh kw
    return p.transpose(0, 2, 3, 1, 4, 5).reshape(n, oh, ow, c * kh * kw), padded.shape[2:], (rows, cols)


@register_op("im2sequence", host_inputs=("Y",), inputs=["X", "Y?"], outputs=["Out"], attrs=_IM2SEQ_ATTRS, no_grad=("Y",),
             infer=lambda c: c.set_output("Out", (-1, ((c.input_shape("X") or (0, 0))[1]) *
                                                  c.attr("kernels")[0] * c.attr("kernels")[1]),
                                          c.input_dtype("X"), 1))
def im2sequence(ctx, ins, attrs):
    """Each image ``[C, H, W]`` of X cut into patches (``kernels``, ``strides``, ``paddings`` [up,
    left, down, right]); one sequence per image, one row per patch (row-major over the grid). With
    ``Y`` (the real image sizes, divided by ``out_stride`` rounding up) each image's grid is that of its
    real area: its patches there, reaching past the image as zeros where the real size is larger."""
    xp = ctx.xp
    x = ins["X"]
    real = _host(ins["Y"]) if ins.get("Y") is not None else None
    plan = _im2seq_plan(x, attrs, real)
    p, _, _ = _patches(xp, x, attrs, _grid(x, attrs, plan))
    pieces = [p[i, :a, :b].reshape(a * b, -1) for i, (a, b) in enumerate(plan)]
    ctx.set_lod("Out", [lengths_to_offsets([a * b for a, b in plan])])
    return {"Out": xp.concatenate(pieces)}


@register_grad("im2sequence", inputs=["X", "Y?", "Out@GRAD"])
def im2sequence_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    kh, kw = attrs["kernels"]
    up, left, down, right = attrs["paddings"]
    n, c, h, w = x.shape
    real = _host(ins["Y"]) if ins.get("Y") is not None else None
    plan = _im2seq_plan(x, attrs, real)
    oh, ow = _grid(x, attrs, plan)
    _, (hp, wp), (rows, cols) = _patches(xp, x, attrs, (oh, ow))
    full = xp.zeros((n, oh, ow, c * kh * kw), dtype=d.dtype)
    start = 0
    for i, (a, b) in enumerate(plan):
        full[i, :a, :b] = d[start:start + a * b].reshape(a, b, -1)
        start += a * b
    g = full.reshape(n, oh, ow, c, kh, kw).transpose(0, 3, 1, 2, 4, 5)     # n c oh ow kh kw
    r = np.broadcast_to(rows[:, None, :, None], (oh, ow, kh, kw)).reshape(-1)
    q = np.broadcast_to(cols[None, :, None, :], (oh, ow, kh, kw)).reshape(-1)
    padded = xp.zeros((n, c, hp * wp), dtype=d.dtype)
    scatter_add(xp, padded, (slice(None), slice(None), xp.asarray(r * wp + q)), g.reshape(n, c, -1))
    return {"X@GRAD": padded.reshape(n, c, hp, wp)[:, :, up:up + h, left:left + w]}
