"""Shape ops: squeeze2 / unsqueeze2 / flatten2, stack / unstack, expand / expand_as, slice /
strided_slice, reverse / flip / roll, pad / pad2d / pad_constant_like, crop / crop_tensor; each with
its gradient where Paddle 1.8 has one. Channel rearrangements, unfold and the matrix-shaped ops are
in ``rearrange.py``."""
import numpy as np

from ..framework.registry import register_grad, register_op
from ..core.tensor import scatter_add
from .shape_tensors import tensor_length, values_from_tensors


def _xshape_grad_maker(op):
    """Gradient of a reshaping op: dOut viewed with X's shape (recorded in XShape)."""
    return [{"type": op.type + "_grad", "inputs": {"XShape": list(op.outputs["XShape"]),
                                                  "Out@GRAD": [op.outputs["Out"][0] + "@GRAD"]},
             "outputs": {"X@GRAD": [op.inputs["X"][0] + "@GRAD"]}, "attrs": {}}]


def _reshape_like_xshape(ctx, ins, attrs):
    return {"X@GRAD": ins["Out@GRAD"].reshape(tuple(int(d) for d in ins["XShape"]))}


def _xshape(x):
    return np.array(x.shape, dtype=np.int64)


# ------------------------------------------------------------------ squeeze2 / unsqueeze2 / flatten2
def _squeeze_shape(shape, axes):
    """The listed axes (which must have size 1) dropped; no axes: every size-1 axis."""
    rank = len(shape)
    axes = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in axes):
        raise ValueError("squeeze: axes %s are out of range for rank %d" % (axes, rank))
    bad = [a for a in axes if shape[a] not in (1, -1)]
    if bad:
        raise ValueError("squeeze: axes %s of shape %s do not have size 1" % (bad, list(shape)))
    drop = set(axes) if axes else {i for i, d in enumerate(shape) if d == 1}
    return [d for i, d in enumerate(shape) if i not in drop]


def _unsqueeze_shape(shape, axes):
    out = list(shape)
    for a in axes:
        cur = len(out) + 1
        a = a + cur if a < 0 else a
        if not 0 <= a < cur:
            raise ValueError("unsqueeze: axis %d is out of range for rank %d" % (a, cur - 1))
        out.insert(a, 1)
    return out


def _flatten_shape(shape, axis):
    if not 0 <= axis <= len(shape):
        raise ValueError("flatten: axis %d is out of range for rank %d" % (axis, len(shape)))
    def prod(ds):
        return -1 if any(d < 0 for d in ds) else int(np.prod(ds, dtype=np.int64))
    return [prod(shape[:axis]), prod(shape[axis:])]


def _reshaping(type, shape_fn, attrs, keeps_lod=False, tensor_inputs=()):
    """Register a shape-only op. ``keeps_lod``: as Paddle's squeeze2 / unsqueeze2, the output keeps
    the input's LoD when its first dimension is the input's (the rows are the same rows).
    ``tensor_inputs``: (whole tensor slot, tensor list slot, attr) giving the attr at run time; the
    output's sizes are then unknown until the op runs (Paddle declares -1 for each)."""
    def infer(ctx):
        xs = ctx.input_shape("X")
        if xs is None:
            return
        ctx.set_output("XShape", (0,) + tuple(xs), ctx.input_dtype("X"))
        if tensor_inputs and (ctx.has_input(tensor_inputs[0]) or ctx.has_input(tensor_inputs[1])):
            n = tensor_length(ctx, tensor_inputs[0]) if ctx.has_input(tensor_inputs[0]) else \
                len(ctx.op.inputs[tensor_inputs[1]])
            ctx.set_output("Out", None if n is None else [-1] * (len(xs) + n), ctx.input_dtype("X"))
            return
        ctx.set_output("Out", shape_fn(list(xs), ctx.op.attrs), ctx.input_dtype("X"))

    def kernel(ctx, ins, a):
        x = ins["X"]
        if tensor_inputs:
            a = dict(a, **{tensor_inputs[2]: values_from_tensors(ins, *tensor_inputs[:2], a[tensor_inputs[2]])})
        out = x.reshape(shape_fn(list(x.shape), a))
        if keeps_lod and out.ndim and x.ndim and out.shape[0] == x.shape[0]:
            lod = ctx.lod("X")
            if lod:
                ctx.set_lod("Out", lod)
        return {"Out": out, "XShape": _xshape(x)}

    optional = [tensor_inputs[0] + "?", tensor_inputs[1] + "*?"] if tensor_inputs else []
    register_op(type, inputs=["X"] + optional, outputs=["Out", "XShape?"], attrs=attrs, infer=infer,
                grad=_xshape_grad_maker, no_grad=tuple(tensor_inputs[:2]),
                host_inputs=tuple(tensor_inputs[:2]))(kernel)
    register_grad(type, inputs=["XShape", "Out@GRAD"])(_reshape_like_xshape)


