"""``fluid.distribute_lookup_table``: find the distributed lookup table of a program (the table
lookups, as the registry's ``table_lookup`` says, with ``is_distributed=True``) and its ids and outputs."""
from ..framework import registry

__all__ = []


def _is_lookup(op):
    return bool(registry.fact(op, "table_lookup", False))


def _distributed_lookups(program):
    return [op for op in program.global_block().ops if _is_lookup(op) and op.attr("is_distributed") is True]


def find_distributed_lookup_table(program):
    """The name of the program's one distributed table (the W of its distributed lookups), or None;
    RuntimeError (as Paddle) when two tables are distributed, ValueError when a lookup of the table is not."""
    table = None
    for op in program.global_block().ops:
        if not _is_lookup(op):
            continue
        name = op.input("W")[0]
        if op.attr("is_distributed") is True:
            if table is None:
                table = name
            elif table != name:
                raise RuntimeError("only one distributed lookup table is supported, found %r and %r" % (table, name))
        elif table is not None and name == table:
            raise ValueError("the distributed table %r is also looked up without is_distributed" % name)
    return table


def find_distributed_lookup_table_inputs(program, table_name):
    """The Variables of the ids looked up in ``table_name``."""
    block = program.global_block()
    return [block.var(op.input("Ids")[0]) for op in _distributed_lookups(program) if op.input("W")[0] == table_name]


def find_distributed_lookup_table_outputs(program, table_name):
    """The Variables the lookups of ``table_name`` write."""
    block = program.global_block()
    return [block.var(op.output("Out")[0]) for op in _distributed_lookups(program) if op.input("W")[0] == table_name]
