"""One registry of op types: registering an op says everything about it, once.

    @register_op("relu", inputs=["X"], outputs=["Out"], infer=same_shape("X", "Out"))
    def relu(ctx, ins, attrs):
        return {"Out": ctx.xp.maximum(ins["X"], 0)}

    @register_grad("relu", inputs=["Out", "Out@GRAD"])
    def relu_grad(ctx, ins, attrs):
        return {"X@GRAD": ins["Out@GRAD"] * (ins["Out"] > 0)}

An entry (``OpDef``) holds the slots, the attrs with their defaults, shape inference, the kernel and
the gradient maker, and every fact a pass needs about the op type, so that no pass keeps a table of
its own (a second table drifts). Facts are keyword arguments of ``register_op`` (``host="lod"``,
``update=UpdateRule(...)``), kept in small frozen records by concern (``OpDef.graph``, ``.call``,
``.placement``, ``.peers``, ``.optimize``, ``.rows``: a fact is a field of one record, and a name
that is none is refused), and read as ``fact(op, name)``. On a gradient op, ``forward`` names the
forward op whose entry it shares (attrs and their defaults).

Graph, what the program passes read:

- ``side_effect``: the op acts on the world (rpc, collectives, save, sub-blocks); pruning keeps it.
- ``role``: the ``op_role`` an op of this type gets when no role guard is active and none is given.
- ``reversible``: applied in place (``X`` is ``Out``), the op is undone by what its gradient maker
  gives (``increment``): a gradient block replays that, so that a loop step's gradient ops read
  the value its forward ops read.
- ``takes_backward``: the custom gradient maker (``grad=``) builds gradient blocks for the op's
  sub-blocks, so the backward pass calls it as ``maker(op, backward)`` (``while``,
  ``conditional_block``, ``recurrent``).
- ``synced``: the op type that does this op's work with its statistics synchronised across the
  ranks (``batch_norm`` -> ``sync_batch_norm``, and their gradients): what the sync_batch_norm pass
  turns the op into.

Call, how the executor's plan calls the kernel:

- ``inputs_are_names``: the kernel gets no input values; the op's inputs name what it serves.
- ``valueless_inputs``: input slots whose variables may hold no value when the op runs (Paddle's
  kernels that test whether a variable is initialised): the kernel gets None for such a variable
  instead of the executor refusing to run.
- ``share_lod``: ``(input slot, output slot)``: the output gets the input's LoD after the kernel ran.
- ``batch_from``: the input slot naming the reader whose next batch the op's outputs take (``read``):
  the look-ahead of a trainer's next rows (``distributed/prefetch_ahead``) peeks at that reader's queue.
- ``no_need_buffer`` (an entry field set from one table, ``ops/no_need_buffer.py``): input slots read
  for their shape only (``elementwise_add_grad``'s ``X``, ``Y``); ``core.infer_no_need_buffer_slots``.

Placement, where the kernel runs:

- ``host``: the op runs on the host whatever the executor's place, and says why (LoD bookkeeping,
  RPC, readers, printing, Python callbacks, sequential algorithms written for the CPU). On a device
  place the Executor's plan hands its kernel host (NumPy) arrays and ``ctx.xp`` is numpy, and moves
  its array outputs to the place. A gradient op takes its forward op's ``host`` unless it says.
- ``host_except``: place kinds (``"cuda"``, ``"standin"``) on which a ``host`` op runs on the device
  after all (the collectives: NCCL takes device arrays, the CPU backend host ones).
- ``host_inputs``: input slots the kernel reads on the host (shape and size tensors that decide
  an output's shape, as Paddle keeps them on the CPU); the plan copies only those.

Peers, how the op talks to other processes or places:

- ``communicates``: the op exchanges data with other processes or places (the rpc ops, the
  collectives and their stream syncs): a runner never runs such a program from several threads at
  once, and pictures mark the op.
- ``serves``: the op is a server's loop (``listen_and_serv``): it serves the variables its inputs
  name and runs the blocks its attrs list; the serving rules and pictures find a pserver's op by it.
- ``to_peers`` / ``from_peers``: the input slot whose variables the op sends to the peers of its
  ``epmap`` attr, the output slot whose variables it receives from them (``send``, ``recv``,
  ``prefetch``).
- ``barrier``: the op closes a phase of a parameter-server step for every pserver of its
  ``endpoints``: ``"send"`` (all gradients sent: ``send_barrier``) or ``"fetch"`` (all parameters
  received: ``fetch_barrier``); pictures order a trainer's stages by it.
- ``comm_stream``: ``"queue"``: with ``use_calc_stream`` false the collective runs on its ring's
  comm stream (Paddle, on GPUs), so its result is promised only once the ring's
  ``c_sync_comm_stream`` ran; a CPU plan queues such an all-reduce when no op touches its variable
  before that sync, and the ring's queued all-reduces run there as one, over a fused buffer (as
  DDP's buckets). ``"sync"``: the op waits for its ring's comm stream.

Optimize, the optimize stage:

- ``update``: for parameter update ops, an ``UpdateRule``: the accumulator slots shaped like
  ``Param`` (sliced with it on pservers), the one-element ones (and whether they live on the host),
  and whether the rule needs the whole parameter (LAMB's and LARS's norms cannot run on a slice).
- ``after_update``: the op reads parameters as their update left them (model averaging: ModelAverage,
  ExponentialMovingAverage) and keeps its state beside the trainer: a pass that moves parameter
  updates elsewhere (the pserver transpiler) leaves it on the trainer, after the parameters are
  received.
- ``counter``: the op advances its ``X`` in place by its ``step`` attr (``increment``): the step
  counters of learning-rate schedules, which the pserver transpiler sums over trainers in async mode.

Rows, what the op does with rows of a tensor:

- ``keeps_rows``: row-sparse (SelectedRows) ``X`` inputs give a row-sparse ``Out`` (when every ``X``
  is row-sparse: ``sum`` of a dense and a row-sparse part is dense).
- ``whole_tensor``: the op's result depends on all of its input at once (a norm), so it cannot run
  on a slice of a parameter or gradient.
- ``table_lookup``: the op reads rows of a table ``W`` by ``Ids`` (embedding lookups).
- ``init``: for initialiser ops, how a pserver builds one row block of what they fill:
  ``"random"`` (``full_shape`` / ``row_begin`` / ``row_end`` / ``row_step`` / ``salt`` attrs),
  ``"fill"`` (a ``shape`` attr), ``"values"`` (``assign_value``'s value lists), ``"copy"`` (``Out``
  is a copy of ``X``: a block copies the same block of ``X``), ``"placeholder"`` (``fake_init``: the
  value lives elsewhere, on the pservers, and this op only gives it its shape).

Slots: a trailing ``*`` marks a duplicable slot (the kernel gets/returns a list), a trailing ``?``
an optional one (the kernel gets ``None`` when it is absent). Kernels are written against
``ctx.xp`` (numpy or cupy) so the CPU and GPU share one code path.

Gradients: ``register_grad(fwd, inputs=...)`` registers ``<fwd>_grad`` on the forward op's entry:
it shares the forward attrs, its outputs are ``<In>@GRAD`` for each forward input slot not in
``no_grad`` (optional, duplicable as the input is), and the forward op's default gradient maker feeds
it exactly ``inputs`` (forward inputs and outputs by slot, ``<Out>@GRAD`` for output gradients).
``grad=callable`` on the forward op is a custom maker ``f(op) -> [op spec dicts]`` (``f(op, backward)``
with the ``takes_backward`` fact); ``grad=None`` (with no ``register_grad``): not differentiable.

Refused op types: ``refuse_op(type, reason)`` names an op type of Paddle 1.8 that fluidist leaves
out on purpose, with the reason and what to use instead (``fluidist/ops/refused_ops.py`` holds the
one table). Appending such an op, loading a program that holds one, or asking the registry for its
entry raises NotImplementedError saying "op type 'X' is not implemented in fluidist: <reason>"
(``unknown_op_error``); a type is either registered or refused, never both.

Bound kernels: ``register_binder(type)`` adds to an entry a binder ``binder(ctx, attrs) -> Bound | None``,
called once when a plan is built for one op (its ``ExecContext`` and attrs): ``Bound(call, inputs,
outputs)`` is the kernel as a plain function of that op's arrays, ``call(*values of inputs)`` returning
the value of the one output slot, or a tuple in ``outputs`` order (never None), with no dicts and no
attr parsing; the executor's generated step calls it straight. It must compute exactly what the kernel
computes (the same NumPy calls in the same order: the same bits), and may call the kernel itself
(``kernel_call``) for the cases it does not specialise; None (or slots other than the op's own) keeps
the kernel.

The registry imports nothing of fluidist: the op families in ``fluidist.ops`` fill it when the
package is imported, and the table imports it on its first read (``framework/op_table.py``).
"""
import copy
from dataclasses import dataclass, fields
from typing import Callable, Dict, Optional

