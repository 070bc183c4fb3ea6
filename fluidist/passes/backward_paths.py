"""The helpers of Paddle's ``fluid.backward`` module that its own tests call by name: which
variables' gradients are stopped, which ops lie on the path from inputs to targets, which outputs
of those ops need no gradient. fluidist's ``append_backward`` finds its path its own way
(``backward._ops_on_path``); these answer Paddle's questions about a program as Paddle does."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Set

from ..framework import registry
from ..framework.variable import GRAD_SUFFIX


def _as_list(x: Any) -> List[Any]:
    """``None`` -> ``[]``, a list or tuple -> a list of its items, anything else -> ``[x]``."""
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _append_grad_suffix_(name: Any) -> str:
    """``x`` -> ``x@GRAD``."""
    return str(name) + GRAD_SUFFIX


def _strip_grad_suffix_(name: Any) -> str:
    """The name before its first ``@GRAD`` (``y@GRAD@RENAME@1`` -> ``y``)."""
    name = str(name)
    return name.split(GRAD_SUFFIX, 1)[0]


def _get_stop_gradients_(program: Any) -> Dict[int, Set[str]]:
    """``{block index: gradient names of the block's stop_gradient variables}``."""
    return {b.idx: {_append_grad_suffix_(v.name) for v in b.vars.values() if v.stop_gradient}
            for b in program.blocks}


def _has_gradient(op: Any) -> bool:
    opdef = registry.lookup(op.type)
    return opdef is not None and opdef.grad is not None


def _is_ancestor(block: Any, of: Any) -> bool:
    """Whether ``block`` is a strict ancestor of ``of``."""
    b = of.parent_block
    while b is not None:
        if b is block:
            return True
        b = b.parent_block
    return False


def _get_output_names(block: Any, targets: List[Any]) -> Set[str]:
    """The names in ``block`` the targets depend on: the targets' own names when they live there;
    for targets of a sub-block, the variables of ``block`` that the sub-block's ops computing them
    read; nothing when the targets live in an ancestor of ``block``."""
    where = targets[0].block if targets else block
    if _is_ancestor(where, block):
        return set()
    names = {t.name for t in targets}
    while where is not block:
        parent = where.parent_block
        outer = set()
        for op in reversed(where.ops):
            if names.intersection(op.output_arg_names):
                for n in op.input_arg_names:
                    names.add(n)
                    if n not in where.vars and parent._find_var_recursive(n) is not None:
                        outer.add(n)
        where, names = parent, outer
    return names


def _find_op_path_(block: Any, outputs: List[Any], inputs: List[Any], no_grad_set: Set[str]) -> List[Any]:
    """The ops of ``block`` (with a gradient) between ``inputs`` (all of the block's when empty) and
    ``outputs``, in block order. With inputs, the stop_gradient variables the path reads that do not
    come from them are added to ``no_grad_set``."""
    reached = {v.name for v in inputs}
    on_path = [True] * len(block.ops)
    if inputs:
        for i, op in enumerate(block.ops):
            if reached.intersection(op.input_arg_names) and _has_gradient(op):
                reached.update(n for n in op.output_arg_names if n not in no_grad_set)
            else:
                on_path[i] = False
    wanted = _get_output_names(block, outputs)
    for i in range(len(block.ops) - 1, -1, -1):
        op = block.ops[i]
        if wanted.intersection(op.output_arg_names) and _has_gradient(op):
            wanted.update(n for n in op.input_arg_names if n not in no_grad_set)
        else:
            on_path[i] = False
    path = [op for op, keep in zip(block.ops, on_path) if keep]
    if inputs:
        for op in path:
            no_grad_set.update(n for n in op.input_arg_names if n not in reached and block.vars[n].stop_gradient)
    return path


def _find_no_grad_vars(block: Any, op_path: Iterable[Any], targets: List[Any], no_grad_set: Set[str]) -> Set[str]:
    """Outputs of the path's ops that nothing downstream on the path reads (and that are not
    targets, inputs of their own op or stop_gradient): their gradients are never needed."""
    needed = _get_output_names(block, targets)
    unused = set()
    for op in reversed(list(op_path)):
        if not op.has_attr("sub_block"):
            for n in op.output_arg_names:
                if n not in needed and n not in op.input_arg_names and not block.vars[n].stop_gradient:
                    unused.add(n)
        needed.update(n for n in op.input_arg_names if n not in no_grad_set)
    return unused
