"""Paddle's small first-generation ops that fluid 1.x programs still hold: ``l1_norm``, ``minus``,
``hinge_loss``, ``modified_huber_loss``, ``squared_l2_distance``, ``conv_shift``, ``fill_zeros_like2``,
``seed``, ``shuffle_batch`` and ``precision_recall``, each with its gradient where Paddle 1.8 has one."""
import numpy as np

from ..framework.registry import register_grad, register_op, same_shape
from .sequence import _mask_dtype


def _check_rows(ctx, a, b, sa, sb):
    if a.shape[0] != b.shape[0]:
        raise ValueError("op %r: %s %r has %d rows but %s %r has %d; they must match"
                         % (ctx.op.type, sa, ctx.op.inputs[sa][0], a.shape[0], sb, ctx.op.inputs[sb][0], b.shape[0]))


# ------------------------------------------------------------------ l1_norm / minus
def _one_value_infer(ctx):
    ctx.set_output("Out", (1,), ctx.input_dtype("X"))


@register_op("l1_norm", inputs=["X"], outputs=["Out"], infer=_one_value_infer)
def l1_norm(ctx, ins, attrs):
    """``sum(|X|)`` over every element: shape [1]."""
    x = ins["X"]
    return {"Out": ctx.xp.abs(x).sum().reshape(1).astype(x.dtype, copy=False)}


@register_grad("l1_norm", inputs=["X", "Out@GRAD"])
def l1_norm_grad(ctx, ins, attrs):
    x = ins["X"]
    return {"X@GRAD": (ctx.xp.sign(x) * ins["Out@GRAD"].reshape(())).astype(x.dtype, copy=False)}


def _minus_grad_maker(op):
    """As Paddle: the gradients are ``scale`` ops of dOut (by 1 for X, by -1 for Y)."""
    d = op.outputs["Out"][0] + "@GRAD"
    return [{"type": "scale", "inputs": {"X": [d]}, "outputs": {"Out": [op.inputs[slot][0] + "@GRAD"]},
             "attrs": {"scale": factor, "bias": 0.0, "bias_after_scale": True}}
            for slot, factor in (("X", 1.0), ("Y", -1.0))]


@register_op("minus", inputs=["X", "Y"], outputs=["Out"], infer=same_shape(), grad=_minus_grad_maker)
def minus(ctx, ins, attrs):
    """``X - Y`` of two tensors of one shape (no broadcasting: ``elementwise_sub`` broadcasts)."""
    x, y = ins["X"], ins["Y"]
    if x.shape != y.shape:
        raise ValueError("op 'minus': X %r has shape %s but Y %r has shape %s; they must match"
                         % (ctx.op.inputs["X"][0], list(x.shape), ctx.op.inputs["Y"][0], list(y.shape)))
    return {"Out": x - y}


# ------------------------------------------------------------------ hinge_loss / modified_huber_loss
@register_op("hinge_loss", inputs=["Logits", "Labels"], outputs=["Loss"], infer=same_shape("Logits", "Loss"),
             no_grad=("Labels",))
def hinge_loss(ctx, ins, attrs):
    """``max(0, 1 - (2 * label - 1) * logit)`` per element (labels are 0 or 1)."""
    x, y = ins["Logits"], ins["Labels"]
    _check_rows(ctx, x, y, "Logits", "Labels")
    return {"Loss": ctx.xp.maximum(1 - (2 * y - 1) * x, 0).astype(x.dtype, copy=False)}


@register_grad("hinge_loss", inputs=["Logits", "Labels", "Loss@GRAD"])
def hinge_loss_grad(ctx, ins, attrs):
    x, y, d = ins["Logits"], ins["Labels"], ins["Loss@GRAD"]
    sign = 2 * y - 1
    return {"Logits@GRAD": (-sign * d * (1 - sign * x > 0)).astype(x.dtype, copy=False)}


def _mhl_infer(ctx):
    ctx.share("IntermediateVal", "X")
    ctx.share("Out", "X")


