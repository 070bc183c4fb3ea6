"""Control-flow ops: comparisons, logical ops, ``conditional_block`` (under ``layers.Switch``,
``layers.cond``, ``piecewise_decay``), ``while``, ``select_input`` / ``select_output``, ``is_empty`` and
``print``, with the gradients of the ops that run sub-blocks (``sub_block.py`` holds what those
share)."""
import sys
import time

import numpy as np

from .math import _bcast
from . import sub_block as sb
from .lod_utils import host_bools, merge_lengths, sub_lod
from ..core.scope import Scope
from ..core.tensor import LoDTensorArray
from ..framework.registry import register_grad, register_op

_HOST = 'prints values'


def _cmp_infer(ctx):
    xs, ys = ctx.input_shape("X"), ctx.input_shape("Y")
    out = xs if xs is not None and (ys is None or len(xs) >= len(ys)) else ys
    ctx.set_output("Out", out, "bool", ctx.input_lod_level("X"))


def _compare(type, fn):
    """``Out = X <op> Y`` (bool), Y broadcast against X by Paddle's ``axis`` rule."""
    def kernel(ctx, ins, attrs):
        x, y = ins["X"], ins["Y"]
        if y.ndim > x.ndim:
            return {"Out": fn(_bcast(y, x, attrs["axis"]), y)}
        return {"Out": fn(x, _bcast(x, y, attrs["axis"]))}
    kernel.__doc__ = "Out = X %s Y, elementwise, as bool." % type
    register_op(type, inputs=["X", "Y"], outputs=["Out"], attrs={"axis": -1, "force_cpu": False},
                infer=_cmp_infer)(kernel)


_compare("less_than", lambda x, y: x < y)
_compare("less_equal", lambda x, y: x <= y)
_compare("greater_than", lambda x, y: x > y)
_compare("greater_equal", lambda x, y: x >= y)
_compare("equal", lambda x, y: x == y)
_compare("not_equal", lambda x, y: x != y)


def _logical(type, fn, unary=False):
    if unary:
        register_op(type, inputs=["X"], outputs=["Out"], infer=_cmp_infer)(
            lambda ctx, ins, attrs: {"Out": fn(ctx.xp, ins["X"].astype(bool), None)})
    else:
        register_op(type, inputs=["X", "Y"], outputs=["Out"], infer=_cmp_infer)(
            lambda ctx, ins, attrs: {"Out": fn(ctx.xp, ins["X"].astype(bool), ins["Y"].astype(bool))})


_logical("logical_and", lambda xp, x, y: xp.logical_and(x, y))
_logical("logical_or", lambda xp, x, y: xp.logical_or(x, y))
_logical("logical_xor", lambda xp, x, y: xp.logical_xor(x, y))
_logical("logical_not", lambda xp, x, y: xp.logical_not(x), unary=True)


# ---------------------------------------------------------------------------- conditional_block
def _cond_holds(ctx, conds, is_scalar):
    if is_scalar:
        if len(conds) != 1 or conds[0] is None or conds[0].size != 1:
            raise ValueError("conditional_block: with is_scalar_condition the condition %r must hold one "
                             "value, got shape %s" % (ctx.op.inputs["Cond"][0],
                                                       None if conds[0] is None else list(conds[0].shape)))
        return bool(conds[0].reshape(()))
    # Paddle's rule without a scalar condition: run when every Cond tensor is non-empty
    return all(c is not None and c.size > 0 for c in conds)


def _conditional_block_grad_maker(op, backward):
    sub = op.attrs["sub_block"]
    grad_block, links = backward.grad_block(sub, link=sb.outer_written(sub))
    outs = op.output("Out")
    return [{"type": "conditional_block_grad",
             "inputs": {"Cond": op.input("Cond"), "Input": op.input("Input"), "Out": outs,
                        "Out@GRAD": [n + "@GRAD" for n in outs], "Scope": op.output("Scope")},
             "outputs": {"Input@GRAD": [n + "@GRAD" for n in op.input("Input")]},
             "attrs": {"sub_block": grad_block, "is_scalar_condition": op.attrs["is_scalar_condition"],
                       "original_output_grad": list(links)},
             "optional_grads": True}]


@register_op("conditional_block", inputs=["Cond*", "Input*?"], outputs=["Out*?", "Scope?"],
             attrs={"sub_block": None, "is_scalar_condition": False}, side_effect=True,
             inputs_are_names=True, grad=_conditional_block_grad_maker, takes_backward=True)