_reshaping("squeeze2", lambda s, a: _squeeze_shape(s, a["axes"]), {"axes": []}, keeps_lod=True)
_reshaping("unsqueeze2", lambda s, a: _unsqueeze_shape(s, a["axes"]), {"axes": []}, keeps_lod=True,
           tensor_inputs=("AxesTensor", "AxesTensorList", "axes"))
_reshaping("flatten2", lambda s, a: _flatten_shape(s, a["axis"]), {"axis": 1})


def _unsqueeze_axes(ctx, ins, attrs):
    """``axes`` from AxesTensorList (one-element tensors) or AxesTensor when given, else the attr."""
    if ins.get("AxesTensorList"):
        return [int(np.asarray(t).reshape(-1)[0]) for t in ins["AxesTensorList"]]
    if ins.get("AxesTensor") is not None:
        return [int(a) for a in np.asarray(ins["AxesTensor"]).reshape(-1)]
    return list(attrs["axes"])


def _reshaping_v1(type, shape_fn, attrs, extra_inputs=(), host_inputs=()):
    """The first-generation reshaping ops (``squeeze``, ``unsqueeze``, ``flatten``): no XShape
    output; the gradient reads X for its shape."""
    def infer(ctx):
        xs = ctx.input_shape("X")
        if xs is None:
            return
        if any(ctx.has_input(s.rstrip("*")) for s in extra_inputs):
            ctx.set_output("Out", None, ctx.input_dtype("X"))
            return
        ctx.set_output("Out", shape_fn(list(xs), ctx.op.attrs), ctx.input_dtype("X"))

    def kernel(ctx, ins, a):
        x = ins["X"]
        if extra_inputs:
            a = dict(a, axes=_unsqueeze_axes(ctx, ins, a))
        return {"Out": x.reshape(shape_fn(list(x.shape), a))}

    register_op(type, inputs=["X"] + ["%s?" % s for s in extra_inputs], outputs=["Out"], attrs=attrs, infer=infer,
                host_inputs=host_inputs, no_grad=tuple(s.rstrip("*") for s in extra_inputs))(kernel)
    register_grad(type, inputs=["X", "Out@GRAD"])(
        lambda ctx, ins, a: {"X@GRAD": ins["Out@GRAD"].reshape(ins["X"].shape)})


_reshaping_v1("squeeze", lambda s, a: _squeeze_shape(s, a["axes"]), {"axes": []})
_reshaping_v1("unsqueeze", lambda s, a: _unsqueeze_shape(s, a["axes"]), {"axes": []},
              extra_inputs=("AxesTensor", "AxesTensorList*"), host_inputs=("AxesTensor", "AxesTensorList"))
_reshaping_v1("flatten", lambda s, a: _flatten_shape(s, a["axis"]), {"axis": 1})


# ------------------------------------------------------------------ stack / unstack
def _stack_infer(ctx):
    shapes = [v.shape for v in ctx.input_vars("X")]
    if not shapes or shapes[0] is None:
        return
    out = list(shapes[0])
    axis = ctx.attr("axis")
    axis = axis + len(out) + 1 if axis < 0 else axis
    out.insert(axis, len(shapes))
    ctx.set_output("Y", out, ctx.input_dtype("X"))


