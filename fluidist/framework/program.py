"""The IR: Program -> Block -> Operator / Variable / Parameter.

A Program is plain data. Operators hold variable *names*, not objects, so rewriting a program is
list and dict surgery and the JSON form (``serialization.py``) is exact. Every edit made through
these classes bumps ``Program._version`` so that executors can cache their plans safely.
"""
from __future__ import annotations

import contextlib
import copy
import json
from typing import Iterator

import numpy as np

from . import registry, unique_name
from .defuse import DefUse
from .graph import lint_program
from .dtypes import VarType, convert_dtype
from .op_role import OP_NAMESCOPE_ATTR, OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from .serialization import (FORMAT_VERSION, PROGRAM_FIELDS, attr_from_json, attr_to_json, loads,
                            object_from_json, object_to_json)

GRAD_SUFFIX = "@GRAD"
RENAME_INFIX = "@RENAME@"
EMPTY_VAR_NAME = "@EMPTY@"
TEMP_VAR_NAME = "@TEMP@"
LR_DECAY_COUNTER = "@LR_DECAY_COUNTER@"


def grad_var_name(name):
    return name + GRAD_SUFFIX


def _strip_grad(name):
    base = name.split(RENAME_INFIX)[0]
    return base[:-len(GRAD_SUFFIX)] if base.endswith(GRAD_SUFFIX) else base


def _shape_tuple(shape):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        shape = [shape]
    out = []
    for d in shape:
        if d is None:
            out.append(-1)
        else:
            out.append(int(d))
    return tuple(out)


def _names(arg, what):
    """Normalise an op argument (Variable, name, or a list of them) to a list of names."""
    if arg is None:
        return []
    if isinstance(arg, (list, tuple)):
        names = [a if type(a) is str else _one_name(a, what) for a in arg]
        return names
    return [_one_name(arg, what)]


def _one_name(a, what):
    if isinstance(a, Variable):
        return a.name
    if isinstance(a, str):
        return a
    raise TypeError("%s must be a Variable or a variable name, got %r" % (what, type(a).__name__))


_PLAIN_TYPES = frozenset([int, float, str, bool, type(None)])


def _plain_attr(value):
    """Attr values are kept in JSON-friendly form: lists not tuples, python scalars not numpy."""
    t = type(value)
    if t in _PLAIN_TYPES:
        return value
    if t is list and all(type(v) in _PLAIN_TYPES for v in value):
        return list(value)
    if isinstance(value, (Block, str, bool, type(None))):
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain_attr(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain_attr(v) for v in value.tolist()]
    return value


class Variable:
    """A named, typed slot of a Block. Values live in a Scope, not here."""

    def __init__(self, block, name=None, shape=None, dtype=None, type=VarType.LOD_TENSOR,
                 lod_level=0, persistable=False, stop_gradient=False, is_data=False,
                 need_check_feed=False, error_clip=None, **kwargs):
        # straight into __dict__: a new variable changes no program yet (create_var bumps the version)
        self.__dict__.update(
            block=block,
            name=name if name is not None else unique_name.generate_with_ignorable_key("_generated_var"),
            shape=_shape_tuple(shape), dtype=convert_dtype(dtype) if dtype is not None else None, type=type,
            lod_level=int(lod_level or 0), persistable=bool(persistable), stop_gradient=bool(stop_gradient),
            is_data=bool(is_data), need_check_feed=bool(need_check_feed), error_clip=error_clip)

    # Paddle-style accessors
    @property
    def ndim(self):
        return len(self.shape) if self.shape is not None else 0

    def numel_known(self):
        return self.shape is not None and all(d >= 0 for d in self.shape)

    def _program(self):
        return self.block.program

    def _set_error_clip(self, error_clip):
        """Clip this variable's gradient as the backward pass produces it (``clip.ErrorClipByValue``)."""
        self.error_clip = error_clip

    def _bump(self):
        if self.block is not None and self.block.program is not None:
            self.block.program._version += 1

    def __setattr__(self, key, value):
        object.__setattr__(self, key, value)
        if key in ("shape", "dtype", "persistable", "type", "lod_level") and "block" in self.__dict__:
            self._bump()

    def _meta(self):
        return {"name": self.name, "shape": list(self.shape) if self.shape is not None else None,
                "dtype": self.dtype, "type": self.type, "lod_level": self.lod_level,
                "persistable": self.persistable, "stop_gradient": self.stop_gradient,
                "is_data": self.is_data, "need_check_feed": self.need_check_feed}

    def to_string(self, throw_on_error=False, with_details=False):
        shape = "(%s)" % ", ".join(str(d) for d in self.shape) if self.shape is not None else "(?)"
        prefix = "persist " if self.persistable else ""
        extra = ""
        if self.lod_level:
            extra += ".lod_level(%d)" % self.lod_level
        return "%svar %s : %s.shape%s.dtype(%s).stop_gradient(%s)%s" % (
            prefix, self.name, self.type, shape, self.dtype, self.stop_gradient, extra)

    def __str__(self):
        return self.to_string()

    __repr__ = __str__


