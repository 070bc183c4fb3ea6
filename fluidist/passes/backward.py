"""Reverse-mode autodiff over a Program: ``append_backward`` appends one grad op per forward op.

Naming follows Paddle: the gradient of ``x`` is ``x@GRAD``; a gradient written by several grad ops
is produced as ``x@GRAD@RENAME@<n>`` parts added up by a ``sum`` op right before its first reader.
The op that last writes a parameter's gradient carries ``op_role_var = [param, grad, ...]``.

Ops with a sub-block (``while``, ``conditional_block``, ``recurrent``) have gradient makers that take a
``SubBlockBackward``: it builds the gradient block of their sub-block (a new block whose parent is the
forward sub-block, so its ops see the forward values of the same step through the scope chain) and
says under which names the gradient op must hand in the gradients coming from outside.

Only float variables (and arrays of them) get gradients; integer and bool ones never do.
Gradients of tensor arrays are not renamed: the ops producing them add into one array.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

from ..compat import refused, refused_class  # noqa: E402
from ..reader.data_feeder import check_type
from ..framework.dtypes import VarType, is_float_dtype
from ..framework.op_role import OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from ..framework.program import GRAD_SUFFIX, RENAME_INFIX, Parameter, Variable, _strip_grad
from ..framework.variable import EMPTY_VAR_NAME
from ..framework import registry, unique_name
from .backward_paths import (_append_grad_suffix_, _as_list, _find_no_grad_vars, _find_op_path_,  # noqa: F401  (Paddle's names)
                             _get_output_names, _get_stop_gradients_, _strip_grad_suffix_)
from .backward_paths import _grad_var_like, _rebind_to_this_call

_GRAD_TYPES = (VarType.LOD_TENSOR, VarType.SELECTED_ROWS, VarType.LOD_TENSOR_ARRAY)


def _no_grad_names(block, no_grad_set):
    names = set()
    for v in block.program.list_vars():
        if v.stop_gradient:
            names.add(v.name)
        if isinstance(v, Parameter) and not v.trainable:
            names.add(v.name)
    for n in no_grad_set or ():
        names.add(n.name if isinstance(n, Variable) else n)
    return names


def _differentiable(block, name):
    """Only float tensors (and arrays of them) carry gradients; a variable of unknown dtype may."""
    v = block._find_var_recursive(name)
    if v is None:
        return True
    if v.type not in _GRAD_TYPES:
        return False
    return v.dtype is None or is_float_dtype(v.dtype)


def _ops_on_path(block, loss_idx, target_names, no_grad):
    """Forward ops (indices) that lie between a differentiable input and the targets."""
    no_grad = no_grad | _not_differentiable(block, block.ops[:loss_idx + 1])
    ops = block.ops[:loss_idx + 1]
    # backward reachability: ops whose outputs flow into the targets
    wanted = set(target_names)
    relevant = set()
    for i in range(len(ops) - 1, -1, -1):
        if wanted.intersection(ops[i].output_arg_names):
            relevant.add(i)
            # gradients do not flow through stop_gradient / no_grad variables
            wanted.update(n for n in ops[i].input_arg_names if n not in no_grad)
    # forward propagation of "requires grad"
    requires = set()
    for i, op in enumerate(ops):
        ins = [n for n in op.input_arg_names if n not in no_grad]
        if any(n in requires or _is_grad_leaf(block, n) for n in ins):
            for n in op.output_arg_names:
                if n not in no_grad:
                    requires.add(n)
    path = [i for i in sorted(relevant)
            if any(n in requires or _is_grad_leaf(block, n) for n in ops[i].input_arg_names if n not in no_grad)]
    return sorted(set(path) | _reversed_counters(block, ops, path)), requires


def _reversed_counters(block, ops, path):
    """In-place ``reversible`` ops (``increment``) of a counter that ops on the path read and that
    does not stop gradients: Paddle's backward undoes them in reverse order (their gradient op is the
    opposite step), so that each gradient op reads the counter value its forward op read."""
    read = {n for i in path for n in ops[i].input_arg_names}
    out = set()
    for i, op in enumerate(ops):
        if _restores_value(op) and op.input("X")[0] in read:
            v = block._find_var_recursive(op.input("X")[0])
            if v is not None and not v.stop_gradient:
                out.add(i)
    return out


def _not_differentiable(block, ops):
    """The names the ops read or write that can carry no gradient (integer, bool, rank tables...)."""
    names = set()
    for op in ops:
        for n in op.input_arg_names + op.output_arg_names:
            if not _differentiable(block, n):
                names.add(n)
    return names


def _is_grad_leaf(block, name):
    v = block._find_var_recursive(name)
    return v is not None and not v.stop_gradient and _differentiable(block, name)


def _is_array(block, name):
    v = block._find_var_recursive(name)
    return v is not None and v.type == VarType.LOD_TENSOR_ARRAY


def _grad_specs(op, backward):
    if registry.fact(op, "takes_backward"):
        return registry.get(op.type).grad(op, backward)
    return registry.make_grad_specs(op)


def _specs_for(block, path, requires, no_grad, checkpoints=None):
    """Grad op specs in reverse op order, outputs trimmed to gradients that are wanted; with
    ``checkpoints``, the recompute ops of ``recompute.py`` inserted."""
    backward = SubBlockBackward(requires, no_grad)

    def specs_of(i):
        return _op_specs(block, i, requires, no_grad, backward)
    if checkpoints:
        from .recompute import with_recompute
        return with_recompute(block, path, specs_of, checkpoints)
    specs = []
    for i in reversed(path):
        specs.extend(specs_of(i))
    return specs


def _op_specs(block, i, requires, no_grad, backward):
    """The grad op specs of forward op ``i``."""
    specs = []
    out_grads = {n + GRAD_SUFFIX for n in block.ops[i].output_arg_names}
    for spec in _grad_specs(block.ops[i], backward):
        if spec.get("keep"):     # restores a forward value (increment's reverse): no gradient to trim
            specs.append(spec)
            continue
        outs = {}
        for slot, names in spec["outputs"].items():
            keep = [n for n in names if _strip_grad(n) not in no_grad and
                    (_strip_grad(n) in requires or _is_grad_leaf(block, _strip_grad(n)))]
            if len(keep) == len(names):
                outs[slot] = names
            elif keep and registry.get(spec["type"]).duplicable and slot in registry.get(spec["type"]).duplicable:
                outs[slot] = [n if n in keep else EMPTY_VAR_NAME for n in names]
            elif keep:
                outs[slot] = names
        if not outs:
            continue
        specs.append(dict(spec, outputs=outs, grads_in=[n for names in spec["inputs"].values() for n in names
                                                        if n in out_grads]))
    return specs


def _rename_repeated_outputs(specs, is_array=None):
    """Give each repeated write of a grad its own ``@RENAME@<n>`` name and plan the ``sum`` ops.

    Returns a new list where dicts {"sum": grad, "parts": [...]} stand where a sum must be inserted.
    Array gradients (``is_array(grad)``) are not renamed: their writers add into one array. A spec
    with a ``link`` key stands for a gradient handed in from outside a sub-block; where it is the
    only part a reader needs, it takes the gradient's own name instead of being summed alone."""
    writers = {}
    for spec in specs:
        for names in spec["outputs"].values():
            for n in names:
                if n != EMPTY_VAR_NAME:
                    writers[n] = writers.get(n, 0) + 1
    # (a variable that is no gradient, a counter that reversed increments step back in place, is
    # written again, not summed)
    multi = {n for n, c in writers.items() if c > 1 and GRAD_SUFFIX in n and not (is_array and is_array(n))}
    pending = {}     # grad name -> list of part names written so far
    counter = {}
    link_of = {}     # part name -> the link spec that writes it
    out = []

    def flush(n):
        parts = pending.pop(n)
        if len(parts) == 1 and parts[0] in link_of:
            link_of[parts[0]]["outputs"] = {"Out": [n]}
        else:
            out.append({"sum": n, "parts": parts})

    for spec in specs:
        # a reader of a multiply-written grad gets the sum first
        for names in spec["inputs"].values():
            for n in names:
                if n in multi and pending.get(n):
                    flush(n)
        new_outs = {}
        for slot, names in spec["outputs"].items():
            renamed = []
            for n in names:
                if n in multi:
                    k = counter.get(n, 0)
                    counter[n] = k + 1
                    part = "%s%s%d" % (n, RENAME_INFIX, k)
                    pending.setdefault(n, []).append(part)
                    renamed.append(part)
                else:
                    renamed.append(n)
            new_outs[slot] = renamed
        new_spec = dict(spec, outputs=new_outs)
        if "link" in spec:
            link_of[new_outs["Out"][0]] = new_spec
        out.append(new_spec)
    for n in list(pending):
        flush(n)
    return out


