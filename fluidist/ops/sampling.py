"""Spatial sampling ops: ``affine_grid`` (a sampling grid from affine transforms) and ``grid_sampler``
(bilinear sampling of an image at grid points), with Paddle 1.8's conventions: the grid spans
[-1, 1] corner to corner, points outside the image read zeros."""
import numpy as np

from ..framework.registry import register_grad, register_op
from ..core.tensor import scatter_add


def _out_hw(ctx, ins, attrs):
    shape = [int(v) for v in ins["OutputShape"].reshape(-1).tolist()] if ins.get("OutputShape") is not None \
        else list(attrs["output_shape"])
    if len(shape) != 4:
        raise ValueError("op 'affine_grid': the output shape must be [N, C, H, W], got %s" % shape)
    return shape[2], shape[3]


def _base_grid(xp, h, w, dtype):
    """[H, W, 3] rows of (x, y, 1), x and y running from -1 to 1."""
    ys = xp.linspace(-1, 1, h) if h > 1 else xp.zeros(1)
    xs = xp.linspace(-1, 1, w) if w > 1 else xp.zeros(1)
    gx, gy = xp.meshgrid(xs, ys)
    return xp.stack([gx, gy, xp.ones_like(gx)], axis=-1).astype(dtype)


def _affine_grid_infer(ctx):
    ts = ctx.input_shape("Theta")
    shape = ctx.attr("output_shape") or []
    if ts is None:
        return
    h, w = (shape[2], shape[3]) if len(shape) == 4 and not ctx.has_input("OutputShape") else (-1, -1)
    ctx.set_output("Output", [ts[0], h, w, 2], ctx.input_dtype("Theta"))


@register_op("affine_grid", inputs=["Theta", "OutputShape?"], outputs=["Output"], attrs={"output_shape": []},
             infer=_affine_grid_infer, no_grad=("OutputShape",))
def affine_grid(ctx, ins, attrs):
    """For each of the N 2x3 transforms, the [H, W, 2] source points of an H x W output."""
    theta = ins["Theta"]
    if theta.ndim != 3 or theta.shape[1:] != (2, 3):
        raise ValueError("op 'affine_grid': Theta %r must be [N, 2, 3], got %s"
                         % (ctx.op.inputs["Theta"][0], list(theta.shape)))
    h, w = _out_hw(ctx, ins, attrs)
    base = _base_grid(ctx.xp, h, w, theta.dtype)
    return {"Output": ctx.xp.einsum("hwk,nck->nhwc", base, theta)}


@register_grad("affine_grid", inputs=["Theta", "OutputShape?", "Output@GRAD"])
def affine_grid_grad(ctx, ins, attrs):
    theta, d = ins["Theta"], ins["Output@GRAD"]
    h, w = _out_hw(ctx, ins, attrs)
    base = _base_grid(ctx.xp, h, w, theta.dtype)
    return {"Theta@GRAD": ctx.xp.einsum("nhwc,hwk->nck", d, base)}


def _corners(xp, x, grid):
    """Bilinear corners and weights of each grid point: (x0, y0, weights of the 4 corners)."""
    h, w = x.shape[2], x.shape[3]
    gx = (grid[..., 0] + 1) * (w - 1) / 2
    gy = (grid[..., 1] + 1) * (h - 1) / 2
    x0, y0 = xp.floor(gx), xp.floor(gy)
    dx, dy = gx - x0, gy - y0
    return gx, gy, x0.astype(np.int64), y0.astype(np.int64), dx, dy


def _gather_pixels(xp, x, ys, xs):
    """x[n, :, ys, xs] for [N, H', W'] index grids, zero where outside the image: [N, C, H', W']."""
    n, c, h, w = x.shape
    inside = (ys >= 0) & (ys < h) & (xs >= 0) & (xs < w)
    yc, xc = xp.clip(ys, 0, h - 1), xp.clip(xs, 0, w - 1)
    bi = xp.arange(n).reshape(n, 1, 1)
    vals = x.transpose(0, 2, 3, 1)[bi, yc, xc]           # N, H', W', C
    return (vals * inside[..., None]).transpose(0, 3, 1, 2), inside, yc, xc


@register_op("grid_sampler", inputs=["X", "Grid"], outputs=["Output"],
             infer=lambda c: c.set_output("Output", [c.input_shape("X")[0], c.input_shape("X")[1],
                                                     c.input_shape("Grid")[1], c.input_shape("Grid")[2]],
                                          c.input_dtype("X")) if c.input_shape("X") and c.input_shape("Grid") else None)
def grid_sampler(ctx, ins, attrs):
    """X (NCHW) sampled bilinearly at Grid's [N, H, W, 2] points (Paddle 1.8 wants X's H and W) ((-1, -1) the top-left pixel,
    (1, 1) the bottom-right one); the parts of a point outside X read zeros."""
    xp = ctx.xp
    x, grid = ins["X"], ins["Grid"]
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[:3] != (x.shape[0],) + x.shape[2:]:
        raise ValueError("op 'grid_sampler': X %r %s must be NCHW and Grid %r %s [N, H, W, 2] with X's N, H, W"
                         % (ctx.op.inputs["X"][0], list(x.shape), ctx.op.inputs["Grid"][0], list(grid.shape)))
    _, _, x0, y0, dx, dy = _corners(xp, x, grid)
    out = 0
    for oy, ox, wgt in ((0, 0, (1 - dx) * (1 - dy)), (0, 1, dx * (1 - dy)), (1, 0, (1 - dx) * dy), (1, 1, dx * dy)):
        vals, _, _, _ = _gather_pixels(xp, x, y0 + oy, x0 + ox)
        out = out + vals * wgt[:, None]
    return {"Output": out.astype(x.dtype, copy=False)}


@register_grad("grid_sampler", inputs=["X", "Grid", "Output@GRAD"])
def grid_sampler_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, grid, d = ins["X"], ins["Grid"], ins["Output@GRAD"]
    n, c, h, w = x.shape
    _, _, x0, y0, dx, dy = _corners(xp, x, grid)
    flat = xp.zeros((n * h * w, c), dtype=d.dtype)              # dX as rows (n, y, x)
    dgx = xp.zeros(grid.shape[:-1], dtype=d.dtype)
    dgy = xp.zeros(grid.shape[:-1], dtype=d.dtype)
    corners = ((0, 0, (1 - dx) * (1 - dy), -(1 - dy), -(1 - dx)), (0, 1, dx * (1 - dy), (1 - dy), -dx),
               (1, 0, (1 - dx) * dy, -dy, (1 - dx)), (1, 1, dx * dy, dy, dx))
    bi = xp.arange(n).reshape(n, 1, 1)
    for oy, ox, wgt, dw_dx, dw_dy in corners:
        vals, inside, yc, xc = _gather_pixels(xp, x, y0 + oy, x0 + ox)
        contrib = (d * wgt[:, None]) * inside[:, None]            # N, C, H', W'
        rows = ((bi * h + yc) * w + xc).reshape(-1)
        scatter_add(xp, flat, rows, contrib.transpose(0, 2, 3, 1).reshape(-1, c))
        g = (d * vals).sum(axis=1)                                 # N, H', W'
        dgx = dgx + g * dw_dx
        dgy = dgy + g * dw_dy
    dgrid = xp.stack([dgx * (w - 1) / 2, dgy * (h - 1) / 2], axis=-1)
    dxg = xp.ascontiguousarray(flat.reshape(n, h, w, c).transpose(0, 3, 1, 2))
    return {"X@GRAD": dxg, "Grid@GRAD": dgrid.astype(grid.dtype, copy=False)}
