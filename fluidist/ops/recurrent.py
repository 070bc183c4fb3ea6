"""``recurrent`` (what ``StaticRNN`` builds): a sub-block run once per slice of its inputs along the
first (time) dimension, with memories carried from step to step; ``recurrent_grad`` runs the
gradient block back over the steps. ``rnn_memory_helper`` is the identity the RNN blocks put
between a step's variables and what leaves the step."""
from ..core.scope import Scope
from ..framework.program import _strip_grad, grad_var_name
from ..framework.registry import register_grad, register_op
from . import sub_block as sb

_ATTRS: dict = {"ex_states": [], "states": [], "sub_block": None, "reverse": False, "is_train": True,
          "has_states": False, "skip_eager_deletion_vars": []}


def _time_order(n, reverse):
    return list(range(n - 1, -1, -1)) if reverse else list(range(n))


def _values(ctx, names, what):
    out = []
    for n in names:
        v = ctx.find_value(n)
        if v is None:
            raise ValueError("op %r: %s %r has no value" % (ctx.op.type, what, n))
        out.append(v)
    return out


def _recurrent_grad_maker(op, backward):
    sub = op.attrs["sub_block"]
    grad_block, links = backward.grad_block(sub, link=op.output("outputs") + list(op.attrs["states"]))
    attrs = {k: op.attrs[k] for k in _ATTRS if k in op.attrs}
    attrs.update(sub_block=grad_block, original_output_grad=list(links))
    outs = op.output("outputs")
    return [{"type": "recurrent_grad",
             "inputs": {"inputs": op.input("inputs"), "initial_states": op.input("initial_states"),
                        "parameters": op.input("parameters"), "outputs": outs,
                        "outputs@GRAD": [n + "@GRAD" for n in outs], "step_scopes": op.output("step_scopes")},
             "outputs": {"inputs@GRAD": [n + "@GRAD" for n in op.input("inputs")],
                         "initial_states@GRAD": [n + "@GRAD" for n in op.input("initial_states")],
                         "parameters@GRAD": [n + "@GRAD" for n in op.input("parameters")]},
             "attrs": attrs, "optional_grads": True}]


@register_op("recurrent", inputs=["inputs*", "initial_states*?", "parameters*?"],
             outputs=["outputs*", "step_scopes"], attrs=_ATTRS, side_effect=True, inputs_are_names=True,
             grad=_recurrent_grad_maker, takes_backward=True)
def recurrent(ctx, ins, attrs):
    """Step ``t`` (last to first with ``reverse``) runs the sub-block in a new child scope where each
    input's name holds its slice ``[t]`` and each ``ex_states`` name the memory: the initial state at
    the first step, then the ``states`` variable of the step before. Each output is the stack of the
    step values of the variable of the same name."""
    op = ctx.op
    sub = attrs["sub_block"]
    names = op.input("inputs")
    xs = _values(ctx, names, "input")
    if not xs:
        raise ValueError("op 'recurrent': it needs at least one input to step over")
    seq_len = xs[0].shape[0]
    for n, x in zip(names, xs):
        if x.shape[0] != seq_len:
            raise ValueError("op 'recurrent': input %r has %d steps but %r has %d"
                             % (n, x.shape[0], names[0], seq_len))
    ex_states, states = list(attrs["ex_states"]), list(attrs["states"])
    inits = _values(ctx, op.input("initial_states"), "initial state")
    if not (len(ex_states) == len(states) == len(inits)):
        raise ValueError("op 'recurrent': %d ex_states, %d states and %d initial_states must match"
                         % (len(ex_states), len(states), len(inits)))
    steps, prev = [], None
    for t in _time_order(seq_len, attrs["reverse"]):
        step = Scope(ctx.scope)
        for n, x in zip(names, xs):
            step.vals[n] = x[t]
        for e, s, init in zip(ex_states, states, inits):
            step.vals[e] = init if prev is None else prev.vals[s]
        ctx.run_sub_block(sub, step)
        steps.append((t, step))
        prev = step
    by_time = [s for _, s in sorted(steps, key=lambda p: p[0])]
    outs = []
    for o in op.output("outputs"):
        vals = [s.vals.get(o) for s in by_time]
        if any(v is None for v in vals):
            raise ValueError("op 'recurrent': the step block does not produce output %r" % o)
        outs.append(ctx.xp.stack(vals))
    return {"outputs": outs, "step_scopes": steps if attrs["is_train"] else []}


