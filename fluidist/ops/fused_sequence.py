"""Fused sequence ops of Paddle's CTR and text programs, each what its unfused ops compute:

- ``fusion_seqpool_concat``: ``sequence_pool`` (SUM / AVERAGE / SQRT) of each input, then ``concat``;
- ``fusion_seqpool_cvm_concat``: the same with ``cvm`` applied to each pooled input;
- ``fused_embedding_seq_pool``: ``lookup_table`` then a SUM ``sequence_pool`` (with its gradient);
- ``fusion_seqexpand_concat_fc``: the later inputs (one row per sequence) expanded over the first
  input's sequences (``sequence_expand``), concatenated with it, then ``fc`` and the activation;
- ``fusion_seqconv_eltadd_relu``: ``sequence_conv``, plus ``Bias``, then ``relu``.

Paddle implements them (but ``fused_embedding_seq_pool``) as inference-only CPU kernels: no gradient.
"""
import numpy as np

from ..core.tensor import SelectedRows, scatter_add
from ..framework.registry import register_grad, register_op
from .lod_utils import segments, seq_offsets
from .nn import _flat_ids, _padding_idx
from .rnn import _act
from .sequence import _columns

_FUSED_POOLS = ("SUM", "AVERAGE", "SQRT")


def _pool_sequences(xp, x, offsets, kind):
    """SUM / AVERAGE / SQRT pooling of the rows of each sequence of ``offsets``: [sequences, width]."""
    seg, _, lengths = segments(offsets)
    out = scatter_add(xp, xp.zeros((len(lengths),) + tuple(x.shape[1:]), dtype=x.dtype), xp.asarray(seg), x)
    if kind != "SUM":
        denom = np.maximum(lengths, 1).astype(np.float64)
        denom = denom if kind == "AVERAGE" else np.sqrt(denom)
        out = out / xp.asarray(denom.astype(x.dtype)).reshape((-1,) + (1,) * (x.ndim - 1))
    return out


def _pooled_inputs(ctx, xs, attrs):
    """Each X pooled over the sequences of its last LoD level; all must hold as many sequences."""
    kind = str(attrs["pooltype"]).upper()
    if kind not in _FUSED_POOLS:
        raise ValueError("op %r: pooltype must be one of %s, got %r" % (ctx.op.type, list(_FUSED_POOLS),
                                                                       attrs["pooltype"]))
    if attrs["axis"] != 1:
        raise ValueError("op %r: axis must be 1 (Paddle concatenates along the feature axis), got %d"
                         % (ctx.op.type, attrs["axis"]))
    outs = []
    for i, x in enumerate(xs):
        name = ctx.op.inputs["X"][i]
        offsets = _offsets_of(ctx, i, x, name)
        outs.append(_pool_sequences(ctx.xp, x.reshape(x.shape[0], -1), offsets, kind))
    if len({o.shape[0] for o in outs}) > 1:
        raise ValueError("op %r: the inputs X %s hold different numbers of sequences %s"
                         % (ctx.op.type, ctx.op.inputs["X"], [o.shape[0] for o in outs]))
    return outs


def _offsets_of(ctx, i, x, name):
    lod = ctx.lod("X", i)
    if not lod:
        raise ValueError("op %r: input X %r has no LoD; feed it as a LoDTensor with sequence lengths"
                         % (ctx.op.type, name))
    offsets = [int(o) for o in lod[-1]]
    if offsets[0] != 0 or offsets[-1] != x.shape[0]:
        raise ValueError("op %r: the LoD %s of X %r does not match its %d rows" % (ctx.op.type, offsets, name,
                                                                                x.shape[0]))
    return offsets


def _seqpool_concat_infer(cvm):
    def infer(ctx):
        shapes = [v.shape for v in ctx.input_vars("X")]
        if not shapes or any(s is None for s in shapes):
            return
        drop = 0 if not cvm or ctx.attr("use_cvm") else 2
        widths = [int(np.prod(s[1:])) - drop for s in shapes]
        ctx.set_output("Out", (-1, sum(widths)), ctx.input_dtype("X"))
    return infer


@register_op("fusion_seqpool_concat", inputs=["X*"], outputs=["Out"], attrs={"pooltype": "SUM", "axis": 1},
             infer=_seqpool_concat_infer(False))
