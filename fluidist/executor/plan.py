"""An executor's plan of a block: a flat list of kernel calls (``Plan``), the context kernels get
(``ExecContext``), and the kernel wrapper hook the profiler sets (``set_kernel_wrapper``)."""
from __future__ import annotations

import weakref
import zlib

import numpy as np

from ..framework.dtypes import VarType
from ..core.enforce import as_enforce_not_met
from ..core.placement import to_host_value, to_place
from ..framework import registry
from ..framework.block import Block
from .codegen import bind, compile_plan
from . import nan_inf


# set_kernel_wrapper(f): plans call f(kernel, op) -> kernel for each op (the profiler's timing); None:
# plans hold the plain kernels (no cost). Setting it drops the cached plans of every live executor.
_kernel_hook = None
_executors: weakref.WeakSet = weakref.WeakSet()


def set_kernel_wrapper(wrapper):
    """Wrap every kernel that plans call from now on (``wrapper(kernel, op) -> kernel``), or stop
    wrapping (``None``). Cached plans of every live executor are dropped so the change takes effect."""
    global _kernel_hook
    _kernel_hook = wrapper
    for exe in list(_executors):
        exe._drop_plans()


class ExecContext:
    """What a kernel sees besides its inputs: the array module, the scope, the op, the executor."""

    __slots__ = ("xp", "place", "op", "_executor", "program", "state", "opdef", "until_sync")

    def __init__(self, xp, place, op, executor, program, state, opdef):
        self.xp = xp
        self.place = place
        self.op = op
        # weakly: the plan lives on its program, which must not keep the executor alive (nor its
        # other plans); a kernel runs only while its executor runs it
        self._executor = weakref.ref(executor)
        self.program = program
        self.state = state
        self.opdef = opdef
        # set by the plan (``queue_until_sync``): a comm-stream collective may be queued until its
        # ring's c_sync_comm_stream (and that sync runs the queue)
        self.until_sync = False

    @property
    def executor(self):
        """The executor running the op."""
        return self._executor()

    @property
    def scope(self):
        return self.state.scope

    def lod(self, slot_or_name, i=0):
        name = self.op.inputs[slot_or_name][i] if slot_or_name in self.op.inputs else slot_or_name
        return self.state.scope._find_lod(name)

    def set_lod(self, slot_or_name, lod, i=0):
        name = self.op.outputs[slot_or_name][i] if slot_or_name in self.op.outputs else slot_or_name
        state = self.state
        if state.nested:
            state.plan._target(state.scope, name)._set_lod_here(name, lod)
        else:
            state.scope._set_lod(name, lod)

    def find_value(self, name):
        """The value of variable ``name`` seen from the running scope (None where it has none)."""
        return self.state.scope._find_value(name)

    def input_name(self, slot, i=0):
        return self.op.inputs[slot][i]

    def output_name(self, slot, i=0):
        return self.op.outputs[slot][i]

    def rng(self, seed=0, salt=""):
        """A numpy RandomState: deterministic from (seed, salt) when seed != 0, else fresh entropy."""
        seed = int(seed or 0)
        if seed == 0:
            return np.random.RandomState()
        mixed = zlib.crc32(("%d/%s" % (seed, salt)).encode()) & 0x7FFFFFFF
        return np.random.RandomState(mixed)

    def run_block(self, block, scope=None):
        """Run a block in ``scope`` itself (listen_and_serv's optimize blocks): every value its ops
        write lands in that scope. The block may be of another program (the pserver's rounds run a
        copy of theirs)."""
        return self.executor._run_block(block.program, block.idx, scope or self.state.scope)

    def run_sub_block(self, block, scope):
        """Run a control-flow sub-block (while, conditional_block, recurrent) in ``scope``, a child
        of the running scope: the variables the sub-block declares live in ``scope``; the others are
        read from, and written to, the scope up the chain that holds them."""
        self.executor._plan(self.program, block.idx).run_nested(scope)


class _RunState:
    __slots__ = ("scope", "nested", "plan")

    def __init__(self, plan):
        self.scope = None
        self.nested = False
        self.plan = plan


class _Step:
    __slots__ = ("kernel", "ctx", "attrs", "ins", "outs", "op", "index", "share_lod", "in_names", "valueless",
                 "undeclared", "bound")

    def __init__(self, kernel, ctx, attrs, ins, outs, op, index, share_lod, valueless=frozenset(),
                 undeclared=frozenset()):
        self.kernel = kernel
        self.ctx = ctx
        self.attrs = attrs
        self.ins = ins
        self.outs = outs
        self.op = op
        self.index = index
        self.share_lod = share_lod
        self.valueless = valueless     # input slots whose variables may hold no value (the kernel gets None)
        # their variables the program does not declare: no value in any run (in Paddle a run's values of
        # non-persistable variables live in its own scope, so what an earlier run left is not seen)
        self.undeclared = undeclared
        self.bound = None     # the kernel as a plain function of the op's arrays (codegen.bind)


