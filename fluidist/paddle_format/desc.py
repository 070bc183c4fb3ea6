"""Paddle's C++ program descriptions as scripts reach them: ``program.desc``, ``block.desc``,
``op.desc``, ``var.desc`` and ``core.ProgramDesc()`` / ``core.OpDesc()``, with the methods of
Paddle's pybind (``op.desc.type()``, ``block.desc.append_op()``, ``var.desc.set_dtype(...)``,
``program.desc.serialize_to_string()``), and ``core.get_grad_op_desc``.

fluidist's Program, Block, Operator and Variable are their own descriptions (there is no C++ side
to keep in step: ``_sync_with_cpp`` has nothing to do), so a desc here is a view: what it sets is
set on the object itself, and what it reads is read there. Data types read through a desc are
Paddle's ``VarType`` values (``var.desc.dtype() == VarType.FP32``), as attrs that hold a data type
are (``Operator.attr``).

The IR classes' ``desc`` attributes make these views on first use (``framework/desc_views.py``
names this module instead of importing it: the IR imports nothing above it).
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..framework import Block, Operator, Program, Variable, registry
from ..framework.variable import GRAD_SUFFIX
from ..framework.dtypes import VarType, convert_dtype, plain, var_type_value
from . import framework_pb2 as pb
from .program_desc import (_kind_of, _op_to_desc, _var_to_desc,
                                         declared_attr_types, read_program, write_program)


class AttrType:
    """Paddle's ``core.AttrType``: the codes of attribute types (framework.proto's ``AttrType``)."""
    INT = pb.AttrType.Value("INT")
    FLOAT = pb.AttrType.Value("FLOAT")
    STRING = pb.AttrType.Value("STRING")
    INTS = pb.AttrType.Value("INTS")
    FLOATS = pb.AttrType.Value("FLOATS")
    STRINGS = pb.AttrType.Value("STRINGS")
    BOOLEAN = pb.AttrType.Value("BOOLEAN")
    BOOLEANS = pb.AttrType.Value("BOOLEANS")
    BLOCK = pb.AttrType.Value("BLOCK")
    LONG = pb.AttrType.Value("LONG")
    BLOCKS = pb.AttrType.Value("BLOCKS")
    LONGS = pb.AttrType.Value("LONGS")


def _text(name: Any) -> str:
    """A variable name given as str or bytes (Paddle's tests pass ``cpt.to_bytes(name)``)."""
    return name.decode() if isinstance(name, bytes) else name


def op_attr_type(op: Operator, name: str) -> int:
    """The ``AttrType`` code of attr ``name`` of ``op``: the type Paddle declares for it, else the
    type of its value."""
    if name not in op.attrs:
        raise ValueError("op %r has no attr %r" % (op.type, name))
    kind = declared_attr_types(op.type).get(name) or _kind_of(op.attrs[name])
    if kind is None:
        raise TypeError("attr %r of op %r holds %r, which no AttrType describes" % (name, op.type, op.attrs[name]))
    return pb.AttrType.Value(kind)


class OpDesc:
    """Paddle's ``OpDesc`` over a fluidist Operator (``op.desc``); ``OpDesc()`` makes an op of no
    block and no type, as ``core.OpDesc()`` does."""

    def __init__(self, op: Optional[Operator] = None) -> None:
        self._op = op if op is not None else Operator(None, "", {}, {}, {})

    def __eq__(self, other):
        return isinstance(other, OpDesc) and other._op is self._op

    def __hash__(self):
        return id(self._op)

    def type(self) -> str:
        return self._op.type

    def set_type(self, type: str) -> None:
        self._op.type = _text(type)
        self._op._bump()

    def input(self, slot: str) -> List[str]:
        return self._op.input(slot)

    def output(self, slot: str) -> List[str]:
        return self._op.output(slot)

    def input_names(self) -> List[str]:
        return sorted(self._op.inputs)

    def output_names(self) -> List[str]:
        return sorted(self._op.outputs)

    def input_arg_names(self) -> List[str]:
        return self._op.input_arg_names

    def output_arg_names(self) -> List[str]:
        return self._op.output_arg_names

    def set_input(self, slot: str, names: Sequence[Any]) -> None:
        self._op.set_input(slot, [_text(n) for n in names])

    def set_output(self, slot: str, names: Sequence[Any]) -> None:
        self._op.set_output(slot, [_text(n) for n in names])

    def _rename_input(self, old: str, new: str) -> None:
        self._op._rename_input(old, new)

    def _rename_output(self, old: str, new: str) -> None:
        self._op._rename_output(old, new)

    def attr(self, name: str) -> Any:
        return self._op.attr(name)

    def has_attr(self, name: str) -> bool:
        return name in self._op.attrs

    def attr_names(self) -> List[str]:
        return list(self._op.attrs)

    def attr_type(self, name: str) -> int:
        return op_attr_type(self._op, name)

    def _set_attr(self, name: str, value: Any) -> None:
        self._op._set_attr(name, value)

    set_attr = _set_attr

    def remove_attr(self, name: str) -> None:
        self._op.attrs.pop(name, None)
        self._op._bump()

    def set_block_attr(self, name: str, block: Any) -> None:
        self._op._set_attr(name, block._block if isinstance(block, BlockDesc) else block)

    def set_blocks_attr(self, name: str, blocks: Sequence[Any]) -> None:
        self._op._set_attr(name, [b._block if isinstance(b, BlockDesc) else b for b in blocks])

    def _block_attr_id(self, name: str) -> int:
        return self._op._block_attr_id(name)

    def _blocks_attr_ids(self, name: str) -> List[int]:
        return [b.idx for b in self._op._blocks_attr(name)]

    def check_attrs(self) -> None:
        """Give every attr the op has not set its default (the op registry's)."""
        opdef = registry.lookup(self._op.type)
        if opdef is None:
            raise ValueError("op type %r is not registered: its attrs cannot be checked" % self._op.type)
        for name, default in opdef.attrs.items():
            if name not in self._op.attrs:
                self._op._set_attr(name, copy.deepcopy(default))

    def infer_shape(self, block: Any) -> None:
        """Set the shapes (and types, dtypes, LoD levels) of the op's outputs in ``block``; a
        gradient ``x@GRAD`` the op's own inference leaves unknown is shaped like ``x``, as the
        backward pass shapes gradients."""
        block = block._block if isinstance(block, BlockDesc) else block
        registry.infer_shape(self._op, block)
        for name in self._op.output_arg_names:
            grad = block._find_var_recursive(name)
            fwd = block._find_var_recursive(name[:-len(GRAD_SUFFIX)]) if name.endswith(GRAD_SUFFIX) else None
            if grad is not None and fwd is not None and grad.shape is None:
                grad.shape, grad.lod_level = fwd.shape, fwd.lod_level
                grad.dtype = grad.dtype or fwd.dtype

    def infer_var_type(self, block: Any) -> None:
        """Paddle sets the output variables' types here; fluidist's ``infer_shape`` sets them with
        the shapes, so there is nothing more to do."""

    def copy_from(self, other: OpDesc) -> None:
        """Make this op a copy of ``other`` (type, slots, attrs)."""
        src, op = other._op, self._op

        def copy_slots():
            op.inputs = {k: list(v) for k, v in src.inputs.items()}
            op.outputs = {k: list(v) for k, v in src.outputs.items()}
        op.type = src.type
        op.attrs = copy.copy(src.attrs)
        op._edit_names(copy_slots)

    def serialize_to_string(self) -> bytes:
        """Paddle's ``OpDesc`` message of the op, serialized."""
        return _op_to_desc(pb.BlockDesc(idx=0, parent_idx=-1), self._op, "op %r" % self._op.type).SerializeToString()

    def __repr__(self):
        return "OpDesc(%s)" % self._op.to_string()


class VarDesc:
    """Paddle's ``VarDesc`` over a fluidist Variable (``var.desc``, ``block.desc.var(name)``)."""
    VarType = VarType

    def __init__(self, var: Variable) -> None:
        self._var = var

    def __eq__(self, other):
        return isinstance(other, VarDesc) and other._var is self._var

    def __hash__(self):
        return id(self._var)

    def name(self) -> str:
        return self._var.name

    def type(self) -> Any:
        return var_type_value(self._var.type)

    def set_type(self, type: Any) -> None:
        self._var.type = plain(VarType(type) if isinstance(type, int) and not isinstance(type, str) else type)

    def dtype(self) -> Any:
        if self._var.dtype is None:
            raise ValueError("variable %r has no data type" % self._var.name)
        return var_type_value(self._var.dtype)

    def set_dtype(self, dtype: Any) -> None:
        self._var.dtype = _dtype_text(dtype)

    def shape(self) -> List[int]:
        return list(self._var.shape) if self._var.shape is not None else []

    def set_shape(self, shape: Sequence[int]) -> None:
        self._var.shape = tuple(int(d) for d in shape)

    def lod_level(self) -> int:
        return self._var.lod_level

    def set_lod_level(self, level: int) -> None:
        self._var.lod_level = int(level)

    def persistable(self) -> bool:
        return self._var.persistable

    def set_persistable(self, persistable: bool) -> None:
        self._var.persistable = bool(persistable)

    def need_check_feed(self) -> bool:
        return self._var.need_check_feed

    def set_need_check_feed(self, need: bool) -> None:
        self._var.need_check_feed = bool(need)

    # a reader's variable describes several tensors: one shape, dtype and LoD level each
    def shapes(self) -> List[List[int]]:
        return [list(s) for s in self._var.__dict__.get("reader_shapes", [])]

    def set_shapes(self, shapes: Sequence[Sequence[int]]) -> None:
        self._var.__dict__["reader_shapes"] = [tuple(int(d) for d in s) for s in shapes]

    def dtypes(self) -> List[Any]:
        return [var_type_value(d) for d in self._var.__dict__.get("reader_dtypes", [])]

    def set_dtypes(self, dtypes: Sequence[Any]) -> None:
        self._var.__dict__["reader_dtypes"] = [_dtype_text(d) for d in dtypes]

    def lod_levels(self) -> List[int]:
        return list(self._var.__dict__.get("reader_lod_levels", []))

    def set_lod_levels(self, levels: Sequence[int]) -> None:
        self._var.__dict__["reader_lod_levels"] = [int(n) for n in levels]

    def serialize_to_string(self) -> bytes:
        """Paddle's ``VarDesc`` message of the variable, serialized."""
        bd = pb.BlockDesc(idx=0, parent_idx=-1)
        _var_to_desc(bd, self._var, "variable %r" % self._var.name)
        return bd.vars[0].SerializeToString()

    def __repr__(self):
        return "VarDesc(%s)" % self._var.to_string()


def _dtype_text(dtype: Any) -> str:
    """A data type given as a VarType value, its int code, a string or a NumPy type, as fluidist's string."""
    if isinstance(dtype, int) and not isinstance(dtype, (bool, str)):
        dtype = VarType(dtype)
    return convert_dtype(dtype)


class BlockDesc:
    """Paddle's ``BlockDesc`` over a fluidist Block (``block.desc``, ``program.desc.block(i)``)."""

    def __init__(self, block: Block) -> None:
        self._block = block

    def __eq__(self, other):
        return isinstance(other, BlockDesc) and other._block is self._block

    def __hash__(self):
        return id(self._block)

    @property
    def id(self) -> int:
        return self._block.idx

    @property
    def parent(self) -> int:
        return self._block.parent_idx

    def get_forward_block_idx(self) -> int:
        return self._block.forward_block_idx

    def _set_forward_block_idx(self, idx: int) -> None:
        self._block.forward_block_idx = int(idx)

    def var(self, name: Any) -> VarDesc:
        """The variable ``name`` of this block, declared (with nothing known of it) when missing."""
        name = _text(name)
        var = self._block.vars.get(name)
        if var is None:
            var = self._block.create_var(name=name)
        return VarDesc(var)

    def find_var(self, name: Any) -> Optional[VarDesc]:
        var = self._block.vars.get(_text(name))
        return VarDesc(var) if var is not None else None

    def find_var_recursive(self, name: Any) -> Optional[VarDesc]:
        var = self._block._find_var_recursive(_text(name))
        return VarDesc(var) if var is not None else None

    def has_var(self, name: Any) -> bool:
        return _text(name) in self._block.vars

    def has_var_recursive(self, name: Any) -> bool:
        return self._block._find_var_recursive(_text(name)) is not None

    def all_vars(self) -> List[VarDesc]:
        return [VarDesc(v) for v in self._block.vars.values()]

    def _remove_var(self, name: Any) -> None:
        self._block._remove_var(_text(name))

    def _insert_op(self, index: int) -> OpDesc:
        """A new op of no type at ``index`` (``set_type`` and the slots fill it in)."""
        op = Operator(self._block, "", {}, {}, {})
        self._block._ops.insert(index, op)
        self._block._added(op)
        return OpDesc(op)

    def append_op(self) -> OpDesc:
        return self._insert_op(len(self._block.ops))

    def _prepend_op(self) -> OpDesc:
        return self._insert_op(0)

    def _remove_op(self, start: int, end: int) -> None:
        """Remove the ops ``start`` .. ``end - 1``."""
        self._block._remove_op(start, end)

    def op(self, index: int) -> OpDesc:
        return OpDesc(self._block.ops[index])

    def op_size(self) -> int:
        return len(self._block.ops)

    def __repr__(self):
        return "BlockDesc(%d, parent %d)" % (self._block.idx, self._block.parent_idx)


class ProgramDesc:
    """Paddle's ``ProgramDesc`` over a fluidist Program (``program.desc``). ``ProgramDesc()`` makes
    an empty program; ``ProgramDesc(bytes)`` reads a serialized one; ``ProgramDesc(desc)`` copies."""

    def __init__(self, source: Any = None) -> None:
        if source is None:
            self._program = Program()
        elif isinstance(source, Program):
            self._program = source
        elif isinstance(source, ProgramDesc):
            self._program = source._program.clone()
        else:
            self._program = read_program(bytes(source), "the bytes given to core.ProgramDesc",
                                         check_ops=False)[0]

    def __eq__(self, other):
        return isinstance(other, ProgramDesc) and other._program is self._program

    def __hash__(self):
        return id(self._program)

    def block(self, index: int) -> BlockDesc:
        return BlockDesc(self._program.block(index))

    def num_blocks(self) -> int:
        return len(self._program.blocks)

    def append_block(self, parent: BlockDesc) -> BlockDesc:
        """A new block whose parent is ``parent`` (the program's current block stays as it was)."""
        current = self._program.current_block_idx
        block = self._program._create_block(parent.id)
        self._program.current_block_idx = current
        return BlockDesc(block)

    def flush(self) -> None:
        """Nothing to write back: the desc is the program."""

    def serialize_to_string(self) -> bytes:
        """The program as Paddle's serialized ``ProgramDesc``."""
        return write_program(self._program, "program.desc")

    def _version(self) -> int:
        from .program_desc import PROGRAM_VERSION
        return PROGRAM_VERSION

    def __repr__(self):
        return "ProgramDesc(%d blocks)" % self._program.num_blocks()


def get_grad_op_desc(op_desc: OpDesc, no_grad_set: Any, grad_sub_block_list: Sequence[Any] = ()
                     ) -> Tuple[List[OpDesc], Dict[str, str]]:
    """Paddle's ``core.get_grad_op_desc``: the gradient ops of ``op_desc``'s op (each an OpDesc of
    no block, for ``block.desc.append_op().copy_from(...)``) and ``{gradient name: forward name}``
    of what they output. Gradients named in ``no_grad_set`` are left out of their outputs."""
    op = op_desc._op if isinstance(op_desc, OpDesc) else op_desc
    skip = {_text(n) for n in (no_grad_set or ())}
    descs, grad_to_var = [], {}
    forward_names = set(op.input_arg_names) | set(op.output_arg_names)
    for spec in registry.make_grad_specs(op):
        outputs = {slot: [n for n in names if n not in skip] for slot, names in spec["outputs"].items()}
        grad_op = Operator(None, spec["type"], spec["inputs"], outputs, spec.get("attrs", {}))
        for names in outputs.values():
            for n in names:
                base = n[:-len(GRAD_SUFFIX)] if n.endswith(GRAD_SUFFIX) else n
                if base in forward_names:
                    grad_to_var[n] = base
        descs.append(OpDesc(grad_op))
    return descs, grad_to_var
