"""What the ops that run sub-blocks share: which outer variables a sub-block reads and writes, and
``GradRun``, one step of a gradient block run with the gradients handed in from outside.

A gradient block (built by ``backward.SubBlockBackward``) runs in a child of the scope its forward
block ran in, so its ops read the forward values of that run. The gradients of outer variables the
forward block writes come from outside (``Out@GRAD``, or the step after in a loop): ``GradRun``
hands them in under the names the gradient block reads them by (its ``original_output_grad``).
"""
import numpy as np

from ..device.places import array_module
from ..core.scope import Scope
from ..core.tensor import LoDTensorArray, SelectedRows
from ..framework.program import _strip_grad, grad_var_name
from ..framework.variable import EMPTY_VAR_NAME


def outer_written(block):
    """The variables of outer blocks that ops of ``block`` write, in first-write order."""
    out, seen = [], set()
    for op in block.ops:
        for n in op.output_arg_names:
            if n not in seen and n not in block.vars:
                seen.add(n)
                out.append(n)
    return out


def outer_read(block, exclude=()):
    """The variables ``block`` reads before writing them (what a loop body takes from outside),
    in first-read order; ``exclude`` never counts as read."""
    written, out = set(exclude), []
    for op in block.ops:
        for n in op.input_arg_names:
            if n not in written and n not in out:
                out.append(n)
        written.update(op.output_arg_names)
    return out


def step_snapshot_names(xs, block):
    """The inputs of a loop a step overwrites, other than those an op updates in place: a training
    ``while`` keeps their values from the start of each step for the gradient block."""
    written, in_place = set(), set()
    for op in block.ops:
        outs = set(op.output_arg_names)
        written |= outs
        in_place |= outs.intersection(op.input_arg_names)
    return [x for x in xs if x in written and x not in in_place]


def zeros_for(value):
    """A zero gradient for ``value``: zeros like it, or an empty array for an array."""
    if isinstance(value, LoDTensorArray):
        return LoDTensorArray()
    if isinstance(value, SelectedRows):
        return SelectedRows(np.zeros(0, np.int64), None, value.height)
    if value is None:
        return None
    return array_module(value).zeros_like(value)


def copy_array(value):
    """A shallow copy of an array (its items are replaced, never changed, so they may be shared)."""
    out = LoDTensorArray()
    list.extend(out, value)
    return out


def add_grads(a, b):
    """The sum of two gradients given as (value, lod) or None."""
    if a is None:
        return b
    if b is None:
        return a
    (x, lod), (y, _) = a, b
    if isinstance(x, SelectedRows) and isinstance(y, SelectedRows):
        xp = array_module(x.value)
        return SelectedRows(xp.concatenate([x.rows, y.rows]), xp.concatenate([x.value, y.value]), x.height), lod
    if isinstance(x, SelectedRows):
        x, y = y, x
    if isinstance(y, SelectedRows):
        return x + y.to_dense(array_module(x)), lod
    return x + y, lod


def outer_grads(scope, outs, out_grads):
    """{output variable: (gradient, lod)} for the outputs whose gradients (``out_grads``, by name)
    exist in ``scope``."""
    got = {}
    listed = set(out_grads)
    for n in outs:
        g = grad_var_name(n)
        v = scope._find_value(g) if g in listed else None
        if v is None:
            continue
        got[n] = (copy_array(v) if isinstance(v, LoDTensorArray) else v, scope._find_lod(g))
    return got


def finish(ctx, slot, xs, results):
    """The values of the gradient outputs ``slot`` (one per variable of ``xs``): the result, or zeros
    shaped like the variable; their LoD is the variable's."""
    names = ctx.op.output(slot)
    values = []
    for i, (x, name) in enumerate(zip(xs, names)):
        if name == EMPTY_VAR_NAME:
            values.append(None)
            continue
        res = results[i] if i < len(results) else None
        if res is None:
            v = ctx.find_value(x)
            res = (zeros_for(v), ctx.scope._find_lod(x))
        value, lod = res
        values.append(value)
        if value is not None and not isinstance(value, LoDTensorArray):
            ctx.set_lod(slot, lod or ctx.scope._find_lod(x), i)
    return values


class GradRun:
    """Runs a gradient block step by step, carrying the gradients of the outer variables the
    forward block writes from one step to the step before (``running``)."""

    def __init__(self, ctx, grad_block, links, given_grads, outer_names=()):
        self.ctx = ctx
        self.block = grad_block
        self.fwd = ctx.program.block(grad_block.forward_block_idx)
        self.links = list(links)
        self.written = outer_written(self.fwd)
        self.reads = set(outer_read(self.fwd))
        self.grad_written = {n for op in grad_block.ops for n in op.output_arg_names}
        self.running = dict(given_grads)
        self.outer = list(dict.fromkeys(list(outer_names) + self.written + sorted(self.reads)))
        self._arrays = set()

    def is_array(self, name):
        return name in self._arrays

    def run_step(self, fwd_scope):
        """Run the gradient block in a child of ``fwd_scope``; returns that scope."""
        g = Scope(fwd_scope)
        linked = set()
        for inside in self.links:
            n = _strip_grad(inside)
            self._hand_in(g, inside, n, fwd_scope)
            linked.add(grad_var_name(n))
        for n in self.outer:
            name = grad_var_name(n)
            if name not in linked and isinstance(fwd_scope._find_value(n), LoDTensorArray):
                self._hand_in(g, name, n, fwd_scope)
        self.ctx.run_sub_block(self.block, g)
        for n in self.written:
            name = grad_var_name(n)
            if n in self._arrays:
                v = g.vals.get(name)
                if isinstance(v, LoDTensorArray):
                    self.running[n] = (v, [])
            elif name in self.grad_written and n in self.reads:
                self.running[n] = (g.vals.get(name), g._find_lod(name))
            else:
                self.running.pop(n, None)   # the step overwrote it: earlier values get no gradient
        return g

    def _hand_in(self, g, inside, n, fwd_scope):
        cur = self.running.get(n)
        fwd_value = fwd_scope._find_value(n)
        if isinstance(fwd_value, LoDTensorArray) or (cur is not None and isinstance(cur[0], LoDTensorArray)):
            self._arrays.add(n)
            if cur is None:
                cur = self.running[n] = (LoDTensorArray(), [])
        elif cur is None:
            cur = (zeros_for(fwd_value), fwd_scope._find_lod(n))
        g.vals[inside] = cur[0]
        g._set_lod_here(inside, cur[1])

    def given(self, g, x):
        """(gradient, lod) the step gave for outer variable ``x``, or None."""
        name = grad_var_name(x)
        if name in self.grad_written or x in self._arrays:
            v = g.vals.get(name)
            if v is not None:
                return v, g._find_lod(name)
        return None
