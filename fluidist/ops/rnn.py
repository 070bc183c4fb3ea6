"""Recurrent units: ``lstm`` / ``lstmp`` / ``gru`` over LoD sequences (``dynamic_lstm``, ``dynamic_lstmp``,
``dynamic_gru``), the one-step ``gru_unit`` and ``lstm_unit`` (``cudnn_lstm`` is in ``cudnn_lstm.py``).

Paddle's layouts: an LSTM's gates are ``[candidate, input, forget, output]`` (peephole weights
``W_ic, W_fc, W_oc`` after the gate biases); a GRU's ``[update, reset, candidate]`` with its weight
``[D, 3D]`` read as a flat buffer: the first ``2D*D`` values are the ``[D, 2D]`` gate weight, the rest
the ``[D, D]`` candidate weight. The sequence ops lay the LoD batch out time-major and padded
(``_Batch``); the gradients run back through time, ``lstm``'s from the steps its outputs hold (as
Paddle's), the others recomputing the forward pass.
"""
import numpy as np

from ..framework.registry import register_grad, register_op
from .device_tables import device_table, offsets_key
from .lod_utils import segments, seq_offsets
from .math import stable_sigmoid

_ACT_CODES = {0: "identity", 1: "sigmoid", 2: "tanh", 3: "relu"}


def _act_name(a):
    return _ACT_CODES.get(a, a) if isinstance(a, int) else a


def _act(xp, name, x):
    name = _act_name(name)
    if name == "sigmoid":
        return stable_sigmoid(xp, x)
    if name == "tanh":
        return xp.tanh(x)
    if name == "relu":
        return xp.maximum(x, 0)
    if name in ("identity", "linear", ""):
        return x
    raise ValueError("unknown activation %r (sigmoid, tanh, relu or identity)" % (name,))


def _act_grad(name, y):
    """d act / d input, from the activation's output ``y``."""
    name = _act_name(name)
    if name == "sigmoid":
        return y * (1 - y)
    if name == "tanh":
        return 1 - y * y
    if name == "relu":
        return (y > 0).astype(y.dtype)
    return 1.0


class _Batch:
    """The rows of a LoD batch laid out time-major and padded: ``[T, B, width]``, sequence ``b`` at
    column ``b``, its step ``t`` at row ``t`` (its last step first with ``reverse``)."""

    def __init__(self, ctx, x, reverse, slot="Input"):
        offsets = np.asarray(seq_offsets(ctx, slot, x), dtype=np.int64)
        lengths = np.diff(offsets)
        self.n = len(lengths)
        self.steps = int(lengths.max()) if self.n else 0
        self.key = (bool(reverse), offsets_key(offsets))

        def tables():
            seg, pos, _ = segments(offsets)
            return seg, (lengths[seg] - 1 - pos if reverse else pos)
        self.seg, self.pos = device_table(ctx.xp, ("rnn batch",) + self.key, tables)
        self.xp = ctx.xp
        self.lengths = lengths

    def pad(self, rows):
        out = self.xp.zeros((self.steps, self.n) + tuple(rows.shape[1:]), dtype=rows.dtype)
        out[self.pos, self.seg] = rows
        return out

    def unpad(self, padded):
        return padded[self.pos, self.seg]

    def pad_after(self, first, rows):
        """``[T + 1, B, width]``: ``first`` (``[B, width]``, or zeros when None) at step 0, then
        ``pad(rows)``: each step's state before it at ``t``, after it at ``t + 1``."""
        out = self.xp.zeros((self.steps + 1, self.n) + tuple(rows.shape[1:]), dtype=rows.dtype)
        if first is not None:
            out[0] = first
        out[1:][self.pos, self.seg] = rows
        return out

    def _batch_major_tables(self):
        def tables():
            order = np.argsort(-self.lengths, kind="stable")
            steps, seqs = [], []
            for t in range(self.steps):
                running = order[self.lengths[order] > t]
                steps.append(np.full(len(running), t))
                seqs.append(running)
            return np.concatenate(steps), np.concatenate(seqs)
        return device_table(self.xp, ("rnn batch-major",) + self.key, tables)

    def batch_major(self, padded):
        """The rows of ``padded`` in Paddle's batch layout (its ``Batch*`` outputs): step by step,
        each step's rows of the sequences still running, longest sequence first (ties in input order)."""
        if not self.steps:
            return padded.reshape((0,) + tuple(padded.shape[2:]))
        steps, seqs = self._batch_major_tables()
        return padded[steps, seqs]

    def from_batch_major(self, rows):
        """``batch_major``'s inverse: the padded ``[T, B, width]`` form of rows in Paddle's batch
        layout (zero past each sequence's end)."""
        out = self.xp.zeros((self.steps, self.n) + tuple(rows.shape[1:]), dtype=rows.dtype)
        if self.steps:
            steps, seqs = self._batch_major_tables()
            out[steps, seqs] = rows
        return out


