"""Loss ops: ``cross_entropy`` (hard or soft labels), ``cross_entropy2`` (the hard-label form Paddle's
``layers.cross_entropy`` builds), ``softmax_with_cross_entropy``, ``sigmoid_cross_entropy_with_logits``
and ``log_loss``. Labels never get a gradient."""
import numpy as np

from ..framework.registry import register_grad, register_op
from . import device_ids
from .math import stable_sigmoid, stable_softmax

_LOSS_CLAMP = 1e20  # Paddle's TolerableValue: -log(0) is reported as 1e20, not inf


def _neg_log(xp, p):
    with np.errstate(divide="ignore", invalid="ignore"):
        v = -xp.log(p)
    xp.maximum(v, -_LOSS_CLAMP, out=v)       # (clip's fixed cost is twice these two calls')
    return xp.minimum(v, _LOSS_CLAMP, out=v)


def _hard_labels(ctx, label, classes, ignore_index, slot="Label"):
    """Flat int64 labels, checked to be class ids in ``[0, classes)`` or ``ignore_index``; the mask of
    ignored ones; and on a device place the mask of labels out of range (None on the host).

    On the host a label out of range raises. On a device that check would make the host wait for
    the device at every step, so there such labels are clipped, and the forward ops give their rows a
    NaN loss instead (the fetched loss shows it)."""
    name = ctx.op.inputs[slot][0]
    _hard_label_dtype(ctx, label, slot)
    flat = label.reshape(-1).astype(np.int64, copy=False)
    ignore = flat == ignore_index
    if ctx.xp is not np:
        safe, out = device_ids.checked_ids(ctx.xp, flat, classes)
        return safe, ignore, out & ~ignore
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= classes):
        live = flat[~ignore]      # (ignore_index is out of range: only then are ignored labels set aside)
        if live.size and (int(live.min()) < 0 or int(live.max()) >= classes):
            bad = int(live.min()) if int(live.min()) < 0 else int(live.max())
            raise ValueError("op %r: label %d in Label %r is out of range for %d classes"
                             % (ctx.op.type, bad, name, classes))
    return flat, ignore, None


def _device_labels(ctx, label, classes, ignore_index, loss_dtype):
    """On a device: (labels clipped into ``[0, classes)``, the mask of rows without a usable label,
    and their loss: 0 where ignored, NaN where out of range). The checks of ``_hard_labels`` in 4 or
    5 kernel launches and no read back to the host (an ``ignore_index`` outside the classes is out of
    range itself: its rows are skipped by the same comparison)."""
    xp = ctx.xp
    _hard_label_dtype(ctx, label)
    flat = label.reshape(-1).astype(np.int64, copy=False)
    safe, out = device_ids.checked_ids(xp, flat, classes)
    zero, nan = np.dtype(loss_dtype).type(0), np.dtype(loss_dtype).type(np.nan)
    if 0 <= ignore_index < classes:
        return safe, out | (flat == ignore_index), xp.where(out, nan, zero)
    return safe, out, xp.where(flat == ignore_index, zero, nan)


def _gathered_labels(ctx, label, classes, ignore_index, loss_dtype):
    """Hard labels for a gather of each row's entry: (index per row, in ``[0, classes)``; the mask of
    rows without a usable label; their loss). On the host a label out of range raises, so the mask
    is the ignored rows and their loss 0; on a device, ``_device_labels``."""
    xp = ctx.xp
    if xp is not np:
        return _device_labels(ctx, label, classes, ignore_index, loss_dtype)
    flat, ignore, _ = _hard_labels(ctx, label, classes, ignore_index)
    return xp.where(ignore, 0, flat), ignore, np.dtype(loss_dtype).type(0)


def _gathered_grad_labels(ctx, label, classes, ignore_index):
    """A gradient's ``_gathered_labels``: (index per row in ``[0, classes)``, the mask of rows that
    take no gradient: ignored ones, and on a device those out of range, whose loss the forward op
    made NaN). On a device 2 launches (4 for an ``ignore_index`` among the classes), none read back."""
    xp = ctx.xp
    if xp is np:
        flat, ignore, _ = _hard_labels(ctx, label, classes, ignore_index)
        return xp.where(ignore, 0, flat), ignore
    _hard_label_dtype(ctx, label)
    flat = label.reshape(-1).astype(np.int64, copy=False)
    safe, skip = device_ids.checked_ids(xp, flat, classes)
    return safe, (skip | (flat == ignore_index)) if 0 <= ignore_index < classes else skip


