"""Losses over large label sets: ``nce`` (noise-contrastive estimation), ``hierarchical_sigmoid``
(over a binary tree of classes, the default one or a custom one) and ``sample_logits`` (the sampling
half of ``sampled_softmax_with_cross_entropy``), with gradients.

Negative classes are drawn from NumPy's generator seeded by the op's ``seed`` attr (fresh entropy
when 0), so runs with a seed repeat (``nce``: the seed alone decides its draws, as in Paddle: an
``nce`` of another program, or a sparse one, with the seed draws the same), but the draws differ
from Paddle's; ``nce``'s
``custom_neg_classes`` and ``sample_logits``' customised samples give fixed negatives.
"""
import numpy as np

from ..core.tensor import SelectedRows, scatter_add
from ..framework.registry import register_grad, register_op
from .math import stable_sigmoid

_HOST = "draws its samples with NumPy's generator and walks label paths in Python, on the host"

_UNIFORM, _LOG_UNIFORM, _CUSTOM = 0, 1, 2


def _log_uniform_prob(k, n):
    """P(k) = log((k + 2) / (k + 1)) / log(n): Paddle's log-uniform sampler over n classes draws
    from [0, n - 1) (its range is n - 1), so the last class is never a negative."""
    k = np.asarray(k, dtype=np.float64)
    return (np.log(k + 2.0) - np.log(k + 1.0)) / np.log(float(n))


def _draw(rng, sampler, n, size, custom=None):
    """``size`` classes in [0, n) from the sampler (uniform, log-uniform, or custom probabilities)."""
    if sampler == _UNIFORM:
        return rng.randint(0, n, size=size)
    if sampler == _LOG_UNIFORM:
        v = np.floor(np.exp(rng.uniform(0.0, np.log(float(n)), size=size))).astype(np.int64) - 1
        return np.clip(v, 0, max(n - 2, 0))
    p = np.asarray(custom, dtype=np.float64)
    return rng.choice(n, size=size, p=p / p.sum())


def _prob(sampler, k, n, custom=None):
    if sampler == _UNIFORM:
        return np.full(np.shape(k), 1.0 / n)
    if sampler == _LOG_UNIFORM:
        return _log_uniform_prob(k, n)
    return np.asarray(custom, dtype=np.float64)[np.asarray(k)]


def _table_grads(xp, w, bias, rows, dw_rows, db_rows, sparse):
    """(dW, dBias) of a table read at ``rows``: row-sparse (SelectedRows, repeated rows kept) when
    ``sparse``, else dense with the rows added up; dBias is None without a bias."""
    dw = SelectedRows(rows, dw_rows, w.shape[0]) if sparse else \
        scatter_add(xp, xp.zeros(w.shape, dtype=w.dtype), rows, dw_rows)
    db = None
    if bias is not None:
        db = scatter_add(xp, xp.zeros(bias.size, dtype=bias.dtype), rows, db_rows).reshape(bias.shape)
    return dw, db


# ------------------------------------------------------------------ nce
_NCE_ATTRS = {"num_total_classes": 1, "num_neg_samples": 10, "sampler": 0, "seed": 0, "is_sparse": False,
              "remote_prefetch": False, "trainer_id": 0, "height_sections": [], "epmap": [], "table_names": [],
              "custom_neg_classes": []}


def _nce_infer(ctx):
    xs, ls = ctx.input_shape("Input"), ctx.input_shape("Label")
    if xs is None or ls is None:
        return
    n_true = ls[1] if len(ls) > 1 else 1
    neg = len(ctx.attr("custom_neg_classes") or []) or ctx.attr("num_neg_samples")
    ctx.set_output("Cost", (xs[0], 1), ctx.input_dtype("Input"))
    ctx.set_output("SampleLogits", (xs[0], n_true + neg), ctx.input_dtype("Input"))
    ctx.set_output("SampleLabels", (xs[0], n_true + neg), "int64")