def conditional_block(ctx, ins, attrs):
    """Run ``sub_block`` in a child scope when the condition holds.

    Its ops write the ``Out`` variables where they live; its own variables stay in the child scope,
    which the ``Scope`` output keeps (``[scope]``, or ``[]`` when the block did not run) for the
    gradient. ``Input`` lists what the sub-block reads from outside, for graph passes."""
    sub = attrs["sub_block"]
    if sub is None:
        raise ValueError("conditional_block: attr 'sub_block' is not set")
    conds = [ctx.find_value(n) for n in ctx.op.inputs["Cond"]]
    ran = []
    if _cond_holds(ctx, conds, attrs["is_scalar_condition"]):
        child = Scope(ctx.scope)
        ctx.run_sub_block(sub, child)
        ran.append(child)
    return {"Scope": ran} if ctx.op.outputs.get("Scope") else {}


@register_grad("conditional_block", inputs=["Cond*", "Input*?", "Out*?", "Out@GRAD*?", "Scope?"],
               attrs={"original_output_grad": []}, inputs_are_names=True)
def conditional_block_grad(ctx, ins, attrs):
    """When the block ran: its gradient block runs in a child of the scope the forward block ran in,
    given the gradients of ``Out``; ``Input@GRAD`` is what it gives for each input. When it did not
    run, an input it would have overwritten passes its gradient through, the others get zeros."""
    op = ctx.op
    scope = ctx.scope
    ran = scope._find_value(op.input("Scope")[0]) if op.input("Scope") else None
    og = sb.outer_grads(scope, op.input("Out"), op.input("Out@GRAD"))
    inputs = op.input("Input")
    if ran:
        grads = sb.GradRun(ctx, attrs["sub_block"], attrs["original_output_grad"], og)
        step = grads.run_step(ran[0])
        results = [grads.given(step, x) for x in inputs]
    else:
        results = [og.get(x) for x in inputs]
    return {"Input@GRAD": sb.finish(ctx, "Input@GRAD", inputs, results)}


# ---------------------------------------------------------------------------- while
def _cond_value(ctx, scope, name):
    v = scope._find_value(name)
    if v is None or getattr(v, "size", 0) != 1:
        raise ValueError("while: the condition %r must be a bool tensor holding one value, got %s"
                         % (name, None if v is None else "shape %s" % list(getattr(v, "shape", ()))))
    return bool(v.reshape(()))


def _while_grad_maker(op, backward):
    sub = op.attrs["sub_block"]
    grad_block, links = backward.grad_block(sub, link=sb.outer_written(sub))
    outs = op.output("Out")
    return [{"type": "while_grad",
             "inputs": {"X": op.input("X"), "Out": outs, "Out@GRAD": [n + "@GRAD" for n in outs],
                        "StepScopes": op.output("StepScopes")},
             "outputs": {"X@GRAD": [n + "@GRAD" for n in op.input("X")]},
             "attrs": {"sub_block": grad_block, "original_output_grad": list(links),
                       "is_test": False, "skip_eager_deletion_vars": []},
             "optional_grads": True}]


@register_op("while", inputs=["X*", "Condition"], outputs=["Out*", "StepScopes"],
             attrs={"sub_block": None, "is_test": False, "skip_eager_deletion_vars": []},
             side_effect=True, inputs_are_names=True, grad=_while_grad_maker, takes_backward=True)
def while_op(ctx, ins, attrs):
    """Run ``sub_block`` while ``Condition`` (a bool ``[1]`` the block updates) holds, each step in a
    new child scope.

    For training (``is_test`` false) the step scopes are kept in ``StepScopes`` for ``while_grad``,
    each with the values that the outer variables the step overwrites had when it began (Paddle's
    rule: not those an op updates in place, such as a counter ``increment``ed: its reverse restores
    them); tensor arrays are shared by all steps, each step using its own items."""
    sub = attrs["sub_block"]
    if sub is None:
        raise ValueError("while: attr 'sub_block' is not set")
    cond = ctx.op.input("Condition")[0]
    scope = ctx.scope
    keep = not attrs["is_test"]
    snap = sb.step_snapshot_names(ctx.op.input("X"), sub) if keep else ()
    steps = []
    while _cond_value(ctx, scope, cond):
        step = Scope(scope)
        saved = [(n, scope._find_value(n), scope._find_lod(n)) for n in snap]
        ctx.run_sub_block(sub, step)
        if keep:
            for n, v, lod in saved:
                if v is not None and not isinstance(v, LoDTensorArray):
                    step.vals[n] = v
                    step._set_lod_here(n, lod)
            steps.append(step)
    return {"StepScopes": steps}