def _grad_labels(ctx, label, classes, ignore_index):
    """A hard-label gradient's labels: (flat labels, where none matches a class on a row that takes
    no gradient; the mask of those rows, or None when there are none). On the host a label out of
    range raises; on a device its row takes no gradient (the forward op made its loss NaN), decided
    without reading back."""
    xp = ctx.xp
    if xp is not np:
        _hard_label_dtype(ctx, label)
        flat = label.reshape(-1).astype(np.int64, copy=False)
        skip = device_ids.out_of_range(xp, flat, classes)     # (an ignore_index out of range is in it)
        if 0 <= ignore_index < classes:
            ignore = flat == ignore_index
            return xp.where(ignore, -1, flat), skip | ignore
        return flat, skip
    flat, ignore, _ = _hard_labels(ctx, label, classes, ignore_index)
    if not _some(xp, ignore):
        return flat, None
    return (xp.where(ignore, -1, flat) if 0 <= ignore_index < classes else flat), ignore


def _hard_label_dtype(ctx, label, slot="Label"):
    if label.dtype.kind not in "iu":
        raise ValueError("op %r: hard Label %r must be an integer tensor (int64), got %s; set soft_label=True "
                         "for probability labels" % (ctx.op.type, ctx.op.inputs[slot][0], label.dtype))


def _some(xp, mask):
    """Whether ``mask`` has a True; on a device place assumed so (asking would make the host wait)."""
    return bool(mask.any()) if xp is np else True


def _check_label_shape(ctx, x, label, soft, slot_x="X"):
    want = tuple(x.shape[:-1]) + ((x.shape[-1],) if soft else (1,))
    if tuple(label.shape) != want and not (not soft and tuple(label.shape) == tuple(x.shape[:-1])):
        raise ValueError("op %r: Label %r has shape %s but %s %r of shape %s needs %s"
                         % (ctx.op.type, ctx.op.inputs["Label"][0], list(label.shape), slot_x,
                            ctx.op.inputs[slot_x][0], list(x.shape), list(want)))


def _loss_shape(x_shape, label_shape, soft):
    """One loss per row: ``X.shape[:-1] + [1]``, or, for hard labels given without their trailing 1
    (``Label`` of rank ``rank(X) - 1``), the label's shape ``X.shape[:-1]`` (Paddle 1.8)."""
    rows = tuple(x_shape[:-1])
    if not soft and label_shape is not None and len(label_shape) == len(x_shape) - 1:
        return rows
    return rows + (1,)


def _ce_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is not None:
        ctx.set_output("Y", _loss_shape(xs, ctx.input_shape("Label"), ctx.attr("soft_label")), ctx.input_dtype("X"),
                       ctx.input_lod_level("X"))


def _rows_infer(in_slot, out_slot):
    """Out is ``X.shape[:-1] + [1]`` (one loss per row)."""
    def infer(ctx):
        xs = ctx.input_shape(in_slot)
        if xs is not None:
            ctx.set_output(out_slot, tuple(xs[:-1]) + (1,), ctx.input_dtype(in_slot), ctx.input_lod_level(in_slot))
    return infer


# ------------------------------------------------------------------ cross_entropy
_CE_ATTRS = {"soft_label": False, "ignore_index": -100}


@register_op("cross_entropy", inputs=["X", "Label"], outputs=["Y"], attrs=_CE_ATTRS, infer=_ce_infer, no_grad=("Label",),
             share_lod=("X", "Y"))
def cross_entropy(ctx, ins, attrs):
    """``Y = -log(X[label])`` per row (0 for ``ignore_index``), or ``-sum(Label * log(X))`` for soft labels;
    X holds probabilities."""
    xp = ctx.xp
    x, label = ins["X"], ins["Label"]
    soft = attrs["soft_label"]
    _check_label_shape(ctx, x, label, soft)
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    if soft:
        y = (label.reshape(-1, d) * _neg_log(xp, x2)).sum(axis=1)
    else:
        safe, skip, fill = _gathered_labels(ctx, label, d, attrs["ignore_index"], x.dtype)
        y = xp.where(skip, fill, _neg_log(xp, x2[xp.arange(x2.shape[0]), safe]))
    return {"Y": y.astype(x.dtype, copy=False).reshape(_loss_shape(x.shape, label.shape, soft))}


