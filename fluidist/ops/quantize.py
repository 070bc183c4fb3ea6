"""The fake-quantisation ops of Paddle's quantisation-aware training and of its quantised inference
programs (``fluid.contrib.slim`` writes them), with Paddle 1.8's numbers. None has a gradient.

Quantising with scale ``s`` and ``b`` bits: ``round(clip(x, -s, s) * (2^(b-1) - 1) / s)`` (rounding
half away from zero, as C's ``round``); the ``quantize_dequantize`` forms multiply back by
``s / (2^(b-1) - 1)``. The scale comes from:

- ``abs_max``: ``max |x|`` of this batch (``channel_wise``: per slice of the first dim);
- ``range_abs_max``: the largest of the last ``window_size`` batches' ``max |x|`` (``OutScales`` is
  that window, ``Iter`` counts the batches; with ``is_test`` the given ``InScale``);
- ``moving_average_abs_max``: ``accum / state`` with ``state = rate * state + 1`` and
  ``accum = rate * accum + max |x|`` (with ``is_test`` the given ``InScale``).
"""
import numpy as np

from ..framework.registry import register_op


def _bins(bits):
    return (1 << (int(bits) - 1)) - 1


def _round(xp, v):
    """C's ``round``: halves away from zero."""
    return xp.sign(v) * xp.floor(xp.abs(v) + 0.5)


def _quant(xp, x, scale, bits, dequant=False):
    bins = _bins(bits)
    s = scale
    q = _round(xp, xp.clip(x, -s, s) * bins / s)
    return (q * s / bins if dequant else q).astype(x.dtype, copy=False)


def _abs_max(xp, x):
    return xp.abs(x).max().reshape(1) if x.size else xp.zeros((1,), dtype=x.dtype)


def _like_x(out_slots, scalar_slots=()):
    def infer(ctx):
        for s in out_slots:
            ctx.share(s, "X")
        for s in scalar_slots:
            ctx.set_output(s, (1,), ctx.input_dtype("X"))
    return infer


# ------------------------------------------------------------------ quantise
@register_op("fake_quantize_abs_max", inputs=["X"], outputs=["Out", "OutScale"], attrs={"bit_length": 8},
             infer=_like_x(["Out"], ["OutScale"]))
def fake_quantize_abs_max(ctx, ins, attrs):
    """X quantised with the scale ``max |X|`` (OutScale)."""
    x = ins["X"]
    s = _abs_max(ctx.xp, x)
    return {"Out": _quant(ctx.xp, x, s.reshape(()), attrs["bit_length"]), "OutScale": s.astype(x.dtype)}


def _channel_infer(ctx):
    xs = ctx.input_shape("X")
    ctx.share("Out", "X")
    if xs is not None:
        ctx.set_output("OutScale", (xs[0],), ctx.input_dtype("X"))


@register_op("fake_channel_wise_quantize_abs_max", inputs=["X"], outputs=["Out", "OutScale"],
             attrs={"bit_length": 8}, infer=_channel_infer)
def fake_channel_wise_quantize_abs_max(ctx, ins, attrs):
    """Each slice ``X[i]`` quantised with its own scale ``max |X[i]|`` (OutScale [C])."""
    xp = ctx.xp
    x = ins["X"]
    s = xp.abs(x.reshape(x.shape[0], -1)).max(axis=1)
    view = s.reshape((-1,) + (1,) * (x.ndim - 1))
    return {"Out": _quant(xp, x, view, attrs["bit_length"]), "OutScale": s.astype(x.dtype)}


def _range_infer(ctx):
    _like_x(["Out"], ["OutScale"])(ctx)
    ctx.set_output("OutScales", (ctx.attr("window_size"),), ctx.input_dtype("X"))


@register_op("fake_quantize_range_abs_max", inputs=["X", "InScale", "Iter?"],
             outputs=["Out", "OutScale", "OutScales?"], attrs={"bit_length": 8, "window_size": 10000, "is_test": False},
             infer=_range_infer, host_inputs=("Iter",))
def fake_quantize_range_abs_max(ctx, ins, attrs):
    """X quantised with the largest ``max |x|`` of the last ``window_size`` batches: this batch's
    replaces slot ``Iter % window_size`` of OutScales (kept in the scope between runs), the scale is
    ``max(InScale, it)`` unless the value it replaced was that maximum, then the window's maximum."""
    xp = ctx.xp
    x = ins["X"]
    bits = attrs["bit_length"]
    if attrs["is_test"]:
        return {"Out": _quant(xp, x, ins["InScale"].reshape(()), bits)}
    window = int(attrs["window_size"])
    it = int(np.asarray(ins["Iter"]).reshape(-1)[0]) if ins.get("Iter") is not None else 0
    name = (ctx.op.outputs.get("OutScales") or [None])[0]
    prev = ctx.scope._find_value(name) if name else None
    scales = xp.zeros((window,), dtype=x.dtype) if prev is None or prev.size != window else prev.astype(x.dtype)
    cur = _abs_max(xp, x).reshape(())
    slot = it % window
    removed = float(scales[slot])
    scales[slot] = cur
    best = float(ins["InScale"].reshape(-1)[0])
    if best < float(cur):
        best = float(cur)
    elif abs(removed - best) < 1e-6:
        best = float(scales[:max(min(it, window), 1)].max())   # the window's maximum
    s = xp.asarray([best], dtype=x.dtype)
    return {"Out": _quant(xp, x, s.reshape(()), bits), "OutScale": s, "OutScales": scales}