@register_op("modified_huber_loss", inputs=["X", "Y"], outputs=["IntermediateVal", "Out"], infer=_mhl_infer,
             no_grad=("Y",))
def modified_huber_loss(ctx, ins, attrs):
    """``v = X * (2Y - 1)``; loss ``-4v`` when ``v < -1``, ``(1 - v)^2`` when ``v < 1``, else 0."""
    xp = ctx.xp
    x, y = ins["X"], ins["Y"]
    _check_rows(ctx, x, y, "X", "Y")
    v = x * (2 * y - 1)
    out = xp.where(v < -1, -4 * v, xp.where(v < 1, (1 - v) * (1 - v), 0))
    return {"IntermediateVal": v.astype(x.dtype, copy=False), "Out": out.astype(x.dtype, copy=False)}


@register_grad("modified_huber_loss", inputs=["Y", "IntermediateVal", "Out@GRAD"], outputs=["X@GRAD"])
def modified_huber_loss_grad(ctx, ins, attrs):
    xp = ctx.xp
    y, v, d = ins["Y"], ins["IntermediateVal"], ins["Out@GRAD"]
    sign = 2 * y - 1
    g = xp.where(v < -1, -4 * sign, xp.where(v < 1, -2 * (1 - v) * sign, 0))
    return {"X@GRAD": (g * d).astype(v.dtype, copy=False)}


# ------------------------------------------------------------------ squared_l2_distance
def _sl2_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    width = -1 if any(d < 0 for d in xs[1:]) else int(np.prod(xs[1:], dtype=np.int64))
    ctx.set_output("sub_result", (xs[0], width), ctx.input_dtype("X"))
    ctx.set_output("Out", (xs[0], 1), ctx.input_dtype("X"))


@register_op("squared_l2_distance", inputs=["X", "Y"], outputs=["sub_result", "Out"], infer=_sl2_infer)
def squared_l2_distance(ctx, ins, attrs):
    """Per row, ``sum((X - Y)^2)`` over the flattened trailing dims: [N, 1]; Y has N rows or one
    (subtracted from every row). ``sub_result`` holds ``X - Y`` as [N, K]."""
    x, y = ins["X"], ins["Y"]
    x2, y2 = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
    if x2.shape[1] != y2.shape[1] or y2.shape[0] not in (1, x2.shape[0]):
        raise ValueError("op 'squared_l2_distance': Y %r of shape %s must have X's row width and 1 or %d rows "
                         "(X %r has shape %s)" % (ctx.op.inputs["Y"][0], list(y.shape), x.shape[0],
                                                  ctx.op.inputs["X"][0], list(x.shape)))
    sub = x2 - y2
    return {"sub_result": sub, "Out": (sub * sub).sum(axis=1, keepdims=True).astype(x.dtype, copy=False)}


@register_grad("squared_l2_distance", inputs=["X", "Y", "sub_result", "Out@GRAD"])
def squared_l2_distance_grad(ctx, ins, attrs):
    x, y, sub, d = ins["X"], ins["Y"], ins["sub_result"], ins["Out@GRAD"]
    g = 2 * sub * d.reshape(-1, 1)
    dy = -g if y.shape[0] == x.shape[0] else -g.sum(axis=0, keepdims=True)
    return {"X@GRAD": g.reshape(x.shape).astype(x.dtype, copy=False),
            "Y@GRAD": dy.reshape(y.shape).astype(y.dtype, copy=False)}


# ------------------------------------------------------------------ conv_shift
def _shift_index(m, n, sign):
    """[M, N] column indices: ``(i + sign * (j - (N - 1) // 2)) mod M``."""
    half = (n - 1) // 2
    return (np.arange(m)[:, None] + sign * (np.arange(n)[None, :] - half)) % m