@register_grad("while", inputs=["X*", "Out*", "Out@GRAD*?", "StepScopes"],
               attrs={"original_output_grad": []}, inputs_are_names=True)
def while_grad(ctx, ins, attrs):
    """The gradient block runs once per step, last step first, in a child of that step's scope.

    The gradient of an outer variable the loop overwrites flows from step to step: what the
    gradient block gives for its value at the start of a step is what the step before receives (and
    nothing, where the step does not read it before writing it). Gradients of variables the loop only
    reads (parameters) are summed over the steps. Tensor-array gradients are one array for all
    steps."""
    op = ctx.op
    scope = ctx.scope
    steps = scope._find_value(op.input("StepScopes")[0]) or []
    xs = op.input("X")
    og = sb.outer_grads(scope, op.input("Out"), op.input("Out@GRAD"))
    grads = sb.GradRun(ctx, attrs["sub_block"], attrs["original_output_grad"], og)
    total = {}
    for step in reversed(steps):
        g = grads.run_step(step)
        for x in xs:
            if x not in grads.written:
                total[x] = sb.add_grads(total.get(x), grads.given(g, x))
    results = [grads.running.get(x) if x in grads.written or grads.is_array(x) else total.get(x) for x in xs]
    return {"X@GRAD": sb.finish(ctx, "X@GRAD", xs, results)}


# ---------------------------------------------------------------------------- select_input / output
def _mask(ctx):
    m = ctx.find_value(ctx.op.input("Mask")[0])
    if m is None or m.size != 1:
        raise ValueError("op %r: Mask %r must hold one integer" % (ctx.op.type, ctx.op.input("Mask")[0]))
    return int(m.reshape(()))


def _branch(ctx, names, k, what):
    if not 0 <= k < len(names):
        raise ValueError("op %r: Mask is %d but there are %d %s" % (ctx.op.type, k, len(names), what))
    return names[k]


@register_op("select_input", inputs=["X*", "Mask"], outputs=["Out"], inputs_are_names=True,
             infer=lambda c: c.share("Out", "X"))
def select_input(ctx, ins, attrs):
    """``Out = X[Mask]``: only the chosen input is read (the others may have no value)."""
    name = _branch(ctx, ctx.op.input("X"), _mask(ctx), "inputs")
    v = ctx.find_value(name)
    if v is None:
        raise ValueError("op 'select_input': the chosen input %r has no value" % name)
    ctx.set_lod("Out", ctx.lod(name))
    return {"Out": v}


@register_grad("select_input", inputs=["Mask", "Out@GRAD"], inputs_are_names=True)
def select_input_grad(ctx, ins, attrs):
    names = ctx.op.output("X@GRAD")
    k = _mask(ctx)
    _branch(ctx, names, k, "inputs")
    out = [None] * len(names)
    out[k] = ctx.find_value(ctx.op.input("Out@GRAD")[0])
    return {"X@GRAD": out}


@register_op("select_output", inputs=["X", "Mask"], outputs=["Out*"], inputs_are_names=True)
def select_output(ctx, ins, attrs):
    """``Out[Mask] = X``; the other outputs are left as they are."""
    names = ctx.op.output("Out")
    k = _mask(ctx)
    _branch(ctx, names, k, "outputs")
    out = [None] * len(names)
    out[k] = ctx.find_value(ctx.op.input("X")[0])
    ctx.set_lod("Out", ctx.lod(ctx.op.input("X")[0]), k)
    return {"Out": out}


@register_grad("select_output", inputs=["Mask", "Out@GRAD*"], inputs_are_names=True)
def select_output_grad(ctx, ins, attrs):
    name = _branch(ctx, ctx.op.input("Out@GRAD"), _mask(ctx), "outputs")
    return {"X@GRAD": ctx.find_value(name)}


# ---------------------------------------------------------------------------- is_empty
@register_op("is_empty", inputs=["X"], outputs=["Out"], infer=lambda c: c.set_output("Out", [1], "bool"))
def is_empty(ctx, ins, attrs):
    return {"Out": ctx.xp.asarray([ins["X"].size == 0])}