def fusion_seqpool_concat(ctx, ins, attrs):
    """Each input pooled over its sequences (SUM, AVERAGE or SQRT), concatenated along axis 1."""
    return {"Out": ctx.xp.concatenate(_pooled_inputs(ctx, ins["X"], attrs), axis=1)}


@register_op("fusion_seqpool_cvm_concat", inputs=["X*", "CVM"], outputs=["Out"],
             attrs={"pooltype": "SUM", "use_cvm": True, "axis": 1}, infer=_seqpool_concat_infer(True))
def fusion_seqpool_cvm_concat(ctx, ins, attrs):
    """Each input pooled over its sequences, its first two columns (show, click) turned into
    ``log(show + 1)``, ``log(click + 1) - log(show + 1)`` (``use_cvm``) or dropped, concatenated."""
    xp = ctx.xp
    outs = []
    for pooled in _pooled_inputs(ctx, ins["X"], attrs):
        if attrs["use_cvm"]:
            show = xp.log(pooled[:, :1] + 1)
            pooled = xp.concatenate([show, xp.log(pooled[:, 1:2] + 1) - show, pooled[:, 2:]], axis=1)
        else:
            pooled = pooled[:, 2:]
        outs.append(pooled)
    return {"Out": xp.concatenate(outs, axis=1)}


# ------------------------------------------------------------------ fused_embedding_seq_pool
def _emb_pool_infer(ctx):
    ws, ids = ctx.input_shape("W"), ctx.input_shape("Ids")
    if ws is None or ids is None:
        return
    per_row = int(np.prod(ids[1:-1])) if len(ids) > 2 else 1
    ctx.set_output("Out", (-1, per_row * ws[1]), ctx.input_dtype("W"))


def _emb_pool_rows(ctx, ids, w):
    """(flat ids, ids per row, sequence offsets) of ``Ids`` [rows, ..., 1]."""
    offsets = seq_offsets(ctx, "Ids", ids)
    per_row = ids.size // max(ids.shape[0], 1) if ids.shape[0] else 1
    return _flat_ids(ctx, ids, w.shape[0]), per_row, offsets


@register_op("fused_embedding_seq_pool", inputs=["W", "Ids"], outputs=["Out"],
             attrs={"combiner": "sum", "padding_idx": -1, "is_sparse": False, "grad_inplace": False},
             infer=_emb_pool_infer, no_grad=("Ids",), table_lookup=True)
def fused_embedding_seq_pool(ctx, ins, attrs):
    """Per sequence of ``Ids`` (each row holds K ids), the sum of the rows' embeddings, the K
    embeddings of a row side by side: [sequences, K * width]. ``padding_idx`` ids embed as zeros."""
    xp = ctx.xp
    w, ids = ins["W"], ins["Ids"]
    if attrs["combiner"] != "sum":
        raise ValueError("op 'fused_embedding_seq_pool': combiner must be 'sum', got %r" % (attrs["combiner"],))
    flat, per_row, offsets = _emb_pool_rows(ctx, ids, w)
    emb = xp.take(w, flat, axis=0)
    pad = _padding_idx(attrs, w.shape[0])
    if pad is not None:     # (a mask assignment would read the mask's count back on a device)
        emb = xp.where((flat == pad)[:, None], 0, emb).astype(emb.dtype, copy=False)
    rows = emb.reshape(ids.shape[0], per_row * w.shape[1])
    return {"Out": _pool_sequences(xp, rows, offsets, "SUM")}


@register_grad("fused_embedding_seq_pool", inputs=["W", "Ids", "Out@GRAD"])
def fused_embedding_seq_pool_grad(ctx, ins, attrs):
    """Each sequence's output gradient reaches every id of its rows: a row-sparse W@GRAD with
    ``is_sparse``, else a dense one; padding ids get none."""
    xp = ctx.xp
    w, ids, d = ins["W"], ins["Ids"], ins["Out@GRAD"]
    flat, per_row, offsets = _emb_pool_rows(ctx, ids, w)
    seg, _, _ = segments(offsets)
    per_id = d[xp.asarray(seg)].reshape(-1, w.shape[1])
    pad = _padding_idx(attrs, w.shape[0])
    if pad is not None:
        per_id = xp.where((flat == pad)[:, None], 0, per_id)
    if attrs["is_sparse"]:
        return {"W@GRAD": SelectedRows(flat.copy(), per_id, w.shape[0])}
    return {"W@GRAD": scatter_add(xp, xp.zeros(w.shape, dtype=d.dtype), flat, per_id)}


