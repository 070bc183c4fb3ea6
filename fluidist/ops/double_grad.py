"""Gradients of gradient ops (Paddle 1.8's ``*_grad_grad`` ops): what a second ``fluid.gradients``
over a program that already holds gradient ops appends (the double-gradient checks, gradient
penalties).

Each entry is registered on the gradient op it differentiates, with Paddle's slot names: ``DDX`` is
the gradient of the gradient op's output ``X@GRAD``, ``DOut`` the forward ``Out@GRAD`` it read,
``DDOut`` the gradient of that ``Out@GRAD``, ``DX`` (or ``X@GRAD``, as Paddle names it for some
ops) the gradient of the forward input ``X`` through the gradient op. A slot's gradient nobody
made comes as zeros (``backward`` fills them), so a kernel reads every slot it lists.

Where fluidist's first-order gradient op reads other values than Paddle's (``leaky_relu_grad``
reads ``X``, ``elementwise_div_grad`` reads ``X`` where Paddle reads ``Out``), the double gradient
reads what the first-order op read, so that it differentiates the formula that ran.
"""
from ..framework import registry
from ..framework.registry import GRAD, register_grad
from .conv_nd import _channel_last, _from_cf, _to_cf, conv_backward, conv_forward, conv_geometry
from .math import _flatten2, _reduce_grad, _y_view_shape

_NOT_INHERITED = ("op_role", "op_role_var", "op_namescope")


def _names_of(op, source):
    """The variable names a double-gradient slot takes from gradient op ``op``: ``source`` names a
    slot of ``op`` (its input or output), or ``<slot>@GRAD``, the gradients of that slot's
    variables."""
    for slots in (op.inputs, op.outputs):
        if source in slots:
            return list(slots[source])
    base = source[:-len(GRAD)]
    names = op.inputs.get(base) or op.outputs.get(base) or []
    return [n + GRAD for n in names]


def _double_grad(grad_type, inputs, outputs, type=None):
    """Register the gradient of gradient op ``grad_type``: ``inputs`` / ``outputs`` map the new op's
    slots (Paddle's) to what ``_names_of`` reads off the gradient op."""
    entry = registry.get(grad_type)
    new_type = type or grad_type + "_grad"

    def maker(op):
        ins = {slot: _names_of(op, src) for slot, src in inputs.items()}
        outs = {slot: _names_of(op, src) for slot, src in outputs.items()}
        outs = {slot: names for slot, names in outs.items() if names}
        attrs = {k: v for k, v in op.attrs.items() if k not in _NOT_INHERITED}
        return [{"type": new_type, "inputs": {s: n for s, n in ins.items() if n}, "outputs": outs, "attrs": attrs}]

    entry.grad = maker
    slots = [s + "?" if src.endswith(GRAD + GRAD) else s for s, src in inputs.items()]
    return register_grad(grad_type, inputs=slots, outputs=["%s?" % s for s in outputs], type=new_type)


def _wanted(ctx, slot):
    return bool(ctx.op.outputs.get(slot))


def _or_zeros(xp, v, like):
    return xp.zeros_like(like) if v is None else v


# ------------------------------------------------------------------ activations
@_double_grad("relu_grad", {"Out": "Out", "DDX": "X@GRAD@GRAD"}, {"DDOut": "Out@GRAD@GRAD"})
def relu_grad_grad(ctx, ins, attrs):
    """DDOut = DDX where Out > 0."""
    return {"DDOut": ins["DDX"] * (ins["Out"] > 0)}


@_double_grad("leaky_relu_grad", {"X": "X", "DDX": "X@GRAD@GRAD"}, {"DDOut": "Out@GRAD@GRAD"})
def leaky_relu_grad_grad(ctx, ins, attrs):
    """DDOut = DDX, times alpha where X <= 0."""
    x = ins["X"]
    return {"DDOut": ins["DDX"] * ctx.xp.where(x > 0, 1.0, attrs["alpha"]).astype(x.dtype)}


@_double_grad("sqrt_grad", {"Out": "Out", "DX": "X@GRAD", "DDX": "X@GRAD@GRAD"},
              {"DOut": "Out@GRAD", "DDOut": "Out@GRAD@GRAD"})
