"""Fused recurrent ops of Paddle's inference programs (CPU kernels without a gradient in Paddle):

- ``fusion_lstm``: ``X WeightX`` then the ``lstm`` op (``WeightH``, ``Bias`` with the input bias
  folded in, peepholes after the gate biases);
- ``fused_embedding_fc_lstm``: the same with the input projection looked up: ``Embeddings`` holds
  each id's ``embedding WeightX + bias`` (so the first 4D values of ``Bias`` are not added again);
- ``fusion_gru``: ``X WeightX + Bias`` then the ``gru`` op (``WeightH``);
- ``attention_lstm``: an LSTM whose input at each step is the attention-weighted sum of its whole
  sequence, the attention scores computed from the sequence and the previous cell.

Gate layouts are those of the unfused ops (``rnn.py``); ``attention_lstm``'s are
``[forget, input, output, candidate]`` with the hidden state's rows first in ``LSTMWeight``.
"""
import numpy as np

from ..framework.registry import register_op
from .lod_utils import segments, seq_offsets
from .nn import _flat_ids
from .rnn import _Batch, _act, _gru_step, _gru_weights, _initial, _lstm_forward

_LSTM_ATTRS = {"use_peepholes": True, "is_reverse": False, "use_seq": True, "gate_activation": "sigmoid",
               "cell_activation": "tanh", "candidate_activation": "tanh"}


def _lstm_like_infer(x_slot, width_of):
    def infer(ctx):
        xs, wh = ctx.input_shape(x_slot), ctx.input_shape("WeightH")
        if xs is None or wh is None:
            return
        dtype = ctx.input_dtype("WeightH")
        lod = ctx.input_lod_level(x_slot)
        ctx.set_output("Hidden", (xs[0], wh[0]), dtype, lod)
        if ctx.has_output("Cell"):
            ctx.set_output("Cell", (xs[0], wh[0]), dtype, lod)
        ctx.set_output("XX", (xs[0], width_of(ctx, wh)), dtype)
    return infer


def _run_lstm(ctx, xx, x_slot, ins, attrs, bias):
    """Hidden and Cell of the ``lstm`` op over the gate inputs ``xx`` [T, 4D] (sequences of ``x_slot``)."""
    xp = ctx.xp
    wh = ins["WeightH"]
    d = wh.shape[0]
    want = 7 * d if attrs["use_peepholes"] else 4 * d
    if wh.shape[1] != 4 * d or bias.size != want or xx.shape[1] != 4 * d:
        raise ValueError("op %r: WeightH %r must be [D, 4D] and Bias [1, %s] for D = %d; got %s and %s"
                         % (ctx.op.type, ctx.op.inputs["WeightH"][0], "7D" if attrs["use_peepholes"] else "4D", d,
                            list(wh.shape), list(bias.shape)))
    batch = _Batch(ctx, xx, attrs["is_reverse"], slot=x_slot)
    h0 = _initial(xp, ins.get("H0"), batch.n, d, xx.dtype)
    c0 = _initial(xp, ins.get("C0"), batch.n, d, xx.dtype)
    rec = _lstm_forward(xp, batch.pad(xx), wh, bias.reshape(1, -1), h0, c0, attrs)
    ctx.set_lod("Hidden", ctx.lod(x_slot))
    ctx.set_lod("Cell", ctx.lod(x_slot))
    return {"Hidden": batch.unpad(xp.stack(rec["h"])), "Cell": batch.unpad(xp.stack(rec["c"]))}


@register_op("fusion_lstm", inputs=["X", "WeightX", "WeightH", "Bias", "H0?", "C0?"],
             outputs=["Hidden", "Cell", "XX", "BatchedInput?", "BatchedHidden?", "BatchedCell?", "ReorderedH0?",
                      "ReorderedC0?", "CheckedCell?"],
             attrs=_LSTM_ATTRS, infer=_lstm_like_infer("X", lambda ctx, wh: 4 * wh[0]))
def fusion_lstm(ctx, ins, attrs):
    """``lstm(X WeightX, WeightH, Bias)`` over the sequences of X; XX holds ``X WeightX``. The
    batched / reordered outputs of Paddle's batch-major kernel are not written."""
    x = ins["X"]
    xx = x @ ins["WeightX"]
    res = _run_lstm(ctx, xx, "X", ins, attrs, ins["Bias"])
    res["XX"] = xx
    return res


