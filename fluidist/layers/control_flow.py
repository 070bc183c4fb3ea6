"""Control-flow layers: comparisons, logical ops, ``ConditionalBlock``, ``Switch``, ``cond``, and the
global step counter that learning-rate schedules run on."""
from ..framework.dtypes import VarType
from ..framework.program import Variable
from ..initializer import ConstantInitializer
from .layer_helper import LayerHelper

__all__ = ["less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal",
           "logical_and", "logical_or", "logical_xor", "logical_not", "increment",
           "autoincreased_step_counter", "ConditionalBlock", "Switch", "cond"]


def _check_var(x, layer, arg):
    if not isinstance(x, Variable):
        raise TypeError("%s: %r must be a Variable, got %r" % (layer, arg, type(x).__name__))


def _compare_layer(op_type):
    def layer(x, y, force_cpu=None, cond=None, name=None):
        _check_var(x, op_type, "x")
        _check_var(y, op_type, "y")
        helper = LayerHelper(op_type, name=name)
        if cond is None:
            cond = helper.create_variable_for_type_inference(dtype="bool", stop_gradient=True)
        cond.stop_gradient = True
        attrs = {"force_cpu": bool(force_cpu)} if force_cpu is not None else {}
        helper.append_op(op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]}, attrs=attrs)
        return cond
    layer.__name__ = op_type
    layer.__doc__ = "``%s(x, y)``: elementwise comparison, a bool Variable." % op_type
    return layer


less_than = _compare_layer("less_than")
less_equal = _compare_layer("less_equal")
greater_than = _compare_layer("greater_than")
greater_equal = _compare_layer("greater_equal")
equal = _compare_layer("equal")
not_equal = _compare_layer("not_equal")


def _logical_layer(op_type, binary=True):
    def layer(x, y=None, out=None, name=None):
        _check_var(x, op_type, "x")
        inputs = {"X": [x]}
        if binary:
            _check_var(y, op_type, "y")
            inputs["Y"] = [y]
        helper = LayerHelper(op_type, name=name)
        if out is None:
            out = helper.create_variable_for_type_inference(dtype="bool", stop_gradient=True)
        helper.append_op(op_type, inputs=inputs, outputs={"Out": [out]})
        return out
    layer.__name__ = op_type
    return layer


logical_and = _logical_layer("logical_and")
logical_or = _logical_layer("logical_or")
logical_xor = _logical_layer("logical_xor")
_logical_not = _logical_layer("logical_not", binary=False)


def logical_not(x, out=None, name=None):
    return _logical_not(x, out=out, name=name)


def increment(x, value=1.0, in_place=True):
    """``x + value`` by an ``increment`` op (into ``x`` itself when ``in_place``)."""
    _check_var(x, "increment", "x")
    helper = LayerHelper("increment")
    out = x if in_place else helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out


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
        return _ConditionalBlockGuard(self)

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


class _ConditionalBlockGuard:
    def __init__(self, cond_block):
        self.cond_block = cond_block
        self.program = cond_block.helper.main_program

    def __enter__(self):
        self.program._create_block()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.cond_block.complete()
        self.program._rollback()
        return False


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


def _flatten_outputs(out, which):
    if out is None:
        return None
    if isinstance(out, Variable):
        return [out]
    if isinstance(out, (list, tuple)) and all(isinstance(v, Variable) for v in out):
        return list(out)
    raise TypeError("cond: %s must return None, a Variable or a list/tuple of Variables, got %r"
                    % (which, type(out).__name__))


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if the bool ``[1]`` ``pred`` holds, else ``false_fn()``; each branch is a
    ``conditional_block`` (the second on ``logical_not(pred)``) that assigns its results to shared
    output variables, which are returned (a Variable, or a list/tuple as the branches return)."""
    _check_var(pred, "cond", "pred")
    helper = LayerHelper("cond", name=name)
    parent = helper.main_program.current_block()
    outputs, shape_of = None, None

    def branch(fn, condition, which):
        nonlocal outputs, shape_of
        if fn is None:
            return
        with ConditionalBlock([condition], is_scalar_condition=True).block():
            raw = fn()
            rets = _flatten_outputs(raw, which)
            if rets is not None:
                if outputs is None:
                    shape_of = raw
                    outputs = [parent.create_var(
                        name=helper.name + ".out_%d" % i, dtype=r.dtype, shape=r.shape, lod_level=r.lod_level)
                        for i, r in enumerate(rets)]
                elif len(rets) != len(outputs):
                    raise ValueError("cond: true_fn returns %d outputs but false_fn returns %d"
                                     % (len(outputs), len(rets)))
                blk = helper.main_program.current_block()
                for r, o in zip(rets, outputs):
                    blk.append_op("assign", inputs={"X": [r]}, outputs={"Out": [o]})
            elif outputs is not None:
                raise ValueError("cond: true_fn returns outputs but false_fn returns None")

    branch(true_fn, pred, "true_fn")
    if false_fn is not None:
        branch(false_fn, logical_not(pred), "false_fn")
    if outputs is None:
        return None
    if isinstance(shape_of, Variable):
        return outputs[0]
    return type(shape_of)(outputs) if isinstance(shape_of, tuple) else outputs

