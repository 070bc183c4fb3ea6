"""Metric ops: ``top_k``, ``accuracy`` (over top-k indices, as Paddle 1.x computes it), ``arg_max`` and
``arg_min``."""
import numpy as np

from ..framework.registry import register_grad, register_op

_HOST = "sorts predictions into stat buckets in Python (Paddle's kernel is CPU-only too)"


# ------------------------------------------------------------------ top_k
def _top_k_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    k = ctx.attr("k")
    if ctx.has_input("K"):
        k = -1  # only known at run time
    elif xs[-1] >= 0 and not 1 <= k <= xs[-1]:
        raise ValueError("k = %d must be in [1, %d] (the last dimension of X %r)" % (k, xs[-1], ctx.op.inputs["X"][0]))
    out = tuple(xs[:-1]) + (k,)
    ctx.set_output("Out", out, ctx.input_dtype("X"), ctx.input_lod_level("X"))
    ctx.set_output("Indices", out, "int64", ctx.input_lod_level("X"))


def _rows(xp, n):
    return xp.arange(n)[:, None]


@register_op("top_k", inputs=["X", "K?"], outputs=["Out", "Indices"], attrs={"k": 1}, infer=_top_k_infer,
             no_grad=("K",))
def top_k(ctx, ins, attrs):
    """The ``k`` largest values along the last axis, largest first (ties: the lower index first); Out
    and Indices keep X's LoD."""
    xp = ctx.xp
    x = ins["X"]
    k = int(ins["K"].reshape(-1)[0]) if ins.get("K") is not None else int(attrs["k"])
    d = x.shape[-1]
    if not 1 <= k <= d:
        raise ValueError("op 'top_k': k = %d must be in [1, %d] (the last dimension of X %r)"
                         % (k, d, ctx.op.inputs["X"][0]))
    x2 = x.reshape(-1, d)
    order = np.argsort(-x2, axis=1, kind="stable") if xp is np else xp.argsort(-x2, axis=1)
    idx = order[:, :k]
    out = x2[_rows(xp, x2.shape[0]), idx]
    shape = tuple(x.shape[:-1]) + (k,)
    lod = ctx.lod("X") or []
    ctx.set_lod("Out", lod)
    ctx.set_lod("Indices", lod)
    return {"Out": out.reshape(shape), "Indices": idx.astype(np.int64).reshape(shape)}


@register_grad("top_k", inputs=["X", "Indices", "Out@GRAD"])
def top_k_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, idx, d = ins["X"], ins["Indices"], ins["Out@GRAD"]
    width = x.shape[-1]
    k = idx.shape[-1]
    dx = xp.zeros((int(np.prod(x.shape[:-1])), width), dtype=d.dtype)
    dx[_rows(xp, dx.shape[0]), idx.reshape(-1, k)] = d.reshape(-1, k)
    return {"X@GRAD": dx.reshape(x.shape)}


# ------------------------------------------------------------------ accuracy
def _accuracy_infer(ctx):
    ctx.set_output("Accuracy", (1,), "float32")
    ctx.set_output("Correct", (1,), "int32")
    ctx.set_output("Total", (1,), "int32")


@register_op("accuracy", inputs=["Out", "Indices", "Label"], outputs=["Accuracy", "Correct", "Total"],
             infer=_accuracy_infer)
def accuracy(ctx, ins, attrs):
    """A row is correct when its label is among its top-k ``Indices``; Accuracy = Correct / Total
    (0 for an empty batch)."""
    xp = ctx.xp
    idx, label = ins["Indices"], ins["Label"]
    n = idx.shape[0]
    if label.shape[0] != n or label.size != n:
        raise ValueError("op 'accuracy': Label %r has shape %s but Indices %r has %d rows; Label must be [%d, 1]"
                         % (ctx.op.inputs["Label"][0], list(label.shape), ctx.op.inputs["Indices"][0], n, n))
    hit = (idx.reshape(n, -1) == label.reshape(n, 1).astype(idx.dtype)).any(axis=1)
    correct = hit.sum().astype(np.int32).reshape(1)
    total = xp.full((1,), n, dtype=np.int32)
    acc = (correct.astype(np.float32) / np.float32(max(n, 1))).astype(np.float32)
    return {"Accuracy": acc, "Correct": correct, "Total": total}


# ------------------------------------------------------------------ arg_max / arg_min
_ARG_ATTRS = {"axis": -1, "keepdims": False, "flatten": False}