def _nce_samples(ctx, ins, attrs, n_rows, n_true):
    labels = np.asarray(ins["Label"]).reshape(n_rows, -1).astype(np.int64)
    total = int(attrs["num_total_classes"])
    if labels.size and (labels.min() < 0 or labels.max() >= total):
        raise ValueError("op 'nce': a label in Label %r is out of range for num_total_classes=%d"
                         % (ctx.op.inputs["Label"][0], total))
    custom_neg = [int(c) for c in attrs["custom_neg_classes"] or []]
    sampler = int(attrs["sampler"])
    dist = None
    if sampler == _CUSTOM:
        if ins.get("CustomDistProbs") is None:
            raise ValueError("op 'nce': sampler 2 (custom_dist) needs the CustomDistProbs input")
        dist = np.asarray(ins["CustomDistProbs"]).reshape(-1)
    if custom_neg:
        neg = np.tile(np.asarray(custom_neg, dtype=np.int64), (n_rows, 1))
    else:
        rng = ctx.rng(attrs["seed"], salt="nce")
        neg = _draw(rng, sampler, total, (n_rows, int(attrs["num_neg_samples"])), dist)
    samples = np.concatenate([labels, neg], axis=1)
    b = (samples.shape[1] - n_true) * _prob(sampler, samples, total, dist)
    return samples, b


def _nce_logits(xp, x, w, bias, samples):
    s = xp.asarray(samples)
    z = (x[:, None, :] * w[s]).sum(axis=2)
    if bias is not None:
        z = z + bias.reshape(-1)[s]
    return z


@register_op("nce", host=_HOST, inputs=["Input", "Label", "Weight", "Bias?", "SampleWeight?", "CustomDistProbs?",
                            "CustomDistAlias?", "CustomDistAliasProbs?"],
             outputs=["Cost", "SampleLogits", "SampleLabels"], attrs=_NCE_ATTRS, infer=_nce_infer,
             no_grad=("Label", "SampleWeight", "CustomDistProbs", "CustomDistAlias", "CustomDistAliasProbs"))
def nce(ctx, ins, attrs):
    """Per row, the true classes (Label's columns) and the negatives are scored ``o =
    sigmoid(Input . Weight[c] + Bias[c])`` (SampleLogits); with ``b = negatives * P(c)``, Cost is
    ``-sum log(o / (o + b))`` over true classes ``- sum log(b / (o + b))`` over negatives, times
    SampleWeight."""
    xp = ctx.xp
    x = ins["Input"]
    n_rows = x.shape[0]
    label = ins["Label"]
    n_true = label.shape[1] if label.ndim > 1 else 1
    samples, b = _nce_samples(ctx, ins, attrs, n_rows, n_true)
    z = _nce_logits(xp, x, ins["Weight"], ins.get("Bias"), samples)
    o = stable_sigmoid(xp, z)
    bb = xp.asarray(b.astype(x.dtype))
    # -log(o / (o + b)) with -log(o) as softplus(-z): finite where o underflows to 0 (Paddle: inf)
    zt = -z[:, :n_true]
    cost_true = xp.maximum(zt, 0) + xp.log1p(xp.exp(-xp.abs(zt))) + xp.log(o[:, :n_true] + bb[:, :n_true])
    cost_neg = -xp.log(bb[:, n_true:] / (o[:, n_true:] + bb[:, n_true:]))
    cost = cost_true.sum(axis=1, keepdims=True) + cost_neg.sum(axis=1, keepdims=True)
    if ins.get("SampleWeight") is not None:
        cost = cost * ins["SampleWeight"].reshape(-1, 1)
    return {"Cost": cost.astype(x.dtype, copy=False), "SampleLogits": o.astype(x.dtype, copy=False),
            "SampleLabels": xp.asarray(samples)}


def _grad_infer(table_slot, slots):
    """Gradient metas: like the forward inputs; the table's is row-sparse with ``is_sparse``."""
    def infer(ctx):
        for slot in slots:
            v = ctx.input_var(slot)
            if v is not None:
                sparse = slot == table_slot and ctx.attr("is_sparse")
                ctx.set_output(slot + "@GRAD", v.shape, v.dtype, type="SELECTED_ROWS" if sparse else None)
    return infer


