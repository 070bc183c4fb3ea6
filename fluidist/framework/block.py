"""Blocks and their Operators (each refers to the other): a block's variables and ops, the def-use
index and the edits that keep it current; an op's type, slots (``{slot: [variable names]}``) and
attrs (plain values)."""
from __future__ import annotations

import collections
import contextlib
from typing import Any, Dict, Iterator, List, Optional

from . import registry, unique_name
from .block_edits import BlockEdits, BlockRenames
from .defuse import DefUse
from .dtypes import paddle_attr_value
from .name_scope import full_name_scope
from .op_attrs import _PLAIN_TYPES, _op_attr, op_attrs, op_defaults
from .op_role import OP_NAMESCOPE_ATTR, OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from .variable import Parameter, Variable, _copy_var
from . import desc_views
from .desc_views import DescView


def _names(arg, what):
    """Normalise an op argument (Variable, name, or a list of them) to a list of names."""
    if arg is None:
        return []
    if isinstance(arg, (list, tuple)):
        return [a if type(a) is str else _one_name(a, what) for a in arg]
    return [_one_name(arg, what)]


def _one_name(a, what):
    if isinstance(a, Variable):
        return a.name
    if isinstance(a, str):
        return a
    if isinstance(a, bytes):    # Paddle 1.8 decodes a name given as bytes (cpt.to_text)
        return a.decode()
    if type(what) is tuple:     # (direction, slot, op type): the message is made only when it is needed
        what = "%s %r of op %r" % what
    raise TypeError("%s must be a Variable or a variable name, got %r" % (what, type(a).__name__))


def _slots(given, direction, op_type):
    """``{slot: [names]}`` of an op's ``inputs`` or ``outputs`` argument; a value that is no
    Variable or name is a TypeError naming the slot and the op type."""
    if not given:
        return {}
    out = {}
    for slot, arg in given.items():
        if type(arg) is list:       # the common case, a list of names: copied, each checked in this loop
            names = arg[:]
            for a in names:
                if type(a) is not str:
                    names = _names(arg, (direction, slot, op_type))
                    break
        else:
            names = _names(arg, (direction, slot, op_type))
        out[slot] = names
    return out


class Operator:
    """An op: ``type``, ``inputs``/``outputs`` as ``{slot: [var names]}``, and ``attrs``."""

    desc = DescView("OpDesc")

    def attr_type(self, name: str) -> int:
        """Paddle's ``AttrType`` code of attr ``name`` (its declared type, else its value's)."""
        return desc_views.attr_type(self, name)

    def __init__(self, block, type, inputs=None, outputs=None, attrs=None):
        self.block = block
        self.type = type
        self.inputs = _slots(inputs, "input", type)
        self.outputs = _slots(outputs, "output", type)
        self.attrs = op_attrs(attrs, {}) if attrs else {}

    def _bump(self):
        if self.block is not None and self.block.program is not None:
            self.block.program._bump_version()

    # ---- Paddle's accessors
    def input(self, name):
        return list(self.inputs.get(name, []))

    def output(self, name):
        return list(self.outputs.get(name, []))

    @property
    def input_names(self):
        return list(self.inputs.keys())

    @property
    def output_names(self):
        return list(self.outputs.keys())

    @property
    def input_arg_names(self):
        return [n for names in self.inputs.values() for n in names]

    @property
    def output_arg_names(self):
        return [n for names in self.outputs.values() for n in names]

    @property
    def attr_names(self):
        return list(self.attrs.keys())

    def attr(self, name):
        """Attr ``name`` (None when the op has none); a data type reads as its ``VarType`` value, which
        is both the dtype string and Paddle's code (``op.attr("out_dtype") == VarType.FP64``)."""
        return paddle_attr_value(name, self.attrs.get(name))

    def has_attr(self, name):
        return name in self.attrs

    def _set_attr(self, name, value):
        self.attrs[name] = _op_attr(name, value)
        self._bump()

    _update_attr = _set_attr

    def all_attrs(self):
        return dict(self.attrs)

    def _block_attr(self, name):
        return self.attrs[name]

    def _block_attr_id(self, name):
        return self.attrs[name].idx

    def _blocks_attr(self, name):
        return list(self.attrs[name])

    def _edit_names(self, edit):
        """Change this op's variable names through ``edit()``, keeping its block's def-use index."""
        index = self.block._defuse if self.block is not None else None
        if index is not None:
            index.discard(self)
        edit()
        if index is not None:
            index.add(self)
        self._bump()

    def _rename_input(self, old, new):
        self._edit_names(lambda: _rename_in(self.inputs, old, new))

    def _rename_output(self, old, new):
        self._edit_names(lambda: _rename_in(self.outputs, old, new))

    def set_input(self, slot, names):
        names = _names(names, "input %r" % slot)
        self._edit_names(lambda: self.inputs.__setitem__(slot, names))

    def set_output(self, slot, names):
        names = _names(names, "output %r" % slot)
        self._edit_names(lambda: self.outputs.__setitem__(slot, names))

    @property
    def idx(self):
        return self.block._index_of(self)

    def to_string(self, throw_on_error=False):
        def slots(d):
            return ", ".join("%s=%s" % (k, v) for k, v in sorted(d.items()))
        attrs = []
        for k in sorted(self.attrs):
            v = self.attrs[k]
            if isinstance(v, Block):
                v = "block[%d]" % v.idx
            elif isinstance(v, list) and v and isinstance(v[0], Block):
                v = "[%s]" % ", ".join("block[%d]" % b.idx for b in v)
            attrs.append("%s = %s" % (k, v))
        return "{%s} = %s(inputs={%s}, %s)" % (slots(self.outputs), self.type, slots(self.inputs),
                                               ", ".join(attrs))

    def __str__(self):
        return self.to_string()

    __repr__ = __str__