def _initial(xp, value, n, width, dtype):
    return value if value is not None else xp.zeros((n, width), dtype=dtype)


# ------------------------------------------------------------------ lstm / lstmp
_LSTM_ATTRS = {"use_peepholes": True, "is_reverse": False, "gate_activation": "sigmoid",
               "cell_activation": "tanh", "candidate_activation": "tanh"}
_LSTMP_ATTRS = dict(_LSTM_ATTRS, proj_activation="tanh", cell_clip=0.0, proj_clip=0.0)


def _lstm_forward(xp, xs, w, bias, h0, c0, attrs, proj=None):
    """Steps of an LSTM (with a projection when ``proj`` is given) over padded ``xs`` [T, B, 4D].
    Returns the per-step tensors the gradient needs."""
    d = w.shape[1] // 4
    gate_b = bias[0, :4 * d]
    peep = attrs["use_peepholes"]
    wic, wfc, woc = (bias[0, 4 * d:5 * d], bias[0, 5 * d:6 * d], bias[0, 6 * d:7 * d]) if peep else (0, 0, 0)
    ga, ca, na = attrs["gate_activation"], attrs["cell_activation"], attrs["candidate_activation"]
    cell_clip = attrs.get("cell_clip", 0.0) or 0.0
    proj_clip = attrs.get("proj_clip", 0.0) or 0.0
    steps = xs.shape[0]
    h = h0
    c = c0
    rec = {k: [] for k in ("h_prev", "c_prev", "cand", "i", "f", "o", "c", "c_act", "h", "r", "clip_c", "clip_r")}
    for t in range(steps):
        g = xs[t] + h @ w + gate_b
        cand = _act(xp, na, g[:, :d])
        i = _act(xp, ga, g[:, d:2 * d] + c * wic)
        f = _act(xp, ga, g[:, 2 * d:3 * d] + c * wfc)
        c_new = cand * i + c * f
        clip_c = None
        if cell_clip > 0:
            clip_c = (c_new >= -cell_clip) & (c_new <= cell_clip)
            c_new = xp.clip(c_new, -cell_clip, cell_clip)
        o = _act(xp, ga, g[:, 3 * d:] + c_new * woc)
        c_act = _act(xp, ca, c_new)
        h_new = o * c_act
        r, clip_r = h_new, None
        if proj is not None:
            r = _act(xp, attrs["proj_activation"], h_new @ proj)
            if proj_clip > 0:
                clip_r = (r >= -proj_clip) & (r <= proj_clip)
                r = xp.clip(r, -proj_clip, proj_clip)
        for k, v in (("h_prev", h), ("c_prev", c), ("cand", cand), ("i", i), ("f", f), ("o", o), ("c", c_new),
                     ("c_act", c_act), ("h", h_new), ("r", r), ("clip_c", clip_c), ("clip_r", clip_r)):
            rec[k].append(v)
        h, c = r, c_new
    return rec


