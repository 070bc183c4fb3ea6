"""Math ops: elementwise (with Paddle's ``axis`` broadcasting), mul, matmul, scale, mean,
reductions and activations, each with its gradient."""
import operator

import numpy as np

from ..framework.registry import Bound, kernel_call, register_binder, register_grad, register_op, same_shape
from ..core.tensor import SelectedRows
from .shape_tensors import scalar_from_tensor
from . import device_fused
from .broadcast import _bcast, _reduce_grad, _view_shape, _y_view_shape, linear_grad_call, \
    sum_over_axes  # noqa: F401 (_y_view_shape, sum_over_axes: other families import them from here)


def _elementwise_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    out = xs
    if xs is not None and ys is not None and len(ys) > len(xs):
        out = ys
    ctx.set_output("Out", out, ctx.input_dtype("X"), ctx.input_lod_level("X"))


_EW_ATTRS = {"axis": -1}


def _rows_times_scalar(ctx, ins):
    """A row-sparse X (a sparse gradient under global-norm clipping) times a one-element Y stays
    row-sparse; only ``elementwise_mul`` accepts a SelectedRows X."""
    x, y = ins["X"], ins["Y"]
    if ctx.op.type != "elementwise_mul" or y.size != 1:
        raise ValueError("op %r: a SelectedRows X is only supported by elementwise_mul with a one-element Y"
                         % ctx.op.type)
    return SelectedRows(x.rows, x.value * y.reshape(()), x.height)


def _ew(type, fwd, dx_fn, dy_fn, grad_inputs=("X", "Y", "Out@GRAD"), plain=None, linear=None):
    """Elementwise op ``type``: Out = fwd(X, Y viewed per ``axis``); dX = dx_fn(x, y, dOut, Out) and
    dY = dy_fn(...) before their sums down to X's and Y's shapes. For the bound kernels: ``plain``,
    ``fwd`` as a function of (x, y) alone (``operator.add``: the same ``x + y``), and ``linear``,
    the sign of dY = +-dOut where dX = dOut (add, sub)."""
    def kernel(ctx, ins, attrs):
        if isinstance(ins["X"], SelectedRows):
            return {"Out": _rows_times_scalar(ctx, ins)}
        return {"Out": fwd(ctx.xp, ins["X"], _bcast(ins["X"], ins["Y"], attrs["axis"]))}

    register_op(type, inputs=["X", "Y"], outputs=["Out"], attrs=_EW_ATTRS, infer=_elementwise_infer,
                share_lod=("X", "Out"), keeps_rows=type == "elementwise_mul")(kernel)

    @register_binder(type)
    def bind(ctx, attrs):
        xp, axis, general = ctx.xp, attrs["axis"], kernel_call(kernel, ctx, attrs, ("X", "Y"), ("Out",))
        pair, last_axis = plain or (lambda x, y: fwd(xp, x, y)), axis == -1

        def call(x, y):     # X's shape, or a vector along X's last axis: no view of Y needed
            if x.__class__ is not SelectedRows and (x.shape == y.shape or y.ndim == 1
                                                    and (last_axis or axis == x.ndim - 1)):
                return pair(x, y)
            return general(x, y)
        return Bound(call, ("X", "Y"), ("Out",))

    def grad_arrays(xp, axis, x, y, dout, out, want_x, want_y):
        """(dX, dY), each summed down to its input's shape (None where not wanted)."""
        xs, ys = x.shape, y.shape
        vs = ys if xs == ys else _view_shape(xs, ys, axis)
        yv = y if vs == ys else y.reshape(vs)
        return (_reduce_grad(xp, dx_fn(xp, x, yv, dout, out), xs, xs) if want_x else None,
                _reduce_grad(xp, dy_fn(xp, x, yv, dout, out), ys, vs) if want_y else None)

    def grad_kernel(ctx, ins, attrs):
        outs = ctx.op.outputs
        dx, dy = grad_arrays(ctx.xp, attrs["axis"], ins["X"], ins["Y"], ins["Out@GRAD"], ins.get("Out"),
                             bool(outs.get("X@GRAD")), bool(outs.get("Y@GRAD")))
        return {slot: g for slot, g in (("X@GRAD", dx), ("Y@GRAD", dy)) if g is not None}

    register_grad(type, inputs=list(grad_inputs))(grad_kernel)

    @register_binder(type + "_grad")
    def bind_grad(ctx, attrs):
        outs = tuple(s for s in ("X@GRAD", "Y@GRAD") if ctx.op.outputs.get(s))
        if "Out" in grad_inputs or not outs:
            return None
        xp, axis, want_x, want_y = ctx.xp, attrs["axis"], "X@GRAD" in outs, "Y@GRAD" in outs
        if len(outs) == 2:
            general = lambda x, y, d: grad_arrays(xp, axis, x, y, d, None, True, True)    # noqa: E731
        else:
            k = int(want_y)     # the one gradient asked for
            general = lambda x, y, d: grad_arrays(xp, axis, x, y, d, None, want_x, want_y)[k]    # noqa: E731
        if linear is not None:
            return Bound(linear_grad_call(xp, axis, want_x, want_y, linear < 0, general), grad_inputs, outs)
        return Bound(general, grad_inputs, outs)