def sqrt_grad_grad(ctx, ins, attrs):
    """dX = 0.5 dOut / Out: DDOut = 0.5 DDX / Out, DOut (through Out) = -DX DDX / Out."""
    out, ddx = ins["Out"], ins["DDX"]
    return {"DDOut": ddx * 0.5 / out, "DOut": -ins["DX"] * ddx / out}


@_double_grad("square_grad", {"X": "X", "DOut": "Out@GRAD", "DDX": "X@GRAD@GRAD"},
              {"DX": "X@GRAD", "DDOut": "Out@GRAD@GRAD"})
def square_grad_grad(ctx, ins, attrs):
    """dX = 2 X dOut: DDOut = 2 X DDX, DX = 2 dOut DDX."""
    x, ddx = ins["X"], ins["DDX"]
    return {"DDOut": 2 * x * ddx, "DX": 2 * ins["DOut"] * ddx}


# ------------------------------------------------------------------ elementwise
def _y_view(x, y, attrs):
    """Y reshaped to broadcast against X (the op's ``axis``) and that view's shape."""
    vs = _y_view_shape(x.shape, y.shape, attrs["axis"])
    return (y.reshape(vs) if vs != y.shape else y), vs


def _linear_ew(sign):
    def kernel(ctx, ins, attrs):
        ddx, ddy = _or_zeros(ctx.xp, ins.get("DDX"), ins["DOut"]), _or_zeros(ctx.xp, ins.get("DDY"), ins["Y"])
        view, _ = _y_view(ddx, ddy, attrs)
        return {"DDOut": ddx + view if sign > 0 else ddx - view}
    kernel.__doc__ = "DDOut = DDX %s DDY (broadcast as the forward op's Y)." % ("+" if sign > 0 else "-")
    return kernel


_EW_LINEAR_IN = {"Y": "Y", "DOut": "Out@GRAD", "DDX": "X@GRAD@GRAD", "DDY": "Y@GRAD@GRAD"}
_double_grad("elementwise_add_grad", _EW_LINEAR_IN, {"DDOut": "Out@GRAD@GRAD"})(_linear_ew(1))
_double_grad("elementwise_sub_grad", _EW_LINEAR_IN, {"DDOut": "Out@GRAD@GRAD"})(_linear_ew(-1))

_EW_IN = {"X": "X", "Y": "Y", "DOut": "Out@GRAD", "DDX": "X@GRAD@GRAD", "DDY": "Y@GRAD@GRAD"}
_EW_OUT = {"X@GRAD": "X@GRAD", "Y@GRAD": "Y@GRAD", "DDOut": "Out@GRAD@GRAD"}


@_double_grad("elementwise_mul_grad", _EW_IN, _EW_OUT)
def elementwise_mul_grad_grad(ctx, ins, attrs):
    """dX = dOut Y, dY = dOut X: DDOut = DDX Y + X DDY, X@GRAD = dOut DDY, Y@GRAD = dOut DDX (summed
    over Y's broadcast axes)."""
    xp, x, y, dout = ctx.xp, ins["X"], ins["Y"], ins["DOut"]
    yb, vs = _y_view(x, y, attrs)
    ddx, ddyb = _or_zeros(xp, ins.get("DDX"), x), _y_view(x, _or_zeros(xp, ins.get("DDY"), y), attrs)[0]
    res = {"DDOut": ddx * yb + x * ddyb}
    if _wanted(ctx, "X@GRAD"):
        res["X@GRAD"] = _reduce_grad(xp, dout * ddyb, x.shape, x.shape)
    if _wanted(ctx, "Y@GRAD"):
        res["Y@GRAD"] = _reduce_grad(xp, dout * ddx, y.shape, vs)
    return res


@_double_grad("elementwise_div_grad", _EW_IN, _EW_OUT)
def elementwise_div_grad_grad(ctx, ins, attrs):
    """fluidist's dX = dOut / Y, dY = -dOut X / Y^2 differentiated: DDOut = (DDX - X DDY / Y) / Y,
    X@GRAD = -dOut DDY / Y^2, Y@GRAD = dOut (2 X DDY / Y - DDX) / Y^2."""
    xp, x, y, dout = ctx.xp, ins["X"], ins["Y"], ins["DOut"]
    yb, vs = _y_view(x, y, attrs)
    ddx, ddyb = _or_zeros(xp, ins.get("DDX"), x), _y_view(x, _or_zeros(xp, ins.get("DDY"), y), attrs)[0]
    res = {"DDOut": (ddx - x * ddyb / yb) / yb}
    if _wanted(ctx, "X@GRAD"):
        res["X@GRAD"] = _reduce_grad(xp, -dout * ddyb / (yb * yb), x.shape, x.shape)
    if _wanted(ctx, "Y@GRAD"):
        res["Y@GRAD"] = _reduce_grad(xp, dout * (2 * x * ddyb / yb - ddx) / (yb * yb), y.shape, vs)
    return res


