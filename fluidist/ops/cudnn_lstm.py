"""``cudnn_lstm`` (``layers.lstm``): a multi-layer, optionally bidirectional LSTM over a padded
``[T, N, D]`` batch with cuDNN's flat weight layout, and its gradient (back through time)."""
import numpy as np

from ..framework.registry import register_grad, register_op
from .math import stable_sigmoid


# ------------------------------------------------------------------ cudnn_lstm
_CUDNN_ATTRS = {"max_len": 20, "is_bidirec": False, "input_size": 10, "hidden_size": 100, "num_layers": 1,
                "is_test": False, "dropout_prob": 0.0, "seed": -1}


def _cudnn_slices(attrs):
    """(layer, direction) -> (W_ih [4H, in], W_hh [4H, H], b_ih, b_hh) slices of the flat weight:
    per layer and direction, the two matrices then the two biases; gates [i, f, g(cell), o]."""
    h, layers = attrs["hidden_size"], attrs["num_layers"]
    dirs = 2 if attrs["is_bidirec"] else 1
    out, at = {}, 0
    for layer in range(layers):
        in_size = attrs["input_size"] if layer == 0 else h * dirs
        for dr in range(dirs):
            shapes = [(4 * h, in_size), (4 * h, h), (4 * h,), (4 * h,)]
            parts = []
            for s in shapes:
                size = int(np.prod(s))
                parts.append((at, at + size, s))
                at += size
            out[(layer, dr)] = parts
    return out, at


def _cudnn_cell(xp, x, h, c, wih, whh, bih, bhh):
    hs = h.shape[1]
    g = x @ wih.T + h @ whh.T + bih + bhh
    sig = lambda v: stable_sigmoid(xp, v)  # noqa: E731
    i, f, gg, o = sig(g[:, :hs]), sig(g[:, hs:2 * hs]), xp.tanh(g[:, 2 * hs:3 * hs]), sig(g[:, 3 * hs:])
    c_new = f * c + i * gg
    return (i, f, gg, o, c_new, xp.tanh(c_new)), o * xp.tanh(c_new), c_new


def _cudnn_params(w, attrs):
    slices, total = _cudnn_slices(attrs)
    if w.size != total:
        raise ValueError("op 'cudnn_lstm': W has %d values but %d layer(s) of hidden size %d on input size %d%s "
                         "need %d" % (w.size, attrs["num_layers"], attrs["hidden_size"], attrs["input_size"],
                                      " (bidirectional)" if attrs["is_bidirec"] else "", total))
    flat = w.reshape(-1)
    return {k: [flat[a:b].reshape(s) for a, b, s in v] for k, v in slices.items()}


def _cudnn_forward(xp, x, h0, c0, params, attrs):
    dirs = 2 if attrs["is_bidirec"] else 1
    inp = x
    recs, last_h, last_c = [], [], []
    for layer in range(attrs["num_layers"]):
        outs = []
        for dr in range(dirs):
            wih, whh, bih, bhh = params[(layer, dr)]
            k = layer * dirs + dr
            h, c = h0[k], c0[k]
            order = range(inp.shape[0] - 1, -1, -1) if dr else range(inp.shape[0])
            hs = [None] * inp.shape[0]
            rec = []
            for t in order:
                gates, h_new, c_new = _cudnn_cell(xp, inp[t], h, c, wih, whh, bih, bhh)
                rec.append((t, h, c, gates))
                h, c = h_new, c_new
                hs[t] = h
            outs.append(xp.stack(hs))
            last_h.append(h)
            last_c.append(c)
            recs.append((layer, dr, inp, rec))
        inp = xp.concatenate(outs, axis=2) if dirs == 2 else outs[0]
    return inp, xp.stack(last_h), xp.stack(last_c), recs