@register_grad("nce", inputs=["Input", "Label", "Weight", "Bias?", "SampleWeight?", "CustomDistProbs?",
                              "SampleLogits", "SampleLabels", "Cost@GRAD"],
               outputs=["Input@GRAD?", "Weight@GRAD?", "Bias@GRAD?"], infer=_grad_infer("Weight", ("Input", "Weight", "Bias")))
def nce_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, w, o = ins["Input"], ins["Weight"], ins["SampleLogits"]
    samples = np.asarray(ins["SampleLabels"]).astype(np.int64)
    label = ins["Label"]
    n_true = label.shape[1] if label.ndim > 1 else 1
    total = int(attrs["num_total_classes"])
    dist = np.asarray(ins["CustomDistProbs"]).reshape(-1) if ins.get("CustomDistProbs") is not None else None
    bb = xp.asarray(((samples.shape[1] - n_true) * _prob(int(attrs["sampler"]), samples, total, dist)).astype(x.dtype))
    d = ins["Cost@GRAD"].reshape(-1, 1)
    if ins.get("SampleWeight") is not None:
        d = d * ins["SampleWeight"].reshape(-1, 1)
    # dCost/dz: true -(1 - o) b / (o + b); negative o (1 - o) / (o + b)
    dz = xp.concatenate([-(1.0 - o[:, :n_true]) * bb[:, :n_true], o[:, n_true:] * (1.0 - o[:, n_true:])], axis=1) \
        / (o + bb)
    dz = (dz * d).astype(x.dtype, copy=False)
    s = xp.asarray(samples)
    dw, db = _table_grads(xp, w, ins.get("Bias"), s.reshape(-1), (dz[:, :, None] * x[:, None, :]).reshape(-1, x.shape[1]),
                          dz.reshape(-1), attrs["is_sparse"])
    return {"Input@GRAD": (dz[:, :, None] * w[s]).sum(axis=1), "Weight@GRAD": dw, "Bias@GRAD": db}


# ------------------------------------------------------------------ hierarchical_sigmoid
def _tree_paths(ctx, ins, attrs, n_rows):
    """(node index [N, L], bit [N, L], valid [N, L]) of each row's path from the root."""
    table = ins.get("PathTable")
    if table is not None:
        idx = np.asarray(table).reshape(n_rows, -1).astype(np.int64)
        code = np.asarray(ins["PathCode"]).reshape(n_rows, -1).astype(np.int64)
        valid = np.cumprod(idx >= 0, axis=1).astype(bool)
        return np.where(valid, idx, 0), np.where(valid, code, 0), valid
    classes = int(attrs["num_classes"])
    label = np.asarray(ins["Label"]).reshape(-1).astype(np.int64)
    if label.size and (label.min() < 0 or label.max() >= classes):
        raise ValueError("op 'hierarchical_sigmoid': a label in Label %r is out of range for num_classes=%d"
                         % (ctx.op.inputs["Label"][0], classes))
    width = int(classes - 1).bit_length()
    c = label + classes                              # the default tree's code of each class
    bits = np.arange(width)
    length = np.array([int(v).bit_length() - 1 for v in c])
    valid = bits[None, :] < length[:, None]
    idx = (c[:, None] >> (bits[None, :] + 1)) - 1
    code = (c[:, None] >> bits[None, :]) & 1
    return np.where(valid, idx, 0), np.where(valid, code, 0), valid


def _hs_infer(ctx):
    xs = ctx.input_shape("X")
    if xs is None:
        return
    ctx.set_output("Out", (xs[0], 1), ctx.input_dtype("X"))
    ts = ctx.input_shape("PathTable")
    width = ts[1] if ts is not None else int(ctx.attr("num_classes") - 1).bit_length()
    ctx.set_output("PreOut", (xs[0], width), ctx.input_dtype("X"))
    w = ctx.input_var("W")
    if w is not None:
        ctx.set_output("W_Out", w.shape, w.dtype)


