"""The helpers of Paddle's ``fluid.backward`` module that its own tests call by name: which
variables' gradients are stopped, which ops lie on the path from inputs to targets, which outputs
of those ops need no gradient. fluidist's ``append_backward`` finds its path its own way
(``backward._ops_on_path``); these answer Paddle's questions about a program as Paddle does.

Also here: how a ``gradients`` call on a program that already holds gradients (a gradient of a
gradient) keeps its own gradients apart from the earlier ones of the same names."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Set

from ..framework import registry, unique_name
from ..framework.dtypes import VarType
from ..framework.variable import GRAD_SUFFIX, _strip_grad


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


def _grad_var_like(block, grad_name, fwd_name):
    if block.has_var(grad_name):
        return block.var(grad_name)
    fwd = block._find_var_recursive(fwd_name)
    if fwd is None:
        return block.create_var(name=grad_name, stop_gradient=False)
    kind = VarType.LOD_TENSOR_ARRAY if fwd.type == VarType.LOD_TENSOR_ARRAY else VarType.LOD_TENSOR
    return block.create_var(name=grad_name, shape=fwd.shape, dtype=fwd.dtype, lod_level=fwd.lod_level,
                            stop_gradient=False, type=kind)


def _rebind_to_this_call(block, specs, existing, given):
    """Make the planned ``specs`` of a ``gradients`` call touch only gradients of this call.

    A gradient the specs write under the name of a variable that ``existing`` holds (an earlier
    call's gradient) gets a fresh name; a gradient input (``grads_in``) reads the fresh name, the
    given target gradient, or, where this call makes none, zeros under a fresh name. A gradient op
    none of whose gradient inputs this call makes is left out (its gradients are zero), as are the
    parts of a sum it would have written. Returns (specs, ``{planned name: final name}``)."""
    final = dict(given)
    made = set(given.values())
    out = []
    for spec in specs:
        if "sum" in spec:
            parts = [final[p] for p in spec["parts"] if p in final and final[p] in made]
            if parts:
                out.append({"sum": _fresh_output(block, spec["sum"], existing, final, made), "parts": parts})
            continue
        wanted = set(spec.get("grads_in", ()))
        missing = {n for n in wanted if final.get(n, n) not in made and n in existing}
        if missing and not any(final.get(n, n) in made for n in wanted):
            continue
        inputs = {}
        for slot, names in spec["inputs"].items():
            inputs[slot] = [_zeros_for(block, n, out) if n in missing else final.get(n, n) if n in wanted else n
                            for n in names]
        outputs = {slot: [n if n == "@EMPTY@" or spec.get("keep") else _fresh_output(block, n, existing, final, made)
                          for n in names] for slot, names in spec["outputs"].items()}
        out.append(dict(spec, inputs=inputs, outputs=outputs))
    return out, final


def _fresh_output(block, name, existing, final, made):
    """The name this call writes gradient ``name`` under: ``name`` itself unless a variable of that
    name existed before the call; then, as in Paddle, ``grad/`` once per gradient pass appended to
    the program so far (``grad/grad/x@GRAD`` in the second), made unique if even that is taken."""
    new = name
    if name in existing and GRAD_SUFFIX in name:
        new = "grad/" * max(block.program._appending_grad_times, 2) + name
        if block.has_var(new):
            new = unique_name.generate(new)
    if new != name:
        _grad_var_like(block, new, _strip_grad(name))
    final[name] = new
    made.add(new)
    return new


def _zeros_for(block, name, specs):
    """A fresh variable of zeros shaped like gradient ``name``'s forward variable (a gradient this
    call does not make, whose name an earlier variable holds)."""
    fwd = _strip_grad(name)
    new = unique_name.generate(name)
    _grad_var_like(block, new, fwd)
    specs.append({"type": "fill_zeros_like", "inputs": {"X": [fwd]}, "outputs": {"Out": [new]}})
    return new
