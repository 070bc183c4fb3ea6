"""Gradient merge (Paddle's multi-batch merge): ``k`` micro-batches accumulate their gradients,
then one update runs on their average (or sum) — equal to one step on the ``k`` batches
concatenated, with ``k`` times less memory for activations.

``apply_gradient_merge(main, startup, k_steps, avg)`` rewrites ``main`` in place:

- after backward, each parameter's gradient ``g`` is added into a persistable ``g@GRAD_MERGE``
  (``sum``), and a persistable ``@GRAD_MERGE_STEP@`` counter is incremented;
- every op of the update (op roles Optimize and LR-schedule: clipping, regularization, the update
  ops, learning-rate schedules, model averaging) moves into a ``conditional_block`` that runs when
  the counter is a multiple of ``k``; it first sets ``g = g@GRAD_MERGE / k`` (``avg``, the default)
  or ``= g@GRAD_MERGE``, and ends by zeroing the accumulators. So learning-rate schedules and
  Adam's beta powers advance once per update, not per micro-batch.

``startup`` gets the accumulators' and the counter's zero fills. The new ops carry the Optimize
role, so ``CompiledProgram.with_data_parallel`` all-reduces each micro-batch's gradients before
they are accumulated, and the collective transpiler's all-reduce ops (which follow the gradients'
producers) come before them too: the pass works the same locally, data parallel and in Fleet.
"""
from ..framework.op_role import OP_ROLE_ATTR, OpRole, backward_param_grads

STEP_VAR = "@GRAD_MERGE_STEP@"
ACC_SUFFIX = "@GRAD_MERGE"


def _update_op(op):
    role = int(op.attr(OP_ROLE_ATTR) or 0)
    return bool(role & (OpRole.Optimize | OpRole.LRSched)) and not role & OpRole.Backward


def _zero_fill(startup, var):
    sb = startup.global_block()
    v = sb.create_var(name=var.name, shape=var.shape, dtype=var.dtype, persistable=True)
    sb.append_op("fill_constant", outputs={"Out": [v]},
                 attrs={"shape": [int(d) for d in var.shape], "dtype": var.dtype, "value": 0.0})


def apply_gradient_merge(main, startup, k_steps, avg=True):
    """Rewrite ``main`` (in place) to update every ``k_steps`` micro-batches; returns ``main``."""
    k = int(k_steps)
    if k < 1:
        raise ValueError("gradient merge: k_steps must be >= 1, got %r" % (k_steps,))
    if k == 1:
        return main
    block = main.global_block()
    if block.has_var(STEP_VAR):
        raise ValueError("gradient merge was already applied to this program")
    pairs = backward_param_grads(block)
    if not pairs:
        raise ValueError("gradient merge: the program has no backward ops with parameter gradients "
                         "(apply it after minimize)")
    moved = [op for op in block.ops if _update_op(op)]
    if not moved:
        raise ValueError("gradient merge: the program has no optimize ops (apply it after minimize)")
    moved_ids = {id(op) for op in moved}
    block.ops = [op for op in block.ops if id(op) not in moved_ids]

    opt = {OP_ROLE_ATTR: int(OpRole.Optimize)}
    accs = []
    for p, g in pairs:
        gv, pv = block.var(g), block._find_var_recursive(p)
        acc = block.create_var(name=g + ACC_SUFFIX, shape=pv.shape, dtype=pv.dtype, persistable=True,
                               stop_gradient=True)
        _zero_fill(startup, acc)
        block.append_op("sum", inputs={"X": [acc, gv]}, outputs={"Out": [acc]},
                        attrs=dict(opt, op_role_var=[p, g]))
        accs.append((acc, gv))
    step = block.create_var(name=STEP_VAR, shape=[1], dtype="int64", persistable=True, stop_gradient=True)
    _zero_fill(startup, step)
    block.append_op("increment", inputs={"X": [step]}, outputs={"Out": [step]}, attrs=dict(opt, step=1.0))
    k_var = block.create_var(name=STEP_VAR + "@K", shape=[1], dtype="int64", stop_gradient=True)
    block.append_op("fill_constant", outputs={"Out": [k_var]},
                    attrs=dict(opt, shape=[1], dtype="int64", value=float(k)))
    rem = block.create_var(name=STEP_VAR + "@MOD", shape=[1], dtype="int64", stop_gradient=True)
    block.append_op("elementwise_mod", inputs={"X": [step], "Y": [k_var]}, outputs={"Out": [rem]}, attrs=dict(opt))
    zero = block.create_var(name=STEP_VAR + "@ZERO", shape=[1], dtype="int64", stop_gradient=True)
    block.append_op("fill_constant", outputs={"Out": [zero]}, attrs=dict(opt, shape=[1], dtype="int64", value=0.0))
    cond = block.create_var(name=STEP_VAR + "@UPDATE", shape=[1], dtype="bool", stop_gradient=True)
    block.append_op("equal", inputs={"X": [rem], "Y": [zero]}, outputs={"Out": [cond]}, attrs=dict(opt))

    sub = main._create_block(0)
    for acc, g in accs:
        sub.append_op("scale", inputs={"X": [acc]}, outputs={"Out": [g]},
                      attrs=dict(opt, scale=1.0 / k if avg else 1.0))
    for op in moved:
        sub.append_op(op.type, inputs=op.inputs, outputs=op.outputs, attrs=dict(op.attrs))
    for acc, _ in accs:
        sub.append_op("scale", inputs={"X": [acc]}, outputs={"Out": [acc]}, attrs=dict(opt, scale=0.0))
    main._rollback()
    written, reads = set(), set()
    for op in sub.ops:        # what the sub-block reads from outside: read before it writes it
        reads.update(n for n in op.input_arg_names if n not in written and block.has_var(n))
        written.update(op.output_arg_names)
    writes = sorted(n for n in written if block.has_var(n))
    reads = sorted(reads)
    block.append_op("conditional_block", inputs={"Cond": [cond], "Input": reads},
                    outputs={"Out": writes, "Scope": []},
                    attrs=dict(opt, sub_block=sub, is_scalar_condition=True))
    main._bump_version()
    return main


def init_program_for(main, scope_has):
    """A startup program filling the state the pass added to ``main`` that ``scope_has(name)`` says
    is missing (for a program merged after its startup ran)."""
    from ..framework.program import Program
    init = Program()
    block = main.global_block()
    for name, var in block.vars.items():
        if (name == STEP_VAR or name.endswith(ACC_SUFFIX)) and var.persistable and not scope_has(name):
            _zero_fill(init, var)
    return init