def _lstm_backward(xp, rec, w, bias, attrs, d_out, d_cell, proj=None):
    """Back through the steps. ``d_out``: gradient of each step's output (h, or the projection),
    ``d_cell``: of each step's cell. Returns (d_xs, dW, d_bias, d_h0, d_c0, d_proj)."""
    d = w.shape[1] // 4
    peep = attrs["use_peepholes"]
    ga, ca, na = attrs["gate_activation"], attrs["cell_activation"], attrs["candidate_activation"]
    steps = len(rec["h"])
    n = d_out.shape[1]
    dw = xp.zeros_like(w)
    db = xp.zeros((1, 7 * d if peep else 4 * d), dtype=w.dtype)
    dproj = xp.zeros_like(proj) if proj is not None else None
    dxs = xp.zeros((steps, n, 4 * d), dtype=w.dtype)
    dh_next = xp.zeros((n, w.shape[0]), dtype=w.dtype)
    dc_next = xp.zeros((n, d), dtype=w.dtype)
    if peep:
        wic, wfc, woc = bias[0, 4 * d:5 * d], bias[0, 5 * d:6 * d], bias[0, 6 * d:7 * d]
    for t in range(steps - 1, -1, -1):
        dr = d_out[t] + dh_next
        if proj is not None:
            if rec["clip_r"][t] is not None:
                dr = dr * rec["clip_r"][t]
            dpre = dr * _act_grad(attrs["proj_activation"], rec["r"][t])
            dproj += rec["h"][t].T @ dpre
            dh = dpre @ proj.T
        else:
            dh = dr
        o, c_act = rec["o"][t], rec["c_act"][t]
        cand, i, f, c_prev = rec["cand"][t], rec["i"][t], rec["f"][t], rec["c_prev"][t]
        dog = dh * c_act * _act_grad(ga, o)
        dc = d_cell[t] + dc_next + dh * o * _act_grad(ca, c_act)
        if peep:
            dc = dc + dog * woc
        if rec["clip_c"][t] is not None:
            dc = dc * rec["clip_c"][t]
        dcg = dc * i * _act_grad(na, cand)
        dig = dc * cand * _act_grad(ga, i)
        dfg = dc * c_prev * _act_grad(ga, f)
        dc_next = dc * f
        if peep:
            dc_next = dc_next + dig * wic + dfg * wfc
        dg = xp.concatenate([dcg, dig, dfg, dog], axis=1)
        dxs[t] = dg
        dh_next = dg @ w.T
    # the parameter gradients, over all steps at once
    flat = dxs.reshape(-1, 4 * d)
    dw += xp.stack(rec["h_prev"]).reshape(-1, w.shape[0]).T @ flat
    db[0, :4 * d] = flat.sum(0)
    if peep:
        c_prev_all = xp.stack(rec["c_prev"]).reshape(-1, d)
        db[0, 4 * d:5 * d] = (flat[:, d:2 * d] * c_prev_all).sum(0)
        db[0, 5 * d:6 * d] = (flat[:, 2 * d:3 * d] * c_prev_all).sum(0)
        db[0, 6 * d:7 * d] = (flat[:, 3 * d:] * xp.stack(rec["c"]).reshape(-1, d)).sum(0)
    return dxs, dw, db, dh_next, dc_next, dproj


def _lstm_infer(proj):
    def infer(ctx):
        xs, ws = ctx.input_shape("Input"), ctx.input_shape("Weight")
        if xs is None or ws is None:
            return
        d = ws[1] // 4
        out = ctx.input_shape("ProjWeight")[1] if proj and ctx.input_shape("ProjWeight") else d
        lod = ctx.input_lod_level("Input")
        ctx.set_output("Projection" if proj else "Hidden", (xs[0], out), ctx.input_dtype("Input"), lod)
        ctx.set_output("Cell", (xs[0], d), ctx.input_dtype("Input"), lod)
        for slot in ("BatchGate", "BatchCellPreAct", "BatchHidden"):
            ctx.set_output(slot, None, ctx.input_dtype("Input"))
    return infer


