"""``ConditionalBlock`` (a sub-block run when its condition holds) and ``IfElse`` (rows of a batch
sent down one of two branches), which ``layers.control_flow`` re-exports, where Paddle keeps them."""
from __future__ import annotations

from typing import Sequence

from ..framework import unique_name
from ..framework.dtypes import VarType
from ..framework.program import Variable
from .block_guard import SubBlockGuard, parent_block
from .layer_helper import LayerHelper
from .logic import _check_var
from .tensor import assign

__all__ = ["ConditionalBlock", "IfElse"]


# ---------------------------------------------------------------------------- conditional blocks
class ConditionalBlock:
    """A sub-block that runs only when its condition holds: the building block of ``Switch``,
    ``cond`` and ``IfElse``.

    Ops built inside ``with ConditionalBlock([cond]).block():`` go into a sub-block, run by one
    ``conditional_block`` op appended to the enclosing block when the ``with`` ends. Outer variables
    the block writes keep their old values when it does not run.

    Args:
        inputs: the condition Variable(s). With ``is_scalar_condition`` the first is a bool ``[1]``
            whose value decides; otherwise the block runs when every input has elements.
        is_scalar_condition: decide by the condition's value rather than by non-emptiness.
        name: the prefix of the op's variables (generated when None).

    Raises:
        TypeError: an input that is not a Variable.

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        >>> out = fluid.layers.fill_constant(shape=[1], dtype="float32", value=0.0)
        >>> positive = fluid.layers.greater_than(x, out)
        >>> block = fluid.layers.ConditionalBlock([positive], is_scalar_condition=True)
        >>> with block.block():
        ...     _ = fluid.layers.assign(fluid.layers.scale(x, 10.0), out)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> exe.run(fetch_list=[out])[0].tolist()
        [10.0]
    """

    def __init__(self, inputs: Variable | Sequence[Variable], is_scalar_condition: bool = False,
                 name: str | None = None):
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]  # type: ignore[list-item]
        for i, x in enumerate(inputs):
            _check_var(x, "ConditionalBlock", "inputs[%d]" % i)
        self.inputs = inputs
        self.is_scalar_condition = bool(is_scalar_condition)
        self.helper = LayerHelper("conditional_block", name=name)

    def block(self) -> SubBlockGuard:
        """The context manager whose ops form the conditional sub-block."""
        return SubBlockGuard(self.helper.main_program, self.complete)

    def complete(self) -> None:
        """Append the ``conditional_block`` op: ``Input`` = what the sub-block reads from outside,
        ``Out`` = the outer variables it writes (both in first-use order)."""
        program = self.helper.main_program
        inside = program.current_block()
        parent = program.block(inside.parent_idx)
        written, reads, outs = set(), [], []
        for op in inside.ops:
            for n in op.input_arg_names:
                if n not in written and n not in reads:
                    reads.append(n)
            for n in op.output_arg_names:
                written.add(n)
                if n not in outs and parent._find_var_recursive(n) is not None:
                    outs.append(n)
        # as in Paddle, a condition the sub-block reads is an Input too (its gradient flows back)
        params = [n for n in reads if parent._find_var_recursive(n) is not None]
        step_scope = parent.create_var(name=self.helper.name + ".scope", type=VarType.STEP_SCOPES)
        parent.append_op("conditional_block", inputs={"Cond": self.inputs, "Input": params},
                         outputs={"Out": outs, "Scope": [step_scope]},
                         attrs={"sub_block": inside, "is_scalar_condition": self.is_scalar_condition})