@register_grad("cross_entropy", inputs=["X", "Label", "Y@GRAD"])
def cross_entropy_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, label, dy = ins["X"], ins["Label"], ins["Y@GRAD"]
    d = x.shape[-1]
    x2, dy2 = x.reshape(-1, d), dy.reshape(-1, 1)
    if attrs["soft_label"]:
        dx = -dy2 * label.reshape(-1, d) / x2
    else:
        safe, skip = _gathered_grad_labels(ctx, label, d, attrs["ignore_index"])
        rows = xp.arange(x2.shape[0])
        dx = xp.zeros_like(x2)
        dx[rows, safe] = xp.where(skip, 0, -dy2[:, 0] / x2[rows, safe])
    return {"X@GRAD": dx.reshape(x.shape)}


def _ce2_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    rows = tuple(xs[:-1]) + (1,)
    dt = ctx.input_dtype("X")
    ctx.set_output("Y", _loss_shape(xs, ctx.input_shape("Label"), False), dt, ctx.input_lod_level("X"))
    ctx.set_output("MatchX", rows, dt)
    ctx.set_output("XShape", tuple(xs) + (0,), dt)   # Paddle 1.8's XShape of cross_entropy2: X's dims, then 0


def _ce2_grad_maker(op):
    return [{"type": "cross_entropy_grad2",
             "inputs": {"Label": list(op.inputs["Label"]), "MatchX": list(op.outputs["MatchX"]),
                        "XShape": list(op.outputs["XShape"]), "Y@GRAD": [n + "@GRAD" for n in op.outputs["Y"]]},
             "outputs": {"X@GRAD": [n + "@GRAD" for n in op.inputs["X"]]},
             "attrs": {"ignore_index": op.attrs["ignore_index"]}}]


@register_op("cross_entropy2", inputs=["X", "Label"], outputs=["Y", "MatchX", "XShape"],
             attrs={"ignore_index": -100}, infer=_ce2_infer, grad=_ce2_grad_maker, share_lod=("X", "Y"))
def cross_entropy2(ctx, ins, attrs):
    """Hard-label cross entropy that keeps ``MatchX = X[label]`` (and X's shape) for its gradient,
    so the backward pass needs not hold on to X."""
    xp = ctx.xp
    x, label = ins["X"], ins["Label"]
    _check_label_shape(ctx, x, label, False)
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    safe, skip, fill = _gathered_labels(ctx, label, d, attrs["ignore_index"], x.dtype)
    match = xp.where(skip, 0, x2[xp.arange(x2.shape[0]), safe]).astype(x.dtype, copy=False)
    y = xp.where(skip, fill, _neg_log(xp, match)).astype(x.dtype, copy=False)
    rows = tuple(x.shape[:-1]) + (1,)
    return {"Y": y.reshape(_loss_shape(x.shape, label.shape, False)), "MatchX": match.reshape(rows),
            "XShape": np.array(x.shape, dtype=np.int64)}


@register_grad("cross_entropy2", type="cross_entropy_grad2", inputs=["Label", "MatchX", "XShape", "Y@GRAD"])
def cross_entropy_grad2(ctx, ins, attrs):
    xp = ctx.xp
    label, match, dy = ins["Label"], ins["MatchX"], ins["Y@GRAD"]
    shape = tuple(int(s) for s in ins["XShape"])
    d = shape[-1]
    safe, skip = _gathered_grad_labels(ctx, label, d, attrs["ignore_index"])
    m, dy1 = match.reshape(-1), dy.reshape(-1)
    dx = xp.zeros((m.shape[0], d), dtype=dy.dtype)
    dx[xp.arange(m.shape[0]), safe] = xp.where(skip, 0, -dy1 / xp.where(skip, 1, m))
    return {"X@GRAD": dx.reshape(shape)}


