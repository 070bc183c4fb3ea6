"""Optimizer update ops, and the norm ops gradient clipping uses.

Each optimizer is one pure update rule ``rule(xp, p, g, accs, scalars, lr, attrs) -> {slot: new}``
(``accs``: the param-shaped accumulators, ``scalars``: the ``[1]``-shaped ones such as ``Beta1Pow``)
wrapped by one kernel maker that handles the two gradient kinds:

- a dense gradient updates the parameter and its accumulators in place (the kernel returns the same
  arrays: cheap for big models, and the scope keeps pointing at them);
- a ``SelectedRows`` gradient (from ``embedding(is_sparse=True)``) is merged first (duplicate rows
  summed). Then either only its rows are gathered, updated and scattered back (``rows`` mode), or it
  is made dense and the dense rule runs (``dense`` mode). Which one is a per-op fact:

  ===============================  =====  ===============================================
  op                               mode   why
  ===============================  =====  ===============================================
  sgd, adagrad                     rows   a zero gradient row changes nothing: same as dense
  adam (lazy_mode=True), ftrl      rows   Paddle's lazy / sparse semantics: absent rows wait
  adam (lazy_mode=False),          dense  absent rows still decay their moments / velocity,
  momentum, lars_momentum,                exactly as Paddle's sparse kernels do (and as the
  rmsprop, decayed_adagrad,               same model with a dense embedding would)
  adamax, lamb, adadelta, dpsgd
  ===============================  =====  ===============================================
"""
import numpy as np

from ..framework.op_role import OpRole
from ..framework.registry import Bound, UpdateRule, kernel_call, no_infer, register_binder, register_grad, \
    register_op
from ..core.lazy_rows import LazyRows
from ..core.tensor import SelectedRows, scatter_add
from . import device_fused


def _lr(ctx, ins, dtype):
    lr = ins["LearningRate"]
    if lr.size != 1:
        raise ValueError("op %r: LearningRate %r must hold one value, got shape %s"
                         % (ctx.op.type, ctx.op.inputs["LearningRate"][0], list(lr.shape)))
    return _as_scalar(lr, dtype)


def _as_scalar(lr, dtype):
    """The one value of ``lr`` as a 0-d array of ``dtype`` (no cast when it has that dtype)."""
    lr = lr.reshape(())
    return lr if lr.dtype == dtype else lr.astype(dtype)


def _check_same_shape(ctx, what, arr, p):
    if tuple(arr.shape) != tuple(p.shape):
        raise ValueError("op %r: %s %r has shape %s but parameter %r has shape %s"
                         % (ctx.op.type, what, ctx.op.inputs[what][0], list(arr.shape),
                            ctx.op.inputs["Param"][0], list(p.shape)))


def _check_height(ctx, g, p):
    if g.height and g.height != p.shape[0]:
        raise ValueError("op %r: SelectedRows gradient %r has height %d but parameter %r has %d rows"
                         % (ctx.op.type, ctx.op.inputs["Grad"][0], g.height, ctx.op.inputs["Param"][0],
                            p.shape[0]))


def _merged_rows(ctx, g, p):
    _check_height(ctx, g, p)
    g = g.merged(ctx.xp)
    if g.rows is None or len(g.rows) == 0:
        return None
    return g


def _densify(ctx, g, p):
    """The dense gradient of a row-sparse one: repeated rows summed in the order they came, as a
    merge would (and with no merge: on a device, merging reads the number of distinct rows back)."""
    xp = ctx.xp
    out = xp.zeros(p.shape, dtype=p.dtype)
    if g.rows is not None and len(g.rows):
        scatter_add(xp, out, g.rows, g.value.reshape((len(g.rows),) + tuple(p.shape[1:])))
    return out


def _check_row_wise(ctx, row_wise, accs):
    lazy = [ctx.op.inputs[s][0] for s, acc in accs.items() if isinstance(acc, LazyRows)]
    if lazy and not row_wise:
        raise ValueError("op %r updates every row of its accumulators %s, which hold only the rows written so "
                         "far (LazyRows): use a row-wise rule (sgd, adagrad, adam with lazy_mode, ftrl)"
                         % (ctx.op.type, lazy))