# ---------------------------------------------------------------------------- IfElse
class IfElse:
    """Rows of a batch sent down one of two branches by a bool mask, then merged back in row order.

    ``input(x)`` inside a branch is that branch's rows of ``x`` (``split_lod_tensor``); both
    branches run, each on its rows (maybe none); ``output(...)`` names what a branch gives, and
    calling the ``IfElse`` after both blocks merges the outputs back (``merge_lod_tensor``). For a
    choice of whole computations by one bool, ``cond`` is simpler.

    Args:
        cond: a bool ``[N, 1]`` mask, one value per row.
        name: the prefix of the ops' variables (generated when None).

    Raises:
        TypeError: ``cond`` is not a Variable.
        ValueError: ``input`` / ``output`` outside a block, a block without ``output``, or the two
            blocks giving different numbers of outputs.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 1], dtype="float32")
        >>> zero = fluid.layers.fill_constant_batch_size_like(x, shape=[-1, 1], dtype="float32", value=0.0)
        >>> ie = fluid.layers.IfElse(fluid.layers.less_than(x, zero))
        >>> with ie.true_block():
        ...     ie.output(fluid.layers.scale(ie.input(x), -1.0))
        >>> with ie.false_block():
        ...     ie.output(ie.input(x))
        >>> absolute, = ie()
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> exe.run(feed={"x": np.array([[-2.0], [3.0]], "float32")}, fetch_list=[absolute])[0].ravel().tolist()
        [2.0, 3.0]
    """

    OUT_IF_ELSE_BLOCKS, IN_IF_ELSE_TRUE_BLOCKS, IN_IF_ELSE_FALSE_BLOCKS = 0, 1, 2

    def __init__(self, cond: Variable, name: str | None = None):
        _check_var(cond, "IfElse", "cond")
        self.helper = LayerHelper("ifelse", name=name)
        self.cond = cond
        self.input_table: dict[int, list[Variable]] = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.conditional_true_block = ConditionalBlock(inputs=[cond])
        self.conditional_false_block = ConditionalBlock(inputs=[cond])
        self.output_table: tuple[list[Variable], list[Variable]] = ([], [])   # (false outputs, true outputs)

    def input(self, x: Variable) -> Variable:
        """Inside a branch: that branch's rows of ``x`` (``x`` split once, on first use)."""
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse.input must be called inside true_block() or false_block()")
        _check_var(x, "IfElse.input", "x")
        if id(x) not in self.input_table:
            parent = parent_block(self.helper.main_program)
            pair = [parent.create_var(name=unique_name.generate("ifelse_input" + self.helper.name), dtype=x.dtype,
                                      shape=x.shape, lod_level=x.lod_level) for _ in range(2)]
            parent.append_op("split_lod_tensor", inputs={"X": [x], "Mask": [self.cond]},
                             outputs={"OutTrue": [pair[0]], "OutFalse": [pair[1]]}, attrs={"level": 0})
            self.input_table[id(x)] = pair
        out_true, out_false = self.input_table[id(x)]
        return out_true if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else out_false

    def true_block(self) -> "_IfElseBlockGuard":
        """The context manager of the branch for the rows where the mask is true."""
        return _IfElseBlockGuard(True, self)

    def false_block(self) -> "_IfElseBlockGuard":
        """The context manager of the branch for the rows where the mask is false."""
        return _IfElseBlockGuard(False, self)

    def output(self, *outs: Variable) -> None:
        """Inside a branch: the Variables it gives (the same number in both branches)."""
        if self.status == IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse.output must be called inside true_block() or false_block()")
        table = self.output_table[1 if self.status == IfElse.IN_IF_ELSE_TRUE_BLOCKS else 0]
        parent = parent_block(self.helper.main_program)
        for each in outs:
            _check_var(each, "IfElse.output", "output")
            outside = parent.create_var(name=unique_name.generate(self.helper.name + "_output"), dtype=each.dtype,
                                        shape=each.shape, lod_level=each.lod_level)
            table.append(outside)
            assign(each, outside)

    def __call__(self) -> list[Variable]:
        if self.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse() must be called after its blocks")
        false_len, true_len = map(len, self.output_table)
        if false_len == 0 and true_len == 0:
            raise ValueError("IfElse(): call true_block() / false_block() and output() in them first")
        if false_len and true_len and false_len != true_len:
            raise ValueError("IfElse(): the true block has %d outputs but the false block %d" % (true_len, false_len))
        if not false_len or not true_len:
            return self.output_table[0 if false_len else 1]
        helper = LayerHelper("merge_lod_tensor")
        merged = []
        for f, t in zip(*self.output_table):
            out = helper.create_variable_for_type_inference(dtype=t.dtype)
            helper.append_op("merge_lod_tensor", inputs={"X": [self.cond], "Mask": [self.cond], "InTrue": [t],
                                                         "InFalse": [f]},
                             outputs={"Out": [out]}, attrs={"level": 0})
            merged.append(out)
        return merged


class _IfElseBlockGuard:
    def __init__(self, is_true, ifelse):
        if ifelse.status != IfElse.OUT_IF_ELSE_BLOCKS:
            raise ValueError("IfElse: a block cannot be opened inside another block")
        self.is_true = is_true
        self.ie = ifelse
        block = ifelse.conditional_true_block if is_true else ifelse.conditional_false_block
        self.guard = block.block()

    def __enter__(self):
        self.ie.status = IfElse.IN_IF_ELSE_TRUE_BLOCKS if self.is_true else IfElse.IN_IF_ELSE_FALSE_BLOCKS
        self.guard.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and not self.ie.output_table[1 if self.is_true else 0]:
            self.guard.__exit__(ValueError, None, None)
            self.ie.status = IfElse.OUT_IF_ELSE_BLOCKS
            raise ValueError("IfElse: call output() inside the %s block" % ("true" if self.is_true else "false"))
        self.guard.__exit__(exc_type, exc, tb)
        self.ie.status = IfElse.OUT_IF_ELSE_BLOCKS
        return False