@register_op("conv_shift", inputs=["X", "Y"], outputs=["Out"], infer=same_shape())
def conv_shift(ctx, ins, attrs):
    """Circular convolution of each row of X [B, M] with the same row of Y [B, N] (N odd, N <= M):
    ``Out[b, i] = sum_j X[b, (i + j - (N - 1) / 2) mod M] * Y[b, j]``."""
    x, y = ins["X"], ins["Y"]
    _check_rows(ctx, x, y, "X", "Y")
    if x.ndim != 2 or y.ndim != 2 or y.shape[1] % 2 != 1 or y.shape[1] > x.shape[1]:
        raise ValueError("op 'conv_shift': X %r and Y %r must be 2-D with Y's width odd and at most X's; got %s "
                         "and %s" % (ctx.op.inputs["X"][0], ctx.op.inputs["Y"][0], list(x.shape), list(y.shape)))
    idx = ctx.xp.asarray(_shift_index(x.shape[1], y.shape[1], 1))
    return {"Out": ctx.xp.einsum("bij,bj->bi", x[:, idx], y)}


@register_grad("conv_shift", inputs=["X", "Y", "Out@GRAD"])
def conv_shift_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, y, d = ins["X"], ins["Y"], ins["Out@GRAD"]
    m, n = x.shape[1], y.shape[1]
    fwd, back = xp.asarray(_shift_index(m, n, 1)), xp.asarray(_shift_index(m, n, -1))
    return {"X@GRAD": xp.einsum("bkj,bj->bk", d[:, back], y), "Y@GRAD": xp.einsum("bi,bij->bj", d, x[:, fwd])}


# ------------------------------------------------------------------ fill_zeros_like2 / seed / shuffle_batch
def _zeros_like2_infer(ctx):
    ctx.set_output("Out", ctx.input_shape("X"), _mask_dtype(ctx.attr("dtype")))


@register_op("fill_zeros_like2", inputs=["X"], outputs=["Out"], attrs={"dtype": "float32"}, infer=_zeros_like2_infer)
def fill_zeros_like2(ctx, ins, attrs):
    """Zeros of X's shape in the ``dtype`` attr's type."""
    return {"Out": ctx.xp.zeros(ins["X"].shape, dtype=_mask_dtype(attrs["dtype"]))}


def _seed_infer(ctx):
    ctx.set_output("Out", (1,), "int32")


@register_op("seed", outputs=["Out"], attrs={"seed": 0}, infer=_seed_infer)
def seed(ctx, ins, attrs):
    """A one-element int32 seed: the ``seed`` attr, or a random one when it is 0 (dropout's Seed)."""
    value = int(attrs["seed"]) or int(np.random.randint(1, 2 ** 31 - 1))
    return {"Out": ctx.xp.asarray([value], dtype=np.int32)}


def _shuffle_infer(ctx):
    ctx.share("Out", "X")
    ctx.set_output("ShuffleIdx", None, "int64")
    ctx.set_output("SeedOut", (1,), "int64")


@register_op("shuffle_batch", inputs=["X", "Seed"], outputs=["Out", "ShuffleIdx", "SeedOut"],
             attrs={"startup_seed": 0}, infer=_shuffle_infer, no_grad=("Seed",), host_inputs=("Seed",))
def shuffle_batch(ctx, ins, attrs):
    """The rows of X (all dims but the last flattened into rows) in a random order drawn from the
    ``Seed`` tensor (the ``startup_seed`` attr while Seed holds nothing); SeedOut is the next seed.
    ``Out[i] = X[ShuffleIdx[i]]``."""
    x = ins["X"]
    seed_in = ins.get("Seed")
    value = int(seed_in.reshape(-1)[0]) if seed_in is not None and seed_in.size else int(attrs["startup_seed"])
    rng = np.random.RandomState(value & 0x7FFFFFFF)
    rows = x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)
    idx = rng.permutation(rows.shape[0]).astype(np.int64)
    out = rows[ctx.xp.asarray(idx)].reshape(x.shape)
    return {"Out": out, "ShuffleIdx": ctx.xp.asarray(idx),
            "SeedOut": ctx.xp.asarray([rng.randint(1, 2 ** 31 - 1)], dtype=np.int64)}