_HS_ATTRS = {"num_classes": 2, "remote_prefetch": False, "trainer_id": 0, "height_sections": [], "epmap": [],
             "table_names": [], "is_sparse": False}


@register_op("hierarchical_sigmoid", host=_HOST, inputs=["X", "W", "Label", "PathTable?", "PathCode?", "Bias?"],
             outputs=["Out", "PreOut", "W_Out?"], attrs=_HS_ATTRS, infer=_hs_infer,
             no_grad=("Label", "PathTable", "PathCode"))
def hierarchical_sigmoid(ctx, ins, attrs):
    """Along each row's path, ``z = clip(W[node] . X + Bias[node], -40, 40)`` and Out is
    ``sum softplus(z) - sum(z where the path goes right)``. As in Paddle, PreOut holds softplus(z) on
    the path and softplus(0) = log 2 on the unused tail of each row, which the sum also counts."""
    xp = ctx.xp
    x, w = ins["X"], ins["W"]
    idx, code, valid = _tree_paths(ctx, ins, attrs, x.shape[0])
    gi = xp.asarray(idx)
    z = (x[:, None, :] * w[gi]).sum(axis=2)
    if ins.get("Bias") is not None:
        z = z + ins["Bias"].reshape(-1)[gi]
    vmask = xp.asarray(valid.astype(x.dtype))
    z = xp.clip(z * vmask, -40.0, 40.0)
    pre = xp.log1p(xp.exp(z))
    out = pre.sum(axis=1, keepdims=True) - (z * xp.asarray(code.astype(x.dtype)) * vmask).sum(axis=1, keepdims=True)
    return {"Out": out.astype(x.dtype, copy=False), "PreOut": pre.astype(x.dtype, copy=False)}


@register_grad("hierarchical_sigmoid", inputs=["X", "W", "Label", "PathTable?", "PathCode?", "Bias?", "PreOut",
                                               "Out@GRAD"],
               outputs=["X@GRAD?", "W@GRAD?", "Bias@GRAD?"], infer=_grad_infer("W", ("X", "W", "Bias")))
def hierarchical_sigmoid_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, w, pre = ins["X"], ins["W"], ins["PreOut"]
    idx, code, valid = _tree_paths(ctx, ins, attrs, x.shape[0])
    sig = 1.0 - xp.exp(-pre)                          # sigmoid(z) recovered from softplus(z)
    dz = (sig - xp.asarray(code.astype(x.dtype))) * xp.asarray(valid.astype(x.dtype)) * ins["Out@GRAD"].reshape(-1, 1)
    gi, on_path = xp.asarray(idx), xp.asarray(valid)
    dw, db = _table_grads(xp, w, ins.get("Bias"), gi[on_path], (dz[:, :, None] * x[:, None, :])[on_path], dz[on_path],
                          attrs["is_sparse"])
    return {"X@GRAD": (dz[:, :, None] * w[gi]).sum(axis=1).astype(x.dtype, copy=False), "W@GRAD": dw,
            "Bias@GRAD": db}


# ------------------------------------------------------------------ sample_logits
_SL_ATTRS = {"use_customized_samples": False, "uniq": True, "remove_accidental_hits": True, "num_samples": 1,
             "seed": 0}


def _sl_infer(ctx):
    ls, ys = ctx.input_shape("Logits"), ctx.input_shape("Labels")
    if ls is None or ys is None:
        return
    width = ys[1] + ctx.attr("num_samples")
    ctx.set_output("Samples", (ls[0], width), "int64")
    ctx.set_output("Probabilities", (ls[0], width), ctx.input_dtype("Logits"))
    ctx.set_output("SampledLogits", (ls[0], width), ctx.input_dtype("Logits"))
    ctx.set_output("SampledLabels", (ys[0], ys[1]), "int64")
    ctx.set_output("LogitsDim", (2,), "int64")
    ctx.set_output("LabelsDim", (2,), "int64")


