"""Reverse-mode autodiff over a Program: ``append_backward`` appends one grad op per forward op.

Naming follows Paddle: the gradient of ``x`` is ``x@GRAD``; a gradient written by several grad ops
is produced as ``x@GRAD@RENAME@<n>`` parts added up by a ``sum`` op right before its first reader.
The op that last writes a parameter's gradient carries ``op_role_var = [param, grad, ...]``.
"""
from .framework.op_role import OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from .framework.program import GRAD_SUFFIX, RENAME_INFIX, Parameter, Variable
from .framework import registry


def _strip_grad(name):
    base = name.split(RENAME_INFIX)[0]
    return base[:-len(GRAD_SUFFIX)] if base.endswith(GRAD_SUFFIX) else base


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


def _ops_on_path(block, loss_idx, target_names, no_grad):
    """Forward ops (indices) that lie between a differentiable input and the targets."""
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
    return path, requires


def _is_grad_leaf(block, name):
    v = block._find_var_recursive(name)
    return v is not None and not v.stop_gradient


def _grad_var_like(block, grad_name, fwd_name):
    if block.has_var(grad_name):
        return block.var(grad_name)
    fwd = block._find_var_recursive(fwd_name)
    if fwd is None:
        return block.create_var(name=grad_name, stop_gradient=False)
    return block.create_var(name=grad_name, shape=fwd.shape, dtype=fwd.dtype, lod_level=fwd.lod_level,
                            stop_gradient=False)


def _specs_for(block, path, requires, no_grad, checkpoints=None):
    """Grad op specs in reverse op order, outputs trimmed to gradients that are wanted; with
    ``checkpoints``, the recompute ops of ``recompute.py`` inserted."""
    if checkpoints:
        from .recompute import with_recompute
        return with_recompute(block, path, lambda i: _op_specs(block, i, requires, no_grad), checkpoints)
    specs = []
    for i in reversed(path):
        specs.extend(_op_specs(block, i, requires, no_grad))
    return specs


def _op_specs(block, i, requires, no_grad):
    """The grad op specs of forward op ``i``."""
    specs = []
    for spec in registry.make_grad_specs(block.ops[i]):
        outs = {}
        for slot, names in spec["outputs"].items():
            keep = [n for n in names if _strip_grad(n) not in no_grad and
                    (_strip_grad(n) in requires or _is_grad_leaf(block, _strip_grad(n)))]
            if len(keep) == len(names):
                outs[slot] = names
            elif keep and registry.get(spec["type"]).duplicable and slot in registry.get(spec["type"]).duplicable:
                outs[slot] = [n if n in keep else "@EMPTY@" for n in names]
            elif keep:
                outs[slot] = names
        if not outs:
            continue
        specs.append(dict(spec, outputs=outs))
    return specs


def _rename_repeated_outputs(specs, loss_grad):
    """Give each repeated write of a grad its own ``@RENAME@<n>`` name and plan the ``sum`` ops.

    Returns a new list where dicts {"sum": grad, "parts": [...]} stand where a sum must be inserted."""
    writers = {}
    for spec in specs:
        for names in spec["outputs"].values():
            for n in names:
                if n != "@EMPTY@":
                    writers[n] = writers.get(n, 0) + 1
    multi = {n for n, c in writers.items() if c > 1}
    pending = {}     # grad name -> list of part names written so far
    counter = {}
    out = []
    for spec in specs:
        # a reader of a multiply-written grad gets the sum first
        for names in spec["inputs"].values():
            for n in names:
                if n in multi and pending.get(n):
                    out.append({"sum": n, "parts": pending.pop(n)})
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
        out.append(dict(spec, outputs=new_outs))
    for n, parts in pending.items():
        out.append({"sum": n, "parts": parts})
    return out


def _append_specs(block, specs, fwd_block=None, on_op=None):
    """Append grad ops (and sums, and zero-fills for grads nobody produced) to ``block``;
    ``on_op(block)`` runs after each grad op and sum (Paddle's backward callbacks)."""
    produced = set()
    for spec in specs:
        if "sum" in spec:
            g = spec["sum"]
            _grad_var_like(block, g, _strip_grad(g))
            block.append_op("sum", inputs={"X": spec["parts"]}, outputs={"Out": [g]})
            produced.add(g)
            if on_op is not None:
                on_op(block)
            continue
        for slot, names in spec["inputs"].items():
            for n in names:
                # a gradient input (by name: custom grad makers use plain slot names) nobody produced
                if n.endswith(GRAD_SUFFIX) and n not in produced and not block.has_var(n):
                    # an output nobody differentiated through: its gradient is zero
                    fwd = _strip_grad(n)
                    _grad_var_like(block, n, fwd)
                    block.append_op("fill_zeros_like", inputs={"X": [fwd]}, outputs={"Out": [n]})
                    produced.add(n)
        for names in spec["outputs"].values():
            for n in names:
                if n != "@EMPTY@":
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