class Plan:
    """A block turned into kernel calls with resolved names."""

    def __init__(self, executor, program, block_idx):
        self.program = program
        self.version = program._version
        self.block = program.block(block_idx)
        self.state = _RunState(self)
        self._local = frozenset(self.block.vars)
        self._hops = {}
        # block 0: the arrays its run starts with empty (Paddle makes them afresh in each run's scope)
        self.fresh_arrays = tuple(n for n, v in self.block.vars.items()
                                  if v.type == VarType.LOD_TENSOR_ARRAY and not v.persistable) \
            if block_idx == 0 else ()
        place = executor.place
        xp = place.xp
        on_device = place.is_device
        self.nan_inf = nan_inf.settings()      # FLAGS_check_nan_inf (None: off)
        self.steps = []
        written = set()
        self.external = []  # (name, op type) read before any op of this block writes it
        seen_external = set()
        reads = set()       # and names ops with inputs_are_names read (sub-blocks' outer variables)
        # (block 0 only: a sub-block's outputs may be read by its parent's ops after it)
        read_here = {n for op in self.block.ops for n in op.input_arg_names} if on_device and not block_idx else None
        for i, op in enumerate(self.block.ops):
            opdef = registry.lookup(op.type)
            if opdef is None:
                e = registry.unknown_op_error(op.type)
                raise type(e)("block %d op %d: %s" % (block_idx, i, e))
            if opdef.kernel is None:
                raise ValueError("block %d op %d: op type %r has no kernel" % (block_idx, i, op.type))
            ins, undeclared = [], set()
            names_only, valueless = registry.fact(op, "inputs_are_names"), registry.fact(op, "valueless_inputs")
            for slot, names in op.inputs.items():
                if names and names_only:   # while's X, listen_and_serv's: placed, not passed
                    reads.update(n for n in names if n not in written)
                if not names or names_only:  # e.g. listen_and_serv's receive vars
                    continue
                ins.append((slot, tuple(names), slot in opdef.duplicable))
                if slot in valueless:    # placed when there, never required
                    reads.update(n for n in names if n not in written)
                    undeclared.update(n for n in names if self.block._find_var_recursive(n) is None)
                    continue
                for n in names:
                    if n not in written and n not in seen_external:
                        seen_external.add(n)
                        self.external.append((n, op.type))
            outs = []
            for slot, names in op.outputs.items():
                if not names:
                    continue
                outs.append((slot, tuple(names), slot in opdef.duplicable))
                written.update(names)
            share = None
            share_lod = registry.fact(op, "share_lod")
            if share_lod:
                si, so = share_lod
                if op.inputs.get(si) and op.outputs.get(so):
                    share = (op.inputs[si][0], op.outputs[so][0])
            stays = read_here is not None and op.attrs.get("op_device") == "cpu" and \
                not set(op.output_arg_names) & read_here
            host = on_device and (stays or opdef.runs_on_host(place))
            ctx = ExecContext(np if host else xp, place, op, executor, program, self.state, opdef)
            kernel = opdef.kernel
            if host or (on_device and any(op.inputs.get(s) for s in registry.fact(op, "host_inputs"))):
                kernel = _on_host(kernel, op, place, host, stays)
            if self.nan_inf is not None:     # (a wrapped kernel is never bound: the check runs)
                kernel = nan_inf.checking(kernel, op, ctx, self.nan_inf)
            kernel = kernel if _kernel_hook is None else _kernel_hook(kernel, op)
            step = _Step(kernel, ctx, dict(op.attrs), tuple(ins), tuple(outs), op, i, share,
                         frozenset(valueless), frozenset(undeclared))
            if kernel is opdef.kernel:      # (not moved to the host, not wrapped by the profiler)
                step.bound = bind(step, opdef)
            self.steps.append(step)
        if place.kind == "cpu":
            queue_until_sync(self.block.ops, [st.ctx for st in self.steps])
        self.written = written
        self.external_names = frozenset(n for n, _ in self.external)
        # values run() puts on the place (not the scalars an update op keeps on the host)
        self.placed_names = (self.external_names | frozenset(reads)) - _host_scalars(program, self.block, on_device)
        self._fast = None
        self.fed = {}       # feed name -> (shape, dtype) of the last host array the executor took as it is

    def run(self, scope):
        self.state.scope = scope
        if self._fast is None:
            self._fast = compile_plan(self, _raise_annotated)
        failed_at = self._fast(scope.vals, scope.lods)
        if failed_at is not None:
            self._interpret(scope, failed_at)

    def _interpret(self, scope, start=0):
        """The general loop: handles values living in parent scopes and names missing ones."""
        vals = scope.vals
        lods = scope.lods
        for step in self.steps[start:]:
            ins = {}
            try:
                for slot, names, dup in step.ins:
                    if slot in step.valueless:
                        got = [_value_or_none(scope, n, step) for n in names]
                    else:
                        got = [vals[n] for n in names]
                    ins[slot] = got if dup else got[0]
            except KeyError as e:
                ins = self._slow_inputs(step, scope, e.args[0])
            _store(step, _call(step, ins), vals.__setitem__)
            if step.share_lod is not None and lods:
                src, dst = step.share_lod
                lod = lods.get(src)
                if lod is not None:
                    lods[dst] = lod

    # ------------------------------------------------------------ sub-blocks in child scopes
    def run_nested(self, scope):
        """Run this block in ``scope`` (see ``ExecContext.run_sub_block``)."""
        state = self.state
        saved = state.scope, state.nested
        state.scope, state.nested = scope, True

        def put(name, value):
            self._target(scope, name).vals[name] = value
        try:
            for step in self.steps:
                ins = {}
                for slot, names, dup in step.ins:
                    if slot in step.valueless:
                        got = [_value_or_none(scope, n, step) for n in names]
                    else:
                        got = [self._read(scope, n, step) for n in names]
                    ins[slot] = got if dup else got[0]
                _store(step, _call(step, ins), put)
                if step.share_lod is not None:
                    src, dst = step.share_lod
                    self._target(scope, dst)._set_lod_here(dst, scope._find_lod(src))
        finally:
            state.scope, state.nested = saved

    def _read(self, scope, name, step):
        s = scope
        while s is not None:
            vals = s.vals
            if name in vals:
                return vals[name]
            s = s.parent
        raise _missing_value_error(self.block, name, step.op)

    def _target(self, scope, name):
        """The scope a nested run writes ``name`` to: ``scope`` for the block's own variables; else
        the scope holding it, or the ancestor scope of the block that declares it."""
        if name in self._local:
            return scope
        owner = scope._owner(name)
        if owner is not None:
            return owner
        hops = self._hops.get(name)
        if hops is None:
            hops, blk = 0, self.block
            while blk.parent_idx >= 0 and name not in blk.vars:
                blk = blk.parent_block
                hops += 1
            self._hops[name] = hops = max(hops, 1)
        s = scope
        for _ in range(hops):
            if s.parent is None:
                break
            s = s.parent
        return s

    def _slow_inputs(self, step, scope, missing):
        """Inputs that live in a parent scope, or a clear error naming the missing one."""
        ins = {}
        for slot, names, dup in step.ins:
            got = []
            for n in names:
                owner = scope._owner(n)
                if slot in step.valueless and (owner is None or n in step.undeclared):
                    got.append(None)
                    continue
                if owner is None:
                    raise _missing_value_error(self.block, n, step.op)
                got.append(owner.vals[n])
            ins[slot] = got if dup else got[0]
        return ins