def _unique_log_uniform(rng, n, count):
    """``count`` distinct classes drawn log-uniformly, and how many draws it took."""
    picked, seen, tries = [], set(), 0
    while len(picked) < count:
        tries += 1
        k = int(_draw(rng, _LOG_UNIFORM, n, 1)[0])
        if k not in seen:
            seen.add(k)
            picked.append(k)
    return np.asarray(picked, dtype=np.int64), tries


@register_op("sample_logits", host=_HOST, inputs=["Logits", "Labels", "CustomizedSamples?", "CustomizedProbabilities?"],
             outputs=["Samples", "Probabilities", "LogitsDim", "LabelsDim", "SampledLogits", "SampledLabels"],
             attrs=_SL_ATTRS, infer=_sl_infer, no_grad=("Labels", "CustomizedSamples", "CustomizedProbabilities"))
def sample_logits(ctx, ins, attrs):
    """Samples: per row the true labels, then ``num_samples`` classes drawn log-uniformly without
    repetition (shared by the batch) or the customised ones; Probabilities their sampling
    probabilities (``1 - (1 - p)^draws`` for unique draws). SampledLogits = Logits at Samples minus
    log(Probabilities), with negatives equal to a true label of their row pushed down by 1e20 when
    ``remove_accidental_hits``; SampledLabels = 0 .. num_true - 1."""
    xp = ctx.xp
    logits = ins["Logits"]
    n, k = logits.shape
    labels = np.asarray(ins["Labels"]).reshape(n, -1).astype(np.int64)
    n_true = labels.shape[1]
    if attrs["use_customized_samples"]:
        samples = np.asarray(ins["CustomizedSamples"]).astype(np.int64)
        probs = np.asarray(ins["CustomizedProbabilities"]).astype(np.float64)
    else:
        num = int(attrs["num_samples"])
        if num > k:
            raise ValueError("op 'sample_logits': num_samples=%d exceeds the %d classes of Logits %r"
                             % (num, k, ctx.op.inputs["Logits"][0]))
        rng = ctx.rng(attrs["seed"], salt=ctx.op.outputs["SampledLogits"][0])
        neg, tries = _unique_log_uniform(rng, k, num)
        samples = np.concatenate([labels, np.tile(neg, (n, 1))], axis=1)
        probs = -np.expm1(tries * np.log1p(-_log_uniform_prob(samples, k)))
    picked = np.take_along_axis(np.asarray(logits).astype(np.float64), samples, axis=1) - np.log(probs)
    if attrs["remove_accidental_hits"]:
        hits = (samples[:, n_true:, None] == labels[:, None, :]).any(axis=2)
        picked[:, n_true:] -= np.where(hits, 1e20, 0.0)
    dt = logits.dtype
    return {"Samples": xp.asarray(samples), "Probabilities": xp.asarray(probs.astype(dt)),
            "SampledLogits": xp.asarray(picked.astype(dt)),
            "SampledLabels": xp.asarray(np.tile(np.arange(n_true, dtype=np.int64), (n, 1))),
            "LogitsDim": xp.asarray(np.array(logits.shape, dtype=np.int64)),
            "LabelsDim": xp.asarray(np.array(labels.shape, dtype=np.int64))}


@register_grad("sample_logits", inputs=["LogitsDim", "Samples", "SampledLogits@GRAD"], outputs=["Logits@GRAD?"])
def sample_logits_grad(ctx, ins, attrs):
    xp = ctx.xp
    shape = tuple(int(v) for v in np.asarray(ins["LogitsDim"]))
    samples = xp.asarray(ins["Samples"])
    d = ins["SampledLogits@GRAD"]
    out = xp.zeros(shape, dtype=d.dtype)
    rows = xp.broadcast_to(xp.arange(shape[0])[:, None], samples.shape)
    scatter_add(xp, out, (rows.reshape(-1), samples.reshape(-1)), d.reshape(-1))
    return {"Logits@GRAD": out}