def _arg_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    if ctx.attr("flatten"):
        out = (1,)
    else:
        axis = ctx.attr("axis")
        if not -len(xs) <= axis < len(xs):
            raise ValueError("axis %d is out of range for X %r of rank %d" % (axis, ctx.op.inputs["X"][0], len(xs)))
        axis %= len(xs)
        out = tuple(1 if i == axis else d for i, d in enumerate(xs)) if ctx.attr("keepdims") else \
            tuple(d for i, d in enumerate(xs) if i != axis) or (1,)
    ctx.set_output("Out", out, "int64")


def _arg_kernel(fn):
    def kernel(ctx, ins, attrs):
        x = ins["X"]
        if attrs["flatten"]:
            return {"Out": getattr(x.reshape(-1), fn)().astype(np.int64).reshape(1)}
        axis = attrs["axis"]
        if not -x.ndim <= axis < x.ndim:
            raise ValueError("op %r: axis %d is out of range for X %r of rank %d"
                             % (ctx.op.type, axis, ctx.op.inputs["X"][0], x.ndim))
        out = getattr(x, fn)(axis=axis).astype(np.int64)
        if attrs["keepdims"]:
            out = ctx.xp.expand_dims(out, axis % x.ndim)
        elif out.ndim == 0:
            out = out.reshape(1)
        return {"Out": out}
    return kernel


register_op("arg_max", inputs=["X"], outputs=["Out"], attrs=_ARG_ATTRS, infer=_arg_infer)(_arg_kernel("argmax"))
register_op("arg_min", inputs=["X"], outputs=["Out"], attrs=_ARG_ATTRS, infer=_arg_infer)(_arg_kernel("argmin"))


# ------------------------------------------------------------------ auc
def _auc_infer(ctx):
    ctx.set_output("AUC", (1,), "float64")
    for slot in ("StatPos", "StatNeg"):
        v = ctx.input_var(slot)
        if v is not None:
            ctx.set_output(slot + "Out", v.shape, v.dtype)


def _auc_area(pos, neg):
    """Area under the ROC curve from per-bucket counts (trapezoids from the highest bucket down),
    0 when either class is missing."""
    pos = np.asarray(pos, dtype=np.float64)[::-1]
    neg = np.asarray(neg, dtype=np.float64)[::-1]
    tp, fp = np.cumsum(pos), np.cumsum(neg)
    tot_pos, tot_neg = tp[-1] if tp.size else 0.0, fp[-1] if fp.size else 0.0
    if tot_pos <= 0 or tot_neg <= 0:
        return 0.0
    tp_prev = np.concatenate([[0.0], tp[:-1]])
    fp_prev = np.concatenate([[0.0], fp[:-1]])
    return float((np.abs(fp - fp_prev) * (tp + tp_prev) / 2.0).sum() / tot_pos / tot_neg)


@register_op("auc", host=_HOST, inputs=["Predict", "Label", "StatPos", "StatNeg"], outputs=["AUC", "StatPosOut", "StatNegOut"],
             attrs={"curve": "ROC", "num_thresholds": (2 ** 12) - 1, "slide_steps": 1}, infer=_auc_infer)