def _value_or_none(scope, name, step):
    """The value of ``name`` (an input of ``step`` that may have none) seen from ``scope`` up its
    chain, or None where no scope holds one or the program does not declare it."""
    if name in step.undeclared:
        return None
    owner = scope._owner(name)
    return None if owner is None else owner.vals[name]


def _host_scalars(program, block, on_device):
    """What a plan on a device place leaves on the host (``registry.host_scalar_names``)."""
    return registry.host_scalar_names(program, block) if on_device else frozenset()


def _on_host(kernel, op, place, whole_op, stays=False):
    """The kernel of a host-side op (registry facts ``host`` / ``host_inputs``) on a device place: its
    inputs (all, or the ``host_inputs`` slots) copied to the host, and, for a whole host op, its
    outputs moved to the place (``stays``: left on the host, for an op with op_device "cpu" whose
    outputs no op of its block reads). An output that replaces its input (same variable, same shape
    and dtype) is copied into the input's device array, so views of it see the result (fused gradient
    buffers reduced by a CPU collective). These copies are the plan's: kernels never move data."""
    slots = None if whole_op else frozenset(registry.fact(op, "host_inputs"))
    in_place = {s: (names[0], next(si for si, ns in op.inputs.items() if ns and ns[0] == names[0]))
                for s, names in op.outputs.items() if len(names) == 1 and names[0] in op.input_arg_names}

    def host_side(ctx, ins, attrs):
        host_ins = {s: (to_host_value(v) if slots is None or s in slots else v) for s, v in ins.items()}
        out = kernel(ctx, host_ins, attrs)
        if whole_op and out and not stays:
            out = {s: _back_to_place(v, ins.get(in_place[s][1]) if s in in_place else None, place)
                   for s, v in out.items()}
        return out
    host_side.__name__ = getattr(kernel, "__name__", "kernel")
    host_side.__doc__ = kernel.__doc__
    return host_side