def _optimizer_op(type, accumulators, scalars, rule, rows_only, attrs, doc, whole_param=False, uses_lr=True,
                  powers=None, attr_tensors=None, prepare=None, optional=(), scalars_on_host=False):
    """Register ``type`` with inputs Param, Grad, LearningRate (unless ``uses_lr`` is False), the
    accumulator and scalar slots, and outputs ``<slot>Out`` for Param and every accumulator (names
    from ``accumulators``: {input slot: output slot}).

    ``powers``: {scalar slot: (output slot, attr)}: the op advances that scalar (a beta power) by
    multiplying it by the attr, into the (optional) output slot. ``attr_tensors``: {attr: optional
    input slot} whose one-element value, when given, replaces the attr. ``prepare(ctx, attrs)``:
    attrs the rule also reads, from the op itself. ``optional``: accumulator slots an op may leave out
    (with their outputs); the rule sees only those given. ``scalars_on_host``: the scalars live on the
    host (``UpdateRule.scalars_on_host``)."""
    powers, attr_tensors = powers or {}, attr_tensors or {}
    out_slots = {"Param": "ParamOut"}
    out_slots.update(accumulators)
    inputs = ["Param", "Grad"] + (["LearningRate"] if uses_lr else []) \
        + [s + "?" if s in optional else s for s in accumulators] + list(scalars)
    inputs += [slot + "?" for slot in attr_tensors.values()]

    def kernel(ctx, ins, a):
        a = dict(a, **{attr: float(ins[slot].reshape(-1)[0]) for attr, slot in attr_tensors.items()
                       if ins.get(slot) is not None})
        if prepare is not None:
            a.update(prepare(ctx, a))
        res = update(ctx, ins, a)
        for slot, (out, attr) in powers.items():
            if ctx.op.outputs.get(out):
                res[out] = ins[slot] * ins[slot].dtype.type(a[attr])
        return res

    def update(ctx, ins, a):
        p, g = ins["Param"], ins["Grad"]
        lr = _lr(ctx, ins, p.dtype) if uses_lr else None
        accs = {s: ins[s] for s in accumulators if ins.get(s) is not None}
        for s, acc in accs.items():
            _check_same_shape(ctx, s, acc, p)
        sc = {s: ins[s].reshape(()).astype(p.dtype, copy=False) for s in scalars}
        if isinstance(g, SelectedRows):
            if not (rows_only(a) or any(isinstance(acc, LazyRows) for acc in accs.values())):
                _check_height(ctx, g, p)
                g = _densify(ctx, g, p)
            else:
                g = _merged_rows(ctx, g, p)
                _check_row_wise(ctx, rows_only(a), accs)
                targets = {s: _row_target(ctx, s, out, arr) for s, out, arr in
                           [("Param", "ParamOut", p)] + [(s, accumulators[s], acc) for s, acc in accs.items()]}
                if g is not None:
                    rows = g.rows
                    values = g.value.reshape((len(rows),) + tuple(p.shape[1:]))
                    new = rule(ctx.xp, ctx.xp.take(p, rows, axis=0), values,
                               {s: acc[rows] for s, acc in accs.items()}, sc, lr, a)
                    for s, target in targets.items():
                        target[rows] = new[s]
                return _outs(out_slots, targets["Param"], {s: targets[s] for s in accs})
        else:
            _check_same_shape(ctx, "Grad", g, p)
            _check_row_wise(ctx, False, accs)
        new = rule(ctx.xp, p, g, accs, sc, lr, a)
        for s, arr in [("Param", p)] + list(accs.items()):
            if new[s] is not arr:       # (a rule that updated it in place returns it)
                arr[...] = new[s]
        return _outs(out_slots, p, accs)

    kernel.__doc__ = doc
    outputs = [out + "?" if s in optional else out for s, out in out_slots.items()]
    register_op(type, inputs=inputs, outputs=outputs + [out + "?" for out, _ in powers.values()],
                attrs=attrs, infer=no_infer, role=OpRole.Optimize,
                update=UpdateRule(param_like=tuple(accumulators), outputs=tuple(accumulators.values()),
                                  scalars=tuple(scalars), scalar_outputs=tuple(powers[s][0] if s in powers else None
                                                                               for s in scalars) if powers else (),
                                  scalars_on_host=scalars_on_host, whole_param=whole_param,
                                  row_wise=rows_only))(kernel)