# ------------------------------------------------------------------ mul, reduce_mean, reshape2
@_double_grad("mul_grad", _EW_IN, {"DX": "X@GRAD", "DY": "Y@GRAD", "DDOut": "Out@GRAD@GRAD"})
def mul_grad_grad(ctx, ins, attrs):
    """On X, Y flattened to matrices: DDOut = DDX Y + X DDY, DX = dOut DDY^T, DY = DDX^T dOut."""
    x, y = ins["X"], ins["Y"]
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    x2, y2 = _flatten2(x, xn), _flatten2(y, yn)
    ddx2 = _flatten2(_or_zeros(ctx.xp, ins.get("DDX"), x), xn)
    ddy2 = _flatten2(_or_zeros(ctx.xp, ins.get("DDY"), y), yn)
    d2 = ins["DOut"].reshape(x2.shape[0], y2.shape[1])
    res = {"DDOut": (ddx2 @ y2 + x2 @ ddy2).reshape(ins["DOut"].shape)}
    if _wanted(ctx, "DX"):
        res["DX"] = (d2 @ ddy2.T).reshape(x.shape)
    if _wanted(ctx, "DY"):
        res["DY"] = (ddx2.T @ d2).reshape(y.shape)
    return res


def _reduce_mean_grad_maker(op):
    """reduce_mean is linear: the gradient of its gradient is reduce_mean of DDX (Paddle's maker)."""
    attrs = {k: v for k, v in op.attrs.items() if k not in _NOT_INHERITED}
    return [{"type": "reduce_mean", "inputs": {"X": [n + GRAD for n in op.outputs["X@GRAD"]]},
             "outputs": {"Out": [n + GRAD for n in op.inputs["Out@GRAD"]]}, "attrs": attrs}]


registry.get("reduce_mean_grad").grad = _reduce_mean_grad_maker


@_double_grad("reshape2_grad", {"DOut": "Out@GRAD", "DDX": "X@GRAD@GRAD"}, {"DDOut": "Out@GRAD@GRAD"})
def reshape2_grad_grad(ctx, ins, attrs):
    """DDOut = DDX reshaped as dOut."""
    return {"DDOut": ins["DDX"].reshape(ins["DOut"].shape)}


# ------------------------------------------------------------------ convolution
def _conv_grad_grad(ctx, ins, attrs):
    """Output = conv(Input, Filter) is bilinear: DDOutput = conv(DDInput, Filter) + conv(Input,
    DDFilter); DFilter = the filter gradient of conv(DDInput, .) at dOutput; DInput = the input
    gradient of conv(., DDFilter) at dOutput."""
    xp = ctx.xp
    last = _channel_last(attrs.get("data_format"))
    x, f = _to_cf(ins["Input"], last), ins["Filter"]
    dy = _to_cf(ins["DOutput"], last)
    ddx = _to_cf(_or_zeros(xp, ins.get("DDInput"), ins["Input"]), last)
    ddf = _or_zeros(xp, ins.get("DDFilter"), f)
    pads, strides, dilations, groups, _ = conv_geometry(x.shape, f.shape, attrs)
    res = {}
    if _wanted(ctx, "DDOutput"):
        ddy = conv_forward(xp, ddx, f, pads, strides, dilations, groups) + \
            conv_forward(xp, x, ddf, pads, strides, dilations, groups)
        res["DDOutput"] = _from_cf(xp, ddy, last)
    if _wanted(ctx, "DFilter"):
        res["DFilter"] = conv_backward(xp, ddx, f, dy, pads, strides, dilations, groups, False, True)[1]
    if _wanted(ctx, "DInput"):
        dx = conv_backward(xp, x, ddf, dy, pads, strides, dilations, groups, True, False)[0]
        res["DInput"] = _from_cf(xp, dx, last)
    return res


