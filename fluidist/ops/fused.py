"""Fused dense ops that Paddle's programs hold: ``fc`` (the fused mul + bias + activation of Paddle's
inference programs), ``fused_elemwise_activation`` (an elementwise op and an activation in one),
``fusion_repeated_fc_relu`` and ``fusion_squared_mat_sub``. Each computes what its unfused ops
compute; ``fc`` and the ``fusion_*`` ops are inference ops without a gradient, as in Paddle.

``fused_elemwise_activation`` with ``functor_list = [f0, f1]``: when ``f0`` is the binary op,
``Out = f0(X, f1(Y))`` and IntermediateOut is ``f1(Y)``; when ``f0`` is the activation,
``Out = f0(f1(X, Y))`` and IntermediateOut is ``f1(X, Y)``. X and Y broadcast as the elementwise ops
do (the smaller one, by rank and then by size, lines up with the other at ``axis``). Paddle 1.8
implements the pairs of ``_FEA_PAIRS`` and refuses the others.
"""
import numpy as np

from ..framework.registry import register_grad, register_op
from .math import _reduce_grad, _y_view_shape, stable_sigmoid


# ------------------------------------------------------------------ fc
def _fc_infer(ctx):
    xs, ws = ctx.input_shape("Input"), ctx.input_shape("W")
    if xs is None or ws is None:
        return
    k = ctx.attr("in_num_col_dims")
    n = ws[1] - 4 if ctx.attr("padding_weights") else ws[1]
    ctx.set_output("Out", tuple(xs[:k]) + (n,), ctx.input_dtype("Input"), ctx.input_lod_level("Input"))


_FC_ATTRS = {"in_num_col_dims": 1, "activation_type": "", "padding_weights": False, "use_mkldnn": False,
             "use_quantizer": False, "Scale_in": 1.0, "Scale_weights": [1.0], "Scale_out": 1.0,
             "force_fp32_output": False}


@register_op("fc", inputs=["Input", "W", "Bias?"], outputs=["Out"], attrs=_FC_ATTRS, infer=_fc_infer,
             share_lod=("Input", "Out"))