_ew("elementwise_add", lambda xp, x, y: x + y, lambda xp, x, y, d, o: d, lambda xp, x, y, d, o: d,
    plain=operator.add, linear=1)
_ew("elementwise_sub", lambda xp, x, y: x - y, lambda xp, x, y, d, o: d, lambda xp, x, y, d, o: -d,
    plain=operator.sub, linear=-1)
_ew("elementwise_mul", lambda xp, x, y: x * y, lambda xp, x, y, d, o: d * y, lambda xp, x, y, d, o: d * x,
    plain=operator.mul)
_ew("elementwise_div", lambda xp, x, y: _trunc_div(xp, x, y) if x.dtype.kind in "iu" else x / y,
    lambda xp, x, y, d, o: d / y, lambda xp, x, y, d, o: -d * x / (y * y))
_ew("elementwise_max", lambda xp, x, y: xp.maximum(x, y),
    lambda xp, x, y, d, o: d * (x >= y), lambda xp, x, y, d, o: d * (x < y))
_ew("elementwise_min", lambda xp, x, y: xp.minimum(x, y),
    lambda xp, x, y, d, o: d * (x <= y), lambda xp, x, y, d, o: d * (x > y))
_ew("elementwise_pow", lambda xp, x, y: xp.power(x, y),
    lambda xp, x, y, d, o: d * y * xp.power(x, y - 1),
    lambda xp, x, y, d, o: d * xp.power(x, y) * xp.log(xp.where(x > 0, x, 1)))


def _no_grad_ew(type, fn):
    register_op(type, inputs=["X", "Y"], outputs=["Out"], attrs=_EW_ATTRS, infer=_elementwise_infer)(
        lambda ctx, ins, attrs: {"Out": fn(ctx.xp, ins["X"], _bcast(ins["X"], ins["Y"], attrs["axis"]))})


def _trunc_div(xp, x, y):
    """C's division, which truncates toward zero: Paddle's floordiv, and its div of integers."""
    if x.dtype.kind in "iu":
        q = xp.floor_divide(x, y)
        return q + ((q * y != x) & ((x < 0) != (y < 0))).astype(q.dtype)
    return xp.trunc(x / y).astype(x.dtype, copy=False)


def _paddle_mod(xp, x, y):
    """Paddle's mod: C's ``%`` (the sign of X) for integers; for floats the result takes Y's sign."""
    return xp.fmod(x, y) if x.dtype.kind in "iu" else xp.mod(x, y)


_no_grad_ew("elementwise_floordiv", _trunc_div)
_no_grad_ew("elementwise_mod", _paddle_mod)


# ------------------------------------------------------------------ mul / matmul
def _flatten2(a, k):
    if a.ndim == 2 and k == 1:
        return a
    rows = 1
    for d in a.shape[:k]:
        rows *= d
    return a.reshape(rows, -1)