for _type in ("conv2d_grad", "conv3d_grad"):
    _double_grad(_type, {"Input": "Input", "Filter": "Filter", "DOutput": "Output@GRAD",
                         "DDInput": "Input@GRAD@GRAD", "DDFilter": "Filter@GRAD@GRAD"},
                 {"DDOutput": "Output@GRAD@GRAD", "DInput": "Input@GRAD", "DFilter": "Filter@GRAD"})(_conv_grad_grad)


# ------------------------------------------------------------------ instance_norm
def _centred(v, xh):
    """P(v) = v - mean(v) - x_hat * mean(v * x_hat), per row: what the normalisation's Jacobian
    (divided by the inverse std) does to a row."""
    return v - v.mean(axis=1, keepdims=True) - xh * (v * xh).mean(axis=1, keepdims=True)


def _per_group(xp, v, n, like):
    """A per-channel vector (or ones) as one value per (sample, channel) row."""
    if v is None:
        return xp.ones((like.shape[0], 1), dtype=like.dtype)
    return xp.tile(v.reshape(-1), n).reshape(-1, 1).astype(like.dtype, copy=False)


@_double_grad("instance_norm_grad",
              {"X": "X", "Scale": "Scale", "SavedMean": "SavedMean", "SavedVariance": "SavedVariance",
               "DY": "Y@GRAD", "DDX": "X@GRAD@GRAD", "DDScale": "Scale@GRAD@GRAD", "DDBias": "Bias@GRAD@GRAD"},
              {"DX": "X@GRAD", "DScale": "Scale@GRAD", "DDY": "Y@GRAD@GRAD"})
def instance_norm_grad_grad(ctx, ins, attrs):
    """Per (sample, channel) row of M values, with x_hat = (X - mean) inv, a = Scale DDX:
    dX = Scale inv P(dY), dScale = sum dY x_hat, dBias = sum dY, so
    DDY = Scale inv P(DDX) + DDScale x_hat + DDBias, DScale = sum DDX inv P(dY), and
    DX = -inv^2 x_hat (mean(a dY) - mean(a) mean(dY) - A B) - inv^2 (B P(a) + A P(dY)) + DDScale inv P(dY)
    with A = mean(a x_hat), B = mean(dY x_hat) (inv and x_hat depend on X)."""
    xp, x = ctx.xp, ins["X"]
    n, c = x.shape[:2]
    rows = x.reshape(n * c, -1)
    inv = ins["SavedVariance"].reshape(-1, 1)
    xh = (rows - ins["SavedMean"].reshape(-1, 1)) * inv
    dy = ins["DY"].reshape(rows.shape)
    ddx = _or_zeros(xp, ins.get("DDX"), x).reshape(rows.shape)
    gamma = _per_group(xp, ins.get("Scale"), n, rows)
    dd_scale = _per_group(xp, ins.get("DDScale"), n, rows) if ins.get("DDScale") is not None else 0
    dd_bias = _per_group(xp, ins.get("DDBias"), n, rows) if ins.get("DDBias") is not None else 0
    p_dy = _centred(dy, xh)
    res = {}
    if _wanted(ctx, "DDY"):
        res["DDY"] = (gamma * inv * _centred(ddx, xh) + dd_scale * xh + dd_bias).reshape(x.shape)
    if _wanted(ctx, "DScale"):
        res["DScale"] = (ddx * inv * p_dy).reshape(n, c, -1).sum(axis=(0, 2))
    if _wanted(ctx, "DX"):
        a = gamma * ddx
        mean_a_dy = (a * dy).mean(axis=1, keepdims=True)
        a_xh, dy_xh = (a * xh).mean(axis=1, keepdims=True), (dy * xh).mean(axis=1, keepdims=True)
        through_inv = -inv * inv * xh * (mean_a_dy - a.mean(axis=1, keepdims=True) * dy.mean(axis=1, keepdims=True)
                                         - a_xh * dy_xh)
        dx = through_inv - inv * inv * (dy_xh * _centred(a, xh) + a_xh * p_dy) + dd_scale * inv * p_dy
        res["DX"] = dx.reshape(x.shape)
    return res