from .op_table import OpTable
from .shape_inference import InferShapeContext, no_infer, same_shape  # noqa: F401 (the ops import them from here)

GRAD = "@GRAD"


@dataclass(frozen=True)
class UpdateRule:
    """Facts of a parameter update op (``sgd``, ``adam``, ...)."""
    param_like: tuple = ()      # input slots of accumulators shaped like Param (sliced with it)
    outputs: tuple = ()         # their output slots, in the same order
    scalars: tuple = ()         # one-element accumulator slots (Beta1Pow, ...)
    scalar_outputs: tuple = ()  # per scalar, the output slot the op advances it through (Beta1PowOut) or None
    # the scalars live on the host on every place (as Paddle 1.8's Adam makes its beta powers: op_device
    scalars_on_host: bool = False   # "cpu"); the kernel takes them there or on a device
    whole_param: bool = False   # the rule reads norms of the whole parameter: never run on a slice
    # (attrs) -> bool: a row-sparse gradient updates only its own rows (the others stay exactly as
    # they are), so the parameter and accumulators may be rows materialised on demand (LazyRows)
    row_wise: Optional[Callable] = None


@dataclass(frozen=True)
class Graph:
    """What the program passes read of an op type: pruning, roles, the backward pass, rewrites."""
    side_effect: bool = False
    role: Optional[int] = None
    reversible: bool = False
    takes_backward: bool = False
    synced: Optional[str] = None