def _row_target(ctx, in_slot, out_slot, arr):
    """Where a row-wise update writes ``in_slot``'s rows: the input itself (in place, the usual
    ``ParamOut`` = ``Param``), or, when the op names another output variable that already holds an
    array of the same shape, that array: as in Paddle's sparse kernels, the rows the gradient does
    not touch keep what the output held."""
    out_name = ctx.op.outputs.get(out_slot)
    if not out_name or out_name[0] == ctx.op.inputs[in_slot][0]:
        return arr
    held = ctx.find_value(out_name[0])
    if isinstance(held, type(arr)) and tuple(getattr(held, "shape", ())) == tuple(arr.shape) \
            and held.dtype == arr.dtype:
        return held
    return arr.copy()


def _outs(out_slots, p, accs):
    res = {"ParamOut": p}
    for s, acc in accs.items():
        res[out_slots[s]] = acc
    return res


def _never(attrs):
    return False


def _always(attrs):
    return True


# ------------------------------------------------------------------ the rules
def _momentum(xp, p, g, accs, sc, lr, a):
    mu = a["mu"]
    v = mu * accs["Velocity"] + g
    if a["use_nesterov"]:
        p = p - (g + mu * v) * lr
    else:
        p = p - lr * v
    return {"Param": p, "Velocity": v}


def _lars_momentum(xp, p, g, accs, sc, lr, a):
    mu, coeff, wd = a["mu"], a["lars_coeff"], a["lars_weight_decay"]
    p_norm = xp.sqrt((p * p).sum())
    g_norm = xp.sqrt((g * g).sum())
    ok = (p_norm > 0) & (g_norm > 0)
    local_lr = xp.where(ok, lr * coeff * p_norm / xp.where(ok, g_norm + wd * p_norm, 1), lr)
    v = mu * accs["Velocity"] + local_lr * (g + wd * p)
    return {"Param": p - v, "Velocity": v}


def _adam(xp, p, g, accs, sc, lr, a):
    """Adam's step, in place: ``m1 = b1 m1 + (1 - b1) g``, ``m2 = b2 m2 + (1 - b2) g g``,
    ``p -= lr_t * (m1 / (sqrt(m2) + eps))`` (Paddle 1.8: epsilon unscaled), each array written where
    it is, one operation at a time in the formula's order (so the numbers are the formula's; 14
    launches on a device, none of them a copy). Arrays of mixed dtypes take the formula as written."""
    # the attrs in the parameter's type, as Paddle's kernel holds them: 1 - beta1 is then 1 - 0.9f
    # (0.100000024 in float32), not 0.1 rounded
    f = p.dtype.type
    b1, b2, eps = f(a["beta1"]), f(a["beta2"]), f(a["epsilon"])
    m1, m2 = accs["Moment1"], accs["Moment2"]
    lr_t = _adam_lr(xp, lr, sc["Beta1Pow"], sc["Beta2Pow"])
    if not m1.dtype == m2.dtype == g.dtype == p.dtype:   # (in place, a cast would round midway)
        m1 = b1 * m1 + (1 - b1) * g
        m2 = b2 * m2 + (1 - b2) * g * g
        return {"Param": p - lr_t * (m1 / (xp.sqrt(m2) + eps)), "Moment1": m1, "Moment2": m2}
    m1 *= b1
    m1 += (1 - b1) * g
    m2 *= b2
    g2 = (1 - b2) * g
    g2 *= g
    m2 += g2
    step = xp.sqrt(m2)
    step += eps
    xp.divide(m1, step, out=step)
    step *= lr_t
    p -= step
    return {"Param": p, "Moment1": m1, "Moment2": m2}


