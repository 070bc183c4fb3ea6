"""Op roles: the bit flags every operator carries in its ``op_role`` attribute.

Passes (backward, optimizer, transpiler) find what they need through these attributes only.
"""


class OpRole:
    Forward = 0x0000
    Backward = 0x0001
    Optimize = 0x0002
    RPC = 0x0004
    Dist = 0x0008
    LRSched = 0x0010
    Collective = 0x0020
    Loss = 0x0100
    NotSpecified = 0x1000


OP_ROLE_ATTR = "op_role"
OP_ROLE_VAR_ATTR = "op_role_var"
OP_NAMESCOPE_ATTR = "op_namescope"


# (the helpers read ``op.attrs`` itself: ``op.attr`` gives the same value for a role, at a call's cost)
def has_role(op, bit):
    """True when ``op``'s role has ``bit`` set (Forward, being 0, is 'no other bit')."""
    role = int(op.attrs.get(OP_ROLE_ATTR) or 0)
    if bit == OpRole.Forward:
        return role & (OpRole.Backward | OpRole.Optimize | OpRole.LRSched) == 0
    return role & bit == bit


def is_optimize_op(op):
    return int(op.attrs.get(OP_ROLE_ATTR) or 0) == OpRole.Optimize


def is_lr_sched_op(op):
    role = int(op.attrs.get(OP_ROLE_ATTR) or 0)
    return role in (OpRole.LRSched, OpRole.LRSched | OpRole.Optimize)


def is_optimize_or_lr_sched_op(op):
    """``is_optimize_op(op) or is_lr_sched_op(op)``, reading the role once (passes ask it of every op)."""
    return int(op.attrs.get(OP_ROLE_ATTR) or 0) in _OPTIMIZE_OR_LR_SCHED


_OPTIMIZE_OR_LR_SCHED = frozenset((OpRole.Optimize, OpRole.LRSched, OpRole.LRSched | OpRole.Optimize))


def is_backward_op(op):
    return int(op.attrs.get(OP_ROLE_ATTR) or 0) & OpRole.Backward != 0


def is_loss_grad_op(op):
    role = int(op.attrs.get(OP_ROLE_ATTR) or 0)
    return role & (OpRole.Backward | OpRole.Loss) == (OpRole.Backward | OpRole.Loss)


def role_vars(op):
    """``[(param, grad), ...]`` from ``op``'s ``op_role_var`` (pairs: param, grad, param, grad, ...)."""
    rv = op.attrs.get(OP_ROLE_VAR_ATTR) or []
    if len(rv) % 2:
        raise ValueError("op %r has an odd op_role_var %s: it must list (param, grad) pairs" % (op.type, rv))
    return [(rv[i], rv[i + 1]) for i in range(0, len(rv), 2)]


def param_grad_pairs(ops):
    """``[(param, grad)]`` named by the ``op_role_var`` of ``ops``, each parameter once, in order."""
    pairs, seen = [], set()
    for op in ops:
        for p, g in role_vars(op):
            if p not in seen:
                seen.add(p)
                pairs.append((p, g))
    return pairs


def backward_param_grads(block):
    """``[(param, grad)]`` of the backward ops of ``block``, each parameter once, in program order."""
    return param_grad_pairs(op for op in block.ops if is_backward_op(op))