@dataclass(frozen=True)
class Call:
    """How the executor's plan calls the kernel: what it hands in, what it passes along."""
    inputs_are_names: bool = False
    valueless_inputs: tuple = ()
    share_lod: Optional[tuple] = None
    batch_from: Optional[str] = None


@dataclass(frozen=True)
class Placement:
    """Where the kernel runs on a device place, and which inputs it reads on the host."""
    host: Optional[str] = None
    host_except: tuple = ()
    host_inputs: tuple = ()


@dataclass(frozen=True)
class Peers:
    """How the op talks to other processes or places."""
    communicates: bool = False
    serves: bool = False
    to_peers: Optional[str] = None
    from_peers: Optional[str] = None
    barrier: Optional[str] = None
    comm_stream: Optional[str] = None


@dataclass(frozen=True)
class Optimize:
    """The optimize stage: parameter updates, what reads their result, step counters."""
    update: Optional[UpdateRule] = None
    after_update: bool = False
    counter: bool = False


@dataclass(frozen=True)
class Rows:
    """What the op does with rows: row slices (pservers), row-sparse values, tables, row blocks."""
    keeps_rows: bool = False
    whole_tensor: bool = False
    table_lookup: bool = False
    init: Optional[str] = None


# OpDef's field -> the record of that concern; a fact is a field of one record (its name says which)
RECORDS = {"graph": Graph, "call": Call, "placement": Placement, "peers": Peers, "optimize": Optimize,
           "rows": Rows}
_FACT_RECORD = {f.name: field for field, record in RECORDS.items() for f in fields(record)}


@dataclass
class OpDef:
    """A registered op type: its slots, attrs, kernel, shape inference and gradient, and its facts
    (the module docstring), grouped by concern into frozen records."""
    type: str
    inputs: list              # slot names, in order
    outputs: list
    duplicable: set           # slots given/returned as lists
    optional: set             # slots that may be absent
    attrs: Dict[str, object]  # defaults
    kernel: Optional[Callable] = None
    binder: Optional[Callable] = None   # (ctx, attrs) -> Bound | None: see "Bound kernels" above
    infer: Optional[Callable] = None
    grad: object = None       # None | "default" | callable(op) -> list of specs
    grad_inputs: Optional[list] = None
    no_grad: tuple = ()
    forward: Optional[str] = None     # on a gradient op: the forward op whose entry it shares
    grad_type: Optional[str] = None   # the type of the gradient op registered for this op
    no_need_buffer: tuple = ()        # input slots read for their shape only
    doc: str = ""
    graph: Graph = Graph()
    call: Call = Call()
    placement: Placement = Placement()
    peers: Peers = Peers()
    optimize: Optimize = Optimize()
    rows: Rows = Rows()

    def runs_on_host(self, place):
        """Whether the kernel gets host arrays on ``place`` (always on a CPU place)."""
        return bool(self.placement.host) and place.kind not in self.placement.host_except

    @property
    def input_slots(self):
        return set(self.inputs)

    @property
    def output_slots(self):
        return set(self.outputs)