def _adam_lr(xp, lr, b1p, b2p):
    """``lr * sqrt(1 - b2p) / (1 - b1p)``, the bias-corrected rate. The beta powers live on the host
    on every place (as in Paddle 1.8, whose Adam makes them there: ``UpdateRule.scalars_on_host``),
    so their part is host arithmetic and only the two operations with ``lr`` run where ``lr`` is; where
    a program left them on the device, all of it runs there."""
    on_host = isinstance(b1p, np.ndarray) and isinstance(b2p, np.ndarray)
    return lr * (np if on_host else xp).sqrt(1 - b2p) / (1 - b1p)


def _adamax(xp, p, g, accs, sc, lr, a):
    b1, b2, eps = a["beta1"], a["beta2"], a["epsilon"]
    m = b1 * accs["Moment"] + (1 - b1) * g
    inf = xp.maximum(b2 * accs["InfNorm"] + eps, xp.abs(g))
    p = p - (lr / (1 - sc["Beta1Pow"])) * (m / inf)
    return {"Param": p, "Moment": m, "InfNorm": inf}


def _adagrad(xp, p, g, accs, sc, lr, a):
    m = accs["Moment"] + g * g
    return {"Param": p - lr * g / (xp.sqrt(m) + a["epsilon"]), "Moment": m}


def _decayed_adagrad(xp, p, g, accs, sc, lr, a):
    d = a["decay"]
    m = d * accs["Moment"] + (1 - d) * g * g
    return {"Param": p - lr * g / (xp.sqrt(m) + a["epsilon"]), "Moment": m}


def _rmsprop(xp, p, g, accs, sc, lr, a):
    rho, eps, mom = a["decay"], a["epsilon"], a["momentum"]
    ms = rho * accs["MeanSquare"] + (1 - rho) * g * g
    new = {"MeanSquare": ms}
    if a["centered"]:
        if "MeanGrad" not in accs:
            raise ValueError("op 'rmsprop': centered=True reads a MeanGrad input, and the op has none")
        mg = new["MeanGrad"] = rho * accs["MeanGrad"] + (1 - rho) * g
        denom = xp.sqrt(ms - mg * mg + eps)
    else:
        if "MeanGrad" in accs:     # given but unused: passed through
            new["MeanGrad"] = accs["MeanGrad"]
        denom = xp.sqrt(ms + eps)
    new["Moment"] = m = mom * accs["Moment"] + lr * g / denom
    new["Param"] = p - m
    return new


def _ftrl(xp, p, g, accs, sc, lr, a):
    l1, l2, power = a["l1"], a["l2"], a["lr_power"]
    sq, lin = accs["SquaredAccumulator"], accs["LinearAccumulator"]
    new_sq = sq + g * g
    if power == -0.5:
        new_pow, old_pow = xp.sqrt(new_sq), xp.sqrt(sq)
    else:
        new_pow, old_pow = xp.power(new_sq, -power), xp.power(sq, -power)
    lin = lin + g - (new_pow - old_pow) / lr * p
    x = l1 * xp.sign(lin) - lin
    y = new_pow / lr + 2 * l2
    p = xp.where(xp.abs(lin) > l1, x / y, 0)
    return {"Param": p, "SquaredAccumulator": new_sq, "LinearAccumulator": lin}


def _lamb(xp, p, g, accs, sc, lr, a):
    b1, b2, eps, wd = a["beta1"], a["beta2"], a["epsilon"], a["weight_decay"]
    m1 = b1 * accs["Moment1"] + (1 - b1) * g
    m2 = b2 * accs["Moment2"] + (1 - b2) * g * g
    # no bias correction: Paddle 1.8's kernel takes Beta1Pow / Beta2Pow and leaves them unread
    r = m1 / (xp.sqrt(m2) + eps) + wd * p
    p_norm = xp.sqrt((p * p).sum())
    r_norm = xp.sqrt((r * r).sum())
    ok = (p_norm > 0) & (r_norm > 0)
    trust = xp.where(ok, p_norm / xp.where(ok, r_norm, 1), 1)
    return {"Param": p - lr * trust * r, "Moment1": m1, "Moment2": m2}