def _lstm_batch(ctx, ins, attrs):
    """The op's LoD batch (``_Batch``), its shapes checked."""
    x, w, bias = ins["Input"], ins["Weight"], ins["Bias"]
    d = w.shape[1] // 4
    want = 7 * d if attrs["use_peepholes"] else 4 * d
    if x.shape[1] != 4 * d or bias.size != want:
        raise ValueError("op %r: Input %r must be [T, 4D] and Bias [1, %s] for hidden size D = %d; got Input %s, "
                         "Bias %s" % (ctx.op.type, ctx.op.inputs["Input"][0], "7D" if attrs["use_peepholes"] else "4D",
                                      d, list(x.shape), list(bias.shape)))
    return _Batch(ctx, x, attrs["is_reverse"])


def _lstm_run(ctx, ins, attrs, proj_slot=None):
    xp = ctx.xp
    x, w, bias = ins["Input"], ins["Weight"], ins["Bias"]
    d = w.shape[1] // 4
    proj = ins.get(proj_slot) if proj_slot else None
    batch = _lstm_batch(ctx, ins, attrs)
    width = proj.shape[1] if proj is not None else d
    h0 = _initial(xp, ins.get("H0"), batch.n, width, x.dtype)
    c0 = _initial(xp, ins.get("C0"), batch.n, d, x.dtype)
    rec = _lstm_forward(xp, batch.pad(x), w, bias.reshape(1, -1), h0, c0, attrs, proj)
    return batch, rec


def _lstm_saved(ctx, ins, attrs):
    """(batch, the steps of an ``lstm`` as ``_lstm_forward`` returns them) read back from the op's
    outputs (Hidden, Cell, and, in Paddle's batch layout, BatchGate and BatchCellPreAct), as Paddle's
    gradient kernel reads them instead of running the steps again (about 140 kernel launches of a
    5-step batch saved). None when the gradient op was given no BatchGate / BatchCellPreAct (a
    program built without them): then the steps run again. Past a sequence's end the steps hold
    zeros where run again they hold values: the gradient multiplies either by zero."""
    gate, cell_act = ins.get("BatchGate"), ins.get("BatchCellPreAct")
    if gate is None or cell_act is None:
        return None
    batch = _lstm_batch(ctx, ins, attrs)
    rows, d = ins["Input"].shape[0], ins["Weight"].shape[1] // 4
    for slot, value, width in (("BatchGate", gate, 4 * d), ("BatchCellPreAct", cell_act, d),
                               ("Hidden", ins["Hidden"], d), ("Cell", ins["Cell"], d)):
        if tuple(value.shape) != (rows, width):
            raise ValueError("op %r: %s %r must be [%d, %d] (the forward op's output), got %s"
                             % (ctx.op.type, slot, ctx.op.inputs[slot][0], rows, width, list(value.shape)))
    gates, c_act = batch.from_batch_major(gate), batch.from_batch_major(cell_act)
    h, c = batch.pad_after(ins.get("H0"), ins["Hidden"]), batch.pad_after(ins.get("C0"), ins["Cell"])
    steps = range(batch.steps)
    rec = {"h_prev": [h[t] for t in steps], "c_prev": [c[t] for t in steps], "c": [c[t + 1] for t in steps],
           "c_act": [c_act[t] for t in steps], "h": [h[t + 1] for t in steps], "clip_c": [None] * batch.steps,
           "clip_r": [None] * batch.steps}
    for k, name in enumerate(("cand", "i", "f", "o")):
        rec[name] = [gates[t, :, k * d:(k + 1) * d] for t in steps]
    rec["r"] = rec["h"]
    return batch, rec


@register_op("lstm", inputs=["Input", "H0?", "C0?", "Weight", "Bias"],
             outputs=["Hidden", "Cell", "BatchGate?", "BatchCellPreAct?"], attrs=_LSTM_ATTRS,
             infer=_lstm_infer(False), share_lod=("Input", "Hidden"))
