"""``fluid.op``: Paddle's factory of single operators run eagerly on a scope.

``Operator("sgd", Param="p", Grad="g", LearningRate="lr", ParamOut="p")`` makes one op: keyword
arguments named after the op's input and output slots give variable names, the others its attrs
(those the op does not have are ignored, as Paddle's factory ignores them). ``op.run(scope, place)``
runs it on the values the scope holds: a one-op Program is built whose variables are what the scope
holds under those names (LoDTensors, SelectedRows, LoDTensorArrays) and an Executor on ``place`` runs
it in that scope, so the op is fluidist's op, kernel and shape inference, as in any program.

Op protos (``get_all_op_protos``, ``OpDescCreationMethod``) are Paddle's ``framework_pb2`` messages,
made from fluidist's op registry and the attr types Paddle 1.8.5 declares.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..compat import refused
from ..framework import registry
from ..framework.dtypes import paddle_attr_value
from ..paddle_format import framework_pb2
from ..paddle_format.program_desc import _kind_of, declared_attr_types
from .op_run import run_one_op

__all__: List[str] = []

# the attrs every op of Paddle 1.8 has, in the order its protos list them
COMMON_ATTRS = ("op_role", "op_role_var", "op_namescope", "op_callstack", "op_device")


def is_str(s: Any) -> bool:
    """True for a str (or bytes, Paddle's Python 2 strings)."""
    return isinstance(s, (str, bytes))


def _opdef(type: str) -> registry.OpDef:
    opdef = registry.lookup(type)
    if opdef is None:
        if registry.refusal(type) is not None:   # left out on purpose: say why, by name
            raise registry.unknown_op_error(type)
        raise ValueError("The operator: %s is not registered." % type)
    return opdef


def op_attr_names(type: str) -> List[str]:
    """The attrs an op of ``type`` takes: fluidist's, those Paddle 1.8.5 declares, then the common ones."""
    names = [n for n in _opdef(type).attrs if n not in COMMON_ATTRS]
    for n in declared_attr_types(type):
        if n not in names and n not in COMMON_ATTRS:
            names.append(n)
    return names + list(COMMON_ATTRS)


def _attr_kind(type: str, name: str) -> str:
    declared = declared_attr_types(type).get(name)
    if declared:
        return declared
    default = registry.get(type).attrs.get(name)
    return _kind_of(default) or "STRING"


def op_proto(type: str) -> Any:
    """Paddle's ``OpProto`` message of op ``type``: its slots (duplicable, dispensable), attrs and
    their types."""
    opdef = _opdef(type)
    proto = framework_pb2.OpProto(type=type, comment=opdef.doc or "")
    for slots, field in ((opdef.inputs, proto.inputs), (opdef.outputs, proto.outputs)):
        for slot in slots:
            field.add(name=slot, comment="", duplicable=slot in opdef.duplicable,
                      dispensable=slot in opdef.optional)
    for name in op_attr_names(type):
        proto.attrs.add(name=name, type=framework_pb2.AttrType.Value(_attr_kind(type, name)), comment="")
    return proto


def get_all_op_protos() -> List[Any]:
    """The ``OpProto`` of every registered op type."""
    return [op_proto(t) for t in sorted(registry.all_op_types())]


def _slot_args(slot: Any, given: Any, kind: str) -> List[str]:
    args = [given] if is_str(given) else list(given)
    if not slot.duplicable and len(args) > 1:
        raise ValueError("%s %s expects only one %s, but %d are given." % (kind.capitalize(), slot.name, kind,
                                                                          len(args)))
    return [a.decode() if isinstance(a, bytes) else a for a in args]


class OpDescCreationMethod:
    """Paddle's ``OpDescCreationMethod(op_proto)``: called with keyword arguments, it gives the
    ``OpDesc`` message of an op of that proto (slots by name, the attrs the proto declares)."""

    def __init__(self, op_proto: Any) -> None:
        if not isinstance(op_proto, framework_pb2.OpProto):
            raise TypeError("Type of op_proto should be OpProto in PaddlePaddle.")
        self.__op_proto__ = op_proto

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args:
            raise ValueError("Only keyword arguments are supported.")
        proto = self.__op_proto__
        desc = framework_pb2.OpDesc(type=proto.type)
        for slots, field, kind in ((proto.inputs, desc.inputs, "input"), (proto.outputs, desc.outputs, "output")):
            for slot in slots:
                field.add(parameter=slot.name, arguments=_slot_args(slot, kwargs.get(slot.name, []), kind))
        for attr in proto.attrs:
            value = kwargs.get(attr.name)
            if attr.generated or value is None:
                continue
            _fill_proto_attr(desc.attrs.add(name=attr.name, type=attr.type), attr.type, value)
        return desc

    @staticmethod
    def any_is_true(generator: Any) -> bool:
        """Whether any item is true."""
        return any(generator)


_SCALAR_FIELDS = {"INT": "i", "FLOAT": "f", "LONG": "l", "STRING": "s", "BOOLEAN": "b"}
_LIST_FIELDS = {"INTS": "ints", "FLOATS": "floats", "STRINGS": "strings", "BOOLEANS": "bools", "LONGS": "longs"}


def _fill_proto_attr(attr: Any, type_code: int, value: Any) -> None:
    kind = framework_pb2.AttrType.Name(type_code)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if kind in _SCALAR_FIELDS:
        setattr(attr, _SCALAR_FIELDS[kind], value)
    elif kind in _LIST_FIELDS:
        getattr(attr, _LIST_FIELDS[kind]).extend(value)
    else:
        raise NotImplementedError("A not supported attribute type: %s." % kind)


class OpInfo:
    """What the factory knows of an op type: ``name``, ``method`` (makes an op), ``inputs`` and
    ``outputs`` as ``[(slot, duplicable)]``, ``attrs`` (names)."""

    def __init__(self, name: str, method: Any, inputs: List[Tuple[str, bool]], outputs: List[Tuple[str, bool]],
                 attrs: List[str]) -> None:
        self.name = name
        self.method = method
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs


def create_op_creation_method(op_proto: Any) -> OpInfo:
    """The ``OpInfo`` of an ``OpProto``: its method makes an ``EagerOperator`` from keyword arguments."""
    method = OpDescCreationMethod(op_proto)

    def make(*args, **kwargs):
        return EagerOperator.from_desc(method(*args, **kwargs), kwargs)

    return OpInfo(name=op_proto.type, method=make,
                  inputs=[(v.name, v.duplicable) for v in op_proto.inputs],
                  outputs=[(v.name, v.duplicable) for v in op_proto.outputs],
                  attrs=[a.name for a in op_proto.attrs])


class OperatorFactory:
    """Paddle's ``fluid.op.Operator``: ``Operator(type, **slots_and_attrs)`` makes an op to run on a
    scope; ``get_op_inputs(type)`` / ``get_op_outputs(type)`` give ``[(slot, duplicable)]`` and
    ``get_op_attr_names(type)`` the attr names.

    Examples:
        >>> from fluidist.op import Operator
        >>> scope = fluid.core.Scope()
        >>> scope.var("x").get_tensor().set(np.array([1.0, 2.0], "float32"), fluid.CPUPlace())
        >>> Operator("scale", X="x", Out="y", scale=3.0).run(scope, fluid.CPUPlace())
        >>> np.array(scope.find_var("y").get_tensor())
        array([3., 6.], dtype=float32)
    """

    def __init__(self) -> None:
        self.op_methods: Dict[str, OpInfo] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> EagerOperator:
        if "type" in kwargs:
            if args:
                raise ValueError("Except the argument \"type\", all of the other arguments should be keyword "
                                 "arguments.")
            t = kwargs.pop("type")
        else:
            if len(args) != 1:
                raise ValueError("Except the argument \"type\", all of the other arguments should be keyword "
                                 "arguments.")
            t = args[0]
        return self.get_op_info(t).method(**kwargs)

    def types(self) -> List[str]:
        """The registered op types."""
        return sorted(registry.all_op_types())

    def get_op_info(self, t: str) -> OpInfo:
        """The ``OpInfo`` of op type ``t`` (ValueError when no such op is registered)."""
        info = self.op_methods.get(t)
        if info is None:
            info = self.op_methods[t] = create_op_creation_method(op_proto(t))
        return info

    def get_op_input_names(self, type: str) -> List[str]:
        return [x[0] for x in self.get_op_info(type).inputs]

    def get_op_inputs(self, type: str) -> List[Tuple[str, bool]]:
        return self.get_op_info(type).inputs

    def get_op_output_names(self, type: str) -> List[str]:
        return [x[0] for x in self.get_op_info(type).outputs]

    def get_op_outputs(self, type: str) -> List[Tuple[str, bool]]:
        return self.get_op_info(type).outputs

    def get_op_attr_names(self, type: str) -> List[str]:
        return self.get_op_info(type).attrs


def op_support_gpu(op_type: str) -> bool:
    """``core.op_support_gpu``: whether ops of ``op_type`` can run on a CUDAPlace. Every registered
    op can, where CuPy sees a GPU (``is_compiled_with_cuda``); a CPU-only Paddle build answers False too."""
    from ..device.places import is_compiled_with_cuda
    return registry.lookup(op_type) is not None and is_compiled_with_cuda()


def infer_no_need_buffer_slots(op_type: str, inputs: Dict[str, Any], outputs: Dict[str, Any],
                               attrs: Dict[str, Any]) -> set:
    """``core.infer_no_need_buffer_slots``: the input slots ops of ``op_type`` read for their shape
    only (the registry's ``no_need_buffer`` fact); ValueError for an unknown op type."""
    return set(registry.get(op_type).no_need_buffer)


# the common attrs' defaults in Paddle 1.8.5's op protos (op_role 4096: OpRole.NotSpecified)
_COMMON_DEFAULTS = {"op_role": 4096, "op_role_var": [], "op_namescope": "", "op_callstack": [], "op_device": ""}


def get_op_attrs_default_value(op_type: Any) -> Dict[str, Any]:
    """``core.get_op_attrs_default_value``: ``{attr: default}`` of an op type (its registry entry's
    defaults and the common attrs'; a data type reads as its VarType value)."""
    op_type = op_type.decode() if isinstance(op_type, bytes) else op_type
    defaults = dict(_COMMON_DEFAULTS)
    defaults.update(copy.deepcopy(_opdef(op_type).attrs))
    return {k: paddle_attr_value(k, v) for k, v in defaults.items()}


class EagerOperator:
    """Paddle's ``core.Operator``: one op, made by ``fluid.op.Operator(...)`` (or ``create`` from a
    serialized ``OpDesc``), that ``run(scope, place)`` runs on the values a scope holds."""

    def __init__(self, type: str, inputs: Dict[str, List[str]], outputs: Dict[str, List[str]],
                 attrs: Dict[str, Any]) -> None:
        opdef = _opdef(type)
        self._type = type
        self._inputs = {s: list(inputs.get(s, [])) for s in opdef.inputs}
        self._outputs = {s: list(outputs.get(s, [])) for s in opdef.outputs}
        self._attrs = dict(attrs)

    @classmethod
    def from_desc(cls, desc: Any, attrs: Optional[Dict[str, Any]] = None) -> EagerOperator:
        """The op of an ``OpDesc`` message; ``attrs`` (the caller's values) are kept as given, with
        only the names the op takes."""
        if attrs is None:
            from ..paddle_format.program_desc import _attr_from_desc
            attrs = {a.name: _attr_from_desc(a, None, "the OpDesc given to core.Operator.create") for a in desc.attrs}
        names = set(op_attr_names(desc.type))
        return cls(desc.type, {v.parameter: list(v.arguments) for v in desc.inputs},
                   {v.parameter: list(v.arguments) for v in desc.outputs},
                   {k: v for k, v in attrs.items() if k in names and v is not None})

    @staticmethod
    def create(serialized_desc: bytes) -> EagerOperator:
        """The op of a serialized ``OpDesc`` (Paddle's ``core.Operator.create``)."""
        return EagerOperator.from_desc(framework_pb2.OpDesc.FromString(bytes(serialized_desc)))

    def type(self) -> str:
        return self._type

    def inputs(self) -> Dict[str, List[str]]:
        """``{slot: [variable names]}`` for every input slot of the op (empty where none is given)."""
        return {s: list(v) for s, v in sorted(self._inputs.items())}

    def outputs(self) -> Dict[str, List[str]]:
        return {s: list(v) for s, v in sorted(self._outputs.items())}

    def input_vars(self) -> List[str]:
        """The input variable names, slot by slot in slot-name order."""
        return [n for _, names in sorted(self._inputs.items()) for n in names]

    def output_vars(self) -> List[str]:
        return [n for _, names in sorted(self._outputs.items()) for n in names]

    def no_intermediate_outputs(self) -> List[str]:
        """The output variable names (fluidist's ops declare no intermediate outputs)."""
        return self.output_vars()

    def support_gpu(self) -> bool:
        """Whether the op can run on a CUDAPlace here (``op_support_gpu``)."""
        return op_support_gpu(self._type)

    def attr(self, name: str) -> Any:
        return self._attrs.get(name)

    def run(self, scope: Any, place: Any) -> None:
        """Run the op on ``place`` over the values ``scope`` holds; its outputs land in ``scope``."""
        run_one_op(self._type, self._inputs, self._outputs, self._attrs, scope, place)

    def __str__(self):
        def slots(d):
            return ", ".join("%s[%s]" % (s, ", ".join(names)) for s, names in sorted(d.items()))
        return "Op(%s), inputs:{%s}, outputs:{%s}." % (self._type, slots(self._inputs), slots(self._outputs))

    __repr__ = __str__


Operator = OperatorFactory()   # Paddle's default factory
RecurrentOp = refused("fluid.op.RecurrentOp", "Paddle 1.8's own one fails too (its core has no RecurrentOp); "
                      "build recurrent networks with fluid.layers.StaticRNN / DynamicRNN")
DynamicRecurrentOp = refused("fluid.op.DynamicRecurrentOp", "Paddle 1.8 has no dynamic_recurrent op (its factory "
                             "finds no proto); use fluid.layers.DynamicRNN")
CondOp = refused("fluid.op.CondOp", "Paddle 1.8 has no cond op (its factory finds no proto); use "
                 "fluid.layers.cond or fluid.layers.Switch")