@register_grad("shuffle_batch", inputs=["ShuffleIdx", "Out@GRAD"], outputs=["X@GRAD"])
def shuffle_batch_grad(ctx, ins, attrs):
    d = ins["Out@GRAD"]
    rows = d.reshape(-1, d.shape[-1])
    out = ctx.xp.empty_like(rows)
    out[ins["ShuffleIdx"]] = rows
    return {"X@GRAD": out.reshape(d.shape)}


# ------------------------------------------------------------------ precision_recall
def _pr_infer(ctx):
    dtype = ctx.input_dtype("MaxProbs")
    ctx.set_output("BatchMetrics", (6,), dtype)
    ctx.set_output("AccumMetrics", (6,), dtype)
    ctx.set_output("AccumStatesInfo", (ctx.attr("class_number"), 4), dtype)


def _pr_metrics(states):
    """[macro precision, macro recall, macro F1, micro precision, micro recall, micro F1] of
    per-class [TP, FP, TN, FN] counts (a ratio with an empty denominator is 1, an F1 of zeros 0)."""
    def ratio(a, b):
        return np.where((a > 0) | (b > 0), a / np.where(a + b > 0, a + b, 1), 1.0)

    def f1(p, r):
        return 2 * p * r / (p + r) if p > 0 or r > 0 else 0.0
    tp, fp, fn = states[:, 0], states[:, 1], states[:, 3]
    macro_p, macro_r = float(ratio(tp, fp).mean()), float(ratio(tp, fn).mean())
    micro_p, micro_r = float(ratio(tp.sum(), fp.sum())), float(ratio(tp.sum(), fn.sum()))
    return np.array([macro_p, macro_r, f1(macro_p, macro_r), micro_p, micro_r, f1(micro_p, micro_r)])


@register_op("precision_recall", inputs=["MaxProbs", "Indices", "Labels", "Weights?", "StatesInfo?"],
             outputs=["BatchMetrics", "AccumMetrics", "AccumStatesInfo"], attrs={"class_number": 0},
             infer=_pr_infer, host="per-class counting of a batch's predictions, on the host")
def precision_recall(ctx, ins, attrs):
    """Macro and micro precision / recall / F1 of predicted classes ``Indices`` against ``Labels``
    (weighted by ``Weights``), for this batch and accumulated over ``StatesInfo`` (per-class
    [TP, FP, TN, FN])."""
    k = int(attrs["class_number"])
    idx = np.asarray(ins["Indices"]).reshape(-1).astype(np.int64)
    lab = np.asarray(ins["Labels"]).reshape(-1).astype(np.int64)
    for slot, v in (("Indices", idx), ("Labels", lab)):
        if v.size and (v.min() < 0 or v.max() >= k):
            raise ValueError("op 'precision_recall': %s %r holds class %d, outside [0, class_number=%d)"
                             % (slot, ctx.op.inputs[slot][0], int(v.min() if v.min() < 0 else v.max()), k))
    w = np.ones(idx.shape) if ins.get("Weights") is None else np.asarray(ins["Weights"]).reshape(-1).astype(np.float64)
    states = np.zeros((k, 4))
    hit = idx == lab
    np.add.at(states[:, 0], idx[hit], w[hit])
    np.add.at(states[:, 1], idx[~hit], w[~hit])
    np.add.at(states[:, 3], lab[~hit], w[~hit])
    states[:, 2] = w.sum() - states[:, 0] - states[:, 1] - states[:, 3]
    dtype = ins["MaxProbs"].dtype
    accum = states + (np.asarray(ins["StatesInfo"], dtype=np.float64) if ins.get("StatesInfo") is not None else 0)
    return {"BatchMetrics": _pr_metrics(states).astype(dtype), "AccumMetrics": _pr_metrics(accum).astype(dtype),
            "AccumStatesInfo": accum.astype(dtype)}