# ---------------------------------------------------------------------------- split / merge by mask
def _mask_units(ctx, mask, x, lod, level):
    """(mask as host bools, row ranges of the units it picks among, the per-unit LoD lengths)."""
    m = host_bools(mask)
    if lod and level < len(lod):
        n = len(lod[level]) - 1
        ranges, lengths = [], []
        for i in range(n):
            b, e, ls = sub_lod(lod, level, i, i + 1)
            ranges.append((b, e))
            lengths.append(ls)
    else:
        n = x.shape[0]
        ranges, lengths = [(i, i + 1) for i in range(n)], None
    if m.size != n:
        raise ValueError("op %r: Mask %r has %d values for %d %s of X" % (
            ctx.op.type, ctx.op.input("Mask")[0], m.size, n, "sequences" if lengths is not None else "rows"))
    return m, ranges, lengths


def _split(ctx, x, mask, lod, level):
    xp = ctx.xp
    m, ranges, lengths = _mask_units(ctx, mask, x, lod, level)
    sides = {}
    for flag in (True, False):
        idx = [i for i in range(len(ranges)) if m[i] == flag]
        rows = np.concatenate([np.arange(*ranges[i]) for i in idx]) if idx else np.zeros(0, np.int64)
        sides[flag] = (x[xp.asarray(rows.astype(np.int64))],
                       merge_lengths([lengths[i] for i in idx]) if lengths is not None else [])
    return sides


def _merge(ctx, like, mask, lod, level, parts):
    """Rows of ``parts[True]`` / ``parts[False]`` ((value, lod) each) back in the order ``mask`` gives."""
    xp = ctx.xp
    m, ranges, lengths = _mask_units(ctx, mask, like, lod, level)
    pos = {True: 0, False: 0}
    pieces = []
    for i in range(len(ranges)):
        flag = bool(m[i])
        value, vlod = parts[flag]
        if vlod:
            b, e, _ = sub_lod(vlod, 0, pos[flag], pos[flag] + 1)
        else:
            b, e = pos[flag], pos[flag] + 1
        pos[flag] += 1
        pieces.append(value[b:e])
    ref = parts[True][0] if parts[True][0] is not None and parts[True][0].shape[0] else parts[False][0]
    out = xp.concatenate(pieces) if pieces else ref[:0]
    return out, (merge_lengths(lengths) if lengths is not None else [])


@register_op("split_lod_tensor", host_inputs=("Mask",), inputs=["X", "Mask"], outputs=["OutTrue", "OutFalse"], attrs={"level": 0},
             no_grad=("Mask",),
             infer=lambda c: (c.share("OutTrue", "X"), c.share("OutFalse", "X")))
def split_lod_tensor(ctx, ins, attrs):
    """The rows (or the sequences of LoD level ``level``) of ``X`` where ``Mask`` holds, and the others."""
    sides = _split(ctx, ins["X"], ins["Mask"], ctx.lod("X"), attrs["level"])
    ctx.set_lod("OutTrue", sides[True][1])
    ctx.set_lod("OutFalse", sides[False][1])
    return {"OutTrue": sides[True][0], "OutFalse": sides[False][0]}


@register_grad("split_lod_tensor", inputs=["X", "Mask", "OutTrue@GRAD?", "OutFalse@GRAD?"])
def split_lod_tensor_grad(ctx, ins, attrs):
    x = ins["X"]
    sides = _split(ctx, x, ins["Mask"], ctx.lod("X"), attrs["level"])
    parts = {}
    for flag, slot in ((True, "OutTrue@GRAD"), (False, "OutFalse@GRAD")):
        g = ins.get(slot)
        parts[flag] = (g if g is not None else ctx.xp.zeros_like(sides[flag][0]), sides[flag][1])
    out, _ = _merge(ctx, x, ins["Mask"], ctx.lod("X"), attrs["level"], parts)
    ctx.set_lod("X@GRAD", ctx.lod("X"))
    return {"X@GRAD": out}


@register_op("merge_lod_tensor", host_inputs=("Mask",), inputs=["X", "Mask", "InTrue", "InFalse"], outputs=["Out"], attrs={"level": 0},
             no_grad=("X", "Mask"), infer=lambda c: c.share("Out", "InTrue"))