class Parameter(Variable):
    """A persistable, trainable Variable of the global block, with its optimisation attributes."""

    def __init__(self, block, shape, dtype, trainable=True, optimize_attr=None, regularizer=None,
                 gradient_clip_attr=None, do_model_average=None, is_distributed=False, **kwargs):
        if shape is None:
            raise ValueError("the shape of parameter %r must be given" % kwargs.get("name"))
        for d in shape:
            if d is None or int(d) < 0:
                raise ValueError("each dimension of parameter %r must be >= 0, got shape %s"
                                 % (kwargs.get("name"), list(shape)))
        kwargs.setdefault("persistable", True)
        super().__init__(block, shape=shape, dtype=dtype, **kwargs)
        self.trainable = bool(trainable)
        self.optimize_attr = dict(optimize_attr) if optimize_attr else {"learning_rate": 1.0}
        self.regularizer = regularizer
        self.gradient_clip_attr = gradient_clip_attr
        self.do_model_average = do_model_average
        self.is_distributed = bool(is_distributed)

    def _meta(self):
        m = super()._meta()
        m.update({"parameter": True, "trainable": self.trainable, "optimize_attr": self.optimize_attr,
                  "regularizer": self.regularizer, "gradient_clip_attr": self.gradient_clip_attr,
                  "do_model_average": self.do_model_average, "is_distributed": self.is_distributed})
        return m

    def to_string(self, throw_on_error=False, with_details=False):
        s = super().to_string()
        return ("trainable param " if self.trainable else "param ") + s


class Operator:
    """An op: ``type``, ``inputs``/``outputs`` as ``{slot: [var names]}``, and ``attrs``."""

    def __init__(self, block, type, inputs=None, outputs=None, attrs=None):
        self.block = block
        self.type = type
        self.inputs = {k: _names(v, "input %r of op %r" % (k, type)) for k, v in (inputs or {}).items()}
        self.outputs = {k: _names(v, "output %r of op %r" % (k, type)) for k, v in (outputs or {}).items()}
        self.attrs = {k: _plain_attr(v) for k, v in (attrs or {}).items()}

    def _bump(self):
        if self.block is not None and self.block.program is not None:
            self.block.program._version += 1

    def _copy_into(self, block, blocks):
        """This op as an op of ``block`` (names and attrs copied; Block attrs point into ``blocks``)."""
        op = object.__new__(Operator)
        op.block = block
        op.type = self.type
        op.inputs = {k: list(v) for k, v in self.inputs.items()}
        op.outputs = {k: list(v) for k, v in self.outputs.items()}
        op.attrs = _remap_blocks(self.attrs, blocks)
        return op

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
        return self.attrs.get(name)

    def has_attr(self, name):
        return name in self.attrs

    def _set_attr(self, name, value):
        self.attrs[name] = _plain_attr(value)
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


