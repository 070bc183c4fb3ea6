"""``warpctc``: the connectionist temporal classification loss (what Paddle runs through Baidu's
warp-ctc), computed here by the forward-backward recursion in log space on the host.

Logits are unnormalised scores over ``classes + 1`` labels (``blank`` among them): a LoD tensor
[total steps, C], or padded time-major [T, N, C] with ``LogitsLength`` [N]. Labels are a LoD int
tensor [total labels, 1], or padded [N, L] with ``LabelLength``. ``Loss`` [N, 1] is
``-log p(label | logits)``; ``WarpCTCGrad`` keeps the gradient of each loss with respect to the
logits for the backward op, which scales it by ``Loss@GRAD`` (and by 1 / steps with
``norm_by_times``, as Paddle does: the loss itself is not normalised).
"""
import numpy as np

from ..framework.registry import register_grad, register_op

_HOST = 'the CTC recursion over each sequence in Python, on the host'


def _log_softmax(z):
    m = z.max(axis=1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=1, keepdims=True))


def ctc_loss_and_grad(logits, label, blank):
    """(-log p, d(-log p)/d logits) of one sequence: logits [T, C], label a list of ints. A label that
    no alignment fits (its length plus its repeated neighbours above T) gives a loss of 0 and no
    gradient, as warp-ctc (so Paddle 1.8) reports it."""
    t_len, classes = logits.shape
    repeats = sum(1 for a, b in zip(label, label[1:]) if a == b)
    if len(label) + repeats > t_len:
        return 0.0, np.zeros((t_len, classes))
    logp = _log_softmax(logits.astype(np.float64))
    ext = np.full(2 * len(label) + 1, blank, dtype=np.int64)
    ext[1::2] = label
    s_len = len(ext)
    skip = np.zeros(s_len, dtype=bool)   # a state may be reached from two back (no blank between)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    neg = -np.inf
    alpha = np.full((t_len, s_len), neg)
    alpha[0, 0] = logp[0, ext[0]]
    if s_len > 1:
        alpha[0, 1] = logp[0, ext[1]]
    for t in range(1, t_len):
        prev = alpha[t - 1]
        a = prev.copy()
        a[1:] = np.logaddexp(a[1:], prev[:-1])
        a[2:] = np.where(skip[2:], np.logaddexp(a[2:], prev[:-2]), a[2:])
        alpha[t] = a + logp[t, ext]
    ll = alpha[-1, -1] if s_len == 1 else np.logaddexp(alpha[-1, -1], alpha[-1, -2])
    if not np.isfinite(ll):
        return np.inf, np.zeros_like(logp)
    beta = np.full((t_len, s_len), neg)   # beta[t, s]: completing from state s at t, emission at t excluded
    beta[-1, -1] = 0.0
    if s_len > 1:
        beta[-1, -2] = 0.0
    for t in range(t_len - 2, -1, -1):
        nxt = beta[t + 1] + logp[t + 1, ext]
        b = nxt.copy()
        b[:-1] = np.logaddexp(b[:-1], nxt[1:])
        b[:-2] = np.where(skip[2:], np.logaddexp(b[:-2], nxt[2:]), b[:-2])
        beta[t] = b
    occupancy = np.zeros((t_len, classes))
    post = np.exp(alpha + beta - ll)
    for s in range(s_len):
        occupancy[:, ext[s]] += post[:, s]
    return -ll, np.exp(logp) - occupancy


def _logit_spans(ctx, logits, lengths):
    if lengths is not None:
        lens = np.asarray(lengths).reshape(-1).astype(np.int64)
        return [("padded", i, int(n)) for i, n in enumerate(lens)]
    lod = ctx.lod("Logits")
    if not lod:
        raise ValueError("op 'warpctc': Logits %r has no LoD; feed it as a LoDTensor, or give LogitsLength for "
                         "padded [steps, batch, classes] logits" % ctx.op.inputs["Logits"][0])
    offsets = [int(o) for o in lod[-1]]
    return [("lod", a, b - a) for a, b in zip(offsets, offsets[1:])]