_REGISTRY: Dict[str, OpDef] = OpTable()
_REFUSED: Dict[str, str] = OpTable()   # op type -> why fluidist leaves it out, and what to use instead


def _parse_slots(slots):
    names, dup, opt = [], set(), set()
    for s in slots:
        while s and s[-1] in "*?":
            (dup if s[-1] == "*" else opt).add(s[:-1].rstrip("*?"))
            s = s[:-1]
        names.append(s)
    return names, dup, opt


def _records(type, facts):
    """``facts`` (keyword facts) as OpDef's records; a name that is no record's field is refused."""
    unknown = set(facts) - set(_FACT_RECORD)
    if unknown:
        raise TypeError("register_op(%r): unknown facts %s (known: %s)" % (type, sorted(unknown), list(_FACT_RECORD)))
    grouped: Dict[str, dict] = {field: {} for field in RECORDS}
    for name, value in facts.items():
        grouped[_FACT_RECORD[name]][name] = tuple(value) if isinstance(value, (list, set)) else value
    return {field: RECORDS[field](**values) for field, values in grouped.items() if values}


def register_op(type, inputs=(), outputs=(), attrs=None, infer=None, grad=None, grad_inputs=None,
                no_grad=(), **facts):
    """Decorator registering ``kernel(ctx, ins, attrs) -> {slot: value}`` as op ``type``; ``facts``
    are the keyword facts of the module docstring (side_effect, role, update, host, ...)."""
    def deco(kernel):
        define_op(type, inputs, outputs, attrs, kernel, infer, grad, grad_inputs, no_grad,
                  doc=(kernel.__doc__ or "") if kernel else "", **facts)
        return kernel
    return deco


def define_op(type, inputs=(), outputs=(), attrs=None, kernel=None, infer=None, grad=None,
              grad_inputs=None, no_grad=(), doc="", forward=None, **facts):
    if type in _REGISTRY:
        raise ValueError("op type %r is registered twice" % type)
    if type in _REFUSED:
        raise ValueError("op type %r is registered but also refused (fluidist/ops/refused_ops.py): drop its "
                         "refusal" % type)
    records = _records(type, facts)
    ins, dup_i, opt_i = _parse_slots(inputs)
    outs, dup_o, opt_o = _parse_slots(outputs)
    d = OpDef(type=type, inputs=ins, outputs=outs, duplicable=dup_i | dup_o, optional=opt_i | opt_o,
              attrs=attrs if isinstance(attrs, dict) and forward is not None else dict(attrs or {}),
              kernel=kernel, infer=infer, grad=grad, grad_inputs=grad_inputs, no_grad=tuple(no_grad),
              forward=forward, doc=doc, **records)
    _REGISTRY[type] = d
    return d


def register_grad(forward, inputs=None, outputs=None, type=None, attrs=None, infer=None, **facts):
    """Decorator registering the gradient kernel of op ``forward`` as ``<forward>_grad`` (or ``type``).

    The gradient op shares the forward entry's attrs (one dict: one set of defaults); ``attrs`` adds
    attrs only the gradient op has. ``inputs`` default to the forward inputs, outputs and output
    gradients; ``outputs`` to ``<In>@GRAD`` for every forward input not in ``no_grad``. Unless the
    forward op has a custom gradient maker, its default maker is set to feed exactly ``inputs``."""
    fwd = _REGISTRY.get(forward)
    if fwd is None:
        raise ValueError("register_grad(%r): register the forward op first" % forward)
    gtype = type or forward + "_grad"
    if inputs is None:
        inputs = [_mark(fwd, s) for s in fwd.inputs] + [_mark(fwd, s) for s in fwd.outputs] + \
                 [_mark(fwd, s, GRAD) for s in fwd.outputs]
    if outputs is None:
        outputs = [_mark(fwd, s, GRAD, optional=True) for s in fwd.inputs if s not in fwd.no_grad]
    if attrs:
        shared = dict(fwd.attrs)
        shared.update(attrs)
    else:
        shared = fwd.attrs

    for name in ("host", "host_except", "host_inputs"):     # a host op's gradient runs on the host too
        if name not in facts and getattr(fwd.placement, name):
            facts[name] = getattr(fwd.placement, name)

    def deco(kernel):
        define_op(gtype, inputs, outputs, shared, kernel, infer,
                  doc=(kernel.__doc__ or "") if kernel else "", forward=forward, **facts)
        fwd.grad_type = gtype
        if fwd.grad is None or fwd.grad == "default":
            fwd.grad = "default"
            fwd.grad_inputs = [s.rstrip("*?") for s in inputs]
        return kernel
    return deco