def _rename_in(slots, old, new):
    for names in slots.values():
        for i, n in enumerate(names):
            if n == old:
                names[i] = new


class _BlockEdits:
    """Insertions collected by ``Block.edits()`` and applied in one pass."""

    def __init__(self, block):
        self.block = block
        self.after, self.before, self.new = {}, {}, []

    def insert_after(self, anchor, type, inputs=None, outputs=None, attrs=None):
        op = self._new(type, inputs, outputs, attrs)
        self.after.setdefault(id(anchor), []).insert(0, op)   # right after the anchor
        return op

    def insert_before(self, anchor, type, inputs=None, outputs=None, attrs=None):
        op = self._new(type, inputs, outputs, attrs)
        self.before.setdefault(id(anchor), []).append(op)     # right before the anchor
        return op

    def _new(self, type, inputs, outputs, attrs):
        op = self.block._make_op(type, inputs, outputs, attrs)
        self.new.append(op)
        return op

    def commit(self):
        if not self.new:
            return
        out = []
        stack = list(reversed(self.block._ops))
        while stack:   # each op with what goes before and after it (new ops can be anchors too)
            item = stack.pop()
            if isinstance(item, tuple):
                out.append(item[1])
                continue
            before = self.before.pop(id(item), ())
            after = self.after.pop(id(item), ())
            stack.extend(reversed(after))
            stack.append(("emit", item))
            stack.extend(reversed(before))
        if self.after or self.before:
            raise ValueError("block %d edits: an anchor op is not in the block" % self.block.idx)
        self.block._ops = out
        if self.block._defuse is not None:
            for op in self.new:
                self.block._defuse.add(op)
        self.block.program._version += 1


class Block:
    def __init__(self, program, idx, parent_idx=-1):
        self.program = program
        self.idx = idx
        self.parent_idx = parent_idx
        self.forward_block_idx = -1
        self.vars = {}
        self._ops = []
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
            self.program._version += 1

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
    def var(self, name):
        if not isinstance(name, str):
            raise TypeError("var() takes a variable name, got %r" % type(name).__name__)
        v = self.vars.get(name)
        if v is None:
            raise ValueError("variable %r is not in block %d" % (name, self.idx))
        return v

    def has_var(self, name):
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
    def parent_block(self):
        if self.parent_idx < 0:
            return None
        return self.program.blocks[self.parent_idx]

    def create_var(self, **kwargs):
        name = kwargs.get("name")
        if name is not None and name in self.vars:
            return self.vars[name]
        v = Variable(self, **kwargs)
        self.vars[v.name] = v
        self.program._version += 1
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
        self.program._version += 1
        if initializer is not None:
            initializer(p, gb)
        return p

    def _remove_var(self, name):
        if name in self.vars:
            del self.vars[name]
            self.program._version += 1

    def _rename_var(self, old, new):
        """Rename a variable and every reference to it in this block's ops, in O(its uses)."""
        if old not in self.vars:
            raise ValueError("variable %r is not in block %d" % (old, self.idx))
        if new in self.vars and new != old:
            raise ValueError("cannot rename %r to %r: block %d already has a variable %r"
                             % (old, new, self.idx, new))
        v = self.vars.pop(old)
        v.name = new
        self.vars[new] = v
        index = self._index()
        users = dict(index.readers.get(old, {}))
        users.update(index.writers.get(old, {}))
        for op in users.values():
            op._edit_names(lambda op=op: (_rename_in(op.inputs, old, new), _rename_in(op.outputs, old, new)))
        self.program._version += 1
        return v

    def _clone_variable(self, var, force_persistable=True):
        """Copy ``var`` (from any program) into this block, keeping its kind and attributes."""
        v = _copy_var(var, self)
        if force_persistable:
            v.persistable = True
        self.vars[v.name] = v
        self.program._version += 1
        return v

    def all_parameters(self):
        return [v for v in self.vars.values() if isinstance(v, Parameter)]

    def iter_parameters(self):
        return (v for v in self.vars.values() if isinstance(v, Parameter))

    # ---- operators
    def _make_op(self, type, inputs, outputs, attrs):
        opdef = registry.lookup(type)
        if opdef is None:
            raise ValueError("unknown op type %r: no op of that type is registered" % type)
        attrs = dict(attrs or {})
        prog = self.program
        if OP_ROLE_ATTR not in attrs:
            role = prog._current_role
            if role == OpRole.Forward and opdef.role is not None:
                role = opdef.role   # no role guard active: the op type's own role
            attrs[OP_ROLE_ATTR] = role
        if OP_ROLE_VAR_ATTR not in attrs:
            attrs[OP_ROLE_VAR_ATTR] = list(prog._op_role_var)
        if prog._name_scope and OP_NAMESCOPE_ATTR not in attrs:
            attrs[OP_NAMESCOPE_ATTR] = prog._name_scope
        for k, v in opdef.attrs.items():
            if k not in attrs:
                attrs[k] = copy.deepcopy(v)
        op = Operator(self, type, inputs, outputs, attrs)
        registry.infer_shape(op, self)
        return op

    def append_op(self, type, inputs=None, outputs=None, attrs=None, stop_gradient=False):
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
        self.program._version += 1

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
        e = _BlockEdits(self)
        yield e
        e.commit()

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
        self.program._version += 1

    def _sync_with_cpp(self):
        """Kept for Paddle compatibility; there is nothing to sync."""

    def to_string(self, throw_on_error=False, with_details=False):
        lines = ["{ // block %d" % self.idx]
        for v in self.vars.values():
            lines.append("    " + v.to_string())
        lines.append("")
        for op in self.ops:
            lines.append("    " + op.to_string())
        lines.append("}")
        return "\n".join(lines)

    def __str__(self):
        return self.to_string()