def lstm(ctx, ins, attrs):
    """An LSTM over each sequence of ``Input`` (already multiplied by the input weights:
    ``[T, 4D]``); ``Weight`` ``[D, 4D]`` is the hidden-to-hidden weight."""
    xp = ctx.xp
    batch, rec = _lstm_run(ctx, ins, attrs)
    h = batch.unpad(xp.stack(rec["h"]))
    c = batch.unpad(xp.stack(rec["c"]))
    gates = batch.batch_major(xp.stack([xp.concatenate([rec["cand"][t], rec["i"][t], rec["f"][t], rec["o"][t]],
                                                       axis=1) for t in range(len(rec["h"]))]))
    ctx.set_lod("Cell", ctx.lod("Input"))
    return {"Hidden": h, "Cell": c, "BatchGate": gates, "BatchCellPreAct": batch.batch_major(xp.stack(rec["c_act"]))}


def _lstm_grad_common(ctx, ins, attrs, out_slot, proj_slot=None):
    xp = ctx.xp
    batch, rec = (None if proj_slot else _lstm_saved(ctx, ins, attrs)) or _lstm_run(ctx, ins, attrs, proj_slot)
    proj = ins.get(proj_slot) if proj_slot else None
    width = proj.shape[1] if proj is not None else ins["Weight"].shape[1] // 4
    d_out = ins.get(out_slot + "@GRAD")
    d_cell = ins.get("Cell@GRAD")
    x = ins["Input"]
    d = ins["Weight"].shape[1] // 4
    d_out = batch.pad(d_out) if d_out is not None else xp.zeros((batch.steps, batch.n, width), dtype=x.dtype)
    d_cell = batch.pad(d_cell) if d_cell is not None else xp.zeros((batch.steps, batch.n, d), dtype=x.dtype)
    dxs, dw, db, dh0, dc0, dproj = _lstm_backward(xp, rec, ins["Weight"], ins["Bias"].reshape(1, -1), attrs, d_out,
                                                  d_cell, proj)
    res = {"Input@GRAD": batch.unpad(dxs), "Weight@GRAD": dw, "Bias@GRAD": db.reshape(ins["Bias"].shape)}
    if ins.get("H0") is not None:
        res["H0@GRAD"] = dh0
    if ins.get("C0") is not None:
        res["C0@GRAD"] = dc0
    if proj is not None:
        res["ProjWeight@GRAD"] = dproj
    return res


@register_grad("lstm", inputs=["Input", "H0?", "C0?", "Weight", "Bias", "Hidden", "Cell", "BatchGate?",
                               "BatchCellPreAct?", "Hidden@GRAD?", "Cell@GRAD?"])
def lstm_grad(ctx, ins, attrs):
    """The gradient of ``lstm`` from the steps its outputs hold (Paddle's inputs, BatchGate and
    BatchCellPreAct among them); without those, from the steps run again."""
    return _lstm_grad_common(ctx, ins, attrs, "Hidden")


@register_op("lstmp", inputs=["Input", "H0?", "C0?", "Weight", "ProjWeight", "Bias"],
             outputs=["Projection", "Cell", "BatchGate?", "BatchCellPreAct?", "BatchHidden?"], attrs=_LSTMP_ATTRS,
             infer=_lstm_infer(True), share_lod=("Input", "Projection"))
def lstmp(ctx, ins, attrs):
    """An LSTM whose hidden state is projected (``ProjWeight`` ``[D, P]``, ``proj_activation``) before
    it feeds back (``Weight`` ``[P, 4D]``); ``H0`` is the initial projection ``[N, P]``. ``cell_clip`` /
    ``proj_clip`` > 0 clip the cell and the projection."""
    xp = ctx.xp
    batch, rec = _lstm_run(ctx, ins, attrs, "ProjWeight")
    ctx.set_lod("Cell", ctx.lod("Input"))
    return {"Projection": batch.unpad(xp.stack(rec["r"])), "Cell": batch.unpad(xp.stack(rec["c"])),
            "BatchHidden": batch.batch_major(xp.stack(rec["h"])),
            "BatchCellPreAct": batch.batch_major(xp.stack(rec["c_act"])),
            "BatchGate": batch.batch_major(xp.stack([xp.concatenate([rec["cand"][t], rec["i"][t], rec["f"][t],
                                                                     rec["o"][t]], axis=1)
                                                     for t in range(len(rec["h"]))]))}