def _append_specs(block, specs, produced=(), on_op=None):
    """Append grad ops (and sums, and zero-fills for grads nobody produced) to ``block``;
    ``on_op(block)`` runs after each grad op and sum (Paddle's backward callbacks). A spec with
    ``optional_grads`` gets no zero-fill: its op takes a missing gradient as zero itself."""
    produced = set(produced)
    for spec in specs:
        if "sum" in spec:
            g = spec["sum"]
            _grad_var_like(block, g, _strip_grad(g))
            block.append_op("sum", inputs={"X": spec["parts"]}, outputs={"Out": [g]})
            produced.add(g)
            if on_op is not None:
                on_op(block)
            continue
        if spec.get("optional_grads"):   # its op reads gradients by name: list only those there can be
            spec = dict(spec, inputs={slot: [n for n in names if not n.endswith(GRAD_SUFFIX) or
                                             _differentiable(block, _strip_grad(n))]
                                      for slot, names in spec["inputs"].items()})
        for slot, names in spec["inputs"].items():
            for n in names:
                # a gradient input (by name: custom grad makers use plain slot names) nobody produced
                if n.endswith(GRAD_SUFFIX) and n not in produced and not block.has_var(n):
                    # an output nobody differentiated through: its gradient is zero
                    fwd = _strip_grad(n)
                    _grad_var_like(block, n, fwd)
                    if not spec.get("optional_grads"):
                        block.append_op("fill_zeros_like", inputs={"X": [fwd]}, outputs={"Out": [n]})
                    produced.add(n)
        for names in spec["outputs"].values():
            for n in names:
                if n != EMPTY_VAR_NAME and not spec.get("keep"):   # a kept spec writes forward variables
                    _grad_var_like(block, n, _strip_grad(n))
                    produced.add(n)
        block.append_op(spec["type"], inputs=spec["inputs"], outputs=spec["outputs"], attrs=spec.get("attrs"))
        if on_op is not None:
            on_op(block)