@register_op("stack", inputs=["X*"], outputs=["Y"], attrs={"axis": 0}, infer=_stack_infer)
def stack(ctx, ins, attrs):
    """The inputs (of one shape) stacked along a new axis ``axis``."""
    xs = ins["X"]
    if len({tuple(x.shape) for x in xs}) != 1:
        raise ValueError("op 'stack': inputs %s have different shapes %s"
                         % (ctx.op.inputs["X"], [list(x.shape) for x in xs]))
    return {"Y": ctx.xp.stack(xs, axis=attrs["axis"])}


@register_grad("stack", inputs=["Y@GRAD"])
def stack_grad(ctx, ins, attrs):
    d = ins["Y@GRAD"]
    axis = attrs["axis"] % d.ndim
    return {"X@GRAD": [ctx.xp.ascontiguousarray(p) for p in _unstack(ctx.xp, d, axis)]}


def _unstack(xp, x, axis):
    return [xp.take(x, i, axis=axis) for i in range(x.shape[axis])]


def _unstack_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    axis = ctx.attr("axis") % len(xs)
    out = [d for i, d in enumerate(xs) if i != axis]
    for i in range(len(ctx.op.outputs.get("Y", []))):
        ctx.set_output("Y", out, ctx.input_dtype("X"), i=i)


@register_op("unstack", inputs=["X"], outputs=["Y*"], attrs={"axis": 0, "num": 0}, infer=_unstack_infer)
def unstack(ctx, ins, attrs):
    """X cut along ``axis`` into its ``num`` slices, that axis removed."""
    x = ins["X"]
    axis = attrs["axis"] % x.ndim
    n = len(ctx.op.outputs["Y"])
    if x.shape[axis] != n:
        raise ValueError("op 'unstack': axis %d of X %r has size %d but there are %d outputs"
                         % (axis, ctx.op.inputs["X"][0], x.shape[axis], n))
    return {"Y": [p.copy() for p in _unstack(ctx.xp, x, axis)]}


@register_grad("unstack", inputs=["Y@GRAD*"])
def unstack_grad(ctx, ins, attrs):
    ds = ins["Y@GRAD"]
    return {"X@GRAD": ctx.xp.stack(ds, axis=attrs["axis"] if attrs["axis"] >= 0 else attrs["axis"] + ds[0].ndim + 1)}