def append_backward(loss, parameter_list=None, no_grad_set=None, callbacks=None, checkpoints=None):
    """Append the backward pass of ``loss`` to its program; returns ``[(param, grad), ...]``.

    ``checkpoints`` (Variables): recompute the forward ops between them during backward instead of
    reading their activations (see ``fluidist.recompute``)."""
    if not isinstance(loss, Variable):
        raise TypeError("append_backward: loss must be a Variable, got %r" % type(loss).__name__)
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
    loss_op = block.ops[loss_idx]
    loss_op._set_attr(OP_ROLE_ATTR, int(OpRole.Forward) | int(OpRole.Loss))

    no_grad = _no_grad_names(block, no_grad_set)
    path, requires = _ops_on_path(block, loss_idx, [loss.name], no_grad)
    specs = _specs_for(block, path, requires, no_grad, checkpoints)
    specs = _rename_repeated_outputs(specs, loss.name + GRAD_SUFFIX)

    start = len(block.ops)
    loss_grad = loss.name + GRAD_SUFFIX
    _grad_var_like(block, loss_grad, loss.name)
    with program._role_guard(OpRole.Backward | OpRole.Loss):
        block.append_op("fill_constant", outputs={"Out": [loss_grad]},
                        attrs={"shape": list(loss.shape or [1]), "value": 1.0, "dtype": loss.dtype or "float32"})
    with program._backward_role_guard():
        _append_specs(block, specs, on_op=_callbacks_hook(callbacks))

    if parameter_list is not None:
        names = [p.name if isinstance(p, Variable) else p for p in parameter_list]
        params = [block.var(n) for n in names]
    else:
        params = [p for p in program.global_block().all_parameters() if p.trainable]
    pairs = []
    for p in params:
        g = p.name + GRAD_SUFFIX
        if block.has_var(g) and any(g in op.output_arg_names for op in block.ops[start:]):
            pairs.append((p, block.var(g)))
    _set_op_role_vars(block, [(p.name, g.name) for p, g in pairs], start)
    return pairs


def gradients(targets, inputs, target_gradients=None, no_grad_set=None):
    """Gradients of the (single) target with respect to ``inputs``; ``[grad var or None, ...]``."""
    if isinstance(targets, (list, tuple)):
        if len(targets) != 1:
            raise ValueError("gradients: only one target is supported, got %d" % len(targets))
        targets = targets[0]
    if target_gradients is not None:
        raise ValueError("gradients: target_gradients is not supported; scale the target instead")
    single = not isinstance(inputs, (list, tuple))
    inputs = [inputs] if single else list(inputs)
    block = targets.block
    saved = {v.name: v.stop_gradient for v in inputs}
    for v in inputs:
        v.stop_gradient = False
    try:
        start = len(block.ops)
        loss_idx = max(i for i, op in enumerate(block.ops) if targets.name in op.output_arg_names)
        no_grad = _no_grad_names(block, no_grad_set) - {v.name for v in inputs}
        path, requires = _ops_on_path(block, loss_idx, [targets.name], no_grad)
        specs = _rename_repeated_outputs(_specs_for(block, path, requires, no_grad), None)
        g0 = targets.name + GRAD_SUFFIX
        _grad_var_like(block, g0, targets.name)
        with block.program._role_guard(OpRole.Backward):
            block.append_op("fill_constant", outputs={"Out": [g0]},
                            attrs={"shape": list(targets.shape or [1]), "value": 1.0,
                                   "dtype": targets.dtype or "float32"})
            _append_specs(block, specs)
    finally:
        for v in inputs:
            v.stop_gradient = saved[v.name]
    out = []
    for v in inputs:
        g = v.name + GRAD_SUFFIX
        out.append(block.var(g) if block.has_var(g) and any(g in op.output_arg_names for op in block.ops[start:])
                   else None)
    return out[0] if single else out


calc_gradient = gradients