def _labels(ctx, ins):
    label = np.asarray(ins["Label"])
    if ins.get("LabelLength") is not None:
        lens = np.asarray(ins["LabelLength"]).reshape(-1).astype(np.int64)
        return [label[i, :int(n)].reshape(-1).tolist() for i, n in enumerate(lens)]
    lod = ctx.lod("Label")
    if not lod:
        raise ValueError("op 'warpctc': Label %r has no LoD; feed it as a LoDTensor, or give LabelLength"
                         % ctx.op.inputs["Label"][0])
    flat = label.reshape(-1)
    offsets = [int(o) for o in lod[-1]]
    return [flat[a:b].tolist() for a, b in zip(offsets, offsets[1:])]


def _ctc_infer(ctx):
    ls = ctx.input_shape("Logits")
    if ls is None:
        return
    ctx.set_output("Loss", (-1, 1), ctx.input_dtype("Logits"))
    ctx.set_output("WarpCTCGrad", ls, ctx.input_dtype("Logits"))


@register_op("warpctc", host=_HOST, inputs=["Logits", "Label", "LogitsLength?", "LabelLength?"], outputs=["WarpCTCGrad", "Loss"],
             attrs={"blank": 0, "norm_by_times": False}, infer=_ctc_infer,
             no_grad=("Label", "LogitsLength", "LabelLength"))
def warpctc(ctx, ins, attrs):
    xp = ctx.xp
    logits = np.asarray(ins["Logits"])
    blank = int(attrs["blank"])
    classes = logits.shape[-1]
    if not 0 <= blank < classes:
        raise ValueError("op 'warpctc': blank %d is out of range for %d classes" % (blank, classes))
    spans = _logit_spans(ctx, logits, ins.get("LogitsLength"))
    labels = _labels(ctx, ins)
    if len(labels) != len(spans):
        raise ValueError("op 'warpctc': Logits %r has %d sequences but Label %r has %d"
                         % (ctx.op.inputs["Logits"][0], len(spans), ctx.op.inputs["Label"][0], len(labels)))
    loss = np.zeros((len(spans), 1))
    grad = np.zeros(logits.shape)
    for i, ((kind, where, steps), lab) in enumerate(zip(spans, labels)):
        if any(not 0 <= v < classes or v == blank for v in lab):
            raise ValueError("op 'warpctc': sequence %d of Label %r holds a label outside [0, %d) or the blank %d"
                             % (i, ctx.op.inputs["Label"][0], classes, blank))
        if steps == 0:
            continue
        seq = logits[where:where + steps] if kind == "lod" else logits[:steps, where]
        loss[i, 0], g = ctc_loss_and_grad(seq, lab, blank)
        if kind == "lod":
            grad[where:where + steps] = g
        else:
            grad[:steps, where] = g
    dt = logits.dtype
    return {"Loss": xp.asarray(loss.astype(dt)), "WarpCTCGrad": xp.asarray(grad.astype(dt))}


@register_grad("warpctc", inputs=["Logits", "LogitsLength?", "WarpCTCGrad", "Loss@GRAD"], outputs=["Logits@GRAD?"])
def warpctc_grad(ctx, ins, attrs):
    xp = ctx.xp
    g = ins["WarpCTCGrad"]
    d = np.asarray(ins["Loss@GRAD"]).reshape(-1)
    spans = _logit_spans(ctx, g, ins.get("LogitsLength"))
    scale = np.zeros(len(spans))
    for i, (_, _, steps) in enumerate(spans):
        scale[i] = d[i] / steps if attrs["norm_by_times"] and steps else d[i]
    if spans and spans[0][0] == "padded":
        out = g * xp.asarray(scale.astype(g.dtype)).reshape(1, -1, 1)
    else:
        rows = np.repeat(scale, [steps for _, _, steps in spans])
        out = g * xp.asarray(rows.astype(g.dtype)).reshape(-1, 1)
        ctx.set_lod("Logits@GRAD", ctx.lod("Logits"))
    return {"Logits@GRAD": out}