# ------------------------------------------------------------------ fusion_seqexpand_concat_fc
def _expand_concat_infer(ctx):
    shapes = [v.shape for v in ctx.input_vars("X")]
    ws = ctx.input_shape("FCWeight")
    if not shapes or shapes[0] is None or ws is None:
        return
    ctx.set_output("Out", (shapes[0][0], ws[1]), ctx.input_dtype("X"), ctx.input_lod_level("X"))
    ctx.set_output("FCOut", None, ctx.input_dtype("X"))


@register_op("fusion_seqexpand_concat_fc", inputs=["X*", "FCWeight", "FCBias?"], outputs=["Out", "FCOut"],
             attrs={"fc_activation": "identity"}, infer=_expand_concat_infer)
def fusion_seqexpand_concat_fc(ctx, ins, attrs):
    """``act(concat([X0, expand(X1), expand(X2), ...]) FCWeight + FCBias)``: X0 [T, M0] is a batch of
    sequences; each later input holds one row per sequence, repeated over that sequence's rows.
    ``FCOut`` holds the part of the product the later inputs give, one row per sequence."""
    xp = ctx.xp
    xs, w, b = ins["X"], ins["FCWeight"], ins.get("FCBias")
    offsets = seq_offsets(ctx, "X", xs[0])
    seg, _, lengths = segments(offsets)
    if any(x.shape[0] != len(lengths) for x in xs[1:]) or sum(x.shape[1] for x in xs) != w.shape[0]:
        raise ValueError("op 'fusion_seqexpand_concat_fc': X %s (shapes %s) must be a [T, M0] batch of %d "
                         "sequences and [%d, Mi] inputs whose widths sum to FCWeight's %d rows"
                         % (ctx.op.inputs["X"], [list(x.shape) for x in xs], len(lengths), len(lengths),
                            w.shape[0]))
    m0 = xs[0].shape[1]
    per_seq = xp.concatenate(xs[1:], axis=1) @ w[m0:] if len(xs) > 1 else xp.zeros((len(lengths), w.shape[1]),
                                                                                    dtype=w.dtype)
    out = xs[0] @ w[:m0] + per_seq[xp.asarray(seg)]
    if b is not None:
        out = out + b.reshape(1, -1)
    ctx.set_lod("Out", ctx.lod("X"))
    return {"Out": _act(xp, attrs["fc_activation"], out).astype(xs[0].dtype, copy=False), "FCOut": per_seq}


# ------------------------------------------------------------------ fusion_seqconv_eltadd_relu
def _seqconv_infer(ctx):
    xs, fs = ctx.input_shape("X"), ctx.input_shape("Filter")
    if xs is None or fs is None:
        return
    ctx.set_output("Out", (xs[0], fs[1]), ctx.input_dtype("X"), ctx.input_lod_level("X"))
    ctx.set_output("ColMat", (xs[0], fs[0]), ctx.input_dtype("X"))


@register_op("fusion_seqconv_eltadd_relu", inputs=["X", "Filter", "Bias"], outputs=["Out", "ColMat"],
             attrs={"contextLength": 0, "contextStart": 0, "contextStride": 1}, infer=_seqconv_infer,
             share_lod=("X", "Out"))
def fusion_seqconv_eltadd_relu(ctx, ins, attrs):
    """``relu(sequence_conv(X, Filter) + Bias)`` (zeros outside each sequence); ColMat holds the
    context rows [T, contextLength * width]."""
    x, w, b = ins["X"], ins["Filter"], ins["Bias"]
    if attrs["contextStride"] != 1 or attrs["contextLength"] < 1 or w.shape[0] != attrs["contextLength"] * x.shape[1]:
        raise ValueError("op 'fusion_seqconv_eltadd_relu': contextStride must be 1 and Filter %r [%d, ...] must "
                         "have contextLength (%d) x the width of X (%d) rows"
                         % (ctx.op.inputs["Filter"][0], w.shape[0], attrs["contextLength"], x.shape[1]))
    cols, _, _ = _columns(ctx, x, None, dict(attrs, paddingTrainable=False))
    return {"Out": ctx.xp.maximum(cols @ w + b.reshape(1, -1), 0), "ColMat": cols}