class Program:
    def __init__(self):
        self.blocks = [Block(self, 0)]
        self.current_block_idx = 0
        self._version = 0
        self._seed = 0
        self._current_role = OpRole.Forward
        self._op_role_var = []
        self._name_scope = ""
        self._is_distributed = False
        self._is_chief = False
        self._endpoints = []
        self._ps_endpoint = None
        self._trainers_endpoints = []
        self._nccl_comm_num = 1
        self._use_hierarchical_allreduce = False
        self._hierarchical_allreduce_inter_nranks = 0
        self._distributed_lookup_table = None
        self._origin_program = None

    # ---- seed
    @property
    def random_seed(self):
        return self._seed

    @random_seed.setter
    def random_seed(self, seed):
        if not isinstance(seed, (int, np.integer)):
            raise ValueError("Program.random_seed must be an integer, got %r" % (seed,))
        self._seed = int(seed)
        self._version += 1

    # ---- blocks
    def global_block(self):
        return self.blocks[0]

    def block(self, index):
        return self.blocks[index]

    def current_block(self):
        return self.blocks[self.current_block_idx]

    @property
    def num_blocks(self):
        return len(self.blocks)

    def _create_block(self, parent_idx=None):
        parent = self.current_block_idx if parent_idx is None else parent_idx
        b = Block(self, len(self.blocks), parent)
        self.blocks.append(b)
        self.current_block_idx = b.idx
        self._version += 1
        return b

    def _rollback(self):
        self.current_block_idx = self.current_block().parent_idx

    def list_vars(self):
        for b in self.blocks:
            for v in b.vars.values():
                yield v

    def all_parameters(self):
        return self.global_block().all_parameters()

    # ---- role guards used by backward / optimizer / lr schedules
    @contextlib.contextmanager
    def _role_guard(self, role, role_var=None):
        old_role, old_var = self._current_role, self._op_role_var
        self._current_role = role
        self._op_role_var = list(role_var) if role_var else []
        try:
            yield
        finally:
            self._current_role, self._op_role_var = old_role, old_var

    def _optimized_guard(self, param_and_grads):
        names = [v.name if isinstance(v, Variable) else v for v in param_and_grads]
        return self._role_guard(OpRole.Optimize, names)

    def _lr_schedule_guard(self, is_with_opt=False):
        role = OpRole.LRSched | (OpRole.Optimize if is_with_opt else 0)
        return self._role_guard(role)

    def _backward_role_guard(self):
        return self._role_guard(OpRole.Backward)

    # ---- copies and forms
    def clone(self, for_test=False):
        """A deep copy (blocks, variables, ops; attrs that are Blocks point into the copy). With
        ``for_test``: without backward, optimize and LR-schedule ops, dropout/batch_norm in test mode."""
        p = Program()
        p.blocks = []
        for b in self.blocks:
            nb = Block(p, b.idx, b.parent_idx)
            nb.forward_block_idx = b.forward_block_idx
            p.blocks.append(nb)
        for b, nb in zip(self.blocks, p.blocks):
            for name, v in b.vars.items():
                nb.vars[name] = _copy_var(v, nb)
            nb._ops = [op._copy_into(nb, p.blocks) for op in b.ops]
        p._seed = self._seed
        for k in PROGRAM_FIELDS:
            setattr(p, k, copy.copy(getattr(self, k)))
        if for_test:
            _strip_training(p)
        p._version = 0
        return p

    def to_dict(self):
        """The lossless JSON-ready form (``to_json`` -> ``from_json`` -> ``to_json`` is exact)."""
        blocks = []
        for b in self.blocks:
            blocks.append({
                "idx": b.idx, "parent_idx": b.parent_idx, "forward_block_idx": b.forward_block_idx,
                "vars": [_var_to_json(v) for v in b.vars.values()],
                "ops": [{"type": op.type,
                         "inputs": {k: list(v) for k, v in op.inputs.items()},
                         "outputs": {k: list(v) for k, v in op.outputs.items()},
                         "attrs": {k: attr_to_json(v) for k, v in op.attrs.items()}} for op in b.ops],
            })
        return {"fluidist_program": FORMAT_VERSION, "random_seed": self.random_seed,
                "fields": {k: getattr(self, k) for k in PROGRAM_FIELDS}, "blocks": blocks}

    @staticmethod
    def from_dict(d):
        if not isinstance(d, dict) or d.get("fluidist_program") != FORMAT_VERSION:
            raise ValueError("not a fluidist program of format %d: %r"
                             % (FORMAT_VERSION, d.get("fluidist_program") if isinstance(d, dict) else d))
        p = Program()
        p.blocks = []
        for bd in d["blocks"]:
            b = Block(p, bd["idx"], bd["parent_idx"])
            b.forward_block_idx = bd.get("forward_block_idx", -1)
            p.blocks.append(b)
        for bd, b in zip(d["blocks"], p.blocks):
            for vd in bd["vars"]:
                vd = dict(vd)
                if vd.pop("parameter", False):
                    vd["regularizer"] = object_from_json(vd.get("regularizer"))
                    vd["gradient_clip_attr"] = object_from_json(vd.get("gradient_clip_attr"))
                    v = Parameter(b, **vd)
                else:
                    v = Variable(b, **vd)
                b.vars[v.name] = v
            b._ops = [Operator(b, od["type"], od["inputs"], od["outputs"],
                               {k: attr_from_json(v, p.blocks) for k, v in od["attrs"].items()})
                      for od in bd["ops"]]
        p._seed = d.get("random_seed", 0)
        for k, v in d.get("fields", {}).items():
            if k in PROGRAM_FIELDS:
                setattr(p, k, v)
        p.current_block_idx = 0
        p._version = 0
        return p

    def to_json(self, indent=None):
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @staticmethod
    def from_json(text):
        return Program.from_dict(loads(text))

    def lint(self):
        return lint_program(self)

    def to_string(self, throw_on_error=False, with_details=False):
        return "\n".join(b.to_string(throw_on_error, with_details) for b in self.blocks)

    def __str__(self):
        return self.to_string()

    def _sync_with_cpp(self):
        """Kept for Paddle compatibility; there is nothing to sync."""

    def _inference_optimize(self, prune_read_op=True):
        p = self.clone()
        _set_test_mode(p)
        return p


