"""A plan's block as one generated Python function, compiled once per plan (as torch.fx turns a
graph into code): straight-line calls with the kernels, their contexts and attrs bound as globals
and the variable names as constants, so that a step pays no per-op lookup.

An op whose registry entry has a binder (``registry.Bound``) is called as a plain function of its
arrays, its results stored straight into the scope's values::

    vals['fc_0.tmp_0'] = b0(vals['x'], vals['fc_0.w_0'])

the others through their kernel, with the ``ins`` dict literal and the outputs it returns::

    _o = k5(c5, {'X': vals['a'], 'Y': vals['b']}, a5)
    if _o:
        _v = _o.get('Out') ...

The function keeps no per-op bookkeeping: when a kernel raises, the line the traceback stops at
names the step, and the error is annotated with its op (type, index, block). A missing input
(``KeyError`` on an input name: a value living in a parent scope, or none at all) returns that
step's index, and the plan's interpreter carries on from there (it finds the value up the scope
chain or names the missing variable).
"""
from __future__ import annotations

from ..framework.registry import Bound


def bind(step, opdef):
    """The ``Bound`` form of ``step``'s kernel from its entry's binder, or None: no binder, the
    binder declines (or cannot bind these attrs: the kernel then runs and reports), or its slots are
    not exactly the op's own (each slot one variable, none duplicable, none that may hold no value)."""
    if opdef.binder is None:
        return None
    try:
        bound = opdef.binder(step.ctx, step.attrs)
    except Exception:   # odd attrs the kernel itself reports at run time, naming the op
        return None
    if not isinstance(bound, Bound):
        return None
    if sorted(bound.inputs) != sorted(slot for slot, _, _ in step.ins) or \
            sorted(bound.outputs) != sorted(slot for slot, _, _ in step.outs):
        return None
    if any(dup or len(names) != 1 for _, names, dup in step.ins + step.outs) or step.valueless:
        return None
    return bound


def compile_plan(plan, annotate):
    """``f(vals, lods)`` running ``plan.steps`` in order on a scope's values and LoDs: None when done,
    or the index of the step whose input ``vals`` lacks. ``annotate(error, step)`` raises a kernel's
    error named by its op."""
    env = {"steps": plan.steps, "annotate": annotate}
    lines = ["def _run(vals, lods):", "    try:"]
    line_step = [None] * len(lines)      # the step each generated line belongs to
    held = {}   # variable -> the local holding its value (see _bound_lines)
    for i, st in enumerate(plan.steps):
        env["c%d" % i], env["a%d" % i] = st.ctx, st.attrs
        if st.bound is not None:
            code = _bound_lines(st, i, env, held)
        else:
            held.clear()
            code = _kernel_lines(st, i, env)
        if st.share_lod is not None:
            code.append("if lods and %r in lods:" % st.share_lod[0])
            code.append("    lods[%r] = lods[%r]" % (st.share_lod[1], st.share_lod[0]))
        lines.extend("        " + c for c in code)
        line_step.extend([i] * len(code))
        st.in_names = {n for _, names, _ in st.ins for n in names}
    lines += ["        return None",
              "    except KeyError as e:",
              "        i = at[e.__traceback__.tb_lineno - 1]",
              "        if e.args and e.args[0] in steps[i].in_names:",
              "            return i",
              "        annotate(e, steps[i])",
              "    except Exception as e:",
              "        annotate(e, steps[at[e.__traceback__.tb_lineno - 1]])"]
    env["at"] = tuple(line_step)
    source = "\n".join(lines)
    exec(compile(source, "<fluidist plan of block %d>" % plan.block.idx, "exec"), env)
    run = env["_run"]
    run.source = source
    return run


def _bound_lines(st, i, env, held):
    """The bound call, its inputs read and its results stored under the op's output names.

    Values also live in locals (``v3``) from one bound step to the next: a bound call writes its
    own outputs only, so a local read where ``vals`` was last written or read stays equal to it; a
    kernel step (it may write any variable of the scope: sub-blocks, ``ctx.scope``) drops them all
    (``held.clear()``). Every value still lands in ``vals``, as the scope holds every variable."""
    bound = st.bound
    env["b%d" % i] = bound.call
    in_names = {slot: names[0] for slot, names, _ in st.ins}
    out_names = {slot: names[0] for slot, names, _ in st.outs}
    code, args = [], []
    for slot in bound.inputs:
        name = in_names[slot]
        if name not in held:
            held[name] = "v%d" % len(held)
            code.append("%s = vals[%r]" % (held[name], name))
        args.append(held[name])
    results = []
    for slot in bound.outputs:
        name = out_names[slot]
        local = held[name] = held.get(name) or "v%d" % len(held)
        results.append(local)
    code.append("%s = b%d(%s)" % (", ".join(results), i, ", ".join(args)))
    code.extend("vals[%r] = %s" % (out_names[s], held[out_names[s]]) for s in bound.outputs)
    return code


def _kernel_lines(st, i, env):
    """The kernel called with its ``ins`` dict; each output it gives (not None) stored."""
    env["k%d" % i] = st.kernel
    parts = []
    for slot, names, dup in st.ins:
        # an input that may hold no value (registry fact valueless_inputs) is None where it has none
        get = "vals.get(%r)" if slot in st.valueless else "vals[%r]"
        got = ["None" if n in st.undeclared else get % n for n in names]
        parts.append("%r: [%s]" % (slot, ", ".join(got)) if dup else "%r: %s" % (slot, got[0]))
    code = ["_o = k%d(c%d, {%s}, a%d)" % (i, i, ", ".join(parts), i)]
    if st.outs:
        code.append("if _o:")
        for slot, names, dup in st.outs:
            code.append("    _v = _o.get(%r)" % slot)
            code.append("    if _v is not None:")
            if dup:
                for j, n in enumerate(names):
                    code.append("        if _v[%d] is not None: vals[%r] = _v[%d]" % (j, n, j))
            else:
                code.append("        vals[%r] = _v" % names[0])
    return code
