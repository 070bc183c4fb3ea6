"""Analyses of a block that passes share: pruning by targets, and the program linter."""
from . import registry
from .defuse import DefUse
from .op_role import OP_NAMESCOPE_ATTR, OP_ROLE_ATTR, OP_ROLE_VAR_ATTR
from .variable import EMPTY_VAR_NAME

# attrs every op may carry besides its registered ones
COMMON_ATTRS = frozenset([OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OP_NAMESCOPE_ATTR, "op_callstack", "op_device",
                          "with_quant_attr"])


def ops_needed_for(block, targets, feeds=(), keep_side_effects=False):
    """Indices of the ops ``targets`` (names) depend on, in block order (pruning by fetch list).

    Names in ``feeds`` are given from outside, so the ops that would compute them are not needed.
    With ``keep_side_effects`` the ops whose type acts on the world (the registry's ``side_effect``:
    rpc, collectives, save) are kept too, with what they read."""
    feeds = set(feeds)
    needed = []
    wanted = set(targets) - feeds
    for i in range(len(block.ops) - 1, -1, -1):
        op = block.ops[i]
        if wanted.intersection(op.output_arg_names) or (keep_side_effects and registry.has_side_effect(op)):
            needed.append(i)
            wanted.update(n for n in op.input_arg_names if n not in feeds)
    return sorted(needed)


class LintError(ValueError):
    pass


def _attr_kind_ok(default, value):
    if default is None or value is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, list):
        return isinstance(value, list)
    return True


def lint_program(program):
    """Check every op against the registry: its type is registered, its slots and attrs are the
    registered ones (attr values of the registered kind), every variable it names is declared, and
    the blocks' def-use indexes agree with their ops.

    Returns the program; raises LintError listing every problem found."""
    problems = []
    for b in program.blocks:
        for i, op in enumerate(b.ops):
            where = "block %d op %d (%s)" % (b.idx, i, op.type)
            opdef = registry.lookup(op.type)
            if opdef is None:
                problems.append("%s: %s" % (where, registry.unknown_op_error(op.type)))
                continue
            for slot, names in list(op.inputs.items()) + list(op.outputs.items()):
                for n in names:
                    if b._find_var_recursive(n) is None and n != EMPTY_VAR_NAME:
                        problems.append("%s: variable %r (slot %s) is not declared" % (where, n, slot))
            unknown_in = set(op.inputs) - opdef.input_slots
            unknown_out = set(op.outputs) - opdef.output_slots
            if unknown_in:
                problems.append("%s: unknown input slots %s" % (where, sorted(unknown_in)))
            if unknown_out:
                problems.append("%s: unknown output slots %s" % (where, sorted(unknown_out)))
            for k, v in op.attrs.items():
                if k in COMMON_ATTRS:
                    continue
                if k not in opdef.attrs:
                    problems.append("%s: attr %r is not an attr of %r" % (where, k, op.type))
                    continue
                if not _attr_kind_ok(opdef.attrs[k], v):
                    problems.append("%s: attr %r = %r is not of the kind of its default %r"
                                    % (where, k, v, opdef.attrs[k]))
                blocks = v if isinstance(v, list) else [v]
                for blk in blocks:
                    if hasattr(blk, "ops") and getattr(blk, "program", None) is not program:
                        problems.append("%s: attr %s refers to a block of another program" % (where, k))
        if b._defuse is not None and not b._defuse.same_as(DefUse(b.ops)):
            problems.append("block %d: the def-use index disagrees with the ops (an op was edited behind "
                            "the Block/Operator methods)" % b.idx)
    if problems:
        raise LintError("program lint found %d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))
    return program