def _same_var(var, kwargs):
    """``var``, declared again with ``kwargs``: a shape, dtype or LoD level given must be the one it
    has (where it has one), as Paddle checks a variable declared twice."""
    new = Variable(None, name=var.name, shape=kwargs.get("shape"), dtype=kwargs.get("dtype"),
                   lod_level=kwargs.get("lod_level") or 0)
    for field, given in (("shape", "shape"), ("dtype", "dtype"), ("lod_level", "lod_level")):
        if kwargs.get(given) is None or getattr(var, field) is None:
            continue
        if getattr(new, field) != getattr(var, field):
            raise ValueError("variable %r is declared already with %s %s; it cannot be declared again with %s %s"
                             % (var.name, field, getattr(var, field), field, getattr(new, field)))
    return var


def _rename_in(slots, old, new):
    for names in slots.values():
        for i, n in enumerate(names):
            if n == old:
                names[i] = new


class Block:
    """A list of operators and the variables they use; block 0 of a Program is its global block, the
    others are the bodies of loops and branches (their ``parent_idx`` is the enclosing block).

    Scripts get Blocks from ``program.global_block()`` or ``program.current_block()``; layers call
    ``create_var`` and ``append_op`` on them.

    Attributes:
        program: the Program it belongs to.
        idx: its index in ``program.blocks``.
        parent_idx: the enclosing block's index (-1 for the global block).
        vars: ``{name: Variable}`` declared in this block.
    """

    desc = DescView("BlockDesc")

    def __init__(self, program: Any, idx: int, parent_idx: int = -1) -> None:
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.forward_block_idx = -1
        self.vars: Dict[str, Variable] = collections.OrderedDict()     # (Paddle's type: scripts compare blocks)
        self._ops: List[Operator] = []
        self._defuse = None

    # ---- the op list; assigning a new list drops the def-use index (rebuilt when next asked)
    @property
    def ops(self):
        return self._ops

    @ops.setter
    def ops(self, ops):
        self._ops = list(ops)
        self._defuse = None
        if self.program is not None:
            self.program._bump_version()

    # ---- def-use
    def _index(self):
        if self._defuse is None:
            self._defuse = DefUse(self._ops)
        return self._defuse

    def writers_of(self, name):
        """The ops of this block that write ``name``, in block order."""
        return self._in_order(self._index().writers.get(name))

    def readers_of(self, name):
        """The ops of this block that read ``name``, in block order."""
        return self._in_order(self._index().readers.get(name))

    def last_writer(self, name):
        """The last op of this block that writes ``name``, or None."""
        ops = self._index().writers.get(name)
        if not ops:
            return None
        if len(ops) == 1:
            return next(iter(ops.values()))
        return max(ops.values(), key=self._index_of)

    def _in_order(self, ops):
        if not ops:
            return []
        ops = list(ops.values())
        if len(ops) > 1:
            ops.sort(key=self._index_of)
        return ops

    # ---- variables
    def var(self, name: str) -> Variable:
        """The Variable ``name`` declared in this block; ValueError naming it if there is none."""
        if not isinstance(name, str):
            raise TypeError("var() takes a variable name, got %r" % type(name).__name__)
        v = self.vars.get(name)
        if v is None:
            raise ValueError("variable %r is not in block %d" % (name, self.idx))
        return v

    def has_var(self, name: str) -> bool:
        """Whether this block declares ``name`` (its parents are not searched)."""
        return name in self.vars

    def _find_var_recursive(self, name):
        blk = self
        while blk is not None:
            v = blk.vars.get(name)
            if v is not None:
                return v
            blk = blk.parent_block
        return None

    def _var_recursive(self, name):
        v = self._find_var_recursive(name)
        if v is None:
            raise ValueError("variable %r is not in block %d nor its ancestors" % (name, self.idx))
        return v

    @property
    def parent_block(self) -> Optional[Block]:
        """The enclosing Block, or None for the global block."""
        if self.parent_idx < 0:
            return None
        return self.program.blocks[self.parent_idx]

    def create_var(self, **kwargs: Any) -> Variable:
        """Declare a Variable here (or return the one of that ``name`` already declared).

        Args:
            **kwargs: the Variable's fields: ``name``, ``shape``, ``dtype``, ``lod_level``,
                ``persistable``, ``stop_gradient``, ``type``.

        Returns:
            The Variable.

        Raises:
            ValueError: ``name`` is declared already with another shape, dtype or LoD level.
        """
        name = kwargs.get("name")
        if name is not None and name in self.vars:
            return _same_var(self.vars[name], kwargs)
        v = Variable(self, **kwargs)
        self.vars[v.name] = v
        self.program._bump_version()
        return v

    def _declare(self, name, shape, dtype, type, lod_level, persistable):
        """``create_var(name=name, shape=shape, dtype=dtype, type=type, lod_level=lod_level,
        persistable=persistable)`` without keyword arguments, for passes that declare thousands."""
        known = self.vars.get(name)
        if known is not None:
            return _same_var(known, {"shape": shape, "dtype": dtype, "lod_level": lod_level})
        v = Variable(self, name, shape, dtype, type, lod_level, persistable)
        self.vars[name] = v
        self.program._bump_version()
        return v

    def create_parameter(self, **kwargs):
        """Create a Parameter in the *global* block (parameters always live there)."""
        gb = self.program.global_block()
        name = kwargs.get("name")
        if name is None:
            kwargs["name"] = name = unique_name.generate("param")
        existing = gb.vars.get(name)
        if isinstance(existing, Parameter):
            return existing
        initializer = kwargs.pop("initializer", None)
        p = Parameter(gb, **kwargs)
        gb.vars[name] = p
        self.program._bump_version()
        if initializer is not None:
            initializer(p, gb)
        return p

    def _remove_var(self, name):
        if name in self.vars:
            del self.vars[name]
            self.program._bump_version()

    def _rename_var(self, old, new):
        """Rename a variable and every reference to it in this block's ops, in O(its uses)."""
        v = self._rename_entry(old, new)
        index = self._index()
        readers = index.readers.pop(old, None)
        writers = index.writers.pop(old, None)
        users = dict(readers or {})
        users.update(writers or {})
        for op in users.values():
            _rename_in(op.inputs, old, new)
            _rename_in(op.outputs, old, new)
        # the index: the users' entries move from the old name to the new one (their other names stay)
        if readers:
            index.readers.setdefault(new, {}).update(readers)
        if writers:
            index.writers.setdefault(new, {}).update(writers)
        self.program._bump_version()
        return v

    def _rename_entry(self, old, new):
        """Rename the variable ``old`` (its entry moves to the end of ``vars``), not yet the ops' references."""
        if old not in self.vars:
            raise ValueError("variable %r is not in block %d" % (old, self.idx))
        if new in self.vars and new != old:
            raise ValueError("cannot rename %r to %r: block %d already has a variable %r"
                             % (old, new, self.idx, new))
        v = self.vars.pop(old)
        v.name = new
        self.vars[new] = v
        return v

    def _clone_variable(self, var, force_persistable=True):
        """Copy ``var`` (from any program) into this block, keeping its kind and attributes."""
        v = _copy_var(var, self)
        if force_persistable:
            v.persistable = True
        self.vars[v.name] = v
        self.program._bump_version()
        return v

    def all_parameters(self) -> List[Parameter]:
        """The Parameters declared in this block."""
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def iter_parameters(self) -> Iterator[Parameter]:
        """The Parameters declared in this block, lazily."""
        return (v for v in self.vars.values() if isinstance(v, Parameter))

    # ---- operators
    def _make_op(self, op_type, inputs, outputs, attrs):
        defaults = op_defaults(op_type)
        prog = self.program
        op = object.__new__(Operator)
        op.block = self
        op.type = op_type
        op.inputs = _slots(inputs, "input", op_type)
        op.outputs = _slots(outputs, "output", op_type)
        # the attrs: those given, the role and name scope, then the entry's defaults (in that order)
        kept = op_attrs(attrs, {}) if attrs else {}
        if OP_ROLE_ATTR not in kept:
            role = prog._current_role
            if role == OpRole.Forward and defaults.role is not None:
                role = defaults.role    # no role guard active: the op type's own role
            kept[OP_ROLE_ATTR] = role if type(role) in _PLAIN_TYPES else _op_attr(OP_ROLE_ATTR, role)
        if OP_ROLE_VAR_ATTR not in kept:
            role_var = list(prog._op_role_var)
            kept[OP_ROLE_VAR_ATTR] = (role_var if _PLAIN_TYPES.issuperset(map(type, role_var))
                                      else _op_attr(OP_ROLE_VAR_ATTR, role_var))
        if OP_NAMESCOPE_ATTR not in kept:
            kept[OP_NAMESCOPE_ATTR] = full_name_scope()
        for name, value, fresh in defaults.items:
            if name not in kept:
                kept[name] = value if fresh is None else fresh(name, value)
        op.attrs = kept
        registry.infer_shape(op, self, defaults.opdef)
        return op

    def append_op(self, type: Optional[str] = None, inputs: Optional[Dict[str, Any]] = None,
                  outputs: Optional[Dict[str, Any]] = None, attrs: Optional[Dict[str, Any]] = None,
                  stop_gradient: bool = False) -> Operator:
        """Append an operator of a registered ``type``; its output shapes are inferred at once.

        Args:
            type: the op type (``"mul"``, ``"elementwise_add"``, ...); unknown types are an error.
            inputs: ``{slot: Variable, name or a list of them}``.
            outputs: ``{slot: Variable, name or a list of them}``.
            attrs: the op's attributes; missing ones take the registry's defaults.
            stop_gradient: accepted for Paddle's signature.

        Returns:
            The new Operator.
        """
        op = self._make_op(type, inputs, outputs, attrs)
        self._ops.append(op)
        self._added(op)
        return op

    def _insert_op(self, index, type, inputs=None, outputs=None, attrs=None):
        op = self._make_op(type, inputs, outputs, attrs)
        self._ops.insert(index, op)
        self._added(op)
        return op

    def _added(self, op):
        if self._defuse is not None:
            self._defuse.add(op)
        self.program._bump_version()

    def _prepend_op(self, type, inputs=None, outputs=None, attrs=None):
        return self._insert_op(0, type, inputs, outputs, attrs)

    def insert_after(self, anchor, type, inputs=None, outputs=None, attrs=None):
        """Insert a new op right after ``anchor`` (an Operator of this block)."""
        return self._insert_op(self._index_of(anchor) + 1, type, inputs, outputs, attrs)

    def insert_before(self, anchor, type, inputs=None, outputs=None, attrs=None):
        """Insert a new op right before ``anchor`` (an Operator of this block)."""
        return self._insert_op(self._index_of(anchor), type, inputs, outputs, attrs)

    @contextlib.contextmanager
    def edits(self):
        """Many insertions by reference in one pass over the ops (linear, where one ``insert_after``
        at a time costs a scan of the block each)::

            with block.edits() as e:
                split = e.insert_after(grad_op, "split_byref", ...)
                e.insert_after(split, "send", ...)        # a new op can anchor the next one

        The result is what inserting them one at a time would give (a second op inserted after the
        same anchor lands between the anchor and the first). The block's ops change when the ``with``
        ends (not at all if it raises)."""
        e = BlockEdits(self)
        yield e
        e.commit()

    @contextlib.contextmanager
    def renames(self):
        """Many renames with one pass over the ops::

            with block.renames() as r:
                r.rename("w@GRAD", "w@GRAD.trainer_0")

        Each ``rename`` renames the variable at once, as ``_rename_var`` does; the ops' references
        follow when the ``with`` ends (no op of the block is to be edited or read by name meanwhile).
        A block that has its def-use index renames each at once through it."""
        r = BlockRenames(self)
        try:
            yield r
        finally:
            r.apply()

    def _index_of(self, op):
        try:
            return self._ops.index(op)      # by identity: Operator defines no __eq__
        except ValueError:
            raise ValueError("op %r is not in block %d" % (op.type, self.idx)) from None

    def _remove_op(self, index, end=None):
        if isinstance(index, Operator):
            index = self._index_of(index)
        if end is None:
            end = index + 1
        gone = self._ops[index:end]
        del self._ops[index:end]
        self._removed(gone)

    def remove_op(self, op):
        """Remove ``op`` (an Operator of this block)."""
        self._remove_op(self._index_of(op))

    def remove_ops(self, ops):
        ids = {id(o) for o in ops}
        gone = [o for o in self._ops if id(o) in ids]
        self._ops = [o for o in self._ops if id(o) not in ids]
        self._removed(gone)

    def _removed(self, ops):
        if self._defuse is not None:
            for op in ops:
                self._defuse.discard(op)
        self.program._bump_version()

    def _sync_with_cpp(self):
        """Kept for Paddle compatibility; there is nothing to sync."""

    def to_string(self, throw_on_error=False, with_details=False):
        lines = ["{ // block %d" % self.idx]
        for v in self.vars.values():
            lines.append("    " + v.to_string(throw_on_error, with_details))
        lines.append("")
        for op in self.ops:
            lines.append("    " + op.to_string())
        lines.append("}")
        return "\n".join(lines)

    def __str__(self):
        return self.to_string()