# ------------------------------------------------------------------ softmax_with_cross_entropy
_SWCE_ATTRS = {"soft_label": False, "ignore_index": -100, "numeric_stable_mode": True, "axis": -1}


def _swce_infer(ctx):
    xs = ctx.input_shape("Logits")
    if xs is None:
        return
    axis = ctx.attr("axis") % len(xs)
    loss = list(xs)
    loss[axis] = 1
    dt = ctx.input_dtype("Logits")
    ctx.set_output("Softmax", xs, dt, ctx.input_lod_level("Logits"))
    ctx.set_output("Loss", loss, dt, ctx.input_lod_level("Logits"))


@register_op("softmax_with_cross_entropy", inputs=["Logits", "Label"], outputs=["Softmax", "Loss"],
             attrs=_SWCE_ATTRS, infer=_swce_infer,
             no_grad=("Label",), share_lod=("Logits", "Loss"))
def softmax_with_cross_entropy(ctx, ins, attrs):
    """Softmax over ``axis`` and the cross entropy against Label, as Paddle 1.8's CPU kernel computes
    them (whatever ``numeric_stable_mode`` says): the softmax with shifted logits clipped at -64, then
    ``-log`` of it (clamped at 1e20), so a hopeless logit costs at most 64 above the row's log-sum."""
    xp = ctx.xp
    logits, label = ins["Logits"], ins["Label"]
    axis = attrs["axis"] % logits.ndim
    last = axis == logits.ndim - 1
    z = logits if last else xp.moveaxis(logits, axis, -1)
    lab = xp.moveaxis(label, axis, -1) if label.ndim == logits.ndim and not last else label
    soft = attrs["soft_label"]
    _check_label_shape(ctx, z, lab, soft, slot_x="Logits")
    softmax = stable_softmax(xp, z, -1)
    d = z.shape[-1]
    if soft:
        loss = (lab * _neg_log(xp, softmax)).sum(axis=-1, keepdims=True)
    elif xp is not np:
        safe, skip, fill = _device_labels(ctx, lab, d, attrs["ignore_index"], softmax.dtype)
        p2 = softmax.reshape(-1, d)
        # (-log of the clipped softmax is at most 64 + log(classes): _neg_log's clamps never act here)
        loss = xp.where(skip, fill, -xp.log(p2[xp.arange(p2.shape[0]), safe]))
        loss = loss.reshape(tuple(z.shape[:-1]) + (1,))
    else:
        flat, ignore, bad = _hard_labels(ctx, lab, d, attrs["ignore_index"])
        ignored = _some(xp, ignore)
        p2 = softmax.reshape(-1, d)
        loss = _neg_log(xp, p2[xp.arange(p2.shape[0]), xp.where(ignore, 0, flat) if ignored else flat])
        loss = device_ids.nan_where(xp, bad, xp.where(ignore, 0, loss) if ignored else loss)
        loss = loss.reshape(tuple(z.shape[:-1]) + (1,))
    if not last:
        softmax, loss = xp.moveaxis(softmax, -1, axis), xp.moveaxis(loss, -1, axis)
    return {"Softmax": softmax.astype(logits.dtype, copy=False), "Loss": loss.astype(logits.dtype, copy=False)}


@register_grad("softmax_with_cross_entropy", inputs=["Label", "Softmax", "Loss@GRAD"])
def softmax_with_cross_entropy_grad(ctx, ins, attrs):
    """``dLogits = (Softmax - onehot(label)) * dLoss``; 0 on rows whose label is ``ignore_index``."""
    xp = ctx.xp
    label, sm, dloss = ins["Label"], ins["Softmax"], ins["Loss@GRAD"]
    axis = attrs["axis"] % sm.ndim
    last = axis == sm.ndim - 1
    p = sm if last else xp.moveaxis(sm, axis, -1)
    lab = xp.moveaxis(label, axis, -1) if label.ndim == sm.ndim and not last else label
    dl = xp.moveaxis(dloss, axis, -1) if dloss.ndim == sm.ndim and not last \
        else dloss.reshape(tuple(p.shape[:-1]) + (1,))
    d = p.shape[-1]
    if attrs["soft_label"]:
        dz = (p - lab) * dl
    else:
        flat, skip = _grad_labels(ctx, lab, d, attrs["ignore_index"])
        # (1 subtracted through a one-hot comparison: no copy of Softmax and no scatter into it)
        dz = p.reshape(-1, d) - (flat[:, None] == xp.arange(d))
        scale = dl.reshape(-1) if skip is None else xp.where(skip, 0, dl.reshape(-1)).astype(dz.dtype, copy=False)
        dz *= scale[:, None]
        dz = dz.reshape(p.shape)
    return {"Logits@GRAD": dz if last else xp.moveaxis(dz, -1, axis)}