@register_grad("lstmp", inputs=["Input", "H0?", "C0?", "Weight", "ProjWeight", "Bias", "Projection", "Cell",
                                "Projection@GRAD?", "Cell@GRAD?"])
def lstmp_grad(ctx, ins, attrs):
    return _lstm_grad_common(ctx, ins, attrs, "Projection", "ProjWeight")


# ------------------------------------------------------------------ gru / gru_unit
def _gru_weights(w):
    d = w.shape[0]
    flat = w.reshape(-1)
    return flat[:2 * d * d].reshape(d, 2 * d), flat[2 * d * d:].reshape(d, d)


def _gru_step(xp, g_in, h, wg, wc, attrs):
    d = h.shape[1]
    ur = _act(xp, attrs["gate_activation"], g_in[:, :2 * d] + h @ wg)
    u, r = ur[:, :d], ur[:, d:]
    rh = r * h
    c = _act(xp, attrs["activation"], g_in[:, 2 * d:] + rh @ wc)
    h_new = u * h + (1 - u) * c if attrs["origin_mode"] else u * (c - h) + h
    return u, r, rh, c, h_new


def _gru_step_grad(xp, dh, h, u, r, c, wg, wc, attrs, weights=True):
    """(d gate input [N, 3D], dh_prev, dWg, dWc) of one step given dh of its output (the weight
    gradients None unless ``weights``)."""
    if attrs["origin_mode"]:
        du, dc, dh_prev = dh * (h - c), dh * (1 - u), dh * u
    else:
        du, dc, dh_prev = dh * (c - h), dh * u, dh * (1 - u)
    dcg = dc * _act_grad(attrs["activation"], c)
    dwc = (r * h).T @ dcg if weights else None
    drh = dcg @ wc.T
    dr = drh * h
    dh_prev = dh_prev + drh * r
    dug = du * _act_grad(attrs["gate_activation"], u)
    drg = dr * _act_grad(attrs["gate_activation"], r)
    dgate = xp.concatenate([dug, drg], axis=1)
    dwg = h.T @ dgate if weights else None
    dh_prev = dh_prev + dgate @ wg.T
    return xp.concatenate([dgate, dcg], axis=1), dh_prev, dwg, dwc


