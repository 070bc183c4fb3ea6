"""Linear-chain CRF ops: ``linear_chain_crf`` (negative log-likelihood and its gradient by
forward-backward), ``crf_decoding`` (Viterbi) and ``chunk_eval`` (chunk precision / recall / F1).

Sequences come as the last LoD level of a [rows, ...] input, or padded [N, T, ...] with a
``Length`` ([N]) input. Transition is [D + 2, D]: row 0 holds the start weights, row 1 the end
weights, rows 2.. the weight of moving from tag i to tag j. These ops run on the host (NumPy):
their loops over time steps are short and sequential.
"""
import numpy as np

from ..framework.registry import register_grad, register_op

_HOST = "dynamic programming over each sequence in Python (Paddle's kernel is CPU-only too)"


def _sequences(ctx, slot, value, lengths):
    """[(start, end)] row ranges of each sequence of ``value`` (flattened to rows), from its LoD or
    from ``lengths`` (padded [N, T, ...] input)."""
    if lengths is not None:
        lens = np.asarray(lengths).reshape(-1).astype(np.int64)
        t = value.shape[1]
        if lens.size and (lens.min() < 0 or lens.max() > t):
            raise ValueError("op %r: Length %s does not fit %s %r padded to %d steps"
                             % (ctx.op.type, lens.tolist(), slot, ctx.op.inputs[slot][0], t))
        return [(i * t, i * t + int(n)) for i, n in enumerate(lens)], True
    lod = ctx.lod(slot)
    if not lod:
        raise ValueError("op %r: input %s %r has no LoD; feed it as a LoDTensor with sequence lengths, or give "
                         "the Length input for padded [batch, steps, ...] data" % (ctx.op.type, slot,
                                                                                   ctx.op.inputs[slot][0]))
    offsets = [int(o) for o in lod[-1]]
    return list(zip(offsets, offsets[1:])), False


def _rows(value, padded):
    a = np.asarray(value)
    if padded:
        return a.reshape(a.shape[0] * a.shape[1], -1)
    return a.reshape(a.shape[0], -1)