def _callbacks_hook(callbacks):
    """``on_op`` calling each callback as Paddle does, ``cb(block=, context=grad_to_var)``, where
    the context maps the gradients the last op wrote (final names, not renamed parts) to their
    forward variables."""
    if not callbacks:
        return None
    for cb in callbacks:
        if not callable(cb):
            raise ValueError("append_backward: callback %r is not callable" % (cb,))

    def hook(block):
        op = block.ops[-1]
        context = {n: _strip_grad(n) for n in op.output_arg_names
                   if n.endswith(GRAD_SUFFIX) and RENAME_INFIX not in n}
        for cb in callbacks:
            cb(block=block, context=context)
    return hook


def _set_op_role_vars(block, pairs, start):
    """Tag the last op writing each parameter's gradient with ``op_role_var``."""
    for p, g in pairs:
        for op in reversed(block.ops[start:]):
            if g in op.output_arg_names:
                prev = list(op.attr(OP_ROLE_VAR_ATTR) or [])
                op._set_attr(OP_ROLE_VAR_ATTR, [p, g] + prev)
                break


def append_backward(loss: Variable, parameter_list: Sequence[Any] | None = None, no_grad_set: Any = None,
                    callbacks: Any = None, checkpoints: Sequence[Any] | None = None) -> List[Tuple[Any, Any]]:
    """Append the backward pass of ``loss`` to its program (what ``Optimizer.minimize`` does first).

    Args:
        loss: a scalar (``[1]``) Variable of the global block.
        parameter_list: the parameters (or names) to differentiate; every trainable one when None.
        no_grad_set: variables (or names) whose gradients are not computed.
        callbacks: functions ``(block, context)`` called after each gradient op (error clips).
        checkpoints: recompute the forward ops between these Variables during backward instead
            of reading their activations (see ``fluidist.passes.recompute``).

    Returns:
        ``[(parameter, gradient), ...]``, one per parameter on the loss's path.

    Raises:
        TypeError: ``loss`` is not a Variable.
        ValueError: a loss outside the global block, not produced by any op, or not a scalar.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> loss = fluid.layers.mean(fluid.layers.fc(x, size=1))
        >>> [(p.name, g.name) for p, g in fluid.backward.append_backward(loss)]
        [('fc_0.w_0', 'fc_0.w_0@GRAD'), ('fc_0.b_0', 'fc_0.b_0@GRAD')]
    """
    if not isinstance(loss, Variable):
        raise TypeError("append_backward: loss must be a Variable, got %r" % type(loss).__name__)
    if parameter_list is not None:
        _parameter_names(parameter_list)
    block = loss.block
    program = block.program
    if block.idx != 0:
        raise ValueError("append_backward: the loss %r must be in the global block" % loss.name)
    loss_idx = None
    for i in range(len(block.ops) - 1, -1, -1):
        if loss.name in block.ops[i].output_arg_names:
            loss_idx = i
            break
    if loss_idx is None:
        raise ValueError("append_backward: no op of the program produces the loss %r" % loss.name)
    if loss.shape is not None and any(d > 1 for d in loss.shape):
        raise ValueError("append_backward: the loss %r must be a scalar (shape [1]), got shape %s"
                         % (loss.name, list(loss.shape)))
    program._appending_grad_times += 1
    loss_op = block.ops[loss_idx]
    loss_op._set_attr(OP_ROLE_ATTR, int(OpRole.Forward) | int(OpRole.Loss))

    no_grad = _no_grad_names(block, no_grad_set)
    path, requires = _ops_on_path(block, loss_idx, [loss.name], no_grad)
    if checkpoints:      # a seed op for each dropout, so that recomputing it draws the same mask
        from .recompute import seed_dropouts
        inserted = seed_dropouts(block, path)
        if inserted:
            loss_idx += inserted
            no_grad = _no_grad_names(block, no_grad_set)
            path, requires = _ops_on_path(block, loss_idx, [loss.name], no_grad)
    specs = _specs_for(block, path, requires, no_grad, checkpoints)
    specs = _rename_repeated_outputs(specs, lambda n: _is_array(block, _strip_grad(n)))

    start = len(block.ops)
    loss_grad = loss.name + GRAD_SUFFIX
    _grad_var_like(block, loss_grad, loss.name)
    with program._role_guard(OpRole.Backward | OpRole.Loss):
        block.append_op("fill_constant", outputs={"Out": [loss_grad]},
                        attrs={"shape": list(loss.shape or [1]), "value": 1.0, "dtype": loss.dtype or "float32"})
    with program._backward_role_guard():
        _append_specs(block, specs, on_op=_callbacks_hook(callbacks))

    if parameter_list is not None:     # (a name on no gradient path is left out, as in Paddle)
        params = [block.var(n) for n in _parameter_names(parameter_list) if block.has_var(n)]
    else:
        params = [p for p in program.global_block().all_parameters() if p.trainable]
    pairs = []
    for p in params:
        g = p.name + GRAD_SUFFIX
        if block.has_var(g) and any(g in op.output_arg_names for op in block.ops[start:]):
            pairs.append((p, block.var(g)))
    _set_op_role_vars(block, [(p.name, g.name) for p, g in pairs], start)
    return pairs