# ------------------------------------------------------------------ sigmoid_cross_entropy_with_logits
_SCE_ATTRS = {"ignore_index": -100, "normalize": False}


def _sce_norm(xp, label, attrs):
    """The divisor: 1, or the number of labels that are not ``ignore_index`` when ``normalize``."""
    if not attrs["normalize"]:
        return 1.0
    return xp.maximum((label != attrs["ignore_index"]).sum(), 1).astype(label.dtype)


def _check_same(ctx, x, label):
    if tuple(x.shape) != tuple(label.shape):
        raise ValueError("op %r: Label %r has shape %s but X %r has shape %s; they must match"
                         % (ctx.op.type, ctx.op.inputs["Label"][0], list(label.shape), ctx.op.inputs["X"][0],
                            list(x.shape)))


@register_op("sigmoid_cross_entropy_with_logits", inputs=["X", "Label"], outputs=["Out"], attrs=_SCE_ATTRS,
             infer=lambda c: c.share("Out", "X"),
             no_grad=("Label",), share_lod=("X", "Out"))
def sigmoid_cross_entropy_with_logits(ctx, ins, attrs):
    """Elementwise ``max(x, 0) - x * label + log(1 + exp(-|x|))`` (Paddle's form: ``log(1 + .)``, not
    ``log1p``); 0 where label is ``ignore_index``."""
    xp = ctx.xp
    x, label = ins["X"], ins["Label"]
    _check_same(ctx, x, label)
    out = xp.maximum(x, 0) - x * label + xp.log(1 + xp.exp(-xp.abs(x)))
    out = xp.where(label == attrs["ignore_index"], 0, out) / _sce_norm(xp, label, attrs)
    return {"Out": out.astype(x.dtype, copy=False)}


@register_grad("sigmoid_cross_entropy_with_logits", inputs=["X", "Label", "Out@GRAD"])
def sigmoid_cross_entropy_with_logits_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, label, d = ins["X"], ins["Label"], ins["Out@GRAD"]
    sig = stable_sigmoid(xp, x)
    dx = xp.where(label == attrs["ignore_index"], 0, (sig - label) * d) / _sce_norm(xp, label, attrs)
    return {"X@GRAD": dx.astype(x.dtype, copy=False)}


# ------------------------------------------------------------------ log_loss
@register_op("log_loss", inputs=["Predicted", "Labels"], outputs=["Loss"], attrs={"epsilon": 1e-4},
             infer=lambda c: c.share("Loss", "Predicted"), no_grad=("Labels",))
def log_loss(ctx, ins, attrs):
    """``-label * log(p + eps) - (1 - label) * log(1 - p + eps)`` elementwise."""
    xp = ctx.xp
    p, y = ins["Predicted"], ins["Labels"]
    if tuple(p.shape) != tuple(y.shape):
        raise ValueError("op 'log_loss': Labels %r has shape %s but Predicted %r has shape %s"
                         % (ctx.op.inputs["Labels"][0], list(y.shape), ctx.op.inputs["Predicted"][0], list(p.shape)))
    eps = attrs["epsilon"]
    return {"Loss": (-y * xp.log(p + eps) - (1 - y) * xp.log(1 - p + eps)).astype(p.dtype, copy=False)}


@register_grad("log_loss", inputs=["Predicted", "Labels", "Loss@GRAD"])
def log_loss_grad(ctx, ins, attrs):
    p, y, d = ins["Predicted"], ins["Labels"], ins["Loss@GRAD"]
    eps = attrs["epsilon"]
    return {"Predicted@GRAD": (d * (-y / (p + eps) + (1 - y) / (1 - p + eps))).astype(p.dtype, copy=False)}