@register_op("sgd", inputs=["Param", "Grad", "LearningRate"], outputs=["ParamOut"], infer=no_infer,
             role=OpRole.Optimize, update=UpdateRule(row_wise=_always))
def sgd(ctx, ins, attrs):
    """ParamOut = Param - lr * Grad (in place; a row-sparse Grad touches only its rows). Written out
    rather than through ``_optimizer_op``: it is the hot path of the benchmarks."""
    p, g = ins["Param"], ins["Grad"]
    if isinstance(p, SelectedRows):
        return {"ParamOut": _sgd_on_table(ctx, p, g, _lr(ctx, ins, p.value.dtype))}
    lr = _lr(ctx, ins, p.dtype)
    if isinstance(g, SelectedRows):
        _check_height(ctx, g, p)
        if g.rows is not None and len(g.rows):      # each row's values subtracted in turn, repeats too
            values = g.value.reshape((len(g.rows),) + tuple(p.shape[1:]))
            scatter_add(ctx.xp, p, g.rows, device_fused.negated_product(ctx.xp, values, lr))
        return {"ParamOut": p}
    if g.shape != p.shape:
        _check_same_shape(ctx, "Grad", g, p)
    p -= lr * g
    return {"ParamOut": p}


@register_binder("sgd")
def _bind_sgd(ctx, attrs):
    general = kernel_call(sgd, ctx, attrs, ("Param", "Grad", "LearningRate"), ("ParamOut",))
    on_host = ctx.xp is np

    def call(p, g, lr):     # the kernel's dense case, its checks and its arithmetic
        if p.__class__ is SelectedRows or g.__class__ is SelectedRows or g.shape != p.shape \
                or lr.size != 1:
            return general(p, g, lr)
        # (on a device a [1] rate broadcasts as it is against a gradient of an axis or more: no reshape
        # call; NumPy multiplies by a 0-d array faster than it broadcasts a [1] one)
        if on_host or lr.ndim != 1 or not g.ndim:
            lr = lr.reshape(())
        if lr.dtype != p.dtype:     # (_as_scalar, inline)
            lr = lr.astype(p.dtype)
        p -= lr * g
        return p
    return Bound(call, ("Param", "Grad", "LearningRate"), ("ParamOut",))


def _sgd_on_table(ctx, table, g, lr):
    """SGD of a row-sparse parameter (a table holding some rows, Paddle's sparse-parameter kernel):
    each gradient row updates, in place, the table's value row of the same id."""
    if not isinstance(g, SelectedRows):
        raise ValueError("op 'sgd': parameter %r is a SelectedRows, so its gradient %r must be one too"
                         % (ctx.op.inputs["Param"][0], ctx.op.inputs["Grad"][0]))
    if g.rows is None or len(g.rows) == 0:
        return table
    xp = ctx.xp
    ids, grad_ids = xp.asarray(table.rows).reshape(-1), xp.asarray(g.rows).reshape(-1)
    order = xp.argsort(ids)
    at = xp.minimum(xp.searchsorted(xp.take(ids, order), grad_ids), max(len(ids) - 1, 0))
    positions = xp.take(order, at) if len(ids) else at
    if not len(ids) or not bool(xp.all(xp.take(ids, positions) == grad_ids)):
        raise ValueError("op 'sgd': gradient %r has rows that parameter %r does not hold"
                         % (ctx.op.inputs["Grad"][0], ctx.op.inputs["Param"][0]))
    values = g.value.reshape((len(grad_ids),) + tuple(table.value.shape[1:]))
    scatter_add(xp, table.value, positions, -lr * values)
    return table


_optimizer_op("momentum", {"Velocity": "VelocityOut"}, (), _momentum, _never,
              {"mu": 0.0, "use_nesterov": False},
              "v = mu * v + g; p -= lr * v, or with Nesterov p -= lr * (g + mu * v).")
_optimizer_op("lars_momentum", {"Velocity": "VelocityOut"}, (), _lars_momentum, _never,
              {"mu": 0.0, "lars_coeff": 0.001, "lars_weight_decay": 0.0005},
              "Momentum with the layer-wise rate lr * coeff * |p| / (|g| + wd * |p|).", whole_param=True)
