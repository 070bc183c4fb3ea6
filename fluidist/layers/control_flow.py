"""Control-flow layers: comparisons, logical ops, ``ConditionalBlock``, ``Switch``, ``cond``, ``case``,
``switch_case``, ``IfElse``, ``While``, ``while_loop``, ``is_empty``, ``Print``, and the global step counter
that learning-rate schedules run on. The tensor-array layers (``tensor_array.py``) and the RNN blocks
``StaticRNN`` / ``DynamicRNN`` (``rnn_blocks.py``) are re-exported here, where Paddle keeps them."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Dict, Sequence, Tuple, Union

from ..framework import unique_name
from ..framework.program import Variable
from ..initializer import ConstantInitializer
from .block_guard import SubBlockGuard, parent_block
from .layer_helper import LayerHelper
from .logic import *  # noqa: F401,F403
from .logic import _check_var, equal, logical_and, logical_not
from .nest import map_structure, same_structure
from .tensor import assign, cast, fill_constant
from .tensor_array import *  # noqa: F401,F403
from .rnn_blocks import DynamicRNN, StaticRNN  # noqa: F401
from .conditional_block import ConditionalBlock, IfElse  # noqa: F401
from .while_loop import While, while_loop  # noqa: F401

# a literal list (logic's names first), which type checkers and the docs' reader (griffe) both read;
# Paddle 1.8 exports these array layers from fluid.layers, the rank-table ones stay here
__all__ = ["less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal", "logical_and",
           "logical_or", "logical_xor", "logical_not", "increment", "autoincreased_step_counter", "ConditionalBlock",
           "Switch", "cond", "case", "switch_case", "select_input", "IfElse", "While", "while_loop", "is_empty",
           "Print", "DynamicRNN", "StaticRNN", "create_array", "array_write", "array_read", "array_length",
           "reorder_lod_tensor_by_rank", "tensor_array_to_tensor"]


def autoincreased_step_counter(counter_name: str | None = None, begin: int = 1, step: int = 1) -> Variable:
    """A global step counter: ``begin`` in the first run of the main program, ``step`` more each run.

    The counter is a persistable int64 ``[1]`` variable: the startup program fills it with
    ``begin - step`` and an ``increment`` op is *prepended* to the main program, so every op of a
    step sees the new value. The learning-rate schedules count steps with it. Calling it again with
    the same name returns the same counter (and adds no second increment).

    Args:
        counter_name: the variable's name; ``"@STEP_COUNTER@"`` when None.
        begin: the value in the first run.
        step: the increment per run.

    Returns:
        The int64 ``[1]`` counter Variable.

    Examples:
        >>> step = fluid.layers.autoincreased_step_counter(counter_name="my_step", begin=0)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> [exe.run(fetch_list=[step])[0].tolist() for _ in range(3)]
        [[0], [1], [2]]
    """
    helper = LayerHelper("global_step_counter")
    name = counter_name or "@STEP_COUNTER@"
    block = helper.main_program.global_block()
    if block.has_var(name):
        return block.var(name)
    counter = block.create_var(name=name, dtype="int64", shape=[1], persistable=True, stop_gradient=True)
    helper.set_variable_initializer(counter, ConstantInitializer(float(begin - step), force_cpu=True))
    block._prepend_op("increment", inputs={"X": [counter]}, outputs={"Out": [counter]},
                      attrs={"step": float(step)})
    return counter


class Switch:
    """Runs the first ``case`` whose condition holds, else the ``default`` block.

    Each case is a ``ConditionalBlock`` on its condition and the negation of every earlier one;
    the piecewise learning-rate schedules are built with it.

    Args:
        name: the prefix of the ops' variables (generated when None).

    Raises:
        ValueError: ``case`` outside ``with Switch() as switch:``, or ``default`` before any case.

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=5.0)
        >>> lr = fluid.layers.create_global_var(shape=[1], value=0.0, dtype="float32", persistable=True)
        >>> with fluid.layers.Switch() as switch:
        ...     with switch.case(x < 3.0):
        ...         _ = fluid.layers.assign(fluid.layers.fill_constant([1], "float32", 0.1), lr)
        ...     with switch.default():
        ...         _ = fluid.layers.assign(fluid.layers.fill_constant([1], "float32", 0.01), lr)
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> round(float(exe.run(fetch_list=[lr])[0][0]), 4)
        0.01
    """

    def __init__(self, name: str | None = None):
        self.helper = LayerHelper("switch", name=name)
        self.inside_scope = False
        self.pre_not_conditions: list[Variable] = []

    def case(self, condition: Variable) -> SubBlockGuard:
        """The block run when ``condition`` (bool ``[1]``) holds and no earlier case did."""
        if not self.inside_scope:
            raise ValueError("Switch.case must be used inside 'with Switch() as switch:'")
        _check_var(condition, "Switch.case", "condition")
        if not self.pre_not_conditions:
            block = ConditionalBlock([condition], is_scalar_condition=True)
            self.pre_not_conditions.append(logical_not(condition))
        else:
            pre_not = self.pre_not_conditions[-1]
            self.pre_not_conditions.append(logical_and(pre_not, logical_not(condition)))
            block = ConditionalBlock([logical_and(pre_not, condition)], is_scalar_condition=True)
        return block.block()

    def default(self) -> SubBlockGuard:
        """The block run when no case held (after at least one ``case``)."""
        if not self.pre_not_conditions:
            raise ValueError("Switch.default needs at least one Switch.case before it")
        return ConditionalBlock([self.pre_not_conditions[-1]], is_scalar_condition=True).block()

    def __enter__(self):
        self.inside_scope = True
        return self

    def __exit__(self, exc_type, exc, tb):
        self.inside_scope = False
        return False


# ---------------------------------------------------------------------------- cond / case / switch_case
def select_input(inputs: Variable | Sequence[Variable], mask: Variable) -> Variable:
    """``inputs[mask]``: one of several Variables, chosen when the program runs.

    Only the chosen input is read, so the others may be unset (an unrun branch of ``cond``).

    Args:
        inputs: the candidates (of one dtype and shape).
        mask: an int32 ``[1]`` Variable, the index of the one to give.

    Returns:
        A Variable with the first input's dtype, shape and LoD level.

    Examples:
        >>> a = fluid.layers.fill_constant(shape=[1], dtype="float32", value=1.0)
        >>> b = fluid.layers.fill_constant(shape=[1], dtype="float32", value=2.0)
        >>> which = fluid.layers.fill_constant(shape=[1], dtype="int32", value=1)
        >>> out = fluid.layers.select_input([a, b], which)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[out])[0].tolist()
        [2.0]
    """
    _check_var(mask, "select_input", "mask")
    helper = LayerHelper("select_input")
    candidates: list[Variable] = (list(inputs) if isinstance(inputs, (list, tuple))
                                  else [inputs])  # type: ignore[list-item]
    first = candidates[0]
    out = helper.create_variable(name=unique_name.generate("select_input.out"), dtype=first.dtype,
                                 shape=first.shape, lod_level=first.lod_level)
    helper.append_op("select_input", inputs={"X": candidates, "Mask": [mask]}, outputs={"Out": [out]})
    return out


def _copy_to_parent(var):
    """``var`` (built in a sub-block) assigned to a new variable of the enclosing block."""
    if var is None:
        return None
    if not isinstance(var, Variable):
        raise TypeError("cond: a branch must return Variables (or lists/tuples/dicts of them), got %r"
                        % type(var).__name__)
    parent = parent_block(LayerHelper("cond").main_program)
    out = parent.create_var(name=unique_name.generate("cond.out"), dtype=var.dtype, shape=var.shape,
                            type=var.type, lod_level=var.lod_level)
    assign(var, out)
    return out


def cond(pred: Variable, true_fn: Callable[[], Any] | None = None, false_fn: Callable[[], Any] | None = None,
         name: str | None = None) -> Any:
    """``true_fn()`` if the bool ``[1]`` ``pred`` holds when the program runs, else ``false_fn()``.

    As in Paddle 1.8: each branch is a ``conditional_block`` (the second on ``logical_not(pred)``)
    copying its results to new variables of the enclosing block, and a ``select_input`` per result
    on ``cast(pred, int32)`` gives what is returned, in the structure the branches return. Only the
    branch taken runs; gradients flow through it.

    Args:
        pred: a bool ``[1]`` Variable.
        true_fn: a function of no arguments building the true branch; it returns Variables (or
            nested lists / tuples / dicts of them) or None.
        false_fn: the same for the false branch; its results must have the true branch's structure.
        name: accepted for Paddle's signature.

    Returns:
        The taken branch's results, in their structure; None when the branches return None.

    Raises:
        TypeError: ``pred`` not a bool Variable, a branch not callable or returning a non-Variable.
        ValueError: the branches return different structures (or one returns None).

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=3.0)
        >>> y = fluid.layers.fill_constant(shape=[1], dtype="float32", value=5.0)
        >>> smaller = fluid.layers.cond(x < y, lambda: x, lambda: y)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[smaller])[0].tolist()
        [3.0]
    """
    _check_var(pred, "cond", "pred")
    if pred.dtype not in (None, "bool"):
        raise TypeError("cond: pred %r must be a bool Variable, got %s" % (pred.name, pred.dtype))
    outputs = {}
    for which, fn, condition in (("true_fn", true_fn, lambda: pred), ("false_fn", false_fn,
                                                                       lambda: logical_not(pred))):
        if fn is None:
            continue
        if not callable(fn):
            raise TypeError("cond: %s must be callable, got %r" % (which, type(fn).__name__))
        with ConditionalBlock([condition()], is_scalar_condition=True).block():
            raw = fn()
            if raw is not None:
                outputs[which] = map_structure(_copy_to_parent, raw)
    true_out, false_out = outputs.get("true_fn"), outputs.get("false_fn")
    if true_out is None and false_out is None:
        return None
    if true_out is None or false_out is None:
        raise ValueError("cond: incompatible return values of true_fn and false_fn: %s returns None while "
                         "%s does not" % (("true_fn", "false_fn") if true_out is None else ("false_fn", "true_fn")))
    try:
        same_structure(true_out, false_out)
    except ValueError as e:
        raise ValueError("cond: incompatible return values of true_fn and false_fn: %s" % e) from None
    mask = cast(pred, "int32")
    return map_structure(lambda f, t: select_input([f, t], mask), false_out, true_out)


def case(pred_fn_pairs: Sequence[Tuple[Variable, Callable[[], Any]]], default: Callable[[], Any] | None = None,
         name: str | None = None) -> Any:
    """The results of the first ``(pred, fn)`` pair whose ``pred`` holds, else of ``default``.

    Built as nested ``cond``s, as in Paddle 1.8.

    Args:
        pred_fn_pairs: ``(bool [1] Variable, function)`` pairs, tried in order.
        default: the function when no pred holds; the last pair's function when None.
        name: accepted for Paddle's signature.

    Returns:
        The chosen function's results (all functions must return the same structure).

    Raises:
        TypeError: ``pred_fn_pairs`` not a list / tuple of ``(Variable, callable)`` pairs, or
            ``default`` not callable.
        ValueError: no pairs and no default.

    Examples:
        >>> x = fluid.layers.fill_constant(shape=[1], dtype="float32", value=0.5)
        >>> one = lambda: fluid.layers.fill_constant([1], "float32", 1.0)
        >>> two = lambda: fluid.layers.fill_constant([1], "float32", 2.0)
        >>> three = lambda: fluid.layers.fill_constant([1], "float32", 3.0)
        >>> out = fluid.layers.case([(x > 1.0, one), (x > 0.0, two)], default=three)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[out])[0].tolist()
        [2.0]
    """
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError("case: pred_fn_pairs must be a list or tuple of (pred, fn), got %r"
                        % type(pred_fn_pairs).__name__)
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("case: each element of pred_fn_pairs must be a (pred, fn) tuple, got %r" % (pair,))
        pred, fn = pair
        _check_var(pred, "case", "pred")
        if not callable(fn):
            raise TypeError("case: the fn paired with %s must be callable" % pred.name)
    pairs = list(pred_fn_pairs)
    if default is None:
        if not pairs:
            raise ValueError("case: pred_fn_pairs is empty and there is no default")
        default = pairs.pop()[1]
    elif not callable(default):
        raise TypeError("case: default must be callable")
    fn = default
    for pred, true_fn in reversed(pairs):
        fn = partial(cond, pred, true_fn, fn)
    return fn()


def switch_case(branch_index: Variable,
                branch_fns: Union[Sequence[Callable[[], Any]], Sequence[Tuple[int, Callable[[], Any]]],
                                  Dict[int, Callable[[], Any]]],
                default: Callable[[], Any] | None = None, name: str | None = None) -> Any:
    """The results of the branch whose index equals ``branch_index``, else of ``default``.

    Built as nested ``cond``s on ``branch_index == index``, as in Paddle 1.8.

    Args:
        branch_index: an int ``[1]`` Variable (uint8, int32 or int64).
        branch_fns: a list of functions (indexed 0, 1, ...), a list of ``(index, fn)`` pairs or a
            dict ``{index: fn}``.
        default: the function when no index matches; the branch with the largest index when None.
        name: accepted for Paddle's signature.

    Returns:
        The chosen function's results (all functions must return the same structure).

    Raises:
        TypeError: a ``branch_index`` of another dtype, a non-int index or a non-callable branch.
        ValueError: an index given twice, or no branches and no default.

    Examples:
        >>> k = fluid.layers.fill_constant(shape=[1], dtype="int64", value=2)
        >>> fns = {1: lambda: fluid.layers.fill_constant([1], "float32", 10.0),
        ...        2: lambda: fluid.layers.fill_constant([1], "float32", 20.0)}
        >>> out = fluid.layers.switch_case(k, fns)
        >>> fluid.Executor(fluid.CPUPlace()).run(fetch_list=[out])[0].tolist()
        [20.0]
    """
    _check_var(branch_index, "switch_case", "branch_index")
    if branch_index.dtype not in ("uint8", "int32", "int64"):
        raise TypeError("switch_case: branch_index %r must be uint8, int32 or int64, got %s"
                        % (branch_index.name, branch_index.dtype))
    if branch_index.dtype != "int64":
        branch_index = cast(branch_index, "int64")
    if not isinstance(branch_fns, (list, tuple, dict)):
        raise TypeError("switch_case: branch_fns must be a list, tuple or dict, got %r" % type(branch_fns).__name__)
    items = list(branch_fns.items()) if isinstance(branch_fns, dict) else list(branch_fns)
    if items and all(callable(f) for f in items):
        items = list(enumerate(items))
    keys = set()
    for pair in items:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("switch_case: each branch must be an (int, fn) tuple, got %r" % (pair,))
        key, fn = pair
        if not isinstance(key, int):
            raise TypeError("switch_case: branch index %r must be an int" % (key,))
        if key in keys:
            raise ValueError("switch_case: the branch index %d appears more than once" % key)
        keys.add(key)
        if not callable(fn):
            raise TypeError("switch_case: the branch of index %d must be callable" % key)
    items.sort(key=lambda kv: kv[0])
    if default is None:
        if not items:
            raise ValueError("switch_case: branch_fns is empty and there is no default")
        default = items.pop()[1]
    elif not callable(default):
        raise TypeError("switch_case: default must be callable")
    fn = default
    for index, true_fn in items:
        pred = equal(branch_index, fill_constant([1], "int64", index))
        fn = partial(cond, pred, true_fn, fn)
    return fn()


# ---------------------------------------------------------------------------- is_empty / Print
def is_empty(x: Variable, cond: Variable | None = None) -> Variable:
    """Whether ``x`` has no elements, as a bool ``[1]`` Variable.

    Args:
        x: any tensor.
        cond: a bool Variable to write the answer to; a new one when None.

    Returns:
        The bool ``[1]`` Variable (no gradient).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> empty = fluid.layers.is_empty(x)
        >>> fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.zeros((0, 2), "float32")},
        ...                                      fetch_list=[empty])[0].tolist()
        [True]
    """
    _check_var(x, "is_empty", "x")
    helper = LayerHelper("is_empty")
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype="bool")
    _check_var(cond, "is_empty", "cond")
    cond.stop_gradient = True
    helper.append_op("is_empty", inputs={"X": [x]}, outputs={"Out": [cond]})
    return cond


def Print(input: Variable, first_n: int = -1, message: str | None = None, summarize: int = 20,
          print_tensor_name: bool = True, print_tensor_type: bool = True, print_tensor_shape: bool = True,
          print_tensor_lod: bool = True, print_phase: str = "both") -> Variable:
    """Print a tensor (and its gradient) each time the program runs, in Paddle's layout.

    Args:
        input: the tensor to print.
        first_n: print only in the first ``first_n`` runs (-1: always).
        message: a line printed before the tensor.
        summarize: how many values to print (-1: all).
        print_tensor_name: print the variable's name.
        print_tensor_type: print its dtype.
        print_tensor_shape: print its shape.
        print_tensor_lod: print its LoD.
        print_phase: ``"forward"`` (the value), ``"backward"`` (its gradient) or ``"both"``.

    Returns:
        A Variable with ``input``'s value; use it in place of ``input`` so that the gradient is
        printed too.

    Raises:
        ValueError: an unknown ``print_phase``.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> x = fluid.layers.Print(x, message="the input", summarize=3)
    """
    _check_var(input, "Print", "input")
    if str(print_phase).upper() not in ("FORWARD", "BACKWARD", "BOTH"):
        raise ValueError("Print: print_phase must be 'forward', 'backward' or 'both', got %r" % (print_phase,))
    helper = LayerHelper("print_" + input.name)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("print", inputs={"In": [input]}, outputs={"Out": [out]},
                     attrs={"first_n": int(first_n), "summarize": int(summarize), "message": message or "",
                            "print_tensor_name": bool(print_tensor_name), "print_tensor_type": bool(print_tensor_type),
                            "print_tensor_shape": bool(print_tensor_shape), "print_tensor_lod": bool(print_tensor_lod),
                            "print_phase": str(print_phase).upper()})
    return out