def fc(ctx, ins, attrs):
    """``Input`` flattened to 2-D at ``in_num_col_dims``, times ``W`` [K, N], plus ``Bias`` [N], then
    ``activation_type`` ("" or "relu"). ``padding_weights``: W is [K + 4, N + 4] and its top-left
    [K, N] block is used."""
    x, w, b = ins["Input"], ins["W"], ins.get("Bias")
    k = attrs["in_num_col_dims"]
    if attrs["padding_weights"]:
        w = w[:-4, :-4]
    x2 = x.reshape(int(np.prod(x.shape[:k], dtype=np.int64)), -1)
    if x2.shape[1] != w.shape[0]:
        raise ValueError("op 'fc': Input %r flattened at in_num_col_dims=%d is %s, which does not match W %r of "
                         "%d rows" % (ctx.op.inputs["Input"][0], k, list(x2.shape), ctx.op.inputs["W"][0], w.shape[0]))
    out = x2 @ w
    if b is not None:
        out = out + b.reshape(1, -1)
    act = attrs["activation_type"]
    if act == "relu":
        out = ctx.xp.maximum(out, 0)
    elif act:
        raise ValueError("op 'fc': activation_type must be '' or 'relu', got %r" % (act,))
    return {"Out": out.reshape(tuple(x.shape[:k]) + (w.shape[1],)).astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ fused_elemwise_activation
_BINARY = {"elementwise_add": (lambda x, y: x + y), "elementwise_mul": (lambda x, y: x * y)}
_UNARY = ("scale", "relu", "tanh", "sigmoid")
_FEA_PAIRS = {("elementwise_add", "scale"), ("elementwise_add", "relu"), ("elementwise_mul", "scale"),
              ("elementwise_mul", "tanh"), ("elementwise_mul", "sigmoid"), ("scale", "elementwise_add"),
              ("relu", "elementwise_add"), ("tanh", "elementwise_add")}


def _functors(ctx, attrs):
    """``(binary, unary, binary_first)`` of the op's ``functor_list``, or a clear error."""
    fl = list(attrs["functor_list"])
    if len(fl) != 2 or tuple(fl) not in _FEA_PAIRS:
        raise ValueError("op 'fused_elemwise_activation': functor_list %s is not one Paddle implements (%s)"
                         % (fl, ", ".join(str(list(p)) for p in sorted(_FEA_PAIRS))))
    binary_first = fl[0] in _BINARY
    return (fl[0], fl[1], True) if binary_first else (fl[1], fl[0], False)


def _unary(xp, name, x, scale):
    if name == "scale":
        return x * scale
    if name == "relu":
        return xp.maximum(x, 0)
    if name == "tanh":
        return xp.tanh(x)
    return stable_sigmoid(xp, x)


def _unary_grad(name, x, y, scale):
    """d unary / d input at input ``x`` with output ``y``."""
    if name == "scale":
        return scale
    if name == "relu":
        return (x > 0).astype(x.dtype)
    if name == "tanh":
        return 1 - y * y
    return y * (1 - y)


def _x_is_big(xshape, yshape):
    """Which input the other broadcasts against: the one of higher rank, then of more elements."""
    if len(xshape) != len(yshape):
        return len(xshape) > len(yshape)
    return int(np.prod(xshape)) >= int(np.prod(yshape))


def _views(x, y, axis):
    """(view shape of X, view shape of Y): the smaller one's shape as it lines up with the other."""
    if _x_is_big(x.shape, y.shape):
        return tuple(x.shape), tuple(_y_view_shape(x.shape, y.shape, axis))
    return tuple(_y_view_shape(y.shape, x.shape, axis)), tuple(y.shape)


def _fea_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    big = xs if _x_is_big(xs, ys) else ys
    dtype = ctx.input_dtype("X")
    ctx.set_output("Out", big, dtype, ctx.input_lod_level("X"))
    binary_first = list(ctx.attr("functor_list") or [""])[0] in _BINARY
    ctx.set_output("IntermediateOut", ys if binary_first else big, dtype)


_FEA_ATTRS = {"functor_list": [], "axis": -1, "scale": 0.0, "save_intermediate_out": False}


@register_op("fused_elemwise_activation", inputs=["X", "Y"], outputs=["Out", "IntermediateOut?"], attrs=_FEA_ATTRS,
             infer=_fea_infer, share_lod=("X", "Out"))
def fused_elemwise_activation(ctx, ins, attrs):
    """An elementwise op and an activation in one (see the module docstring for the order)."""
    xp = ctx.xp
    x, y = ins["X"], ins["Y"]
    binary, unary, binary_first = _functors(ctx, attrs)
    xv, yv = _views(x, y, attrs["axis"])
    if binary_first:
        mid = _unary(xp, unary, y, attrs["scale"])
        out = _BINARY[binary](x.reshape(xv), mid.reshape(yv))
    else:
        mid = _BINARY[binary](x.reshape(xv), y.reshape(yv))
        out = _unary(xp, unary, mid, attrs["scale"])
    return {"Out": out.astype(x.dtype, copy=False), "IntermediateOut": mid.astype(x.dtype, copy=False)}


@register_grad("fused_elemwise_activation", inputs=["X", "Y", "Out@GRAD"])
def fused_elemwise_activation_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    binary, unary, binary_first = _functors(ctx, attrs)
    xv, yv = _views(x, y, attrs["axis"])
    xb, yb = x.reshape(xv), y.reshape(yv)
    scale = attrs["scale"]
    if binary_first:
        mid = _unary(xp, unary, y, scale)
        dx = d if binary == "elementwise_add" else d * mid.reshape(yv)
        dmid = d if binary == "elementwise_add" else d * xb
        dmid = _reduce_grad(xp, dmid, y.shape, yv)
        dy = dmid * _unary_grad(unary, y, mid, scale)
    else:
        mid = _BINARY[binary](xb, yb)
        dmid = d * _unary_grad(unary, mid, _unary(xp, unary, mid, scale), scale)
        dx = dmid if binary == "elementwise_add" else dmid * yb
        dy = dmid if binary == "elementwise_add" else dmid * xb
        dy = _reduce_grad(xp, dy, y.shape, yv)
    dx = _reduce_grad(xp, dx, x.shape, xv)
    return {"X@GRAD": dx.astype(x.dtype, copy=False), "Y@GRAD": dy.astype(y.dtype, copy=False)}


# ------------------------------------------------------------------ fusion_repeated_fc_relu / squared_mat_sub
def _repeated_fc_infer(ctx):
    xs = ctx.input_shape("X")
    ws = [v.shape for v in ctx.input_vars("W")]
    if xs is None or not ws or any(w is None for w in ws):
        return
    for i, w in enumerate(ws[:-1]):
        ctx.set_output("ReluOut", (xs[0], w[1]), ctx.input_dtype("X"), i=i)
    ctx.set_output("Out", (xs[0], ws[-1][1]), ctx.input_dtype("X"))


@register_op("fusion_repeated_fc_relu", inputs=["X", "W*", "Bias*"], outputs=["ReluOut*", "Out"],
             infer=_repeated_fc_infer)
def fusion_repeated_fc_relu(ctx, ins, attrs):
    """``relu(X W_0 + b_0)``, then the same with each next (W, Bias) pair on the result; ReluOut holds
    every result but the last (Out)."""
    xp = ctx.xp
    ws, bs = ins["W"], ins["Bias"]
    if len(ws) != len(bs) or len(ws) < 2:
        raise ValueError("op 'fusion_repeated_fc_relu': W and Bias must hold the same number (at least 2) of "
                         "tensors; got %d and %d" % (len(ws), len(bs)))
    h = ins["X"].reshape(ins["X"].shape[0], -1)
    outs = []
    for w, b in zip(ws, bs):
        h = xp.maximum(h @ w + b.reshape(1, -1), 0)
        outs.append(h)
    return {"ReluOut": outs[:-1], "Out": outs[-1]}


def _squared_mat_sub_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    dtype = ctx.input_dtype("X")
    ctx.set_output("SquaredX", xs, dtype)
    ctx.set_output("SquaredY", ys, dtype)
    ctx.set_output("SquaredXY", (xs[0], ys[1]), dtype)
    ctx.set_output("Out", (xs[0], ys[1]), dtype)


@register_op("fusion_squared_mat_sub", inputs=["X", "Y"], outputs=["SquaredX", "SquaredY", "SquaredXY", "Out"],
             attrs={"scalar": 1.0}, infer=_squared_mat_sub_infer)
def fusion_squared_mat_sub(ctx, ins, attrs):
    """``scalar * ((X Y)^2 - X^2 Y^2)`` (the pairwise-interaction term of a factorisation machine)."""
    x, y = ins["X"], ins["Y"]
    xy = x @ y
    sx, sy = x * x, y * y
    sxy = xy * xy
    return {"SquaredX": sx, "SquaredY": sy, "SquaredXY": sxy,
            "Out": (attrs["scalar"] * (sxy - sx @ sy)).astype(x.dtype, copy=False)}