def _back_to_place(value, old, place):
    """A host op's output on the place: into ``old`` (the device array it replaces) where it fits."""
    if old is not None and isinstance(value, np.ndarray) and place.owns(old) and old.shape == value.shape \
            and old.dtype == value.dtype:
        return place.to_device(value, into=old)
    return to_place(value, place)


def queue_until_sync(ops, ctxs):
    """Mark (``ctx.until_sync``) the comm-stream all-reduces (registry fact ``comm_stream="queue"``,
    ``use_calc_stream`` false, in place) whose variable no op touches before a ``c_sync_comm_stream``
    of their ring, and those syncs: the CPU communicator queues the first and runs them fused at the
    second, as NCCL's comm stream would run them behind the backward ops. A sub-block op in between
    (it may read anything) or no sync at all leaves the all-reduce as it is."""
    streams = [registry.fact(op, "comm_stream") for op in ops]
    if "queue" not in streams:
        return
    touches = [None if _runs_a_block(op) else set(op.input_arg_names) | set(op.output_arg_names) for op in ops]
    for i, op in enumerate(ops):
        if streams[i] != "queue" or op.attrs.get("use_calc_stream") \
                or op.inputs.get("X") != op.outputs.get("Out") or len(op.inputs.get("X") or ()) != 1:
            continue
        name, ring = op.inputs["X"][0], op.attrs.get("ring_id", 0)
        for j in range(i + 1, len(ops)):
            if streams[j] == "sync":
                if ops[j].attrs.get("ring_id", 0) == ring:
                    ctxs[i].until_sync = ctxs[j].until_sync = True
                    break
                continue          # another ring's sync (its X only orders it) neither reads nor waits
            if touches[j] is None or name in touches[j]:    # (a sub-block op may read anything)
                break


def _runs_a_block(op):
    return any(isinstance(v, Block) or (isinstance(v, list) and v and isinstance(v[0], Block))
               for v in op.attrs.values())


def _call(step, ins):
    try:
        return step.kernel(step.ctx, ins, step.attrs)
    except Exception as e:
        _raise_annotated(e, step)


def _store(step, outs, put):
    """``put(name, value)`` for each output the kernel gave (a None item of a list is left out)."""
    if not outs:
        return
    for slot, names, dup in step.outs:
        v = outs.get(slot)
        if v is None:
            continue
        if dup:
            for n, x in zip(names, v):
                if x is not None:
                    put(n, x)
        else:
            put(names[0], v)


def _annotate(e, step):
    """Name the op in a kernel's error, and make it a ``core.EnforceNotMet`` too (Paddle's class of
    the errors of ops at run time) while keeping its own class."""
    note = "(in op %d %r of block %d: %s)" % (step.index, step.op.type, step.op.block.idx, op_signature(step.op))
    if e.args and isinstance(e.args[0], str) and note not in e.args[0]:
        e.args = ("%s %s" % (e.args[0], note),) + e.args[1:]


def op_signature(op, most=4):
    """``X=a, Y=[b, c] -> Out=d``: an op's variables by slot (at most ``most`` names a slot)."""
    def slots(named):
        parts = []
        for slot, names in named.items():
            if len(names) == 1:
                parts.append("%s=%s" % (slot, names[0]))
            elif names:
                more = ", ... %d more" % (len(names) - most) if len(names) > most else ""
                parts.append("%s=[%s%s]" % (slot, ", ".join(names[:most]), more))
        return ", ".join(parts)
    return "%s -> %s" % (slots(op.inputs), slots(op.outputs))


def _raise_annotated(e, step):
    """Raise a kernel's error named by its op, as a ``core.EnforceNotMet`` too (Paddle's class of the
    errors of ops at run time) while keeping its own class."""
    _annotate(e, step)
    err = as_enforce_not_met(e)
    if err is e:
        raise e
    raise err.with_traceback(e.__traceback__) from e.__cause__


def _missing_value_error(block, name, op):
    """The error of an op input without a value (a ``core.EnforceNotMet`` too, as in Paddle)."""
    return as_enforce_not_met(_missing_value(block, name, op))


def _missing_value(block, name, op):
    v = block._find_var_recursive(name)
    if v is not None and v.is_data:
        return ValueError("feed variable %r is required by op %r but was not fed" % (name, op.type))
    if v is not None and v.persistable:
        return ValueError("variable %r (read by op %r) has no value in the scope: "
                          "run the startup program first" % (name, op.type))
    return ValueError("variable %r read by op %r has no value: no earlier op writes it and it was "
                      "not fed" % (name, op.type))