def _parameter_names(parameter_list):
    """The names in ``parameter_list``: a list, tuple or set of Variables or names (TypeError else)."""
    if not isinstance(parameter_list, (list, tuple, set)):
        raise TypeError("append_backward: parameter_list must be a list, tuple or set, got %r"
                        % type(parameter_list).__name__)
    names = []
    for i, p in enumerate(parameter_list):
        if not isinstance(p, (Variable, str)):
            raise TypeError("append_backward: parameter_list[%d] must be a Variable or a name, got %r"
                            % (i, type(p).__name__))
        names.append(p.name if isinstance(p, Variable) else p)
    return names


def calc_gradient(targets: Any, inputs: Any, target_gradients: Any = None, no_grad_set: Any = None) -> Any:
    """Gradients of the targets with respect to ``inputs`` (any Variables, not only parameters).

    Called again on a program that already holds gradient ops (a gradient of a gradient), the
    gradients this call makes that would take the name of an existing variable get a fresh
    ``unique_name`` (``x@GRAD_0``), as in Paddle, and a gradient op of this call reads only the
    gradients this call made (one nobody made is zero), never the earlier ones of the same name.

    Args:
        targets: a Variable or a list of them (of one block).
        inputs: a Variable or a list of them.
        target_gradients: the gradients of the targets (Variables shaped like them, or None for
            a target whose gradient is ones of its run-time shape); None: ones for every target.
        no_grad_set: variables (or names) whose gradients are not computed.

    Returns:
        The gradient Variable of each input (None where the targets do not depend on it); the
        Variable itself (not a list) when there is one input, as in Paddle 1.8.

    Raises:
        ValueError: targets of several blocks, a target no op produces, a ``target_gradients``
            list of another length, or a target gradient shaped unlike its target.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> x.stop_gradient = False
        >>> y = fluid.layers.reduce_sum(fluid.layers.square(x))
        >>> dx = fluid.backward.calc_gradient(y, x)
        >>> fluid.Executor(fluid.CPUPlace()).run(feed={"x": np.array([[1.0, 2.0]], "float32")},
        ...                                      fetch_list=[dx])[0].tolist()
        [[2.0, 4.0]]
    """
    targets = _as_list(targets)
    inputs = _as_list(inputs)
    given = _given_target_gradients(targets, target_gradients)
    block = targets[0].block
    block.program._appending_grad_times += 1
    saved = {v.name: v.stop_gradient for v in inputs}
    for v in inputs:
        v.stop_gradient = False
    try:
        start = len(block.ops)
        existing = set(block.vars)
        loss_idx = max(_producer_index(block, t) for t in targets)
        no_grad = _no_grad_names(block, no_grad_set) - {v.name for v in inputs}
        path, requires = _ops_on_path(block, loss_idx, [t.name for t in targets], no_grad)
        seeds = [spec for t in targets if t.name + GRAD_SUFFIX not in given for spec in _ones_like_target(block, t)]
        specs = _rename_repeated_outputs(seeds + _specs_for(block, path, requires, no_grad),
                                         lambda n: _is_array(block, _strip_grad(n)))
        specs, final = _rebind_to_this_call(block, specs, existing, given)
        with block.program._role_guard(OpRole.Backward):
            _append_specs(block, specs, produced=set(given.values()))
    finally:
        for v in inputs:
            v.stop_gradient = saved[v.name]
    written = {n for op in block.ops[start:] for n in op.output_arg_names}
    out = []
    for v in inputs:
        g = final.get(v.name + GRAD_SUFFIX, v.name + GRAD_SUFFIX)
        out.append(block.var(g) if g in written and block.has_var(g) else None)
    return out[0] if len(out) == 1 else out