def _copy_var(v, block):
    """``v`` (of any program) as a Variable/Parameter of ``block``: same kind and attributes."""
    nv = object.__new__(type(v))
    d = dict(v.__dict__)
    d["block"] = block
    if isinstance(v, Parameter):
        d["optimize_attr"] = dict(v.optimize_attr)
    nv.__dict__.update(d)
    return nv


def _var_to_json(v):
    m = v._meta()
    if m.get("parameter"):
        m["regularizer"] = object_to_json(m["regularizer"])
        m["gradient_clip_attr"] = object_to_json(m["gradient_clip_attr"])
    return m


def _remap_blocks(attrs, blocks):
    """A copy of ``attrs`` whose Block values point at the same-index blocks of ``blocks``."""
    out = {}
    for k, v in attrs.items():
        if type(v) is list:
            v = [blocks[x.idx] if isinstance(x, Block) else (_copy_list(x) if type(x) is list else x) for x in v]
        elif isinstance(v, Block):
            v = blocks[v.idx]
        out[k] = v
    return out


def _copy_list(v):
    return [_copy_list(x) if type(x) is list else x for x in v]


def _set_test_mode(program):
    """Ops with an ``is_test`` attr (dropout, batch_norm, ... as the registry says) run in test mode."""
    for b in program.blocks:
        for op in b.ops:
            opdef = registry.lookup(op.type)
            if "is_test" in op.attrs or (opdef is not None and "is_test" in opdef.attrs):
                op.attrs["is_test"] = True
    program._version += 1


