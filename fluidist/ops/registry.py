"""One registry of op types. Registering an op says everything about it once.

    @register_op("relu", inputs=["X"], outputs=["Out"], infer=same_shape("X", "Out"),
                 grad="default", grad_inputs=["Out", "Out@GRAD"])
    def relu(ctx, ins, attrs):
        return {"Out": ctx.xp.maximum(ins["X"], 0)}

Slots: a trailing ``*`` marks a duplicable slot (the kernel gets/returns a list), a trailing ``?``
an optional one (the kernel gets ``None`` when it is absent). Kernels are written against
``ctx.xp`` (numpy or cupy) so the CPU and GPU share one code path.

Gradients: ``grad="default"`` builds ``<type>_grad`` taking the forward inputs, outputs and
``<Out>@GRAD`` slots (or only ``grad_inputs``) and producing ``<In>@GRAD`` for each input slot not in
``no_grad``. ``grad=callable`` is a custom maker ``f(op) -> [op spec dicts]``. ``grad=None``: the
op is not differentiable.
"""
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

GRAD = "@GRAD"


@dataclass
class OpDef:
    type: str
    inputs: list              # slot names, in order
    outputs: list
    duplicable: set           # slots given/returned as lists
    optional: set             # slots that may be absent
    attrs: Dict[str, object]  # defaults
    kernel: Optional[Callable] = None
    infer: Optional[Callable] = None
    grad: object = None       # None | "default" | callable(op) -> list of specs
    grad_inputs: Optional[list] = None
    no_grad: tuple = ()
    side_effect: bool = False  # never pruned / never skipped (rpc, collectives, print, ...)
    share_lod: Optional[tuple] = None  # (input slot, output slot) whose LoD is passed along
    needs_lod: bool = False   # kernel reads LoD through ctx.lod()
    doc: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def input_slots(self):
        return set(self.inputs)

    @property
    def output_slots(self):
        return set(self.outputs)


_REGISTRY: Dict[str, OpDef] = {}


def _parse_slots(slots):
    names, dup, opt = [], set(), set()
    for s in slots:
        while s and s[-1] in "*?":
            if s[-1] == "*":
                dup.add(s[:-1].rstrip("*?"))
            else:
                opt.add(s[:-1].rstrip("*?"))
            s = s[:-1]
        names.append(s)
    return names, dup, opt


def register_op(type, inputs=(), outputs=(), attrs=None, infer=None, grad=None, grad_inputs=None,
                no_grad=(), side_effect=False, share_lod=None, needs_lod=False, **extra):
    """Decorator registering ``kernel(ctx, ins, attrs) -> {slot: value}`` as op ``type``."""
    def deco(kernel):
        define_op(type, inputs, outputs, attrs, kernel, infer, grad, grad_inputs, no_grad,
                  side_effect, share_lod, needs_lod, doc=(kernel.__doc__ or "") if kernel else "", **extra)
        return kernel
    return deco


def define_op(type, inputs=(), outputs=(), attrs=None, kernel=None, infer=None, grad=None,
              grad_inputs=None, no_grad=(), side_effect=False, share_lod=None, needs_lod=False,
              doc="", **extra):
    if type in _REGISTRY:
        raise ValueError("op type %r is registered twice" % type)
    ins, dup_i, opt_i = _parse_slots(inputs)
    outs, dup_o, opt_o = _parse_slots(outputs)
    d = OpDef(type=type, inputs=ins, outputs=outs, duplicable=dup_i | dup_o, optional=opt_i | opt_o,
              attrs=dict(attrs or {}), kernel=kernel, infer=infer, grad=grad, grad_inputs=grad_inputs,
              no_grad=tuple(no_grad), side_effect=side_effect, share_lod=share_lod, needs_lod=needs_lod,
              doc=doc, extra=extra)
    _REGISTRY[type] = d
    return d


def _ensure_loaded():
    # importing the package registers every op family
    from .. import ops  # noqa: F401


def lookup(type):
    d = _REGISTRY.get(type)
    if d is None:
        _ensure_loaded()
        d = _REGISTRY.get(type)
    return d


def get(type):
    d = lookup(type)
    if d is None:
        raise ValueError("unknown op type %r: no op of that type is registered" % type)
    return d


def all_op_types():
    _ensure_loaded()
    return sorted(_REGISTRY)


# ---------------------------------------------------------------- shape inference
class InferShapeContext:
    """What an ``infer`` function sees at graph-building time: input metas and attrs."""

    def __init__(self, op, block):
        self.op = op
        self.block = block
        self.attrs = op.attrs

    def _var(self, name):
        return self.block._find_var_recursive(name)

    def has_input(self, slot):
        return bool(self.op.inputs.get(slot))

    def input_var(self, slot, i=0):
        names = self.op.inputs.get(slot) or []
        if len(names) <= i:
            return None
        return self._var(names[i])

    def input_vars(self, slot):
        return [self._var(n) for n in self.op.inputs.get(slot) or []]

    def input_shape(self, slot, i=0):
        v = self.input_var(slot, i)
        return tuple(v.shape) if v is not None and v.shape is not None else None

    def input_dtype(self, slot, i=0):
        v = self.input_var(slot, i)
        return v.dtype if v is not None else None

    def input_lod_level(self, slot, i=0):
        v = self.input_var(slot, i)
        return v.lod_level if v is not None else 0

    def attr(self, name):
        return self.op.attrs.get(name)

    def set_output(self, slot, shape, dtype=None, lod_level=None, i=0, type=None):
        names = self.op.outputs.get(slot) or []
        if len(names) <= i:
            return
        v = self._var(names[i])
        if v is None:
            return
        if shape is not None:
            v.shape = tuple(int(d) for d in shape)
        if dtype is not None:
            v.dtype = dtype
        if lod_level is not None:
            v.lod_level = lod_level
        if type is not None:
            v.type = type

    def share(self, out_slot, in_slot, lod=True):
        """Output gets the input's shape and dtype (and LoD level)."""
        v = self.input_var(in_slot)
        if v is None:
            return
        self.set_output(out_slot, v.shape, v.dtype, v.lod_level if lod else None)


def infer_shape(op, block):
    d = lookup(op.type)
    if d is None or d.infer is None:
        return
    try:
        d.infer(InferShapeContext(op, block))
    except (ValueError, TypeError) as e:
        raise type(e)("op %r: %s" % (op.type, e)) from None


def same_shape(in_slot="X", out_slot="Out"):
    def infer(ctx):
        ctx.share(out_slot, in_slot)
    return infer


def no_infer(ctx):
    pass


# ---------------------------------------------------------------- gradients
def grad_name(n):
    return n + GRAD


def default_grad_maker(opdef, op):
    """The ``<type>_grad`` spec for ``op``: inputs are forward ins/outs and ``Out@GRAD``."""
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
    attrs = {k: v for k, v in op.attrs.items() if k not in ("op_role", "op_role_var", "op_namescope")}
    return [{"type": op.type + "_grad", "inputs": inputs, "outputs": outputs, "attrs": attrs}]


def make_grad_specs(op):
    """Grad op specs for ``op`` (names ``x@GRAD``); [] for ops without a gradient."""
    d = get(op.type)
    if d.grad is None:
        return []
    if d.grad == "default":
        return default_grad_maker(d, op)
    return d.grad(op)


def is_differentiable(type):
    d = lookup(type)
    return d is not None and d.grad is not None