@register_op("fused_embedding_fc_lstm", inputs=["Ids", "Embeddings", "WeightH", "Bias", "H0?", "C0?"],
             outputs=["Hidden", "Cell", "XX", "BatchedInput?", "BatchedHidden?", "BatchedCell?", "ReorderedH0?",
                      "ReorderedC0?"],
             attrs=_LSTM_ATTRS, infer=_lstm_like_infer("Ids", lambda ctx, wh: 4 * wh[0]))
def fused_embedding_fc_lstm(ctx, ins, attrs):
    """``lstm`` over the rows of ``Embeddings`` (each id's input projection with the gate bias already
    added) that ``Ids`` picks; ``Bias`` gives the peephole weights only."""
    xp = ctx.xp
    emb, ids, bias = ins["Embeddings"], ins["Ids"], ins["Bias"]
    flat = _flat_ids(ctx, ids, emb.shape[0])
    if flat.size != ids.shape[0]:
        raise ValueError("op 'fused_embedding_fc_lstm': Ids %r must hold one id per row, got shape %s"
                         % (ctx.op.inputs["Ids"][0], list(ids.shape)))
    xx = xp.take(emb, flat, axis=0)
    gate_bias_folded = bias.reshape(1, -1).copy()
    gate_bias_folded[:, :emb.shape[1]] = 0
    res = _run_lstm(ctx, xx, "Ids", ins, attrs, gate_bias_folded)
    res["XX"] = xx
    return res


# ------------------------------------------------------------------ fusion_gru
def _gru_infer(ctx):
    xs, wh = ctx.input_shape("X"), ctx.input_shape("WeightH")
    if xs is None or wh is None:
        return
    dtype = ctx.input_dtype("WeightH")
    ctx.set_output("Hidden", (xs[0], wh[0]), dtype, ctx.input_lod_level("X"))
    ctx.set_output("XX", (xs[0], 3 * wh[0]), dtype)


@register_op("fusion_gru", inputs=["X", "H0?", "WeightX", "WeightH", "Bias?"],
             outputs=["ReorderedH0?", "XX", "BatchedInput?", "BatchedOut?", "Hidden"],
             attrs={"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "use_seq": True,
                    "origin_mode": False}, infer=_gru_infer)
def fusion_gru(ctx, ins, attrs):
    """``gru(X WeightX + Bias, WeightH)`` over the sequences of X; XX holds ``X WeightX + Bias``."""
    xp = ctx.xp
    x, wx, wh = ins["X"], ins["WeightX"], ins["WeightH"]
    d = wh.shape[0]
    if wx.shape[1] != 3 * d or wh.shape[1] != 3 * d:
        raise ValueError("op 'fusion_gru': WeightX %r must be [M, 3D] and WeightH %r [D, 3D]; got %s and %s"
                         % (ctx.op.inputs["WeightX"][0], ctx.op.inputs["WeightH"][0], list(wx.shape),
                            list(wh.shape)))
    xx = x @ wx
    if ins.get("Bias") is not None:
        xx = xx + ins["Bias"].reshape(1, -1)
    batch = _Batch(ctx, xx, attrs["is_reverse"], slot="X")
    xs = batch.pad(xx)
    wg, wc = _gru_weights(wh)
    h = _initial(xp, ins.get("H0"), batch.n, d, xx.dtype)
    hs = []
    for t in range(batch.steps):
        h = _gru_step(xp, xs[t], h, wg, wc, attrs)[-1]
        hs.append(h)
    ctx.set_lod("Hidden", ctx.lod("X"))
    hidden = batch.unpad(xp.stack(hs)) if hs else xp.zeros((0, d), dtype=xx.dtype)
    return {"Hidden": hidden, "XX": xx}


# ------------------------------------------------------------------ attention_lstm
def _attention_infer(ctx):
    xs, c0 = ctx.input_shape("X"), ctx.input_shape("C0")
    if xs is None or c0 is None:
        return
    dtype = ctx.input_dtype("X")
    ctx.set_output("Hidden", (xs[0], c0[1]), dtype, ctx.input_lod_level("X"))
    ctx.set_output("Cell", (xs[0], c0[1]), dtype, ctx.input_lod_level("X"))
    ctx.set_output("AttentionedX", (xs[0], 1), dtype)