def _mul_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    if xs is None or ys is None:
        return
    xn, yn = ctx.attr("x_num_col_dims"), ctx.attr("y_num_col_dims")
    xk = int(np.prod(xs[xn:])) if all(d >= 0 for d in xs[xn:]) else -1
    yk = int(np.prod(ys[:yn]))
    if xk >= 0 and yk >= 0 and xk != yk:
        raise ValueError("mul: X of shape %s (flattened at %d: inner size %d) does not match Y of shape %s "
                         "(inner size %d)" % (list(xs), xn, xk, list(ys), yk))
    ctx.set_output("Out", tuple(xs[:xn]) + tuple(ys[yn:]), ctx.input_dtype("X"), ctx.input_lod_level("X"))


@register_op("mul", inputs=["X", "Y"], outputs=["Out"], attrs={"x_num_col_dims": 1, "y_num_col_dims": 1},
             infer=_mul_infer, share_lod=("X", "Out"))
def mul(ctx, ins, attrs):
    x, y = ins["X"], ins["Y"]
    xn, yn = attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    if x.ndim == 2 and y.ndim == 2:
        return {"Out": x @ y}
    out = _flatten2(x, xn) @ _flatten2(y, yn)
    return {"Out": out.reshape(tuple(x.shape[:xn]) + tuple(y.shape[yn:]))}


@register_binder("mul")
def _bind_mul(ctx, attrs):
    general = kernel_call(mul, ctx, attrs, ("X", "Y"), ("Out",))
    return Bound(lambda x, y: x @ y if x.ndim == 2 and y.ndim == 2 else general(x, y), ("X", "Y"), ("Out",))


def _mul_grads(x, y, d, xn, yn, want_x, want_y):
    """(dX, dY) of mul, each None unless wanted."""
    x2 = x if x.ndim == 2 and xn == 1 else _flatten2(x, xn)
    y2 = y if y.ndim == 2 and yn == 1 else _flatten2(y, yn)
    d2 = d if d.ndim == 2 else d.reshape(x2.shape[0], y2.shape[1])
    return (_shaped(d2 @ y2.T, x.shape) if want_x else None), (_shaped(x2.T @ d2, y.shape) if want_y else None)


def _shaped(a, shape):     # (a itself when it has that shape already)
    return a if a.shape == shape else a.reshape(shape)


@register_grad("mul", inputs=["X", "Y", "Out@GRAD"])
def mul_grad(ctx, ins, attrs):
    want_x, want_y = bool(ctx.op.outputs.get("X@GRAD")), bool(ctx.op.outputs.get("Y@GRAD"))
    dx, dy = _mul_grads(ins["X"], ins["Y"], ins["Out@GRAD"], attrs["x_num_col_dims"], attrs["y_num_col_dims"],
                        want_x, want_y)
    return {slot: g for slot, g in (("X@GRAD", dx), ("Y@GRAD", dy)) if g is not None}


@register_binder("mul_grad")
def _bind_mul_grad(ctx, attrs):
    outs = tuple(s for s in ("X@GRAD", "Y@GRAD") if ctx.op.outputs.get(s))
    if not outs:
        return None
    xn, yn, want_x, want_y = attrs["x_num_col_dims"], attrs["y_num_col_dims"], "X@GRAD" in outs, "Y@GRAD" in outs
    flat = xn == 1 and yn == 1      # two matrices need no flattening: _mul_grads's products, inline

    def both(x, y, d):
        if flat and x.ndim == 2 and y.ndim == 2 and d.ndim == 2:
            dx, dy = d @ y.T, x.T @ d
            return (dx if dx.shape == x.shape else dx.reshape(x.shape),
                    dy if dy.shape == y.shape else dy.reshape(y.shape))
        return _mul_grads(x, y, d, xn, yn, True, True)

    def only_dx(x, y, d):
        if flat and x.ndim == 2 and y.ndim == 2 and d.ndim == 2:
            dx = d @ y.T
            return dx if dx.shape == x.shape else dx.reshape(x.shape)
        return _mul_grads(x, y, d, xn, yn, True, False)[0]

    def only_dy(x, y, d):
        if flat and x.ndim == 2 and y.ndim == 2 and d.ndim == 2:
            dy = x.T @ d
            return dy if dy.shape == y.shape else dy.reshape(y.shape)
        return _mul_grads(x, y, d, xn, yn, False, True)[1]
    return Bound(both if want_x and want_y else only_dx if want_x else only_dy, ("X", "Y", "Out@GRAD"), outs)