@register_grad("recurrent", inputs=["inputs*", "initial_states*?", "parameters*?", "outputs*",
                                    "outputs@GRAD*?", "step_scopes"],
               attrs={"original_output_grad": []}, inputs_are_names=True)
def recurrent_grad(ctx, ins, attrs):
    """The gradient block runs back over the steps in a child of each step's scope, given the slice
    ``[t]`` of each output's gradient and the gradient of ``states`` from the step after; it gives the
    input slices' gradients, the memories' (``ex_states``) gradients for the step before, and
    parameter gradients, summed over the steps."""
    op = ctx.op
    scope = ctx.scope
    steps = scope._find_value(op.input("step_scopes")[0]) or []
    if not steps:
        raise ValueError("op 'recurrent_grad': the forward recurrent op kept no step scopes (is_train is off?)")
    ex_states, states = list(attrs["ex_states"]), list(attrs["states"])
    outs = op.input("outputs")
    og = sb.outer_grads(scope, outs, op.input("outputs@GRAD"))
    links = {_strip_grad(inside): inside for inside in attrs["original_output_grad"]}
    grad_block = attrs["sub_block"]
    written = {n for o in grad_block.ops for n in o.output_arg_names}
    inputs, params = op.input("inputs"), op.input("parameters")
    input_grads = {n: [None] * len(steps) for n in inputs}
    param_totals = {}
    carry = {}          # state name -> gradient from the step after
    for k in range(len(steps) - 1, -1, -1):
        t, step = steps[k]
        g = Scope(step)
        for n, inside in links.items():
            if n in og:
                value = og[n][0][t]
            elif n in carry:
                value = carry[n]
            else:
                value = sb.zeros_for(step._find_value(n))
            g.vals[inside] = value
        ctx.run_sub_block(grad_block, g)
        for n in inputs:
            input_grads[n][t] = _given(g, written, n)
        for n in params:
            got = _given(g, written, n)
            if got is not None:
                param_totals[n] = sb.add_grads(param_totals.get(n), (got, []))
        carry = {}
        for e, s in zip(ex_states, states):
            got = _given(g, written, e)
            if got is not None:
                carry[s] = got
    xp = ctx.xp
    results = {}
    x_grads = []
    for n in inputs:
        parts = input_grads[n]
        x = ctx.find_value(n)
        x_grads.append((xp.stack([p if p is not None else xp.zeros_like(x[t]) for t, p in enumerate(parts)]), []))
    results["inputs@GRAD"] = sb.finish(ctx, "inputs@GRAD", inputs, x_grads)
    inits = op.input("initial_states")
    results["initial_states@GRAD"] = sb.finish(
        ctx, "initial_states@GRAD", inits, [(carry[s], []) if s in carry else None for s in states])
    results["parameters@GRAD"] = sb.finish(ctx, "parameters@GRAD", params, [param_totals.get(n) for n in params])
    return results


def _given(g, written, name):
    grad = grad_var_name(name)
    return g.vals.get(grad) if grad in written else None


@register_op("rnn_memory_helper", inputs=["X"], outputs=["Out"], attrs={"dtype": "float32"},
             share_lod=("X", "Out"), infer=lambda c: c.share("Out", "X"))
def rnn_memory_helper(ctx, ins, attrs):
    """``Out = X``: marks what a step hands out (a memory for the next step, a step output)."""
    return {"Out": ins["X"]}


@register_grad("rnn_memory_helper", inputs=["Out@GRAD?", "X?"], valueless_inputs=("Out@GRAD",))
def rnn_memory_helper_grad(ctx, ins, attrs):
    """``X@GRAD = Out@GRAD``; where no gradient reached Out (no value), zeros shaped like X, as
    Paddle's kernel writes."""
    g = ins.get("Out@GRAD")
    if g is None:
        x = ins.get("X")
        if x is None:
            raise ValueError("op 'rnn_memory_helper_grad': Out@GRAD has no value and no X gives the "
                             "gradient's shape")
        return {"X@GRAD": ctx.xp.zeros(x.shape, dtype=x.dtype)}
    return {"X@GRAD": g}
