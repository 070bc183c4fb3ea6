"""``While`` and ``while_loop`` (Paddle keeps them in ``layers.control_flow``, which re-exports them)."""
from functools import reduce

from ..framework import unique_name
from ..framework.dtypes import VarType
from .block_guard import SubBlockGuard
from .layer_helper import LayerHelper
from .logic import _check_var
from .nest import map_structure
from .tensor import assign

__all__ = ["While", "while_loop"]


class While:
    """Ops built inside ``with While(cond).block():`` run again and again while the bool ``[1]``
    ``cond`` holds; the block must update ``cond`` (``less_than(i, n, cond=cond)``)::

        i = layers.fill_constant([1], "int64", 0)
        n = layers.fill_constant([1], "int64", 10)
        cond = layers.less_than(i, n)
        loop = layers.While(cond)
        with loop.block():
            ...
            layers.increment(i, in_place=True)
            layers.less_than(i, n, cond=cond)

    One ``while`` op: ``X`` is what the block reads from outside, ``Out`` the outer variables it
    writes, ``StepScopes`` the scopes of the steps (kept for the gradient)."""

    BEFORE_WHILE_BLOCK, IN_WHILE_BLOCK, AFTER_WHILE_BLOCK = 0, 1, 2

    def __init__(self, cond, is_test=False, name=None):
        _check_var(cond, "While", "cond")
        if cond.dtype not in (None, "bool"):
            raise TypeError("While: cond %r must be a bool Variable, got %s" % (cond.name, cond.dtype))
        if cond.shape is not None and reduce(lambda a, b: a * b, cond.shape, 1) != 1:
            raise TypeError("While: cond %r must have shape [1], got %s" % (cond.name, list(cond.shape)))
        self.helper = LayerHelper("while", name=name)
        self.status = While.BEFORE_WHILE_BLOCK
        self.cond_var = cond
        self.is_test = bool(is_test)

    def block(self):
        if self.status != While.BEFORE_WHILE_BLOCK:
            raise ValueError("While.block() can only be entered once")
        return SubBlockGuard(self.helper.main_program, self._finish, self._start)

    def _start(self):
        self.status = While.IN_WHILE_BLOCK

    def _finish(self):
        self.status = While.AFTER_WHILE_BLOCK
        self._complete()

    def _complete(self):
        program = self.helper.main_program
        inside = program.current_block()
        parent = program.block(inside.parent_idx)
        inner_outputs, reads = {self.cond_var.name}, []
        for op in inside.ops:
            for n in op.input_arg_names:
                if n not in inner_outputs and n not in reads:
                    reads.append(n)
            inner_outputs.update(op.output_arg_names)
        xs = [n for n in reads if parent._find_var_recursive(n) is not None]
        missing = [n for n in reads if parent._find_var_recursive(n) is None and n not in inside.vars]
        if missing:
            raise ValueError("While: the block reads %s, which no block declares" % missing)
        outs = []
        for op in inside.ops:
            for n in op.output_arg_names:
                if n not in outs and n not in inside.vars and parent._find_var_recursive(n) is not None:
                    outs.append(n)
        if self.cond_var.name not in outs:
            raise ValueError("While: the block never updates its condition %r (use less_than(..., cond=cond) "
                             "or assign to it inside the block); the loop would never end" % self.cond_var.name)
        step_scopes = parent.create_var(name=unique_name.generate("while.step_scopes"), type=VarType.STEP_SCOPES)
        parent.append_op("while", inputs={"X": xs, "Condition": [self.cond_var]},
                         outputs={"Out": outs, "StepScopes": [step_scopes]},
                         attrs={"sub_block": inside, "is_test": self.is_test})


def while_loop(cond, body, loop_vars, is_test=False, name=None):
    """``while cond(*loop_vars): loop_vars = body(*loop_vars)``; returns the loop variables.

    The loop runs one ``while`` op whose block calls ``body``, assigns its results back to
    ``loop_vars`` and recomputes ``cond`` (Paddle 1.8's construction)."""
    if not callable(cond):
        raise TypeError("while_loop: cond must be callable")
    if not callable(body):
        raise TypeError("while_loop: body must be callable")
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError("while_loop: loop_vars must be a list or tuple, got %r" % type(loop_vars).__name__)
    if not loop_vars:
        raise ValueError("while_loop: loop_vars is empty")
    pre_cond = cond(*loop_vars)
    _check_var(pre_cond, "while_loop", "the result of cond")
    if pre_cond.dtype not in (None, "bool") or (pre_cond.shape is not None and
                                                reduce(lambda a, b: a * b, pre_cond.shape, 1) != 1):
        raise TypeError("while_loop: cond must return a bool Variable of shape [1], got %s of shape %s"
                        % (pre_cond.dtype, list(pre_cond.shape or [])))
    loop = While(pre_cond, is_test, name)
    with loop.block():
        outs = body(*loop_vars)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        if len(outs) != len(loop_vars):
            raise ValueError("while_loop: body returns %d values for %d loop_vars" % (len(outs), len(loop_vars)))
        now_cond = cond(*outs)
        map_structure(lambda o, v: assign(o, v), list(outs), list(loop_vars))
        assign(now_cond, pre_cond)
    return loop_vars