# ------------------------------------------------------------------ scale, mean, sum-likes
def _scale_grad_maker(op):
    inputs = {"X": [n + "@GRAD" for n in op.outputs["Out"]]}
    if op.inputs.get("ScaleTensor"):    # the same factor, read at run time (as Paddle's grad maker)
        inputs["ScaleTensor"] = list(op.inputs["ScaleTensor"])
    return [{"type": "scale", "inputs": inputs, "outputs": {"Out": [n + "@GRAD" for n in op.inputs["X"]]},
             "attrs": {"scale": op.attrs["scale"], "bias": 0.0, "bias_after_scale": True}}]


def _is_fed(ctx, name):
    """A data variable's array may be the caller's own (feeds are not copied): never write into it."""
    v = ctx.op.block._find_var_recursive(name)
    return v is None or v.is_data


@register_op("scale", inputs=["X", "ScaleTensor?"], outputs=["Out"],
             attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True}, infer=same_shape(), grad=_scale_grad_maker,
             share_lod=("X", "Out"), keeps_rows=True, no_grad=("ScaleTensor",), host_inputs=("ScaleTensor",))
def scale(ctx, ins, attrs):
    """``scale * X + bias`` (``bias_after_scale``) or ``scale * (X + bias)``; ScaleTensor's value,
    when given, is the scale."""
    x = ins["X"]
    s, b = scalar_from_tensor(ins, "ScaleTensor", attrs["scale"]), attrs["bias"]
    if isinstance(x, SelectedRows):  # a row-sparse gradient scaled on a pserver: its rows only
        if b != 0.0:
            raise ValueError("scale: a SelectedRows input %r takes no bias" % ctx.op.inputs["X"][0])
        if x.value is None:   # no rows in this block this step (a pserver's shard the batch missed)
            return {"Out": SelectedRows(x.rows, None, x.height)}
        return {"Out": SelectedRows(x.rows, (x.value * s).astype(x.value.dtype, copy=False), x.height)}
    if b == 0.0 and ctx.op.inputs["X"] == ctx.op.outputs["Out"] and _writeable(x) and x.base is None \
            and x.dtype.kind == "f" and not _is_fed(ctx, ctx.op.inputs["X"][0]):
        # scale in place of a variable onto itself (the pserver's 1/trainers on a freshly summed
        # gradient): the variable is overwritten anyway, and the array is not a view of another
        x *= s
        return {"Out": x}
    if b == 0.0:
        out = x * s if s != 1.0 else x.copy()
    elif attrs["bias_after_scale"]:
        out = x * s + b
    else:
        out = (x + b) * s
    return {"Out": out.astype(x.dtype, copy=False)}


def _writeable(x):
    """NumPy's ``flags.writeable``; device arrays (CuPy's) have no such flag and are always writeable."""
    return getattr(x.flags, "writeable", True)


def _mean_of(xp, x):
    """sum / size on the host: ndarray.mean's Python wrapper costs more than small losses' arithmetic."""
    if xp is not np:     # one reduction kernel on a device
        m = x.mean().reshape(1)
        return m if m.dtype == x.dtype else m.astype(x.dtype)
    total = np.add.reduce(x, axis=None) if type(x) is np.ndarray else x.sum()   # (ndarray.sum's own call)
    m = (total / max(x.size, 1)).reshape(1)
    return m if m.dtype == x.dtype else m.astype(x.dtype)