def gradients(targets: Any, inputs: Any, target_gradients: Any = None, no_grad_set: Any = None) -> List[Any]:
    """:func:`calc_gradient` that always returns a list (one gradient Variable or None per input).

    Raises:
        TypeError: ``targets`` or ``inputs`` neither a Variable nor a list, or ``target_gradients``
            neither None, a Variable nor a list (Paddle 1.8's check_type).

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> dx, = fluid.gradients(fluid.layers.reduce_sum(fluid.layers.square(x)), x)
    """
    check_type(targets, "targets", (Variable, list), "fluid.backward.gradients")
    check_type(inputs, "inputs", (Variable, list), "fluid.backward.gradients")
    check_type(target_gradients, "target_gradients", (Variable, list, type(None)), "fluid.backward.gradients")
    out = calc_gradient(targets, inputs, target_gradients, no_grad_set)
    return out if isinstance(out, list) else [out]


def _ones_like_target(block, target):
    """The specs that write ``target@GRAD``'s starting value, ones of the target's shape: its run-time
    shape (Paddle 1.8's ``shape`` op feeding ``fill_constant``'s ShapeTensor) where a dimension is
    unknown."""
    shape = list(target.shape or [1])
    fill = {"type": "fill_constant", "inputs": {}, "outputs": {"Out": [target.name + GRAD_SUFFIX]},
            "attrs": {"shape": shape, "value": 1.0, "dtype": target.dtype or "float32"}}
    if all(d is not None and d >= 0 for d in shape):
        return [fill]
    shape_name = unique_name.generate(target.name + "_shape")
    block.create_var(name=shape_name, shape=[len(shape)], dtype="int32", stop_gradient=True)
    return [{"type": "shape", "inputs": {"Input": [target.name]}, "outputs": {"Out": [shape_name]}, "keep": True},
            dict(fill, inputs={"ShapeTensor": [shape_name]})]


