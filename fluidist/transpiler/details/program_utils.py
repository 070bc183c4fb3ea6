"""``transpiler.details.program_utils``: printing programs as code, finding and deleting ops."""


def delete_ops(block, ops):
    """Remove ``ops`` (Operators of ``block``) from it."""
    block.remove_ops(list(ops)) if hasattr(block, "remove_ops") else [block.remove_op(op) for op in ops]


def find_op_by_input_arg(block, arg_name):
    """The index of the first op of ``block`` reading ``arg_name``, or -1."""
    for index, op in enumerate(block.ops):
        if arg_name in op.input_arg_names:
            return index
    return -1


def find_op_by_output_arg(block, arg_name, reverse=False):
    """The index of the first (last with ``reverse``) op of ``block`` writing ``arg_name``, or -1."""
    indices = range(len(block.ops) - 1, -1, -1) if reverse else range(len(block.ops))
    for index in indices:
        if arg_name in block.ops[index].output_arg_names:
            return index
    return -1


def get_indent_space(indent, space_num=4):
    return " " * (indent * space_num)


def variable_to_code(var):
    """One variable as a line of code (its name, type, shape, dtype, persistability)."""
    return var.to_string()


def op_to_code(op, skip_op_callstack=True):
    """One op as a line of code: ``{Out=[...]} = type(inputs={...}, attrs)``."""
    return op.to_string()


def block_to_code(block, block_idx, fout=None, skip_op_callstack=False):
    """Print (or write to ``fout``) a block as code: its variables, then its ops."""
    lines = ["{ // block %d" % block_idx] + ["    " + variable_to_code(v) for v in block.vars.values()] + [""]
    lines += ["    " + op_to_code(op) for op in block.ops] + ["}"]
    text = "\n".join(lines)
    if fout is None:
        print(text)
    else:
        fout.write(text + "\n")


def program_to_code(prog, fetch_list=None, skip_op_callstack=True):
    """Print ``prog`` as readable code, block by block: its variables, then its ops as
    ``{Out=[...]} = type(inputs={...}, attr = value, ...)``. With ``fetch_list`` (Variables or names)
    only the ops those need are printed. ``skip_op_callstack`` is accepted for compatibility: fluidist
    records no op call stacks."""
    from ...framework.graph import ops_needed_for
    targets = None
    if fetch_list is not None:
        targets = [v if isinstance(v, str) else v.name for v in fetch_list]
    for block in prog.blocks:
        keep = range(len(block.ops)) if targets is None or block.idx != 0 else ops_needed_for(block, targets)
        lines = ["{ // block %d" % block.idx]
        lines += ["    " + v.to_string() for v in block.vars.values()]
        lines.append("")
        lines += ["    " + block.ops[i].to_string() for i in keep]
        lines.append("}")
        print("\n".join(lines))
