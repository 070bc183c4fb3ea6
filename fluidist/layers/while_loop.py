"""``While`` and ``while_loop`` (Paddle keeps them in ``layers.control_flow``, which re-exports them)."""
from __future__ import annotations

from functools import reduce
from typing import Any, Callable, Sequence

from ..framework import unique_name
from ..framework.dtypes import VarType
from ..framework.program import Variable
from .block_guard import SubBlockGuard
from .layer_helper import LayerHelper
from .logic import _check_var
from .nest import map_structure
from .tensor import assign

__all__ = ["While", "while_loop"]


class While:
    """A loop in the program: the ops built inside ``with loop.block():`` run again and again while
    the bool ``[1]`` ``cond`` holds.

    The block must update ``cond`` (``less_than(i, n, cond=cond)``, or ``assign`` to it), else the
    loop could never end and building it is an error. The loop is one ``while`` op: ``X`` is what
    the block reads from outside, ``Out`` the outer variables it writes, ``StepScopes`` the scopes of
    the steps, kept for the gradient. Variables written inside the block that were made outside it
    keep their last value after the loop.

    Args:
        cond: a bool ``[1]`` Variable, checked before each step.
        is_test: an inference loop: the step scopes are not kept for a gradient.
        name: the prefix of the op's variables (generated when None).

    Raises:
        TypeError: ``cond`` is not a bool Variable of one element.
        ValueError: the block never updates ``cond``, or reads a variable no block declares.

    Examples:
        >>> i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        >>> n = fluid.layers.fill_constant(shape=[1], dtype="int64", value=5)
        >>> total = fluid.layers.fill_constant(shape=[1], dtype="float32", value=0.0)
        >>> cond = fluid.layers.less_than(i, n)
        >>> loop = fluid.layers.While(cond)
        >>> with loop.block():
        ...     _ = fluid.layers.assign(fluid.layers.scale(total, bias=2.0), total)
        ...     i = fluid.layers.increment(i, in_place=True)
        ...     _ = fluid.layers.less_than(i, n, cond=cond)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> exe.run(fetch_list=[total])[0].tolist()
        [10.0]
    """

    BEFORE_WHILE_BLOCK, IN_WHILE_BLOCK, AFTER_WHILE_BLOCK = 0, 1, 2

    def __init__(self, cond: Variable, is_test: bool = False, name: str | None = None):
        _check_var(cond, "While", "cond")
        if cond.dtype not in (None, "bool"):
            raise TypeError("While: cond %r must be a bool Variable, got %s" % (cond.name, cond.dtype))
        if cond.shape is not None and reduce(lambda a, b: a * b, cond.shape, 1) != 1:
            raise TypeError("While: cond %r must have shape [1], got %s" % (cond.name, list(cond.shape)))
        self.helper = LayerHelper("while", name=name)
        self.status = While.BEFORE_WHILE_BLOCK
        self.cond_var = cond
        self.is_test = bool(is_test)

    def block(self) -> SubBlockGuard:
        """The context manager whose ops form the loop's body (entered once)."""
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


def while_loop(cond: Callable[..., Variable], body: Callable[..., Any], loop_vars: Sequence[Variable],
               is_test: bool = False, name: str | None = None) -> Sequence[Variable]:
    """``while cond(*loop_vars): loop_vars = body(*loop_vars)``, as one ``while`` op.

    As in Paddle 1.8, ``cond`` is called once before the loop and once at the end of each step;
    ``body``'s results are assigned back to ``loop_vars`` inside the loop's block.

    Args:
        cond: a function of the loop variables returning a bool ``[1]`` Variable.
        body: a function of the loop variables returning their new values (as many, in order).
        loop_vars: the loop variables (a non-empty list or tuple).
        is_test: an inference loop (see ``While``).
        name: the prefix of the op's variables (generated when None).

    Returns:
        ``loop_vars``, which hold their final values after the loop.

    Raises:
        TypeError: ``cond`` or ``body`` not callable, ``loop_vars`` not a list or tuple, or ``cond``
            returning something other than a bool ``[1]`` Variable.
        ValueError: ``loop_vars`` empty, or ``body`` returning another number of values.

    Examples:
        >>> i = fluid.layers.fill_constant(shape=[1], dtype="int64", value=0)
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        >>> i, x = fluid.layers.while_loop(lambda i, x: i < 3,
        ...                                lambda i, x: [i + 1, x * 2.0], [i, x])
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> exe.run(fetch_list=[x])[0].tolist()
        [8.0]
    """
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