def _mean_grad_of(xp, x, d):
    """dOut / size everywhere: one division, dOut broadcast into the output (one launch on a device).
    On a device, a dOut of shape [1] (the loss's) broadcasts as it is into an output of one axis or
    more (no reshape call); NumPy divides by a 0-d one faster than it broadcasts a [1] one."""
    if xp is np or d.shape != _ONE or not x.ndim:
        d = d.reshape(())
    return xp.divide(d, max(x.size, 1), out=xp.empty(x.shape, dtype=x.dtype))


_ONE = (1,)


@register_op("mean", inputs=["X"], outputs=["Out"], infer=lambda c: c.set_output("Out", (1,), c.input_dtype("X")))
def mean(ctx, ins, attrs):
    return {"Out": _mean_of(ctx.xp, ins["X"])}


@register_grad("mean", inputs=["X", "Out@GRAD"])
def mean_grad(ctx, ins, attrs):
    return {"X@GRAD": _mean_grad_of(ctx.xp, ins["X"], ins["Out@GRAD"])}


@register_binder("mean")
def _bind_mean(ctx, attrs):
    xp = ctx.xp
    if xp is not np:
        return Bound(lambda x: _mean_of(xp, x), ("X",), ("Out",))
    add_reduce, ndarray = np.add.reduce, np.ndarray

    def call(x):        # _mean_of on the host, inline
        if x.__class__ is not ndarray:
            return _mean_of(np, x)
        m = (add_reduce(x, axis=None) / max(x.size, 1)).reshape(1)
        return m if m.dtype == x.dtype else m.astype(x.dtype)
    return Bound(call, ("X",), ("Out",))


register_binder("mean_grad")(lambda ctx, attrs: Bound(lambda x, d, xp=ctx.xp: _mean_grad_of(xp, x, d),
                                                      ("X", "Out@GRAD"), ("X@GRAD",)))


def _reduce_axes(attrs, ndim):
    if attrs["reduce_all"]:
        return tuple(range(ndim))
    dims = attrs["dim"]
    if isinstance(dims, int):
        dims = [dims]
    return tuple(d + ndim if d < 0 else d for d in dims)


def _reduce_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    attrs = {"reduce_all": ctx.attr("reduce_all"), "dim": ctx.attr("dim")}
    axes = _reduce_axes(attrs, len(xs))
    if ctx.attr("keep_dim"):
        out = [1 if i in axes else d for i, d in enumerate(xs)]
    else:
        out = [d for i, d in enumerate(xs) if i not in axes] or [1]
    ctx.set_output("Out", out, ctx.input_dtype("X"))


_RED_ATTRS = {"dim": [0], "keep_dim": False, "reduce_all": False}


def _reduce(type, fwd, bwd):
    register_op(type, inputs=["X"], outputs=["Out"], attrs=_RED_ATTRS, infer=_reduce_infer)(
        lambda ctx, ins, attrs: {"Out": _reduce_out(fwd(ctx.xp, ins["X"], _reduce_axes(attrs, ins["X"].ndim),
                                                        attrs["keep_dim"]), attrs)})

    def grad(ctx, ins, attrs):
        x, out, d = ins["X"], ins["Out"], ins["Out@GRAD"]
        axes = _reduce_axes(attrs, x.ndim)
        keep = [1 if i in axes else s for i, s in enumerate(x.shape)]
        return {"X@GRAD": bwd(ctx.xp, x, out.reshape(keep), d.reshape(keep), axes).astype(x.dtype, copy=False)}

    register_grad(type, inputs=["X", "Out", "Out@GRAD"])(grad)


def _reduce_out(v, attrs):
    if v.ndim == 0:
        v = v.reshape(1)
    return v


def _count(x, axes):
    return int(np.prod([x.shape[a] for a in axes])) if axes else 1


_reduce("reduce_sum", lambda xp, x, a, k: x.sum(axis=a, keepdims=k),
        lambda xp, x, o, d, a: xp.broadcast_to(d, x.shape).copy())