def _moving_scale(xp, x, ins, attrs):
    rate = attrs["moving_rate"]
    state = rate * (ins["InState"].reshape(-1) if ins.get("InState") is not None else 0) + 1
    accum = rate * (ins["InAccum"].reshape(-1) if ins.get("InAccum") is not None else 0) + _abs_max(xp, x)
    return (xp.asarray(state, dtype=x.dtype).reshape(1), xp.asarray(accum, dtype=x.dtype).reshape(1),
            (xp.asarray(accum, dtype=x.dtype) / xp.asarray(state, dtype=x.dtype)).reshape(1))


_MOVING_ATTRS = {"moving_rate": 0.9, "bit_length": 8, "is_test": False}


def _moving_quant(type, dequant):
    def kernel(ctx, ins, attrs):
        xp = ctx.xp
        x = ins["X"]
        if attrs["is_test"]:
            return {"Out": _quant(xp, x, ins["InScale"].reshape(()), attrs["bit_length"], dequant)}
        state, accum, scale = _moving_scale(xp, x, ins, attrs)
        return {"Out": _quant(xp, x, scale.reshape(()), attrs["bit_length"], dequant), "OutScale": scale,
                "OutState": state, "OutAccum": accum}
    kernel.__doc__ = ("X quantised%s with the moving average of ``max |x|``: ``accum / state`` (see the module "
                      "docstring); with ``is_test`` the given InScale." % (" and dequantised" if dequant else ""))
    register_op(type, inputs=["X", "InScale", "InAccum?", "InState?"],
                outputs=["Out", "OutScale", "OutState?", "OutAccum?"], attrs=_MOVING_ATTRS,
                infer=_like_x(["Out"], ["OutScale", "OutState", "OutAccum"]))(kernel)


_moving_quant("fake_quantize_moving_average_abs_max", False)
_moving_quant("fake_quantize_dequantize_moving_average_abs_max", True)


@register_op("moving_average_abs_max_scale", inputs=["X", "InAccum?", "InState?"],
             outputs=["Out", "OutScale", "OutState?", "OutAccum?"], attrs={"moving_rate": 0.9, "is_test": False},
             infer=_like_x(["Out"], ["OutScale", "OutState", "OutAccum"]))
def moving_average_abs_max_scale(ctx, ins, attrs):
    """Out is X; in training the moving-average scale of ``max |x|`` is updated (OutScale, OutState,
    OutAccum), with ``is_test`` they are left as they are."""
    x = ins["X"]
    if attrs["is_test"]:
        return {"Out": x}
    state, accum, scale = _moving_scale(ctx.xp, x, ins, attrs)
    return {"Out": x, "OutScale": scale, "OutState": state, "OutAccum": accum}


# ------------------------------------------------------------------ dequantise
def _dequant_infer(dtype=None):
    def infer(ctx):
        ctx.set_output("Out", ctx.input_shape("X"), dtype or ctx.input_dtype("X"))
    return infer


@register_op("fake_dequantize_max_abs", inputs=["X", "Scale"], outputs=["Out"], attrs={"max_range": 0.0},
             infer=_dequant_infer())
def fake_dequantize_max_abs(ctx, ins, attrs):
    """``X * Scale / max_range``."""
    x = ins["X"]
    return {"Out": (x * ins["Scale"].reshape(()) / attrs["max_range"]).astype(x.dtype, copy=False)}


@register_op("fake_channel_wise_dequantize_max_abs", inputs=["X", "Scales*"], outputs=["Out"],
             attrs={"quant_bits": [8]}, infer=_dequant_infer())
def fake_channel_wise_dequantize_max_abs(ctx, ins, attrs):
    """One scale tensor: ``X[i] * Scales[0][i] / (2^(b0-1) - 1)`` per slice of the first dim (weights).
    Two: per slice of the second dim ``X[:, j] * Scales[0][j] / (2^(b0-1) - 1)``, then times
    ``Scales[1][0] / (2^(b1-1) - 1)`` (the activation's scale)."""
    x, scales, bits = ins["X"], ins["Scales"], list(attrs["quant_bits"])
    if len(scales) not in (1, 2) or len(bits) < len(scales):
        raise ValueError("op 'fake_channel_wise_dequantize_max_abs': Scales holds %d tensors and quant_bits %s; "
                         "give 1 or 2 scales and a bit count for each" % (len(scales), bits))
    axis = 0 if len(scales) == 1 else 1
    shape = [1] * x.ndim
    shape[axis] = -1
    out = x * scales[0].reshape(shape) / _bins(bits[0])
    if len(scales) == 2:
        out = out * scales[1].reshape(()) / _bins(bits[1])
    return {"Out": out.astype(x.dtype, copy=False)}


@register_op("dequantize_abs_max", inputs=["X", "Scale"], outputs=["Out"], attrs={"max_range": 0.0},
             infer=_dequant_infer("float32"))
def dequantize_abs_max(ctx, ins, attrs):
    """int8 X to float32: ``X * Scale / max_range``."""
    scale = ins["Scale"].reshape(()).astype(np.float32)
    return {"Out": (ins["X"].astype(np.float32) * scale / np.float32(attrs["max_range"])).astype(np.float32)}


@register_op("dequantize_log", inputs=["X", "Dict"], outputs=["Out"], infer=_dequant_infer("float32"))
def dequantize_log(ctx, ins, attrs):
    """int8 codes to float32 through a 128-entry table: ``Dict[x]`` for ``x >= 0``, ``-Dict[x + 128]``
    for negative codes."""
    xp = ctx.xp
    x = ins["X"].astype(np.int64)
    table = ins["Dict"].reshape(-1).astype(np.float32)
    return {"Out": xp.where(x < 0, -table[xp.where(x < 0, x + 128, 0)], table[xp.maximum(x, 0)])}