def _given_target_gradients(targets, target_gradients):
    """``{target@GRAD: name of the Variable given as its gradient}`` (ValueError on a mismatch)."""
    grads = _as_list(target_gradients) or [None] * len(targets)
    if len(grads) != len(targets):
        raise ValueError("gradients: %d target_gradients for %d targets" % (len(grads), len(targets)))
    given = {}
    for t, g in zip(targets, grads):
        if t.block is not targets[0].block:
            raise ValueError("gradients: all targets must be in the same block (%r is not)" % t.name)
        if g is None:
            continue
        if not isinstance(g, Variable):
            raise TypeError("gradients: target_gradients must be Variables, got %r" % type(g).__name__)
        if g.shape is not None and t.shape is not None and tuple(g.shape) != tuple(t.shape):
            raise ValueError("gradients: the shapes of target %r %s and its gradient %r %s differ"
                             % (t.name, list(t.shape), g.name, list(g.shape)))
        given[t.name + GRAD_SUFFIX] = g.name
    return given


def _producer_index(block, target):
    for i in range(len(block.ops) - 1, -1, -1):
        if target.name in block.ops[i].output_arg_names:
            return i
    raise ValueError("gradients: no op of the block produces the target %r" % target.name)



# ---------------------------------------------------------------------------- sub-blocks
def _requires_in(block, requires, no_grad):
    """The variables of ``block`` that depend on something differentiable, to a fixed point (a
    loop body reads in one step what it wrote in the step before)."""
    req = set(requires)
    changed = True
    while changed:
        changed = False
        for op in block.ops:
            if any(n in req or _is_grad_leaf(block, n) for n in op.input_arg_names if n not in no_grad):
                for n in op.output_arg_names:
                    if n not in req and n not in no_grad and _differentiable(block, n):
                        req.add(n)
                        changed = True
    return req


def _restores_value(op):
    """An in-place op the registry calls ``reversible`` (``increment`` of a loop counter): its
    reverse must run in the gradient block so that the gradient ops of the step read the counter
    the forward ops read."""
    return registry.fact(op, "reversible", False) and op.input("X") == op.output("Out")


class SubBlockBackward:
    """Builds gradient blocks for ops with a sub-block; handed to their gradient makers."""

    def __init__(self, requires, no_grad):
        self.requires = requires
        self.no_grad = no_grad

    def grad_block(self, fwd_block, link=()):
        """The gradient block of ``fwd_block`` and its links ``{inside name: outer variable}``.

        ``link``: variables of outer blocks that ``fwd_block`` writes; the gradient op hands their
        gradients (from later steps or from outside) to the gradient block under the inside names
        before running it. Every other gradient the block reads is made inside it."""
        program = fwd_block.program
        saved = program.current_block_idx
        gb = program._create_block(parent_idx=fwd_block.idx)
        gb.forward_block_idx = fwd_block.idx
        try:
            no_grad = self.no_grad | _not_differentiable(fwd_block, fwd_block.ops)
            req = _requires_in(fwd_block, self.requires, no_grad)
            path = [i for i, op in enumerate(fwd_block.ops)
                    if _restores_value(op) or
                    any(n in req or _is_grad_leaf(fwd_block, n) for n in op.input_arg_names if n not in no_grad)]
            specs = _specs_for(fwd_block, path, req, no_grad)
            links = [{"link": n, "inputs": {}, "outputs": {"Out": [n + GRAD_SUFFIX]}}
                     for n in link if n not in no_grad and (n in req or _is_grad_leaf(fwd_block, n))]
            planned = _rename_repeated_outputs(links + specs, lambda n: _is_array(fwd_block, _strip_grad(n)))
            inside = {}
            real = []
            for spec in planned:
                if "link" in spec:
                    name = spec["outputs"]["Out"][0]
                    inside[name] = spec["link"]
                    _grad_var_like(gb, name, spec["link"])
                else:
                    real.append(spec)
            with program._backward_role_guard():
                _append_specs(gb, real, produced=inside)
        finally:
            program.current_block_idx = saved
        return gb, inside


ProgramStats = refused_class("fluid.backward.ProgramStats",
                             "recompute is append_backward(loss, checkpoints=[...]) or "
                             "fluid.optimizer.RecomputeOptimizer; its segments are not an API here")
serialize_op_decs = refused("fluid.backward.serialize_op_decs",
                            "print ops with op.to_string() or fluid.transpiler.details.program_to_code")