_reduce("reduce_mean", lambda xp, x, a, k: x.mean(axis=a, keepdims=k),
        lambda xp, x, o, d, a: xp.broadcast_to(d / _count(x, a), x.shape).copy())
_reduce("reduce_max", lambda xp, x, a, k: x.max(axis=a, keepdims=k),
        lambda xp, x, o, d, a: d * (x == o))
_reduce("reduce_min", lambda xp, x, a, k: x.min(axis=a, keepdims=k),
        lambda xp, x, o, d, a: d * (x == o))
_reduce("reduce_prod", lambda xp, x, a, k: x.prod(axis=a, keepdims=k),
        lambda xp, x, o, d, a: d * o / x)


# ------------------------------------------------------------------ activations
def _act(type, fwd, bwd, uses="Out", attrs=None):
    """Activation ``type``: Out = fwd(X); dX = bwd(X or Out, dOut) (``uses`` says which)."""
    attrs = attrs or {}
    register_op(type, inputs=["X"], outputs=["Out"], attrs=attrs, infer=same_shape(), share_lod=("X", "Out"))(
        lambda ctx, ins, a: {"Out": fwd(ctx.xp, ins["X"], a)})
    register_grad(type, inputs=[uses, "Out@GRAD"])(
        lambda ctx, ins, a: {"X@GRAD": bwd(ctx.xp, ins[uses], ins["Out@GRAD"], a)})
    register_binder(type)(lambda ctx, a: Bound(lambda x, xp=ctx.xp: fwd(xp, x, a), ("X",), ("Out",)))
    register_binder(type + "_grad")(
        lambda ctx, a: Bound(lambda u, d, xp=ctx.xp: bwd(xp, u, d, a), (uses, "Out@GRAD"), ("X@GRAD",)))


def stable_sigmoid(xp, x):
    """``1 / (1 + exp(-x))`` without overflow: ``exp`` only ever sees ``-|x|``. For ``x >= 0`` it is
    Paddle's formula itself; for ``x < 0`` the same value as ``e / (1 + e)``, ``e = exp(x)`` (where
    Paddle's ``exp(-x)`` overflows to inf, both give 0). On a device, where an overflow raises no
    warning, Paddle's formula itself: 4 kernel launches instead of 9."""
    if xp is not np:
        return 1 / (1 + xp.exp(-x))
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def exp_nonpositive(xp, x):
    """``exp(min(x, 0))``: the exponential of the negative branch of elu-like activations, which
    ``where`` computes for every element (positive ones are discarded, and must not overflow)."""
    return xp.exp(xp.minimum(x, x.dtype.type(0)))


def _sigmoid(xp, x, a):
    return stable_sigmoid(xp, x)


_act("relu", lambda xp, x, a: xp.maximum(x, 0), lambda xp, o, d, a: d * (o > 0))
_act("sigmoid", _sigmoid, lambda xp, o, d, a: d * o * (1 - o))
_act("tanh", lambda xp, x, a: xp.tanh(x), lambda xp, o, d, a: d * (1 - o * o))
_act("exp", lambda xp, x, a: xp.exp(x), lambda xp, o, d, a: d * o)
_act("log", lambda xp, x, a: xp.log(x), lambda xp, x, d, a: d / x, uses="X")
_act("sqrt", lambda xp, x, a: xp.sqrt(x), lambda xp, o, d, a: d * 0.5 / o)
_act("rsqrt", lambda xp, x, a: 1.0 / xp.sqrt(x), lambda xp, o, d, a: -0.5 * d * o * o * o)
_act("square", lambda xp, x, a: x * x, lambda xp, x, d, a: device_fused.square_grad(xp, d, x), uses="X")
_act("abs", lambda xp, x, a: xp.abs(x), lambda xp, x, d, a: d * xp.sign(x), uses="X")
_act("reciprocal", lambda xp, x, a: 1.0 / x, lambda xp, o, d, a: -d * o * o)
def _softplus(xp, x, a):
    """``log(1 + exp(x))`` as Paddle's CPU kernel computes it: shifted by ``max(x, 0)``."""
    t = xp.maximum(x, 0)
    return t + xp.log(xp.exp(-t) + xp.exp(x - t))