def auc(ctx, ins, attrs):
    """ROC AUC over bucketed counts that persist across runs. Each sample lands in bucket
    ``int(p * num_thresholds)`` of the positive or negative counts, p the last column of Predict.
    ``slide_steps = 0``: StatPos / StatNeg ([1, buckets]) accumulate every batch seen. Otherwise they
    hold ``slide_steps`` per-batch rows in a ring, then their sum, then the step counter, and AUC is
    over the last ``slide_steps`` batches. StatPosOut / StatNegOut are the updated counts."""
    xp = ctx.xp
    if attrs["curve"] != "ROC":
        raise ValueError("op 'auc': only curve='ROC' is supported, got %r" % attrs["curve"])
    thresholds = int(attrs["num_thresholds"])
    buckets = thresholds + 1
    steps = int(attrs["slide_steps"])
    predict = np.asarray(ins["Predict"])
    label = np.asarray(ins["Label"]).reshape(-1)
    p = predict.reshape(predict.shape[0], -1)[:, -1]
    if p.shape[0] != label.shape[0]:
        raise ValueError("op 'auc': Predict %r has %d rows but Label %r has %d"
                         % (ctx.op.inputs["Predict"][0], p.shape[0], ctx.op.inputs["Label"][0], label.shape[0]))
    idx = (p * thresholds).astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() > thresholds):
        raise ValueError("op 'auc': predictions of Predict %r must lie in [0, 1]" % ctx.op.inputs["Predict"][0])
    batch_pos = np.bincount(idx[label != 0], minlength=buckets)
    batch_neg = np.bincount(idx[label == 0], minlength=buckets)
    pos = np.array(ins["StatPos"], dtype=np.int64).reshape(-1)
    neg = np.array(ins["StatNeg"], dtype=np.int64).reshape(-1)
    # slide_steps = 0 uses the first `buckets` entries (the layer's batch buckets have one more)
    want = (buckets, buckets + 1) if steps == 0 else ((steps + 1) * buckets + 1,)
    for slot, stat in (("StatPos", pos), ("StatNeg", neg)):
        if stat.size not in want:
            raise ValueError("op 'auc': %s %r has %d entries; num_thresholds=%d and slide_steps=%d need %d"
                             % (slot, ctx.op.inputs[slot][0], stat.size, thresholds, steps, want[0]))
    if steps == 0:
        pos[:buckets] += batch_pos
        neg[:buckets] += batch_neg
        area = _auc_area(pos[:buckets], neg[:buckets])
    else:
        total = slice(steps * buckets, (steps + 1) * buckets)
        for stat, batch in ((pos, batch_pos), (neg, batch_neg)):
            cur = int(stat[-1]) % steps
            row = slice(cur * buckets, (cur + 1) * buckets)
            stat[total] += batch - stat[row]
            stat[row] = batch
            stat[-1] += 1
        area = _auc_area(pos[total], neg[total])
    shape_pos = tuple(ins["StatPos"].shape)
    return {"AUC": xp.asarray(np.array([area], dtype=np.float64)),
            "StatPosOut": xp.asarray(pos.reshape(shape_pos)), "StatNegOut": xp.asarray(neg.reshape(shape_pos))}


# ------------------------------------------------------------------ positive_negative_pair
def _pn_infer(ctx):
    for slot in ("PositivePair", "NegativePair", "NeutralPair"):
        ctx.set_output(slot, (1,), ctx.input_dtype("Score"))


@register_op("positive_negative_pair", host="pairwise counting over the items of each query, on the host",
             inputs=["Score", "Label", "QueryID", "AccumulatePositivePair?", "AccumulateNegativePair?",
                     "AccumulateNeutralPair?", "Weight?"],
             outputs=["PositivePair", "NegativePair", "NeutralPair?"], attrs={"column": 0}, infer=_pn_infer)
def positive_negative_pair(ctx, ins, attrs):
    """Over the pairs of items of one query with different labels: the weight (the mean of the two
    items' weights) of pairs that the score ``column`` orders as the labels do (positive), the other
    way (negative), or ties (neutral); added to the Accumulate* inputs when given."""
    score = np.asarray(ins["Score"])
    col = attrs["column"] % score.shape[1] if score.ndim > 1 else 0
    s = score[:, col] if score.ndim > 1 else score
    lab = np.asarray(ins["Label"]).reshape(-1)
    q = np.asarray(ins["QueryID"]).reshape(-1)
    w = np.ones(s.shape) if ins.get("Weight") is None else np.asarray(ins["Weight"]).reshape(-1)
    same_q = (q[:, None] == q[None, :]) & np.triu(np.ones((len(q), len(q)), dtype=bool), 1)
    pair = same_q & (lab[:, None] != lab[None, :])
    pw = (w[:, None] + w[None, :]) * 0.5
    order = (s[:, None] - s[None, :]) * (lab[:, None] - lab[None, :])
    tie = s[:, None] == s[None, :]
    dtype = score.dtype
    res = {}
    for slot, acc, mask in (("PositivePair", "AccumulatePositivePair", pair & ~tie & (order > 0)),
                            ("NegativePair", "AccumulateNegativePair", pair & ~tie & (order <= 0)),
                            ("NeutralPair", "AccumulateNeutralPair", pair & tie)):
        total = float(pw[mask].astype(np.float32).sum())
        if ins.get(acc) is not None:
            total += float(np.asarray(ins[acc]).reshape(-1)[0])
        res[slot] = np.asarray([total], dtype=dtype)
    return res