_optimizer_op("adam", {"Moment1": "Moment1Out", "Moment2": "Moment2Out"}, ("Beta1Pow", "Beta2Pow"), _adam,
              lambda a: bool(a["lazy_mode"]),
              {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False,
               "min_row_size_to_use_multithread": 1000},
              "Adam with Paddle's bias correction: lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t); "
              "p -= lr_t * m1 / (sqrt(m2) + eps * sqrt(1 - b2^t)). As in Paddle 1.8 the op advances the "
              "beta powers itself (Beta1PowOut = Beta1Pow * beta1, Beta2PowOut likewise; a program without "
              "those outputs, as Paddle 1.7 built it with scale ops, leaves them alone); Beta1Tensor / "
              "Beta2Tensor, when given, replace the beta1 / beta2 attrs. The beta powers live on the host, "
              "as Paddle 1.8's optimizer makes them (op_device 'cpu'), on a device place too.",
              powers={"Beta1Pow": ("Beta1PowOut", "beta1"), "Beta2Pow": ("Beta2PowOut", "beta2")},
              attr_tensors={"beta1": "Beta1Tensor", "beta2": "Beta2Tensor"}, scalars_on_host=True)
_optimizer_op("adamax", {"Moment": "MomentOut", "InfNorm": "InfNormOut"}, ("Beta1Pow",), _adamax, _never,
              {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
              "m = b1 m + (1-b1) g; u = max(b2 u + eps, |g|); p -= lr / (1 - b1^t) * m / u.")
_optimizer_op("adagrad", {"Moment": "MomentOut"}, (), _adagrad, _always, {"epsilon": 1e-6},
              "m += g^2; p -= lr * g / (sqrt(m) + eps).")
_optimizer_op("decayed_adagrad", {"Moment": "MomentOut"}, (), _decayed_adagrad, _never,
              {"decay": 0.95, "epsilon": 1e-6},
              "m = decay m + (1 - decay) g^2; p -= lr * g / (sqrt(m) + eps).")
_optimizer_op("rmsprop", {"Moment": "MomentOut", "MeanSquare": "MeanSquareOut", "MeanGrad": "MeanGradOut"}, (),
              _rmsprop, _never, {"epsilon": 1e-10, "decay": 0.9, "momentum": 0.0, "centered": False},
              "ms = rho ms + (1-rho) g^2; [mg = rho mg + (1-rho) g]; "
              "mom = momentum mom + lr g / sqrt(ms [- mg^2] + eps); p -= mom. MeanGrad (read when "
              "centered) may be left out otherwise, as in Paddle 1.8.", optional=("MeanGrad",))
_optimizer_op("ftrl", {"SquaredAccumulator": "SquaredAccumOut", "LinearAccumulator": "LinearAccumOut"}, (),
              _ftrl, _always, {"l1": 0.0, "l2": 0.0, "lr_power": -0.5},
              "FTRL-proximal (McMahan et al.), Paddle's form.")
_optimizer_op("lamb", {"Moment1": "Moment1Out", "Moment2": "Moment2Out"}, ("Beta1Pow", "Beta2Pow"), _lamb,
              _never, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6, "weight_decay": 0.01},
              "LAMB as Paddle 1.8 computes it: r = m1 / (sqrt(m2) + eps) + wd p (the moments without bias "
              "correction: Beta1Pow / Beta2Pow are inputs it does not read); p -= lr * (|p| / |r|) * r (a "
              "trust ratio of 1 where |p| or |r| is 0).", whole_param=True)


def _proximal(xp, prox, lr, a):
    """The proximal step of ``proximal_gd`` / ``proximal_adagrad``: L1 soft-thresholding by
    ``lr * l1``, then shrinking by ``1 + lr * l2``."""
    if a["l1"] > 0:
        return xp.sign(prox) * xp.maximum(xp.abs(prox) - lr * a["l1"], 0) / (1 + lr * a["l2"])
    return prox / (1 + lr * a["l2"])


def _proximal_gd(xp, p, g, accs, sc, lr, a):
    return {"Param": _proximal(xp, p - lr * g, lr, a)}