def _softplus_grad(xp, x, d, a):
    t = xp.maximum(x, 0)
    e = xp.exp(x - t)
    return d * e / (xp.exp(-t) + e)


_act("softplus", _softplus, _softplus_grad, uses="X")
_act("softsign", lambda xp, x, a: x / (1 + xp.abs(x)), lambda xp, x, d, a: d / (1 + xp.abs(x)) ** 2, uses="X")
_act("leaky_relu", lambda xp, x, a: xp.where(x > 0, x, x * a["alpha"]),
     lambda xp, x, d, a: d * xp.where(x > 0, 1.0, a["alpha"]).astype(d.dtype), uses="X", attrs={"alpha": 0.02})
_act("elu", lambda xp, x, a: xp.where(x > 0, x, a["alpha"] * (exp_nonpositive(xp, x) - 1)),
     lambda xp, x, d, a: d * xp.where(x > 0, 1.0, a["alpha"] * exp_nonpositive(xp, x)).astype(d.dtype), uses="X",
     attrs={"alpha": 1.0})
_act("relu6", lambda xp, x, a: xp.clip(x, 0, a["threshold"]),
     lambda xp, o, d, a: d * ((o > 0) & (o < a["threshold"])), attrs={"threshold": 6.0})
_act("hard_sigmoid", lambda xp, x, a: xp.clip(x * a["slope"] + a["offset"], 0, 1),
     lambda xp, o, d, a: d * a["slope"] * ((o > 0) & (o < 1)), attrs={"slope": 0.2, "offset": 0.5})
_act("swish", lambda xp, x, a: x * _sigmoid(xp, x * a["beta"], a),
     lambda xp, x, d, a: d * (_sigmoid(xp, a["beta"] * x, a) * (1 + a["beta"] * x * (1 - _sigmoid(xp, a["beta"] * x, a)))),
     uses="X", attrs={"beta": 1.0})


def erf(xp, x):
    """The error function on ``xp`` arrays: scipy's (or cupyx's) when present, else ``math.erf``
    elementwise (exact, slower)."""
    if getattr(xp, "__name__", "") == "cupy":
        import cupyx.scipy.special as cs
        return cs.erf(x)
    if xp is not np:        # the stand-in device: a device kernel over NumPy's numbers
        return xp.kernel(lambda a: erf(np, a))(x)
    try:
        from scipy.special import erf as sp_erf
    except ImportError:  # scipy is optional
        import math
        return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()
    return sp_erf(x).astype(x.dtype, copy=False)


_GELU_C = 0.7978845608028654  # sqrt(2 / pi)


def _gelu(xp, x, a):
    """Exact ``x * Phi(x)``, or with ``approximate`` the tanh form."""
    if a.get("approximate"):
        return 0.5 * x * (1 + xp.tanh(x.dtype.type(_GELU_C) * (x + x.dtype.type(0.044715) * x * x * x)))
    return 0.5 * x * (1 + erf(xp, x / x.dtype.type(np.sqrt(2.0))))


def _gelu_grad(xp, x, d, a):
    if a.get("approximate"):
        c, k = x.dtype.type(_GELU_C), x.dtype.type(0.044715)
        t = xp.tanh(c * (x + k * x * x * x))
        return d * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * k * x * x))
    cdf = 0.5 * (1 + erf(xp, x / x.dtype.type(np.sqrt(2.0))))
    pdf = xp.exp(-0.5 * x * x) / x.dtype.type(np.sqrt(2 * np.pi))
    return d * (cdf + x * pdf)


_act("gelu", _gelu, _gelu_grad, uses="X", attrs={"approximate": False})
_act("cos", lambda xp, x, a: xp.cos(x), lambda xp, x, d, a: -d * xp.sin(x), uses="X")