def _mark(opdef, slot, suffix="", optional=False):
    name = slot + suffix
    if slot in opdef.duplicable:
        name += "*"
    if optional or slot in opdef.optional:
        name += "?"
    return name


@dataclass(frozen=True)
class Bound:
    """An op's kernel bound to one op of a plan (see "Bound kernels" in the module docstring)."""
    call: Callable
    inputs: tuple     # input slots, in the order ``call`` takes their values
    outputs: tuple    # output slots, in the order ``call`` returns their values


def register_binder(type):
    """Decorator adding ``binder(ctx, attrs) -> Bound | None`` to op ``type``'s entry."""
    def deco(binder):
        d = get(type)
        if d.binder is not None:
            raise ValueError("op type %r has a binder already" % type)
        d.binder = binder
        return binder
    return deco


def kernel_call(kernel, ctx, attrs, inputs, outputs):
    """``kernel`` called as a ``Bound.call``: positional input values in, the output(s) out."""
    if len(outputs) == 1:
        out = outputs[0]

        def call(*values):
            return kernel(ctx, dict(zip(inputs, values)), attrs).get(out)
    else:
        def call(*values):
            got = kernel(ctx, dict(zip(inputs, values)), attrs)
            return tuple(got.get(s) for s in outputs)
    return call


def lookup(type):
    """The entry of op ``type``, or None."""
    return _REGISTRY.get(type)


def get(type):
    d = _REGISTRY.get(type)
    if d is None:
        raise unknown_op_error(type)
    return d


def refuse_op(type, reason):
    """Name op type ``type`` as one fluidist leaves out on purpose; ``reason`` says why and what to
    use instead."""
    if type in _REGISTRY:
        raise ValueError("op type %r is refused but also registered: drop its refusal" % type)
    if type in _REFUSED:
        raise ValueError("op type %r is refused twice" % type)
    if not reason:
        raise ValueError("op type %r: a refusal needs its reason" % type)
    _REFUSED[type] = reason


def refusal(type):
    """Why fluidist leaves op type ``type`` out, or None (registered or unknown)."""
    return _REFUSED.get(type)


def refused_op_types():
    return sorted(_REFUSED)


def unknown_op_error(type):
    """The error for an op type without an entry: NotImplementedError naming the reason for a refused
    type, else ValueError."""
    reason = _REFUSED.get(type)
    if reason is not None:
        return NotImplementedError("op type %r is not implemented in fluidist: %s" % (type, reason))
    return ValueError("unknown op type %r: no op of that type is registered" % type)


def all_op_types():
    return sorted(_REGISTRY)


def defaults_for(type):
    """A fresh copy of op ``type``'s attr defaults."""
    return copy.deepcopy(get(type).attrs)


# ---------------------------------------------------------------- facts, asked of ops
def fact(op, name, default=None):
    """The registry fact ``name`` (one of the module docstring's) of ``op``'s type; ``op`` is an op
    or an op type. ``default`` for an unregistered type. The one way to read a fact: the records
    (``OpDef.placement``, ...) are how the registry keeps them."""
    d = _REGISTRY.get(op if isinstance(op, str) else op.type)
    if d is not None:
        facts = d.__dict__.get("_facts") or _facts_of(d)
        if name in facts:
            return facts[name]
    elif name in _FACT_RECORD or name == "forward":
        return default
    raise KeyError("no registry fact %r (known: %s)" % (name, sorted(_FACT_RECORD) + ["forward"]))