def _proximal_adagrad(xp, p, g, accs, sc, lr, a):
    m = accs["Moment"] + g * g
    return {"Param": _proximal(xp, p - lr * g / xp.sqrt(m), lr, a), "Moment": m}


_optimizer_op("proximal_gd", {}, (), _proximal_gd, _never, {"l1": 0.0, "l2": 0.0},
              "p = prox(p - lr g): sign * max(|.| - lr l1, 0) / (1 + lr l2).")
_optimizer_op("proximal_adagrad", {"Moment": "MomentOut"}, (), _proximal_adagrad, _never, {"l1": 0.0, "l2": 0.0},
              "m += g^2; p = prox(p - lr g / sqrt(m)): sign * max(|.| - lr l1, 0) / (1 + lr l2).")


def _adadelta(xp, p, g, accs, sc, lr, a):
    rho, eps = a["rho"], a["epsilon"]
    asg = rho * accs["AvgSquaredGrad"] + (1 - rho) * g * g
    update = -xp.sqrt((accs["AvgSquaredUpdate"] + eps) / (asg + eps)) * g
    asu = rho * accs["AvgSquaredUpdate"] + (1 - rho) * update * update
    if a["update_state_in_place"]:
        # Paddle 1.8's kernel evaluates the step again for the parameter after writing E[u^2]: where
        # AvgSquaredUpdateOut is AvgSquaredUpdate (as the optimizer builds it) the step reads the new E[u^2]
        update = -xp.sqrt((asu + eps) / (asg + eps)) * g
    return {"Param": p + update, "AvgSquaredGrad": asg, "AvgSquaredUpdate": asu}


def _adadelta_in_place(ctx, attrs):
    return {"update_state_in_place": ctx.op.inputs["AvgSquaredUpdate"] == ctx.op.outputs.get("AvgSquaredUpdateOut")}


_optimizer_op("adadelta", {"AvgSquaredGrad": "AvgSquaredGradOut", "AvgSquaredUpdate": "AvgSquaredUpdateOut"}, (),
              _adadelta, _never, {"rho": 0.95, "epsilon": 1e-6},
              "Adadelta (Zeiler) with Paddle 1.8's numbers, without a learning rate: E[g^2] = rho E[g^2] + "
              "(1-rho) g^2; u = -sqrt((E[u^2] + eps) / (E[g^2] + eps)) g; E[u^2] = rho E[u^2] + (1-rho) u^2; "
              "p += u. Where AvgSquaredUpdateOut is the AvgSquaredUpdate variable (the optimizer's program) "
              "Paddle's kernel computes the parameter's u again from the new E[u^2], and so does this one.",
              uses_lr=False, prepare=_adadelta_in_place)


@register_op("dpsgd", inputs=["Param", "Grad", "LearningRate"], outputs=["ParamOut"],
             attrs={"clip": 10.0, "batch_size": 16.0, "sigma": 1.0, "seed": 0}, infer=no_infer,
             role=OpRole.Optimize, update=UpdateRule(whole_param=True))
def dpsgd(ctx, ins, attrs):
    """Differentially private SGD (Abadi et al., CCS 2016) as Paddle 1.8's op computes it: the
    gradient is scaled down to L2 norm ``clip`` when it is larger, and one Gaussian draw
    ``n ~ N(0, sigma^2)`` per op and step is added as ``n / batch_size`` to every element:
    ``p -= lr * (g / max(1, |g| / clip) + n / batch_size)``. With ``seed`` != 0 the draw is the
    same every step (Paddle re-seeded its engine with ``seed`` on every call); with 0 it is fresh."""
    p, g = ins["Param"], ins["Grad"]
    if isinstance(g, SelectedRows):
        _check_height(ctx, g, p)
        g = _densify(ctx, g, p)
    else:
        _check_same_shape(ctx, "Grad", g, p)
    lr = _lr(ctx, ins, p.dtype)
    xp = ctx.xp
    norm = float(xp.sqrt((g.astype(np.float64) ** 2).sum()))
    scale = norm / attrs["clip"] if norm > attrs["clip"] else 1.0
    seed = int(attrs["seed"] or 0)
    rng = np.random.RandomState(seed) if seed else np.random.RandomState()
    noise = rng.standard_normal() * attrs["sigma"]
    p -= lr * (g / p.dtype.type(scale) + p.dtype.type(noise / attrs["batch_size"]))
    return {"ParamOut": p}