def merge_lod_tensor(ctx, ins, attrs):
    """The inverse of ``split_lod_tensor``: ``X`` gives the LoD (or the rows) the mask refers to."""
    parts = {True: (ins["InTrue"], ctx.lod("InTrue")), False: (ins["InFalse"], ctx.lod("InFalse"))}
    out, lod = _merge(ctx, ins["X"], ins["Mask"], ctx.lod("X"), attrs["level"], parts)
    ctx.set_lod("Out", lod)
    return {"Out": out}


register_op("merge_lod_tensor_infer", host_inputs=("Mask",), inputs=["X", "Mask", "InTrue", "InFalse"],
            outputs=["Out"], attrs={"level": 0}, infer=lambda c: c.share("Out", "InTrue"))(
    merge_lod_tensor)   # the inference form Paddle's passes write: the same merge, no gradient


@register_grad("merge_lod_tensor", inputs=["X", "Mask", "Out@GRAD"])
def merge_lod_tensor_grad(ctx, ins, attrs):
    sides = _split(ctx, ins["Out@GRAD"], ins["Mask"], ctx.lod("X"), attrs["level"])
    ctx.set_lod("InTrue@GRAD", sides[True][1])
    ctx.set_lod("InFalse@GRAD", sides[False][1])
    return {"InTrue@GRAD": sides[True][0], "InFalse@GRAD": sides[False][0]}


# ---------------------------------------------------------------------------- print
_TYPE_CODES = {"float32": "f", "float64": "d", "float16": "N5paddle8platform7float16E", "int32": "i",
               "int64": "l", "bool": "b", "int8": "a", "uint8": "h", "int16": "s"}


def _format_tensor(name, value, lod, attrs):
    host = np.asarray(value)
    lines = ["Tensor[%s]" % name] if attrs["print_tensor_name"] else []
    if attrs["print_tensor_shape"]:
        lines.append("\tshape: [%s]" % "".join("%d," % d for d in host.shape))
    if attrs["print_tensor_type"]:
        lines.append("\tdtype: %s" % _TYPE_CODES.get(host.dtype.name, host.dtype.name))
    if attrs["print_tensor_lod"] and lod:
        lines.append("\tLoD: [%s]" % ", ".join("[ %s ]" % "".join("%d," % o for o in level) for level in lod))
    flat = host.reshape(-1)
    n = flat.size if attrs["summarize"] < 0 else min(flat.size, attrs["summarize"])
    fmt = (lambda v: "%g" % v) if host.dtype.kind == "f" else (lambda v: "%d" % v)
    lines.append("\tdata: %s" % "".join(fmt(v) + "," for v in flat[:n]))
    return "\n".join(lines)


def _print_grad_maker(op):
    attrs = {k: v for k, v in op.attrs.items() if k not in ("op_role", "op_role_var", "op_namescope")}
    attrs["is_forward"] = False
    return [{"type": "print", "inputs": {"In": [n + "@GRAD" for n in op.output("Out")]},
             "outputs": {"Out": [n + "@GRAD" for n in op.input("In")]}, "attrs": attrs}]


@register_op("print", host=_HOST, inputs=["In"], outputs=["Out"], share_lod=("In", "Out"), side_effect=True,
             attrs={"first_n": -1, "message": "", "summarize": 20, "print_tensor_name": True,
                    "print_tensor_type": True, "print_tensor_shape": True, "print_tensor_lod": True,
                    "print_phase": "BOTH", "is_forward": True},
             infer=lambda c: c.share("Out", "In"), grad=_print_grad_maker)
def print_op(ctx, ins, attrs):
    """Prints ``In`` to stdout (in the forward pass, the backward one or both, by ``print_phase``) and
    passes it on. ``first_n`` > 0: only the first ``first_n`` times this op runs."""
    phase = attrs["print_phase"]
    if phase == "BOTH" or (phase == "FORWARD") == bool(attrs["is_forward"]):
        counts = ctx.executor.__dict__.setdefault("_print_counts", {})
        key = id(ctx.op)
        counts[key] = counts.get(key, 0) + 1
        if attrs["first_n"] <= 0 or counts[key] <= attrs["first_n"]:
            name = ctx.op.input("In")[0]
            head = "%d\t%s\tThe place is:%s" % (int(time.time()), attrs["message"], ctx.place)
            sys.stdout.write(head + "\n" + _format_tensor(name, ins["In"], ctx.lod("In"), attrs) + "\n")
            sys.stdout.flush()
    return {"Out": ins["In"]}