def _logsumexp(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _check_labels(ctx, lab, d):
    if lab.size and (lab.min() < 0 or lab.max() >= d):
        raise ValueError("op %r: a label in Label %r is out of range for %d tags" % (ctx.op.type,
                                                                                  ctx.op.inputs["Label"][0], d))


# ------------------------------------------------------------------ linear_chain_crf
def _crf_infer(ctx):
    es, ts = ctx.input_shape("Emission"), ctx.input_shape("Transition")
    if es is None or ts is None:
        return
    d = es[-1]
    if tuple(ts) != (d + 2, d):
        raise ValueError("Transition %r must be [tags + 2, tags] = [%d, %d], got %s"
                         % (ctx.op.inputs["Transition"][0], d + 2, d, list(ts)))
    dt = ctx.input_dtype("Emission")
    ctx.set_output("Alpha", es, dt)
    ctx.set_output("EmissionExps", es, dt)
    ctx.set_output("TransitionExps", ts, dt)
    n = es[0] if ctx.has_input("Length") else -1
    ctx.set_output("LogLikelihood", (n, 1), dt)


def _crf_sequence(x, w, labels):
    """(nll, log_alpha, log_beta, log_z) of one sequence: x [L, D] emissions, w [D + 2, D]."""
    start, end, trans = w[0], w[1], w[2:]
    length = x.shape[0]
    la = np.empty_like(x)
    la[0] = start + x[0]
    for k in range(1, length):
        la[k] = x[k] + _logsumexp(la[k - 1][:, None] + trans, axis=0)
    log_z = _logsumexp(la[-1] + end, axis=0)
    lb = np.empty_like(x)
    lb[-1] = end
    for k in range(length - 2, -1, -1):
        lb[k] = _logsumexp(trans + (x[k + 1] + lb[k + 1])[None, :], axis=1)
    gold = start[labels[0]] + x[np.arange(length), labels].sum() + end[labels[-1]] + \
        trans[labels[:-1], labels[1:]].sum()
    return log_z - gold, la, lb, log_z


@register_op("linear_chain_crf", host=_HOST, inputs=["Emission", "Transition", "Label", "Length?"],
             outputs=["Alpha", "EmissionExps", "TransitionExps", "LogLikelihood"], infer=_crf_infer,
             no_grad=("Label", "Length"))
def linear_chain_crf(ctx, ins, attrs):
    """Per sequence, the negative log-likelihood of the gold tag path: ``log Z - score(labels)``, with
    score = start[y0] + sum emissions + sum transitions + end[y_last]. Alpha holds the forward
    variables normalised per step, EmissionExps ``exp(x - rowmax)`` and TransitionExps ``exp(w)``."""
    xp = ctx.xp
    emission = ins["Emission"]
    dtype = emission.dtype
    spans, padded = _sequences(ctx, "Emission", emission, ins.get("Length"))
    x = _rows(emission, padded).astype(np.float64)
    w = np.asarray(ins["Transition"], dtype=np.float64)
    lab = _rows(ins["Label"], padded).reshape(-1).astype(np.int64)
    _check_labels(ctx, lab, x.shape[1])
    nll = np.zeros((len(spans), 1))
    alpha = np.zeros_like(x)
    for i, (a, b) in enumerate(spans):
        if b <= a:
            continue
        nll[i, 0], la, _, _ = _crf_sequence(x[a:b], w, lab[a:b])
        alpha[a:b] = np.exp(la - _logsumexp(la, axis=1)[:, None])
    emission_exps = np.exp(x - x.max(axis=1, keepdims=True))
    shape = emission.shape
    return {"LogLikelihood": xp.asarray(nll.astype(dtype)), "Alpha": xp.asarray(alpha.astype(dtype).reshape(shape)),
            "EmissionExps": xp.asarray(emission_exps.astype(dtype).reshape(shape)),
            "TransitionExps": xp.asarray(np.exp(w).astype(dtype))}


@register_grad("linear_chain_crf", inputs=["Emission", "Transition", "Label", "Length?", "LogLikelihood@GRAD"],
               outputs=["Emission@GRAD?", "Transition@GRAD?"])
def linear_chain_crf_grad(ctx, ins, attrs):
    """Marginals minus gold indicators, scaled by each sequence's output gradient."""
    xp = ctx.xp
    emission = ins["Emission"]
    spans, padded = _sequences(ctx, "Emission", emission, ins.get("Length"))
    x = _rows(emission, padded).astype(np.float64)
    w = np.asarray(ins["Transition"], dtype=np.float64)
    lab = _rows(ins["Label"], padded).reshape(-1).astype(np.int64)
    d_out = np.asarray(ins["LogLikelihood@GRAD"], dtype=np.float64).reshape(-1)
    dx = np.zeros_like(x)
    dw = np.zeros_like(w)
    trans = w[2:]
    for i, (a, b) in enumerate(spans):
        if b <= a:
            continue
        xs, ys, g = x[a:b], lab[a:b], d_out[i]
        _, la, lb, log_z = _crf_sequence(xs, w, ys)
        marg = np.exp(la + lb - log_z)
        gx = marg.copy()
        gx[np.arange(b - a), ys] -= 1.0
        dx[a:b] = g * gx
        dw[0] += g * marg[0]
        dw[0, ys[0]] -= g
        dw[1] += g * marg[-1]
        dw[1, ys[-1]] -= g
        if b - a > 1:
            pair = np.exp(la[:-1, :, None] + trans[None] + (xs[1:] + lb[1:])[:, None, :] - log_z).sum(axis=0)
            dw[2:] += g * pair
            np.add.at(dw[2:], (ys[:-1], ys[1:]), -g)
    dtype = emission.dtype
    if not padded and ctx.op.outputs.get("Emission@GRAD"):
        ctx.set_lod("Emission@GRAD", ctx.lod("Emission"))
    return {"Emission@GRAD": xp.asarray(dx.astype(dtype).reshape(emission.shape)),
            "Transition@GRAD": xp.asarray(dw.astype(dtype))}


# ------------------------------------------------------------------ crf_decoding
def _decoding_infer(ctx):
    es = ctx.input_shape("Emission")
    if es is None:
        return
    shape = tuple(es[:-1]) + ((1,) if not ctx.has_input("Length") else ())
    ctx.set_output("ViterbiPath", shape, "int64", ctx.input_lod_level("Emission"))


def _viterbi(x, w):
    start, end, trans = w[0], w[1], w[2:]
    length, d = x.shape
    score = start + x[0]
    back = np.zeros((length, d), dtype=np.int64)
    for k in range(1, length):
        cand = score[:, None] + trans
        back[k] = cand.argmax(axis=0)
        score = cand.max(axis=0) + x[k]
    path = np.empty(length, dtype=np.int64)
    path[-1] = int((score + end).argmax())
    for k in range(length - 1, 0, -1):
        path[k - 1] = back[k, path[k]]
    return path


@register_op("crf_decoding", host=_HOST, inputs=["Emission", "Transition", "Label?", "Length?"], outputs=["ViterbiPath"],
             infer=_decoding_infer, share_lod=("Emission", "ViterbiPath"))
def crf_decoding(ctx, ins, attrs):
    """The highest-scoring tag path of each sequence (int64, one per row; padded [N, T] with Length).
    With a Label input, 1 where the path agrees with the label and 0 elsewhere."""
    xp = ctx.xp
    emission = ins["Emission"]
    spans, padded = _sequences(ctx, "Emission", emission, ins.get("Length"))
    x = _rows(emission, padded).astype(np.float64)
    w = np.asarray(ins["Transition"], dtype=np.float64)
    path = np.zeros(x.shape[0], dtype=np.int64)
    for a, b in spans:
        if b > a:
            path[a:b] = _viterbi(x[a:b], w)
    if ins.get("Label") is not None:
        lab = _rows(ins["Label"], padded).reshape(-1).astype(np.int64)
        path = (path == lab).astype(np.int64)
        if padded:
            valid = np.zeros_like(path)
            for a, b in spans:
                valid[a:b] = 1
            path = path * valid
    shape = tuple(emission.shape[:2]) if padded else (emission.shape[0], 1)
    return {"ViterbiPath": xp.asarray(path.reshape(shape))}


# ------------------------------------------------------------------ chunk_eval
# per scheme: (tag kinds per chunk type, begin tag, inside tag, end tag, single tag); -1: not used
_SCHEMES = {"IOB": (2, 0, 1, -1, -1), "IOE": (2, -1, 0, 1, -1), "IOBES": (4, 0, 1, 2, 3), "plain": (1, -1, -1, -1, -1)}


def _chunk_ends(prev_tag, prev_type, tag, type_, other, scheme):
    _, begin, inside, end, single = scheme
    if prev_type == other:
        return False
    if type_ == other or type_ != prev_type:
        return True
    if prev_tag in (begin, inside) and prev_tag != -1:
        return tag == begin
    return prev_tag != -1 and prev_tag in (end, single)


def _chunk_begins(prev_tag, prev_type, tag, type_, other, scheme):
    _, begin, inside, end, single = scheme
    if prev_type == other:
        return type_ != other
    if type_ == other:
        return False
    if type_ != prev_type:
        return True
    if tag == -1:
        return False
    if tag == begin or tag == single:
        return True
    if tag in (inside, end):
        return prev_tag != -1 and prev_tag in (end, single)
    return False


def _segments(labels, num_chunk_types, scheme):
    """Chunks (start, end, type) of one tag sequence, by Paddle's begin / end rules."""
    kinds = scheme[0]
    other = num_chunk_types
    out = []
    start, in_chunk, tag, type_ = 0, False, -1, other
    for i, v in enumerate(labels):
        prev_tag, prev_type = tag, type_
        tag, type_ = int(v) % kinds, int(v) // kinds
        if in_chunk and _chunk_ends(prev_tag, prev_type, tag, type_, other, scheme):
            out.append((start, i - 1, prev_type))
            in_chunk = False
        if _chunk_begins(prev_tag, prev_type, tag, type_, other, scheme):
            start, in_chunk = i, True
    if in_chunk:
        out.append((start, len(labels) - 1, type_))
    return out


def _chunk_infer(ctx):
    for slot in ("Precision", "Recall", "F1-Score"):
        ctx.set_output(slot, (1,), "float32")
    for slot in ("NumInferChunks", "NumLabelChunks", "NumCorrectChunks"):
        ctx.set_output(slot, (1,), "int64")


@register_op("chunk_eval", host=_HOST, inputs=["Inference", "Label", "SeqLength?"],
             outputs=["Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks"],
             attrs={"num_chunk_types": 1, "chunk_scheme": "IOB", "excluded_chunk_types": []}, infer=_chunk_infer)
def chunk_eval(ctx, ins, attrs):
    """Chunks of the inferred and the gold tags (tag id = chunk type * tag kinds + tag kind, the
    "outside" tag = num_chunk_types * tag kinds); a chunk is correct when start, end and type agree."""
    xp = ctx.xp
    scheme_name = attrs["chunk_scheme"]
    if scheme_name not in _SCHEMES:
        raise ValueError("op 'chunk_eval': chunk_scheme must be one of %s, got %r" % (sorted(_SCHEMES), scheme_name))
    scheme = _SCHEMES[scheme_name]
    types = int(attrs["num_chunk_types"])
    excluded = set(int(t) for t in attrs["excluded_chunk_types"] or [])
    spans, padded = _sequences(ctx, "Inference", ins["Inference"], ins.get("SeqLength"))
    inf = _rows(ins["Inference"], padded).reshape(-1).astype(np.int64)
    lab = _rows(ins["Label"], padded).reshape(-1).astype(np.int64)
    limit = types * scheme[0]
    for name, v in (("Inference", inf), ("Label", lab)):
        v = np.concatenate([v[a:b] for a, b in spans] + [v[:0]])   # the steps in the sequences (not the padding)
        if v.size and (v.min() < 0 or v.max() > limit):
            raise ValueError("op 'chunk_eval': a tag in %s %r is out of range [0, %d] for %d chunk types in scheme %s"
                             % (name, ctx.op.inputs[name][0], limit, types, scheme_name))
    n_inf = n_lab = n_ok = 0
    for a, b in spans:
        got = {s for s in _segments(inf[a:b], types, scheme) if s[2] not in excluded}
        want = {s for s in _segments(lab[a:b], types, scheme) if s[2] not in excluded}
        n_inf, n_lab, n_ok = n_inf + len(got), n_lab + len(want), n_ok + len(got & want)
    p = n_ok / n_inf if n_inf else 0.0
    r = n_ok / n_lab if n_lab else 0.0
    f1 = 2 * p * r / (p + r) if n_ok else 0.0

    def one(v, dt):
        return xp.asarray(np.array([v], dtype=dt))

    return {"Precision": one(p, np.float32), "Recall": one(r, np.float32), "F1-Score": one(f1, np.float32),
            "NumInferChunks": one(n_inf, np.int64), "NumLabelChunks": one(n_lab, np.int64),
            "NumCorrectChunks": one(n_ok, np.int64)}