@register_op("lookahead", inputs=["Param", "SlowParam", "Step"], outputs=["ParamOut", "SlowParamOut", "StepOut"],
             attrs={"alpha": 0.5, "k": 5}, infer=no_infer, role=OpRole.Optimize,
             update=UpdateRule(param_like=("SlowParam",), outputs=("SlowParamOut",), scalars=("Step",)))
def lookahead(ctx, ins, attrs):
    """Lookahead (Zhang et al., 2019) after the inner optimizer's update: every ``k``-th step the
    slow weights move ``alpha`` of the way to the fast ones and the fast weights jump to them:
    ``slow = alpha * p + (1 - alpha) * slow; p = slow`` (in place; ``Step`` counts the steps)."""
    p, slow, step = ins["Param"], ins["SlowParam"], ins["Step"]
    _check_same_shape(ctx, "SlowParam", slow, p)
    step += 1
    if int(step.reshape(-1)[0]) % int(attrs["k"]) == 0:
        alpha = p.dtype.type(attrs["alpha"])
        slow[...] = alpha * p + (1 - alpha) * slow
        p[...] = slow
    return {"ParamOut": p, "SlowParamOut": slow, "StepOut": step}


# ------------------------------------------------------------------ norms for gradient clipping
def _values(ctx, x):
    """The array whose norm is wanted: a SelectedRows counts its merged rows once."""
    if isinstance(x, SelectedRows):
        m = x.merged(ctx.xp)
        return m.value if m.value is not None else ctx.xp.zeros((0,), dtype=np.float32)
    return x


@register_op("squared_l2_norm", inputs=["X"], outputs=["Out"],
             infer=lambda c: c.set_output("Out", (1,), c.input_dtype("X")), whole_tensor=True)
def squared_l2_norm(ctx, ins, attrs):
    """Out = sum(X^2), shape [1]."""
    v = _values(ctx, ins["X"])
    return {"Out": (v * v).sum().reshape(1).astype(v.dtype, copy=False)}


@register_grad("squared_l2_norm", inputs=["X", "Out@GRAD"])
def squared_l2_norm_grad(ctx, ins, attrs):
    """dX = 2 * dOut * X (a SelectedRows X: of its merged rows)."""
    x, d = ins["X"], ins["Out@GRAD"]
    if isinstance(x, SelectedRows):
        m = x.merged(ctx.xp)
        value = None if m.value is None else (2 * d.reshape(()) * m.value).astype(m.value.dtype, copy=False)
        return {"X@GRAD": SelectedRows(m.rows, value, m.height)}
    return {"X@GRAD": (2 * d.reshape(()) * x).astype(x.dtype, copy=False)}


@register_op("clip_by_norm", inputs=["X"], outputs=["Out"], attrs={"max_norm": 1.0},
             infer=lambda c: c.share("Out", "X"), whole_tensor=True, keeps_rows=True)
def clip_by_norm(ctx, ins, attrs):
    """Out = X * max_norm / max(|X|_2, max_norm); a SelectedRows X is merged and stays row-sparse."""
    x = ins["X"]
    if isinstance(x, SelectedRows):
        m = x.merged(ctx.xp)
        if m.value is None or len(m.rows) == 0:
            return {"Out": SelectedRows(m.rows, m.value, m.height)}
        return {"Out": SelectedRows(m.rows.copy(), _clip_norm(ctx.xp, m.value, attrs["max_norm"]), m.height)}
    return {"Out": _clip_norm(ctx.xp, x, attrs["max_norm"])}


def _clip_norm(xp, x, max_norm):
    norm = xp.sqrt((x * x).sum())
    scale = xp.where(norm > max_norm, max_norm / xp.where(norm > 0, norm, 1), 1.0)
    return (x * scale).astype(x.dtype, copy=False)