# ------------------------------------------------------------------ expand / expand_as
def _sum_tiles(xp, d, shape):
    """Sum ``d`` (tiled from ``shape``) back down to ``shape``."""
    view = []
    for i, s in enumerate(shape):
        view += [d.shape[i] // s, s]
    return d.reshape(view).sum(axis=tuple(range(0, 2 * len(shape), 2)))


def _expand_infer(ctx):
    """Paddle's: the rank kept, -1 where the times are only known at run time (a tensor)."""
    xs = ctx.input_shape("X")
    if xs is None:
        return
    times = ctx.attr("expand_times")
    if ctx.has_input("ExpandTimes") or len(times) != len(xs):
        times = [-1] * len(xs)
    ctx.set_output("Out", [d * t if d >= 0 and t > 0 else -1 for d, t in zip(xs, times)], ctx.input_dtype("X"),
                   ctx.input_lod_level("X"))


@register_op("expand", inputs=["X", "ExpandTimes?", "expand_times_tensor*?"], outputs=["Out"],
             attrs={"expand_times": []}, infer=_expand_infer, no_grad=("ExpandTimes", "expand_times_tensor"))
def expand(ctx, ins, attrs):
    """X tiled ``expand_times[i]`` times along each axis i."""
    x = ins["X"]
    times = _list_input(ins, "ExpandTimes", "expand_times_tensor", attrs["expand_times"])
    if len(times) != x.ndim:
        raise ValueError("op 'expand': expand_times %s needs one entry per dimension of X %r (rank %d)"
                         % (times, ctx.op.inputs["X"][0], x.ndim))
    return {"Out": ctx.xp.tile(x, times)}


@register_grad("expand", inputs=["X", "ExpandTimes?", "expand_times_tensor*?", "Out@GRAD"])
def expand_grad(ctx, ins, attrs):
    return {"X@GRAD": _sum_tiles(ctx.xp, ins["Out@GRAD"], ins["X"].shape)}


@register_op("expand_as", inputs=["X", "target_tensor"], outputs=["Out"], no_grad=("target_tensor",),
             infer=lambda c: c.set_output("Out", c.input_shape("target_tensor"), c.input_dtype("X")))
def expand_as(ctx, ins, attrs):
    """X tiled to the shape of target_tensor (each of its sizes a multiple of X's)."""
    x, t = ins["X"], ins["target_tensor"]
    if x.ndim != t.ndim or any(b % a for a, b in zip(x.shape, t.shape)):
        raise ValueError("op 'expand_as': target %r of shape %s is not a tiling of X %r of shape %s"
                         % (ctx.op.inputs["target_tensor"][0], list(t.shape), ctx.op.inputs["X"][0], list(x.shape)))
    return {"Out": ctx.xp.tile(x, [b // a for a, b in zip(x.shape, t.shape)])}


@register_grad("expand_as", inputs=["X", "target_tensor", "Out@GRAD"])
def expand_as_grad(ctx, ins, attrs):
    return {"X@GRAD": _sum_tiles(ctx.xp, ins["Out@GRAD"], ins["X"].shape)}


# ------------------------------------------------------------------ slice / strided_slice
_list_input = values_from_tensors


def _slices(shape, axes, starts, ends, strides=None):
    """Python slice objects for X, Paddle's clamping: negative positions count from the end."""
    sl = [slice(None)] * len(shape)
    for k, a in enumerate(axes):
        step = strides[k] if strides else 1
        if step == 0:
            raise ValueError("strided_slice: stride 0 on axis %d" % a)
        sl[a] = slice(starts[k], ends[k], step)
    return tuple(sl)


def _decreased(shape, decrease_axis):
    if not decrease_axis:
        return list(shape)
    out = [d for i, d in enumerate(shape) if i not in set(decrease_axis)]
    return out or [1]


def _sliced_len(dim, start, end, step, where):
    """The length of ``start:end:step`` on an axis of size ``dim`` (Python's clamping). Paddle refuses an
    empty slice of a non-empty axis (its 'end should greater than start'), at build and at run time."""
    n = len(range(*slice(start, end, step).indices(dim)))
    if n == 0 and dim > 0:
        raise ValueError("%s: %d:%d%s selects nothing of an axis of size %d (Paddle 1.8 refuses an empty slice)"
                         % (where, start, end, ":%d" % step if step != 1 else "", dim))
    return n


def _slice_infer(strided):
    def infer(ctx):
        """Per axis: -1 where ``infer_flags`` says a tensor gives the bounds (a program without
        infer_flags: any tensor input) or the input's size is unknown, else the slice's length."""
        xs = ctx.input_shape("Input")
        if xs is None:
            return
        whole = any(ctx.has_input(s) for s in ("StartsTensor", "EndsTensor", "StridesTensor"))
        flags = ctx.attr("infer_flags") or []
        listed = any(ctx.has_input(s) for s in ("StartsTensorList", "EndsTensorList", "StridesTensorList"))
        out = list(xs)
        for k, a in enumerate(ctx.attr("axes")):
            dynamic = whole or (flags[k] == -1 if k < len(flags) else listed)
            if dynamic or xs[a] < 0:
                out[a] = -1
                continue
            step = ctx.attr("strides")[k] if strided else 1
            out[a] = _sliced_len(xs[a], ctx.attr("starts")[k], ctx.attr("ends")[k], step,
                                 "axis %d of %r" % (a, ctx.op.inputs["Input"][0]))
        ctx.set_output("Out", _decreased(out, ctx.attr("decrease_axis")), ctx.input_dtype("Input"),
                       ctx.input_lod_level("Input"))
    return infer


def _slice_parts(ctx, ins, attrs, strided):
    x = ins["Input"]
    starts = _list_input(ins, "StartsTensor", "StartsTensorList", attrs["starts"])
    ends = _list_input(ins, "EndsTensor", "EndsTensorList", attrs["ends"])
    strides = _list_input(ins, "StridesTensor", "StridesTensorList", attrs["strides"]) if strided else None
    axes = [a % x.ndim for a in attrs["axes"]]
    if len(starts) != len(axes) or len(ends) != len(axes) or (strided and len(strides) != len(axes)):
        raise ValueError("op %r: axes %s, starts %s, ends %s%s must have one entry each"
                         % (ctx.op.type, axes, starts, ends, ", strides %s" % strides if strided else ""))
    return x, _slices(x.shape, axes, starts, _last_item_ends(attrs, axes, starts, ends, strides), strides)


def _last_item_ends(attrs, axes, starts, ends, strides):
    """``ends`` with Paddle 1.8's case of ``x[i]`` for a tensor ``i`` holding -1: its bounds -1 and
    ``i + 1`` = 0 come from tensors (``infer_flags`` -1) on an axis ``decrease_axis`` drops, and the
    item taken is the last one (an end past the axis) rather than an empty slice."""
    flags, dropped = attrs.get("infer_flags") or [], set(attrs.get("decrease_axis") or [])
    ends = list(ends)
    for k, a in enumerate(axes):
        forward = not strides or strides[k] > 0
        if starts[k] == -1 and ends[k] == 0 and forward and k < len(flags) and flags[k] == -1 and a in dropped:
            ends[k] = None
    return ends


_SLICE_IN = ["Input", "StartsTensor?", "EndsTensor?", "StartsTensorList*?", "EndsTensorList*?"]
_SLICE_ATTRS: dict = {"axes": [], "starts": [], "ends": [], "infer_flags": [], "decrease_axis": []}
_NO_GRAD_SLICE = ("StartsTensor", "EndsTensor", "StartsTensorList", "EndsTensorList", "StridesTensor",
                  "StridesTensorList")


def _slice_kernel(strided):
    def kernel(ctx, ins, attrs):
        """The sub-tensor ``starts[k]:ends[k]`` (step ``strides[k]``) on each of ``axes``; the axes in
        ``decrease_axis`` (sliced to size 1) are dropped."""
        x, sl = _slice_parts(ctx, ins, attrs, strided)
        for a in attrs["axes"]:
            a %= x.ndim
            stop = x.shape[a] if sl[a].stop is None else sl[a].stop
            _sliced_len(x.shape[a], sl[a].start, stop, sl[a].step,
                        "axis %d of %r" % (a, ctx.op.inputs["Input"][0]))
        out = x[sl]
        return {"Out": ctx.xp.ascontiguousarray(out).reshape(_decreased(out.shape, attrs["decrease_axis"]))}
    return kernel


def _box_grad(xp, x, box, d):
    """The gradient of ``x[box]``: zeros with ``d`` in the box."""
    dx = xp.zeros(x.shape, dtype=d.dtype)
    dx[box] = d.reshape(dx[box].shape)
    return dx


def _slice_grad_kernel(strided):
    def kernel(ctx, ins, attrs):
        x, sl = _slice_parts(ctx, ins, attrs, strided)
        return {"Input@GRAD": _box_grad(ctx.xp, x, sl, ins["Out@GRAD"])}
    return kernel


register_op("slice", inputs=_SLICE_IN, outputs=["Out"], attrs=_SLICE_ATTRS, infer=_slice_infer(False),
            no_grad=_NO_GRAD_SLICE)(_slice_kernel(False))
register_grad("slice", inputs=_SLICE_IN + ["Out@GRAD"])(_slice_grad_kernel(False))
_STRIDED_IN = _SLICE_IN + ["StridesTensor?", "StridesTensorList*?"]
register_op("strided_slice", inputs=_STRIDED_IN, outputs=["Out"], attrs=dict(_SLICE_ATTRS, strides=[]),
            infer=_slice_infer(True), no_grad=_NO_GRAD_SLICE)(_slice_kernel(True))
register_grad("strided_slice", inputs=_STRIDED_IN + ["Out@GRAD"])(_slice_grad_kernel(True))


# ------------------------------------------------------------------ reverse / flip / roll
def _flip(xp, x, axes):
    return xp.ascontiguousarray(xp.flip(x, axis=tuple(a % x.ndim for a in axes))) if axes else x.copy()


def _same(ctx):
    ctx.share("Out", "X")


for _type, _attr in (("reverse", "axis"), ("flip", "dims")):
    register_op(_type, inputs=["X"], outputs=["Out"], attrs={_attr: []}, infer=_same)(
        (lambda k: lambda ctx, ins, a: {"Out": _flip(ctx.xp, ins["X"], a[k])})(_attr))
    register_grad(_type, inputs=["Out@GRAD"])(
        (lambda k: lambda ctx, ins, a: {"X@GRAD": _flip(ctx.xp, ins["Out@GRAD"], a[k])})(_attr))


def _roll(xp, x, shifts, dims):
    if not dims:
        return xp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return xp.roll(x, tuple(shifts), axis=tuple(dims))


@register_op("roll", inputs=["X"], outputs=["Out"], attrs={"shifts": [], "dims": []}, infer=_same)
def roll(ctx, ins, attrs):
    """X rotated by ``shifts[k]`` along ``dims[k]`` (no dims: over the flattened X)."""
    return {"Out": _roll(ctx.xp, ins["X"], attrs["shifts"], attrs["dims"])}


@register_grad("roll", inputs=["Out@GRAD"])
def roll_grad(ctx, ins, attrs):
    return {"X@GRAD": _roll(ctx.xp, ins["Out@GRAD"], [-s for s in attrs["shifts"]], attrs["dims"])}


# ------------------------------------------------------------------ pad / pad2d / pad_constant_like
def _pad_infer(ctx):
    xs = ctx.input_shape("X")
    p = ctx.attr("paddings")
    if xs is None or len(p) != 2 * len(xs):
        return
    ctx.set_output("Out", [d + p[2 * i] + p[2 * i + 1] if d >= 0 else -1 for i, d in enumerate(xs)],
                   ctx.input_dtype("X"))


def _pairs(ctx, paddings, rank):
    if len(paddings) != 2 * rank:
        raise ValueError("op %r: paddings %s must hold a (before, after) pair for each of the %d dimensions"
                         % (ctx.op.type, paddings, rank))
    return [(paddings[2 * i], paddings[2 * i + 1]) for i in range(rank)]


@register_op("pad", inputs=["X"], outputs=["Out"], attrs={"paddings": [], "pad_value": 0.0}, infer=_pad_infer)
def pad(ctx, ins, attrs):
    """X padded with ``pad_value``: ``paddings`` = [before_0, after_0, before_1, after_1, ...]."""
    x = ins["X"]
    return {"Out": ctx.xp.pad(x, _pairs(ctx, attrs["paddings"], x.ndim), mode="constant",
                              constant_values=attrs["pad_value"])}


@register_grad("pad", inputs=["Out@GRAD"])
def pad_grad(ctx, ins, attrs):
    d = ins["Out@GRAD"]
    pairs = _pairs(ctx, attrs["paddings"], d.ndim)
    return {"X@GRAD": d[tuple(slice(b, d.shape[i] - a) for i, (b, a) in enumerate(pairs))].copy()}


def _pad2d_pairs(ctx, ins, attrs, rank):
    p = [int(v) for v in ins["Paddings"].reshape(-1).tolist()] if ins.get("Paddings") is not None \
        else list(attrs["paddings"])
    if len(p) != 4:
        raise ValueError("op 'pad2d': paddings must be [top, bottom, left, right], got %s" % p)
    hw = [(p[0], p[1]), (p[2], p[3])]
    return [(0, 0), (0, 0)] + hw if attrs["data_format"] == "NCHW" else [(0, 0)] + hw + [(0, 0)]


_NP_MODE = {"constant": "constant", "reflect": "reflect", "edge": "edge"}


def _pad2d_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    p = ctx.attr("paddings")
    out = list(xs)
    h, w = (2, 3) if ctx.attr("data_format") == "NCHW" else (1, 2)
    if ctx.has_input("Paddings"):   # the spatial sizes are known once the paddings are, at run time
        out[h] = out[w] = -1
        ctx.set_output("Out", out, ctx.input_dtype("X"))
        return
    out[h] = xs[h] + p[0] + p[1] if xs[h] >= 0 else -1
    out[w] = xs[w] + p[2] + p[3] if xs[w] >= 0 else -1
    ctx.set_output("Out", out, ctx.input_dtype("X"))


@register_op("pad2d", inputs=["X", "Paddings?"], outputs=["Out"],
             attrs={"paddings": [0, 0, 0, 0], "mode": "constant", "pad_value": 0.0, "data_format": "NCHW"},
             infer=_pad2d_infer, no_grad=("Paddings",))
def pad2d(ctx, ins, attrs):
    """Pad the two spatial axes: ``constant`` (``pad_value``), ``reflect`` (mirror without the edge)
    or ``edge`` (repeat the edge)."""
    x = ins["X"]
    mode = _NP_MODE.get(attrs["mode"])
    if mode is None:
        raise ValueError("op 'pad2d': mode %r is not one of constant, reflect, edge" % attrs["mode"])
    pairs = _pad2d_pairs(ctx, ins, attrs, x.ndim)
    kw = {"constant_values": attrs["pad_value"]} if mode == "constant" else {}
    return {"Out": ctx.xp.pad(x, pairs, mode=mode, **kw)}


@register_grad("pad2d", inputs=["X", "Paddings?", "Out@GRAD"])
def pad2d_grad(ctx, ins, attrs):
    """Each output position's gradient goes to the input position it was copied from."""
    xp = ctx.xp
    x, d = ins["X"], ins["Out@GRAD"]
    pairs = _pad2d_pairs(ctx, ins, attrs, x.ndim)
    mode = _NP_MODE[attrs["mode"]]
    dx = d
    for axis, (b, a) in enumerate(pairs):
        if not b and not a:
            continue
        n = x.shape[axis]
        src = np.arange(n)
        src = np.pad(src, (b, a), mode=mode) if mode != "constant" else np.pad(src, (b, a), constant_values=-1)
        keep = src >= 0
        moved = xp.moveaxis(dx, axis, 0)[xp.asarray(np.nonzero(keep)[0])]
        acc = xp.zeros((n,) + moved.shape[1:], dtype=d.dtype)
        scatter_add(xp, acc, xp.asarray(src[keep]), moved)
        dx = xp.moveaxis(acc, 0, axis)
    return {"X@GRAD": xp.ascontiguousarray(dx)}


@register_op("pad_constant_like", inputs=["X", "Y"], outputs=["Out"], attrs={"pad_value": 0.0}, no_grad=("X",),
             infer=lambda c: c.set_output("Out", c.input_shape("X"), c.input_dtype("Y")))
def pad_constant_like(ctx, ins, attrs):
    """Y padded at the end of each axis with ``pad_value`` up to X's shape."""
    x, y = ins["X"], ins["Y"]
    if x.ndim != y.ndim or any(b < a for a, b in zip(y.shape, x.shape)):
        raise ValueError("op 'pad_constant_like': Y %r of shape %s does not fit in X %r of shape %s"
                         % (ctx.op.inputs["Y"][0], list(y.shape), ctx.op.inputs["X"][0], list(x.shape)))
    return {"Out": ctx.xp.pad(y, [(0, b - a) for a, b in zip(y.shape, x.shape)], mode="constant",
                              constant_values=attrs["pad_value"])}


@register_grad("pad_constant_like", inputs=["Y", "Out@GRAD"])
def pad_constant_like_grad(ctx, ins, attrs):
    y, d = ins["Y"], ins["Out@GRAD"]
    return {"Y@GRAD": d[tuple(slice(0, s) for s in y.shape)].copy()}


# ------------------------------------------------------------------ crop / crop_tensor
def _crop_box(ctx, ins, attrs, tensor):
    x = ins["X"]
    if tensor:
        shape = _list_input(ins, "Shape", "ShapeTensor", attrs["shape"])
        offsets = _list_input(ins, "Offsets", "OffsetsTensor", attrs["offsets"])
    else:
        shape = list(ins["Y"].shape) if ins.get("Y") is not None else list(attrs["shape"])
        offsets = [int(v) for v in ins["Offsets"].reshape(-1).tolist()] if ins.get("Offsets") is not None \
            else list(attrs["offsets"])
    offsets = offsets or [0] * x.ndim
    if len(shape) != x.ndim or len(offsets) != x.ndim:
        raise ValueError("op %r: shape %s and offsets %s need one entry per dimension of X %r (rank %d)"
                         % (ctx.op.type, shape, offsets, ctx.op.inputs["X"][0], x.ndim))
    shape = [x.shape[i] - offsets[i] if s == -1 else s for i, s in enumerate(shape)]
    if any(o < 0 or o + s > x.shape[i] for i, (o, s) in enumerate(zip(offsets, shape))):
        raise ValueError("op %r: the box at offsets %s of shape %s does not fit in X %r of shape %s"
                         % (ctx.op.type, offsets, shape, ctx.op.inputs["X"][0], list(x.shape)))
    return x, tuple(slice(o, o + s) for o, s in zip(offsets, shape))


def _crop_infer(ctx):
    shape = ctx.input_shape("Y") if ctx.has_input("Y") else ctx.attr("shape")
    xs = ctx.input_shape("X")
    if xs is None:
        return
    if ctx.has_input("Shape"):      # Paddle's: the rank kept, every size known at run time only
        ctx.set_output("Out", [-1] * len(xs), ctx.input_dtype("X"))
        return
    if ctx.has_input("ShapeTensor"):    # the attr's sizes, -1 (or Paddle's 0) where a tensor gives one
        ctx.set_output("Out", [s if s > 0 else -1 for s in shape], ctx.input_dtype("X"))
        return
    if shape is None:
        return
    offs = ctx.attr("offsets") or [0] * len(xs)
    out = [xs[i] - offs[i] if s == -1 and xs[i] >= 0 and not ctx.has_input("Offsets") else s
           for i, s in enumerate(shape)]
    ctx.set_output("Out", out, ctx.input_dtype("X"))


def _crop_kernel(tensor):
    def kernel(ctx, ins, attrs):
        """The box of X at ``offsets`` with ``shape`` (-1: to the end of that axis)."""
        x, box = _crop_box(ctx, ins, attrs, tensor)
        return {"Out": x[box].copy()}
    return kernel


def _crop_grad_kernel(tensor):
    def kernel(ctx, ins, attrs):
        x, box = _crop_box(ctx, ins, attrs, tensor)
        return {"X@GRAD": _box_grad(ctx.xp, x, box, ins["Out@GRAD"])}
    return kernel


_CROP_IN = ["X", "Y?", "Offsets?"]
register_op("crop", inputs=_CROP_IN, outputs=["Out"], attrs={"offsets": [], "shape": []}, infer=_crop_infer,
            no_grad=("Y", "Offsets"))(_crop_kernel(False))
register_grad("crop", inputs=_CROP_IN + ["Out@GRAD"])(_crop_grad_kernel(False))
_CROPT_IN = ["X", "Shape?", "Offsets?", "ShapeTensor*?", "OffsetsTensor*?"]
register_op("crop_tensor", inputs=_CROPT_IN, outputs=["Out"], attrs={"offsets": [], "shape": []},
            infer=_crop_infer, no_grad=("Shape", "Offsets", "ShapeTensor", "OffsetsTensor"))(_crop_kernel(True))
register_grad("crop_tensor", inputs=_CROPT_IN + ["Out@GRAD"])(_crop_grad_kernel(True))