def _attention_scores(xp, x_att, cell, ins, valid):
    """Softmax over each sequence's steps of ``relu(x W_x + cell W_c + b)`` (then, with
    AttentionScalar, ``relu(score * scalar + scalar_bias)``); ``x_att`` [B, L] holds ``x W_x + b``."""
    m = ins["X"].shape[1]
    w = ins["AttentionWeight"]
    score = xp.maximum(x_att + (cell @ w[m:]).reshape(-1, 1), 0)
    if ins.get("AttentionScalar") is not None:
        score = score * ins["AttentionScalar"].reshape(())
        if ins.get("AttentionScalarBias") is not None:
            score = score + ins["AttentionScalarBias"].reshape(())
        score = xp.maximum(score, 0)
    score = xp.where(valid, score, -np.inf)
    e = xp.exp(score - score.max(axis=1, keepdims=True))
    e = xp.where(valid, e, 0)
    return e / e.sum(axis=1, keepdims=True)


@register_op("attention_lstm", inputs=["X", "C0", "H0?", "AttentionWeight", "AttentionBias?", "AttentionScalar?",
                                       "AttentionScalarBias?", "LSTMWeight", "LSTMBias"],
             outputs=["Hidden", "Cell", "AttentionedX", "AttentionFCOut?", "LSTMX?", "LSTMOUT?"],
             attrs={"gate_activation": "sigmoid", "cell_activation": "tanh", "candidate_activation": "tanh"},
             infer=_attention_infer)
def attention_lstm(ctx, ins, attrs):
    """At each step of a sequence, attention weights over all its rows (from the rows and the previous
    cell) give the step's input ``sum(weight * row)``; then an LSTM step on ``[h_prev, input]``
    (``LSTMWeight`` [D + M, 4D], gates ``[forget, input, output, candidate]``)."""
    xp = ctx.xp
    x, c0, w, b = ins["X"], ins["C0"], ins["LSTMWeight"], ins["LSTMBias"].reshape(1, -1)
    m, d = x.shape[1], c0.shape[1]
    if w.shape != (m + d, 4 * d) or ins["AttentionWeight"].shape[0] != m + d:
        raise ValueError("op 'attention_lstm': LSTMWeight %r must be [D + M, 4D] = %s and AttentionWeight [M + D, 1]; "
                         "got %s and %s" % (ctx.op.inputs["LSTMWeight"][0], [m + d, 4 * d], list(w.shape),
                                           list(ins["AttentionWeight"].shape)))
    offsets = np.asarray(seq_offsets(ctx, "X", x), dtype=np.int64)
    seg, pos, lengths = segments(offsets)
    n, steps = len(lengths), int(lengths.max()) if len(lengths) else 0
    x_att = x @ ins["AttentionWeight"][:m]
    if ins.get("AttentionBias") is not None:
        x_att = x_att + ins["AttentionBias"].reshape(())
    padded = xp.zeros((n, max(steps, 1), m), dtype=x.dtype)
    padded[seg, pos] = x
    att_in = xp.zeros((n, max(steps, 1)), dtype=x.dtype)
    att_in[seg, pos] = x_att.reshape(-1)
    valid = xp.asarray(np.arange(max(steps, 1))[None, :] < lengths[:, None])
    h, c = _initial(xp, ins.get("H0"), n, d, x.dtype), c0
    hidden, cell = xp.zeros((x.shape[0], d), dtype=x.dtype), xp.zeros((x.shape[0], d), dtype=x.dtype)
    ga, ca, na = attrs["gate_activation"], attrs["cell_activation"], attrs["candidate_activation"]
    for t in range(steps):
        weights = _attention_scores(xp, att_in, c, ins, valid)
        step_in = (weights[:, :, None] * padded).sum(axis=1)
        g = xp.concatenate([h, step_in], axis=1) @ w + b
        f, i, o = (_act(xp, ga, g[:, k * d:(k + 1) * d]) for k in range(3))
        c_new = c * f + i * _act(xp, na, g[:, 3 * d:])
        h_new = o * _act(xp, ca, c_new)
        live = np.nonzero(lengths > t)[0]
        rows = xp.asarray(offsets[:-1][live] + t)
        hidden[rows], cell[rows] = h_new[live], c_new[live]
        alive = xp.asarray((lengths > t)[:, None])
        h, c = xp.where(alive, h_new, h), xp.where(alive, c_new, c)
    ctx.set_lod("Hidden", ctx.lod("X"))
    ctx.set_lod("Cell", ctx.lod("X"))
    return {"Hidden": hidden, "Cell": cell, "AttentionedX": x_att}