def _facts_of(d):
    """Every fact of entry ``d`` by name, read off its records once (they are frozen) and kept on it."""
    facts = {name: getattr(getattr(d, record), name) for name, record in _FACT_RECORD.items()}
    facts["forward"] = d.forward
    d._facts = facts
    return facts


def update_rule(op):
    """The ``UpdateRule`` of a parameter update op, else None."""
    return fact(op, "update")


def host_scalar_names(program, block=None) -> frozenset:
    """The variables the update ops of ``block`` (default: ``program``'s global block) keep on the
    host on every place (``UpdateRule.scalars_on_host``: Adam's beta powers, which Paddle 1.8's
    optimizer makes with op_device "cpu") and no other op of ``program`` touches. A variable some
    other op reads or writes (a Paddle 1.7 program's ``scale`` of a beta power) is placed as usual.
    A device place's plan, a data-parallel run's other places and a load onto a device leave these
    values on the host."""
    block = program.global_block() if block is None else block
    names: set = set()
    for op in block.ops:
        rule = update_rule(op)
        if rule is not None and rule.scalars_on_host:
            names.update(n for slot in rule.scalars + tuple(s for s in rule.scalar_outputs if s)
                         for n in list(op.inputs.get(slot) or ()) + list(op.outputs.get(slot) or ()))
    for blk in program.blocks if names else ():
        for op in blk.ops:
            rule = update_rule(op)
            own = set(rule.scalars + tuple(rule.scalar_outputs)) if rule is not None and rule.scalars_on_host \
                else ()
            for slots in (op.inputs, op.outputs):
                names.difference_update(n for slot, ns in slots.items() if slot not in own for n in ns)
    return frozenset(names)


def peer_direction(op):
    """Which way ``op`` moves values between peers, read off its ``to_peers`` / ``from_peers`` facts:
    ``"send"`` (to them only: ``send``), ``"recv"`` (from them only: ``recv``), ``"both"`` (a request
    answered: ``prefetch``), or None."""
    to, back = fact(op, "to_peers"), fact(op, "from_peers")
    if to and back:
        return "both"
    if to or back:
        return "send" if to else "recv"
    return None


def has_side_effect(op):
    d = _REGISTRY.get(op.type)
    return d is None or d.graph.side_effect


# ---------------------------------------------------------------- shape inference
def infer_shape(op, block, opdef=None):
    """Run the ``infer`` of ``op``'s type on it (``opdef``: the type's entry, when the caller has it);
    an error it raises names the op type."""
    d = opdef if opdef is not None else _REGISTRY.get(op.type)
    if d is None or d.infer is None:
        return
    try:
        d.infer(InferShapeContext(op, block))
    except (ValueError, TypeError) as e:
        prefix = "op %r: " % op.type
        if str(e).startswith(prefix):   # the message names the op already
            raise
        raise type(e)(prefix + str(e)) from None


# ---------------------------------------------------------------- gradients
def grad_name(n):
    return n + GRAD


_NOT_INHERITED = ("op_role", "op_role_var", "op_namescope")


def default_grad_maker(opdef, op):
    """The gradient op spec for ``op``: inputs are forward ins/outs and ``Out@GRAD``."""
    inputs = {}
    wanted = opdef.grad_inputs
    for slot, names in op.inputs.items():
        if wanted is None or slot in wanted:
            inputs[slot] = list(names)
    for slot, names in op.outputs.items():
        if wanted is None or slot in wanted:
            inputs[slot] = list(names)
        g = slot + GRAD
        if wanted is None or g in wanted:
            inputs[g] = [grad_name(n) for n in names]
    outputs = {}
    for slot, names in op.inputs.items():
        if slot in opdef.no_grad:
            continue
        outputs[slot + GRAD] = [grad_name(n) for n in names]
    attrs = {k: v for k, v in op.attrs.items() if k not in _NOT_INHERITED}
    return [{"type": opdef.grad_type or op.type + "_grad", "inputs": inputs, "outputs": outputs,
             "attrs": attrs}]


def make_grad_specs(op):
    """Grad op specs for ``op`` (names ``x@GRAD``); [] for ops without a gradient."""
    d = get(op.type)
    if d.grad is None:
        return []
    if d.grad == "default":
        return default_grad_maker(d, op)
    return d.grad(op)
