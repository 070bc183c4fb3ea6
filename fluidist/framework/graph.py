"""Graph views of a block (networkx) and the program linter."""
import networkx as nx


def dependency_graph(block):
    """A DiGraph over op indices: an edge i -> j when op j reads or overwrites what op i wrote."""
    g = nx.DiGraph()
    last_writer = {}
    readers = {}
    for j, op in enumerate(block.ops):
        g.add_node(j, type=op.type)
        for n in op.input_arg_names:
            if n in last_writer:
                g.add_edge(last_writer[n], j)
            readers.setdefault(n, []).append(j)
        for n in op.output_arg_names:
            if n in last_writer and last_writer[n] != j:
                g.add_edge(last_writer[n], j)
            for r in readers.get(n, []):
                if r != j:
                    g.add_edge(r, j)
            readers[n] = []
            last_writer[n] = j
    return g


def ops_needed_for(block, targets, feeds=()):
    """Indices of the ops ``targets`` (names) depend on, in block order (pruning by fetch list).

    Names in ``feeds`` are given from outside, so the ops that would compute them are not needed.
    """
    feeds = set(feeds)
    needed = []
    wanted = set(targets) - feeds
    for i in range(len(block.ops) - 1, -1, -1):
        op = block.ops[i]
        if wanted.intersection(op.output_arg_names):
            needed.append(i)
            wanted.update(n for n in op.input_arg_names if n not in feeds)
    return sorted(needed)


class LintError(ValueError):
    pass


def lint_program(program):
    """Check that every op type is registered, every input name is declared and attrs are known.

    Returns the program; raises LintError listing every problem found.
    """
    from ..ops import registry
    problems = []
    for b in program.blocks:
        for i, op in enumerate(b.ops):
            where = "block %d op %d (%s)" % (b.idx, i, op.type)
            opdef = registry.lookup(op.type)
            if opdef is None:
                problems.append("%s: unknown op type" % where)
                continue
            for slot, names in list(op.inputs.items()) + list(op.outputs.items()):
                for n in names:
                    if b._find_var_recursive(n) is None:
                        problems.append("%s: variable %r (slot %s) is not declared" % (where, n, slot))
            unknown_in = set(op.inputs) - opdef.input_slots
            unknown_out = set(op.outputs) - opdef.output_slots
            if unknown_in:
                problems.append("%s: unknown input slots %s" % (where, sorted(unknown_in)))
            if unknown_out:
                problems.append("%s: unknown output slots %s" % (where, sorted(unknown_out)))
            for k, v in op.attrs.items():
                if k.startswith("sub_block") or k == "optimize_blocks":
                    blocks = v if isinstance(v, list) else [v]
                    for blk in blocks:
                        if getattr(blk, "program", None) is not program:
                            problems.append("%s: attr %s refers to a block of another program" % (where, k))
    if problems:
        raise LintError("program lint found %d problem(s):\n  %s" % (len(problems), "\n  ".join(problems)))
    return program