_GRU_ATTRS = {"activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False, "origin_mode": False}


def _gru_infer(ctx):
    xs, ws = ctx.input_shape("Input"), ctx.input_shape("Weight")
    if xs is not None and ws is not None:
        ctx.set_output("Hidden", (xs[0], ws[0]), ctx.input_dtype("Input"), ctx.input_lod_level("Input"))


def _gru_run(ctx, ins, attrs):
    xp = ctx.xp
    x, w = ins["Input"], ins["Weight"]
    d = w.shape[0]
    if x.shape[1] != 3 * d or w.shape[1] != 3 * d:
        raise ValueError("op 'gru': Input %r must be [T, 3D] and Weight [D, 3D]; got %s and %s"
                         % (ctx.op.inputs["Input"][0], list(x.shape), list(w.shape)))
    batch = _Batch(ctx, x, attrs["is_reverse"])
    xs = batch.pad(x)
    if ins.get("Bias") is not None:
        xs = xs + ins["Bias"].reshape(1, 1, -1)
    wg, wc = _gru_weights(w)
    h = _initial(xp, ins.get("H0"), batch.n, d, x.dtype)
    rec = []
    for t in range(batch.steps):
        u, r, rh, c, h_new = _gru_step(xp, xs[t], h, wg, wc, attrs)
        rec.append((h, u, r, rh, c, h_new))
        h = h_new
    return batch, rec, wg, wc


@register_op("gru", inputs=["Input", "H0?", "Weight", "Bias?"],
             outputs=["BatchGate?", "BatchResetHiddenPrev?", "BatchHidden?", "Hidden"], attrs=_GRU_ATTRS,
             infer=_gru_infer, share_lod=("Input", "Hidden"))
def gru(ctx, ins, attrs):
    """A GRU over each sequence of ``Input`` (``[T, 3D]``, already multiplied by the input weights):
    ``h = u * (c - h_prev) + h_prev`` (``origin_mode``: ``u * h_prev + (1 - u) * c``)."""
    xp = ctx.xp
    batch, rec, _, _ = _gru_run(ctx, ins, attrs)
    if not rec:
        empty = xp.zeros((0, ins["Weight"].shape[0]), dtype=ins["Input"].dtype)
        return {"Hidden": empty, "BatchHidden": empty, "BatchResetHiddenPrev": empty,
                "BatchGate": xp.zeros((0, 3 * empty.shape[1]), dtype=empty.dtype)}
    stack = lambda k: xp.stack([step[k] for step in rec])  # noqa: E731
    return {"Hidden": batch.unpad(stack(5)), "BatchHidden": batch.batch_major(stack(5)),
            "BatchResetHiddenPrev": batch.batch_major(stack(3)),
            "BatchGate": batch.batch_major(xp.stack([xp.concatenate([s[1], s[2], s[4]], axis=1) for s in rec]))}


@register_grad("gru", inputs=["Input", "H0?", "Weight", "Bias?", "Hidden", "Hidden@GRAD"])
def gru_grad(ctx, ins, attrs):
    xp = ctx.xp
    batch, rec, wg, wc = _gru_run(ctx, ins, attrs)
    w = ins["Weight"]
    d = w.shape[0]
    dh_out = batch.pad(ins["Hidden@GRAD"])
    dxs = xp.zeros((batch.steps, batch.n, 3 * d), dtype=w.dtype)
    dwg, dwc = xp.zeros_like(wg), xp.zeros_like(wc)
    dh_next = xp.zeros((batch.n, d), dtype=w.dtype)
    for t in range(batch.steps - 1, -1, -1):
        h, u, r, _, c, _ = rec[t]
        dgin, dh_next, _, _ = _gru_step_grad(xp, dh_out[t] + dh_next, h, u, r, c, wg, wc, attrs, weights=False)
        dxs[t] = dgin
    # the weight gradients, over all steps at once
    flat = dxs.reshape(-1, 3 * d)
    dwg += xp.stack([s[0] for s in rec]).reshape(-1, d).T @ flat[:, :2 * d]
    dwc += xp.stack([s[3] for s in rec]).reshape(-1, d).T @ flat[:, 2 * d:]
    res = {"Input@GRAD": batch.unpad(dxs),
           "Weight@GRAD": xp.concatenate([dwg.reshape(-1), dwc.reshape(-1)]).reshape(w.shape)}
    if ins.get("Bias") is not None:
        res["Bias@GRAD"] = dxs.sum(axis=(0, 1)).reshape(ins["Bias"].shape)
    if ins.get("H0") is not None:
        res["H0@GRAD"] = dh_next
    return res


_GRU_UNIT_ATTRS = {"activation": 2, "gate_activation": 1, "origin_mode": False}


def _gru_unit_infer(ctx):
    hs = ctx.input_shape("HiddenPrev")
    xs = ctx.input_shape("Input")
    if hs is not None:
        dt = ctx.input_dtype("Input")
        ctx.set_output("Hidden", hs, dt)
        ctx.set_output("ResetHiddenPrev", hs, dt)
        ctx.set_output("Gate", xs, dt)


def _gru_unit_run(ctx, ins, attrs):
    x, h, w = ins["Input"], ins["HiddenPrev"], ins["Weight"]
    d = h.shape[1]
    if x.shape[1] != 3 * d or tuple(w.shape) != (d, 3 * d):
        raise ValueError("op 'gru_unit': Input must be [N, 3D] and Weight [D, 3D] for HiddenPrev [N, D = %d]; got "
                         "%s and %s" % (d, list(x.shape), list(w.shape)))
    g_in = x + ins["Bias"].reshape(1, -1) if ins.get("Bias") is not None else x
    wg, wc = _gru_weights(w)
    return g_in, wg, wc, _gru_step(ctx.xp, g_in, h, wg, wc, attrs)


@register_op("gru_unit", inputs=["Input", "HiddenPrev", "Weight", "Bias?"],
             outputs=["Gate", "ResetHiddenPrev", "Hidden"], attrs=_GRU_UNIT_ATTRS, infer=_gru_unit_infer)
def gru_unit(ctx, ins, attrs):
    """One GRU step; ``activation`` / ``gate_activation`` are Paddle's codes (0 identity, 1 sigmoid,
    2 tanh, 3 relu) or names."""
    xp = ctx.xp
    _, _, _, (u, r, rh, c, h) = _gru_unit_run(ctx, ins, attrs)
    return {"Gate": xp.concatenate([u, r, c], axis=1), "ResetHiddenPrev": rh, "Hidden": h}


@register_grad("gru_unit", inputs=["Input", "HiddenPrev", "Weight", "Bias?", "Hidden@GRAD"])
def gru_unit_grad(ctx, ins, attrs):
    xp = ctx.xp
    _, wg, wc, (u, r, _, c, _) = _gru_unit_run(ctx, ins, attrs)
    dgin, dh_prev, dwg, dwc = _gru_step_grad(xp, ins["Hidden@GRAD"], ins["HiddenPrev"], u, r, c, wg, wc, attrs)
    res = {"Input@GRAD": dgin, "HiddenPrev@GRAD": dh_prev,
           "Weight@GRAD": xp.concatenate([dwg.reshape(-1), dwc.reshape(-1)]).reshape(ins["Weight"].shape)}
    if ins.get("Bias") is not None:
        res["Bias@GRAD"] = dgin.sum(0).reshape(ins["Bias"].shape)
    return res


# ------------------------------------------------------------------ lstm_unit
def _lstm_unit_gates(xp, x, forget_bias):
    d = x.shape[1] // 4
    sig = lambda v: stable_sigmoid(xp, v)  # noqa: E731
    return sig(x[:, :d]), sig(x[:, d:2 * d] + forget_bias), sig(x[:, 2 * d:3 * d]), xp.tanh(x[:, 3 * d:])


@register_op("lstm_unit", inputs=["X", "C_prev"], outputs=["C", "H"], attrs={"forget_bias": 0.0},
             infer=lambda c: (c.share("C", "C_prev"), c.share("H", "C_prev")))
def lstm_unit(ctx, ins, attrs):
    """One LSTM step on ``X`` = ``[i, f, o, g]`` pre-activations: ``C = f * C_prev + i * g``,
    ``H = o * tanh(C)``, with ``forget_bias`` added to ``f``'s."""
    xp = ctx.xp
    x, c_prev = ins["X"], ins["C_prev"]
    if x.shape[1] != 4 * c_prev.shape[1]:
        raise ValueError("op 'lstm_unit': X must be [N, 4D] for C_prev [N, D]; got %s and %s"
                         % (list(x.shape), list(c_prev.shape)))
    i, f, o, g = _lstm_unit_gates(xp, x, attrs["forget_bias"])
    c = f * c_prev + i * g
    return {"C": c, "H": o * xp.tanh(c)}


@register_grad("lstm_unit", inputs=["X", "C_prev", "C", "C@GRAD?", "H@GRAD?"])
def lstm_unit_grad(ctx, ins, attrs):
    xp = ctx.xp
    x, c_prev, c = ins["X"], ins["C_prev"], ins["C"]
    i, f, o, g = _lstm_unit_gates(xp, x, attrs["forget_bias"])
    dh = ins.get("H@GRAD")
    dc = ins.get("C@GRAD")
    dh = dh if dh is not None else xp.zeros_like(c)
    dc = dc if dc is not None else xp.zeros_like(c)
    tc = xp.tanh(c)
    dc = dc + dh * o * (1 - tc * tc)
    dx = xp.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dh * tc * o * (1 - o),
                         dc * i * (1 - g * g)], axis=1)
    return {"X@GRAD": dx, "C_prev@GRAD": dc * f}
