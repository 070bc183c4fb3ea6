"""Control-flow layers: comparisons, logical ops, ``ConditionalBlock``, ``Switch``, ``cond``, ``case``,
``switch_case``, ``IfElse``, ``While``, ``while_loop``, ``is_empty``, ``Print``, and the global step counter
that learning-rate schedules run on. The tensor-array layers (``tensor_array.py``) and the RNN blocks
``StaticRNN`` / ``DynamicRNN`` (``rnn_blocks.py``) are re-exported here, where Paddle keeps them."""
from functools import partial

from ..framework import unique_name
from ..framework.dtypes import VarType
from ..framework.program import Variable
from ..initializer import ConstantInitializer
from .block_guard import SubBlockGuard, parent_block
from .layer_helper import LayerHelper
from .logic import *  # noqa: F401,F403
from .logic import __all__ as _logic_names
from .logic import _check_var, equal, logical_and, logical_not
from .nest import map_structure, same_structure
from .tensor import assign, cast, fill_constant
from .tensor_array import *  # noqa: F401,F403
from .tensor_array import __all__ as _array_names
from .rnn_blocks import DynamicRNN, StaticRNN  # noqa: F401
from .while_loop import While, while_loop  # noqa: F401

# Paddle 1.8 exports these array layers from fluid.layers; the rank-table ones stay in this module
_IN_LAYERS = ("create_array", "array_write", "array_read", "array_length", "reorder_lod_tensor_by_rank",
              "tensor_array_to_tensor")

__all__ = list(_logic_names) + ["autoincreased_step_counter", "ConditionalBlock", "Switch", "cond", "case", "switch_case",
           "select_input", "IfElse", "While", "while_loop", "is_empty", "Print",
           "DynamicRNN", "StaticRNN"] + [n for n in _array_names if n in _IN_LAYERS]


def autoincreased_step_counter(counter_name=None, begin=1, step=1):
    """A persistable int64 ``[1]`` counter that is ``begin`` in the first run and grows by ``step``
    each run: the startup program fills it with ``begin - step`` and an ``increment`` op is
    *prepended* to the main program, so every op of the step sees the new value. Calling it again
    with the same name returns the same counter (and adds no second increment)."""
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


# ---------------------------------------------------------------------------- conditional blocks
class ConditionalBlock:
    """Ops built inside ``with ConditionalBlock([cond]).block():`` go into a sub-block run by one
    ``conditional_block`` op (appended to the enclosing block when the ``with`` ends)."""

    def __init__(self, inputs, is_scalar_condition=False, name=None):
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        for i, x in enumerate(inputs):
            _check_var(x, "ConditionalBlock", "inputs[%d]" % i)
        self.inputs = inputs
        self.is_scalar_condition = bool(is_scalar_condition)
        self.helper = LayerHelper("conditional_block", name=name)

    def block(self):
        return SubBlockGuard(self.helper.main_program, self.complete)

    def complete(self):
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
        cond_names = {c.name for c in self.inputs}
        params = [n for n in reads if n not in cond_names and parent._find_var_recursive(n) is not None]
        step_scope = parent.create_var(name=self.helper.name + ".scope", type=VarType.STEP_SCOPES)
        parent.append_op("conditional_block", inputs={"Cond": self.inputs, "Input": params},
                         outputs={"Out": outs, "Scope": [step_scope]},
                         attrs={"sub_block": inside, "is_scalar_condition": self.is_scalar_condition})


class Switch:
    """Paddle's ``Switch``: the first ``case`` whose condition holds runs, else ``default``::

        with layers.Switch() as switch:
            with switch.case(step < boundary):
                layers.assign(v0, lr)
            with switch.default():
                layers.assign(v1, lr)

    Each case is a ``conditional_block`` on ``cond and not (any earlier cond)``.
    """

    def __init__(self, name=None):
        self.helper = LayerHelper("switch", name=name)
        self.inside_scope = False
        self.pre_not_conditions = []

    def case(self, condition):
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

    def default(self):
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
def select_input(inputs, mask):
    """``inputs[mask]`` (``mask``: an int32 ``[1]`` Variable); only the chosen input is read."""
    helper = LayerHelper("select_input")
    first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    out = helper.create_variable(name=unique_name.generate("select_input.out"), dtype=first.dtype,
                                 shape=first.shape, lod_level=first.lod_level)
    helper.append_op("select_input", inputs={"X": list(inputs) if isinstance(inputs, (list, tuple)) else [inputs],
                                             "Mask": [mask]}, outputs={"Out": [out]})
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


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if the bool ``[1]`` ``pred`` holds, else ``false_fn()``.

    As in Paddle 1.8: each branch is a ``conditional_block`` (the second on ``logical_not(pred)``)
    copying its results to new variables of the enclosing block, and a ``select_input`` per result
    on ``cast(pred, int32)`` gives what is returned, in the structure the branches return."""
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


def case(pred_fn_pairs, default=None, name=None):
    """The function of the first ``(pred, fn)`` pair whose ``pred`` holds, else ``default`` (the last
    pair's function when None); nested ``cond``s, as in Paddle."""
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


def switch_case(branch_index, branch_fns, default=None, name=None):
    """The branch of ``branch_fns`` (a list of functions, or of / a dict of ``index: fn``) whose
    index equals the int ``[1]`` ``branch_index``, else ``default`` (the branch with the largest index
    when None)."""
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


# ---------------------------------------------------------------------------- IfElse
class IfElse:
    """Rows of a batch go down one of two branches by a bool mask ``cond`` (``[N, 1]``)::

        ie = layers.IfElse(cond)
        with ie.true_block():
            ie.output(layers.scale(ie.input(x), 2.0))
        with ie.false_block():
            ie.output(ie.input(x))
        out, = ie()

    ``input(x)`` is the branch's rows of ``x`` (``split_lod_tensor``); both branches always run, on
    their rows (maybe none); ``ie()`` merges the outputs back in row order (``merge_lod_tensor``)."""

    OUT_IF_ELSE_BLOCKS, IN_IF_ELSE_TRUE_BLOCKS, IN_IF_ELSE_FALSE_BLOCKS = 0, 1, 2

    def __init__(self, cond, name=None):
        _check_var(cond, "IfElse", "cond")
        self.helper = LayerHelper("ifelse", name=name)
        self.cond = cond
        self.input_table = {}
        self.status = IfElse.OUT_IF_ELSE_BLOCKS
        self.conditional_true_block = ConditionalBlock(inputs=[cond])
        self.conditional_false_block = ConditionalBlock(inputs=[cond])
        self.output_table = ([], [])   # (false outputs, true outputs)

    def input(self, x):
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

    def true_block(self):
        return _IfElseBlockGuard(True, self)

    def false_block(self):
        return _IfElseBlockGuard(False, self)

    def output(self, *outs):
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

    def __call__(self):
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


# ---------------------------------------------------------------------------- is_empty / Print
def is_empty(x, cond=None):
    """A bool ``[1]``: whether ``x`` has no elements."""
    _check_var(x, "is_empty", "x")
    helper = LayerHelper("is_empty")
    if cond is None:
        cond = helper.create_variable_for_type_inference(dtype="bool")
    _check_var(cond, "is_empty", "cond")
    cond.stop_gradient = True
    helper.append_op("is_empty", inputs={"X": [x]}, outputs={"Out": [cond]})
    return cond


def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True, print_tensor_type=True,
          print_tensor_shape=True, print_tensor_lod=True, print_phase="both"):
    """Print ``input`` when the program runs (and its gradient, per ``print_phase``: "forward",
    "backward" or "both"), in Paddle's layout; returns it unchanged."""
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