def _strip_training(program):
    """Drop backward, optimize and LR-schedule ops, and switch dropout/batch_norm to test mode."""
    drop = OpRole.Backward | OpRole.Optimize | OpRole.LRSched
    for b in program.blocks:
        b.ops = [op for op in b.ops if not (int(op.attrs.get(OP_ROLE_ATTR, 0)) & drop)]
        used = {n for op in b.ops for n in op.input_arg_names + op.output_arg_names}
        for name in list(b.vars):
            if GRAD_SUFFIX in name and name not in used:
                del b.vars[name]
    _set_test_mode(program)


# ---- default programs and guards
_main_program_ = Program()
_startup_program_ = Program()


def default_main_program():
    return _main_program_


def default_startup_program():
    return _startup_program_


def switch_main_program(program):
    global _main_program_
    prev = _main_program_
    _main_program_ = program
    return prev


def switch_startup_program(program):
    global _startup_program_
    prev = _startup_program_
    _startup_program_ = program
    return prev


@contextlib.contextmanager
def program_guard(main_program: Program, startup_program: Program | None = None) -> Iterator[None]:
    """Layers called inside build into ``main_program`` (and their initialisers into ``startup_program``)."""
    if not isinstance(main_program, Program):
        raise TypeError("program_guard: main_program must be a Program, got %r" % type(main_program).__name__)
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError("program_guard: startup_program must be a Program, got %r"
                        % type(startup_program).__name__)
    main_program = switch_main_program(main_program)
    if startup_program is not None:
        startup_program = switch_startup_program(startup_program)
    try:
        yield
    finally:
        switch_main_program(main_program)
        if startup_program is not None:
            switch_startup_program(startup_program)


@contextlib.contextmanager
def name_scope(prefix=None):
    prog = default_main_program()
    old = prog._name_scope
    prog._name_scope = (old.rstrip("/") + "/" + (prefix or "")) if prefix else old
    try:
        yield
    finally:
        prog._name_scope = old