SOFTMAX_FLOOR = -64.0  # Paddle's CPU softmax clips the shifted logits here (exp(-64) ~ 1.6e-28)


def stable_softmax(xp, x, axis):
    """Softmax as Paddle 1.8's CPU kernel computes it: logits shifted by their max, clipped below at
    -64, exponentiated and normalised. No probability is below ~1.6e-28 / n, so ``-log`` of one
    stays finite (64 at most above the row's log-sum) where plain softmax underflows to 0."""
    shifted = x - x.max(axis=axis, keepdims=True)
    e = xp.exp(xp.maximum(shifted, x.dtype.type(SOFTMAX_FLOOR)))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype, copy=False)


@register_op("softmax", inputs=["X"], outputs=["Out"], attrs={"axis": -1}, infer=same_shape(), share_lod=("X", "Out"))
def softmax(ctx, ins, attrs):
    return {"Out": stable_softmax(ctx.xp, ins["X"], attrs["axis"])}


@register_grad("softmax", inputs=["Out", "Out@GRAD"])
def softmax_grad(ctx, ins, attrs):
    o, d = ins["Out"], ins["Out@GRAD"]
    return {"X@GRAD": o * (d - (d * o).sum(axis=attrs["axis"], keepdims=True))}


def _clip_bounds(ins, attrs):
    """Min / Max tensors (one value each) win over the ``min`` / ``max`` attrs."""
    lo = ins["Min"].reshape(-1)[0] if ins.get("Min") is not None else attrs["min"]
    hi = ins["Max"].reshape(-1)[0] if ins.get("Max") is not None else attrs["max"]
    return lo, hi


@register_op("clip", inputs=["X", "Min?", "Max?"], outputs=["Out"], attrs={"min": -1.0, "max": 1.0},
             infer=same_shape(), keeps_rows=True, no_grad=("Min", "Max"))
def clip(ctx, ins, attrs):
    x = ins["X"]
    lo, hi = _clip_bounds(ins, attrs)
    if isinstance(x, SelectedRows):  # a sparse gradient: clip its merged rows, stay row-sparse
        m = x.merged(ctx.xp)
        return {"Out": SelectedRows(m.rows, ctx.xp.clip(m.value, lo, hi), m.height)}
    return {"Out": ctx.xp.clip(x, lo, hi).astype(x.dtype, copy=False)}


@register_grad("clip", inputs=["X", "Min?", "Max?", "Out@GRAD"])
def clip_grad(ctx, ins, attrs):
    x = ins["X"]
    lo, hi = _clip_bounds(ins, attrs)
    return {"X@GRAD": ins["Out@GRAD"] * ((x > lo) & (x < hi))}


@register_op("pow", inputs=["X", "FactorTensor?"], outputs=["Out"], attrs={"factor": 1.0}, infer=same_shape(),
             no_grad=("FactorTensor",))
def pow_(ctx, ins, attrs):
    """X to the power ``factor`` (or FactorTensor's value)."""
    f = scalar_from_tensor(ins, "FactorTensor", attrs["factor"])
    return {"Out": ctx.xp.power(ins["X"], f).astype(ins["X"].dtype, copy=False)}


@register_grad("pow", inputs=["X", "FactorTensor?", "Out@GRAD"])
def pow_grad(ctx, ins, attrs):
    x, f = ins["X"], scalar_from_tensor(ins, "FactorTensor", attrs["factor"])
    return {"X@GRAD": ins["Out@GRAD"] * f * ctx.xp.power(x, f - 1)}


# round: halves to even, as Paddle 1.8's kernel does
for _name, _fn in (("floor", lambda xp, x: xp.floor(x)), ("ceil", lambda xp, x: xp.ceil(x)),
                   ("round", lambda xp, x: xp.round(x)), ("sign", lambda xp, x: xp.sign(x))):
    register_op(_name, inputs=["X"], outputs=["Out"], infer=same_shape(), share_lod=("X", "Out"))(
        (lambda f: lambda ctx, ins, a: {"Out": f(ctx.xp, ins["X"])})(_fn))
