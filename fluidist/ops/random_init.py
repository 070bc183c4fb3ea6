"""The random initialisers (uniform_random, gaussian_random, truncated_gaussian_random): drawn with
NumPy's generator from the op's seed, on the host, and cut to the rows of a pserver's parameter
block when ``row_begin`` / ``row_end`` / ``row_step`` say so."""
import numpy as np

from ..framework.registry import register_op
from .shape_tensors import SHAPE_INPUTS, SHAPE_SLOTS, creation_infer, with_tensor_shape


def _shape_attr_infer(ctx):
    ctx.set_output("Out", ctx.attr("shape"), ctx.attr("dtype"))


_RANDOM_SALT_ATTR = "salt"
# the registry's ``host`` fact of the random initialisers: NumPy's generator, so that every place
# draws the same numbers from the same seed (the plan moves them to a device place)
_HOST_RNG = "draws with NumPy's generator, on the host (the same numbers on every place)"


def _rng(ctx, attrs):
    """Initialisers draw from (seed, salt), the salt empty unless set: as in Paddle, a seed alone decides
    the numbers, so a network built twice under the same ``program.random_seed`` starts from the same
    parameters whatever their unique names (and two parameters of one shape start equal)."""
    return ctx.rng(attrs["seed"], attrs.get(_RANDOM_SALT_ATTR) or "")


def _finish_random(ctx, attrs, host):
    """Cut out the rows ``[row_begin, row_end)`` when set (a parameter block on a pserver gets exactly
    the rows it has in the whole parameter), then move to the place."""
    rb, re_ = attrs.get("row_begin", -1), attrs.get("row_end", -1)
    if rb is not None and rb >= 0:
        host = host[rb:re_:attrs.get("row_step") or 1]
    return {"Out": ctx.xp.asarray(host.astype(attrs["dtype"], copy=False))}


def _full_shape(attrs):
    return tuple(attrs.get("full_shape") or attrs["shape"])


_DRAW_CHUNK_BYTES = 64 << 20


def _draw(ctx, attrs, draw):
    """``draw(shape)`` (a float64 sample) over the full shape, cut to the rows this op keeps and moved
    to the place. A shard of a big table (rows ``row_begin:row_end:row_step`` of it) is drawn in chunks
    of whole rows, keeping only its rows: the generator's stream is the same as one draw of the whole
    table, without ever holding the whole table (10M rows x 16 in float64 would be 1.3 GB)."""
    full = _full_shape(attrs)
    rb, re_ = attrs.get("row_begin", -1), attrs.get("row_end", -1)
    row_bytes = 8 * int(np.prod(full[1:])) if len(full) > 1 else 8
    if rb is None or rb < 0 or not full or full[0] * row_bytes <= _DRAW_CHUNK_BYTES:
        return _finish_random(ctx, attrs, draw(full))
    keep = range(*slice(rb, re_, attrs.get("row_step") or 1).indices(full[0]))   # as host[rb:re_:step]
    step = keep.step
    out = np.empty((len(keep),) + tuple(full[1:]), dtype=attrs["dtype"])
    per = max(1, _DRAW_CHUNK_BYTES // row_bytes)
    at, done = 0, 0
    while at < full[0] and done < len(keep):
        n = min(per, full[0] - at)
        chunk = draw((n,) + tuple(full[1:]))
        first = keep.start if at <= keep.start else keep.start + -(-(at - keep.start) // step) * step
        stop = min(at + n, keep.stop)
        rows = chunk[first - at:stop - at:step] if first < stop else chunk[:0]
        out[done:done + len(rows)] = rows
        done += len(rows)
        at += n
    return {"Out": ctx.xp.asarray(out)}


_RAND_COMMON = {"shape": [], "seed": 0, "dtype": "float32", "salt": "", "full_shape": [],
                "row_begin": -1, "row_end": -1, "row_step": 1}


@register_op("uniform_random", host=_HOST_RNG, inputs=SHAPE_INPUTS, outputs=["Out"],
             attrs=dict(_RAND_COMMON, min=-1.0, max=1.0, diag_num=0, diag_step=0, diag_val=1.0),
             infer=creation_infer(all_unknown_with_list=True), init="random", no_grad=SHAPE_SLOTS)
def uniform_random(ctx, ins, attrs):
    """Uniform in ``[min, max)``; then, when ``diag_num`` > 0, elements ``i * (diag_step + 1)``
    (i < diag_num) of the whole flattened tensor set to ``diag_val``, as Paddle 1.8's kernel."""
    attrs = with_tensor_shape(ins, attrs)
    r = _rng(ctx, attrs)
    out = _draw(ctx, attrs, lambda shape: r.uniform(attrs["min"], attrs["max"], shape))
    if attrs.get("diag_num", 0) > 0:
        _set_diagonal(ctx, out["Out"], attrs)
    return out


def _set_diagonal(ctx, out, attrs):
    """Set the diagonal elements of the whole tensor that fall in ``out`` (its rows
    ``row_begin:row_end:row_step`` when a pserver block, else all of it), in place."""
    full = _full_shape(attrs)
    num, step = attrs["diag_num"], attrs["diag_step"]
    size = int(np.prod(full))
    if size <= (num - 1) * (step + 1):
        raise ValueError("op 'uniform_random': %d diagonal elements %d apart do not fit in shape %s"
                         % (num, step + 1, list(full)))
    width = size // full[0] if full and full[0] else 1
    flat = np.arange(num, dtype=np.int64) * (step + 1)
    rows, cols = flat // width, flat % width
    rb = attrs.get("row_begin", -1)
    if rb is not None and rb >= 0:
        kept = range(*slice(rb, attrs.get("row_end", -1), attrs.get("row_step") or 1).indices(full[0]))
        mine = np.array([r in kept for r in rows.tolist()], dtype=bool)
        rows = (rows[mine] - kept.start) // kept.step
        cols = cols[mine]
    view = out.reshape(out.shape[0] if out.ndim else 1, -1)
    view[ctx.xp.asarray(rows), ctx.xp.asarray(cols)] = attrs["diag_val"]


@register_op("gaussian_random", host=_HOST_RNG, inputs=SHAPE_INPUTS, outputs=["Out"],
             attrs=dict(_RAND_COMMON, mean=0.0, std=1.0), infer=creation_infer(), init="random", no_grad=SHAPE_SLOTS)
def gaussian_random(ctx, ins, attrs):
    attrs = with_tensor_shape(ins, attrs)
    r = _rng(ctx, attrs)
    return _draw(ctx, attrs, lambda shape: r.normal(attrs["mean"], attrs["std"], shape))


@register_op("truncated_gaussian_random", host=_HOST_RNG, outputs=["Out"], attrs=dict(_RAND_COMMON, mean=0.0, std=1.0),
             infer=_shape_attr_infer, init="random")
def truncated_gaussian_random(ctx, ins, attrs):
    r = _rng(ctx, attrs)
    shape = _full_shape(attrs)
    n = int(np.prod(shape))
    out = np.empty(0)
    while out.size < n:  # resample outside two standard deviations
        z = r.normal(0.0, 1.0, max(n * 2, 16))
        out = np.concatenate([out, z[np.abs(z) <= 2.0]])
    host = out[:n].reshape(shape) * attrs["std"] + attrs["mean"]
    return _finish_random(ctx, attrs, host)
