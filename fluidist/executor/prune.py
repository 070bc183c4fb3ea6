"""``Executor.run(use_prune=True)`` and optimize ops in ``fetch_list``, as Paddle 1.8 runs them: the
program is cut down to the ops the fetches and the optimize ops need (given the feeds), once per
(program version, feed names, fetches), and feeds the cut program does not use are dropped with a
warning.

Paddle 1.8's rules, followed here: ``fetch_list`` may hold, besides Variables and names, the
optimize ops ``minimize`` returned, as ``[op, ...]`` or as ``minimize``'s whole ``(ops, params_grads)``
tuple; an op there that is not an optimize op is a TypeError; with no optimize op given, every
optimize op of the program is kept (so a training program still trains). A fetched name is computed
by the first op that writes it (an optimize op only when it is a target), everything those ops read
that is not fed by the ops before them, and no optimize op unless it is a target. Sub-blocks are
kept whole. Paddle refuses to fetch a value no op writes (a parameter) this way; fluidist reads it
from the scope as a run without pruning does.
"""
from __future__ import annotations

import warnings
import weakref

from ..framework.block import Operator
from ..framework.op_role import OP_ROLE_ATTR, OpRole
from ..framework.program import Variable

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def needs_split(fetch_list) -> bool:
    """Whether ``fetch_list`` holds ops or nested lists (the cheap test a plain fetch list passes)."""
    return isinstance(fetch_list, (list, tuple)) and any(isinstance(f, (list, tuple, Operator)) for f in fetch_list)


def split_fetch_list(fetch_list):
    """``(fetches, optimize ops)``: the Variables / names of ``fetch_list`` and the optimize ops in it
    (a list item is read element by element, a tuple item as ``minimize``'s ``(ops, params_grads)``)."""
    fetches, ops = [], []

    def take(item):
        if isinstance(item, Operator):
            if not _is_optimize_op(item):
                raise TypeError("Executor.run: op %r in fetch_list is not an optimize op (only the ops minimize "
                                "returns may be fetched, to keep them when pruning)" % item.type)
            ops.append(item)
        elif isinstance(item, (Variable, str)):
            fetches.append(item)
        else:
            raise TypeError("Executor.run: fetch_list items must be Variables, names or optimize ops, got %r"
                            % type(item).__name__)

    for item in fetch_list:
        if isinstance(item, list):
            for sub in item:
                take(sub)
        elif isinstance(item, tuple):
            for sub in item[0]:
                take(sub)
        else:
            take(item)
    return fetches, ops


def refuse_compiled_prune(use_prune) -> None:
    """A pruned run of a CompiledProgram is not supported (its places hold the whole program's state)."""
    if use_prune:
        raise ValueError("Executor.run(use_prune=True) of a CompiledProgram is not supported: prune the Program "
                         "it compiles (or run that Program with use_prune=True)")


def _is_optimize_op(op) -> bool:
    return bool(int(op.attr(OP_ROLE_ATTR) or 0) & OpRole.Optimize)


def _kept_indices(block, feed_names, fetch_names, target_ops):
    """Indices of the global block's ops the pruned program keeps, in order."""
    ops = block.ops
    feeds = set(feed_names)
    given = {id(op) for op in target_ops}
    targets = {i for i, op in enumerate(ops) if id(op) in given}
    for name in fetch_names:
        if name in feeds:
            continue
        for i, op in enumerate(ops):
            if name in op.output_arg_names and (id(op) in given or not _is_optimize_op(op)):
                targets.add(i)
                break
    wanted: set = set()
    kept = []
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        if i in targets or (not _is_optimize_op(op) and wanted.intersection(op.output_arg_names)):
            kept.append(i)
            wanted.update(n for n in op.input_arg_names if n not in feeds)
    return sorted(kept)


def pruned_run_args(program, feed, fetch_names, optimize_ops):
    """``(pruned program, feed)`` for a pruned run of ``program``: the cut program (cached) and the feed
    without the entries it does not use (each dropped with a warning, as Paddle does)."""
    if not optimize_ops:
        optimize_ops = [op for b in program.blocks for op in b.ops if _is_optimize_op(op)]
    feed_names = tuple(sorted(feed)) if isinstance(feed, dict) else ()
    key = (feed_names, tuple(fetch_names), tuple(id(op) for op in optimize_ops))
    per_program = _CACHE.get(program)
    if per_program is None or per_program["version"] != program._version:     # an edit: prune afresh
        per_program = _CACHE[program] = {"version": program._version}
    cached = per_program.get(key)
    if cached is None:
        kept = _kept_indices(program.global_block(), feed_names, fetch_names, optimize_ops)
        pruned = program.clone()
        gb = pruned.global_block()
        gb.ops = [gb.ops[i] for i in kept]
        pruned._bump_version()
        used = set(fetch_names)
        for b in pruned.blocks:
            for op in b.ops:
                used.update(op.input_arg_names)
                used.update(op.output_arg_names)
        cached = per_program[key] = (pruned, used)
    pruned, used = cached
    if isinstance(feed, dict):
        for name in [n for n in feed if n not in used]:
            warnings.warn("Executor.run(use_prune=True): feed %r is not used by the pruned program; it is left out"
                          % name, stacklevel=3)
        feed = {n: v for n, v in feed.items() if n in used}
    return pruned, feed