@register_op("cudnn_lstm", inputs=["Input", "InitH", "InitC", "W", "Cache?"], outputs=["Out", "last_h", "last_c"],
             attrs=_CUDNN_ATTRS,
             infer=lambda c: (c.set_output("Out", tuple((c.input_shape("Input") or (0, 0, 0))[:2]) + (
                 c.attr("hidden_size") * (2 if c.attr("is_bidirec") else 1),), c.input_dtype("Input")),
                 c.share("last_h", "InitH"), c.share("last_c", "InitC")))
def cudnn_lstm(ctx, ins, attrs):
    """A multi-layer (optionally bidirectional) LSTM over ``Input`` ``[seq_len, batch, input_size]``
    with cuDNN's flat weight ``W`` (see ``_cudnn_slices``). Dropout between layers is not applied
    (``dropout_prob`` must be 0)."""
    if attrs["dropout_prob"]:
        raise ValueError("op 'cudnn_lstm': dropout_prob %g between layers is not supported; use 0"
                         % attrs["dropout_prob"])
    xp = ctx.xp
    params = _cudnn_params(ins["W"], attrs)
    out, lh, lc, _ = _cudnn_forward(xp, ins["Input"], ins["InitH"], ins["InitC"], params, attrs)
    return {"Out": out, "last_h": lh, "last_c": lc}


@register_grad("cudnn_lstm", inputs=["Input", "InitH", "InitC", "W", "Out@GRAD?", "last_h@GRAD?", "last_c@GRAD?"])
def cudnn_lstm_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, w = ins["Input"], ins["W"]
    params = _cudnn_params(w, attrs)
    out, lh, lc, recs = _cudnn_forward(xp, x, ins["InitH"], ins["InitC"], params, attrs)
    dirs = 2 if attrs["is_bidirec"] else 1
    hsz = attrs["hidden_size"]
    d_out = ins.get("Out@GRAD")
    d_out = d_out if d_out is not None else xp.zeros_like(out)
    d_lh = ins.get("last_h@GRAD")
    d_lc = ins.get("last_c@GRAD")
    d_lh = d_lh if d_lh is not None else xp.zeros_like(lh)
    d_lc = d_lc if d_lc is not None else xp.zeros_like(lc)
    slices, _ = _cudnn_slices(attrs)
    dw = xp.zeros(w.size, dtype=w.dtype)
    dh0, dc0 = xp.zeros_like(ins["InitH"]), xp.zeros_like(ins["InitC"])
    d_layer_out = d_out
    dx = None
    for layer in range(attrs["num_layers"] - 1, -1, -1):
        d_inp = None
        for dr in range(dirs):
            _, _, inp, rec = recs[layer * dirs + dr]
            wih, whh, _, _ = params[(layer, dr)]
            k = layer * dirs + dr
            dh_seq = d_layer_out[:, :, dr * hsz:(dr + 1) * hsz]
            dh, dc = d_lh[k], d_lc[k]
            gw = [xp.zeros_like(p) for p in params[(layer, dr)]]
            d_in = xp.zeros_like(inp)
            for t, h_prev, c_prev, (i, f, gg, o, c_new, tc) in reversed(rec):
                dh = dh + dh_seq[t]
                do = dh * tc
                dc = dc + dh * o * (1 - tc * tc)
                di, df, dg = dc * gg, dc * c_prev, dc * i
                dpre = xp.concatenate([di * i * (1 - i), df * f * (1 - f), dg * (1 - gg * gg), do * o * (1 - o)], axis=1)
                gw[0] += dpre.T @ inp[t]
                gw[1] += dpre.T @ h_prev
                gw[2] += dpre.sum(0)
                gw[3] += dpre.sum(0)
                d_in[t] = dpre @ wih
                dh = dpre @ whh
                dc = dc * f
            dh0[k], dc0[k] = dh, dc
            for (a, b, _), g in zip(slices[(layer, dr)], gw):
                dw[a:b] = g.reshape(-1)
            d_inp = d_in if d_inp is None else d_inp + d_in
        d_layer_out = d_inp
        dx = d_inp
    return {"Input@GRAD": dx, "InitH@GRAD": dh0, "InitC@GRAD": dc0, "W@GRAD": dw.reshape(w.shape)}
