"""Variables and Parameters: named, typed slots of a Block (values live in a Scope), and the
gradient-name conventions."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple

import numpy as np

from . import unique_name
from .dtypes import VarType, convert_dtype, plain
from .desc_views import DescView

GRAD_SUFFIX = "@GRAD"
RENAME_INFIX = "@RENAME@"
RECOMPUTE_INFIX = "@RECOMPUTE@"     # <var>@RECOMPUTE@<k>: an activation recomputed for backward (recompute.py)
EMPTY_VAR_NAME = "@EMPTY@"
TEMP_VAR_NAME = "@TEMP@"
LR_DECAY_COUNTER = "@LR_DECAY_COUNTER@"


#: the fields of a Variable that are part of its program (setting one bumps the program's version)
_PROGRAM_FIELDS = frozenset(("shape", "dtype", "persistable", "type", "lod_level"))


def grad_var_name(name):
    return name + GRAD_SUFFIX


def _strip_grad(name):
    base = name.split(RENAME_INFIX)[0]
    return base[:-len(GRAD_SUFFIX)] if base.endswith(GRAD_SUFFIX) else base


def _shape_tuple(shape):
    if shape is None:
        return None
    if type(shape) is tuple or type(shape) is list:
        try:
            return tuple(map(int, shape))      # no None among the sizes (the loop below says -1 for it)
        except TypeError:
            pass
    elif isinstance(shape, (int, np.integer)):
        shape = [shape]
    out = []
    for d in shape:
        if d is None:
            out.append(-1)
        else:
            out.append(int(d))
    return tuple(out)


class Variable:
    """A named, typed slot of a Block: what layers take and return. Values live in a Scope, not here.

    Scripts do not make Variables directly: ``fluid.data`` declares an input, layers return their
    outputs, ``Block.create_var`` adds one by hand. A Variable holds what the program knows before it
    runs (name, shape with -1 for sizes known at run time, dtype, LoD level); its value is read with
    ``Executor.run(fetch_list=[var])`` or ``scope.find_var(var.name)``. Arithmetic and comparison
    operators (``a + b``, ``a * 2``, ``a < b``) build the matching elementwise ops.

    Attributes:
        name: the unique name in its program (the key of its value in a Scope).
        shape: a tuple of ints, -1 where the size is known only at run time (None for the few
            variables whose shape is never inferred, such as readers).
        dtype: the NumPy dtype name (``"float32"``, ``"int64"``, ...).
        type: the kind of value (``VarType.LOD_TENSOR``, ``SELECTED_ROWS``, ``LOD_TENSOR_ARRAY``, ...).
        lod_level: how many levels of sequence offsets (LoD) its value carries.
        persistable: kept in the scope across runs (parameters, optimizer state, counters).
        stop_gradient: no gradient flows back through it.
        block: the Block that declares it.

    Examples:
        >>> x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        >>> x.name, x.shape, x.dtype
        ('x', (-1, 3), 'float32')
        >>> y = x * 2.0 + 1.0
    """

    desc = DescView("VarDesc")

    name: str
    shape: Tuple[int, ...]  # None only for the few variables whose shape is never inferred (readers)
    dtype: str  # None only for the few variables whose dtype is never inferred (readers)
    type: str
    lod_level: int
    persistable: bool
    stop_gradient: bool
    is_data: bool
    need_check_feed: bool
    error_clip: Any
    block: Any

    if TYPE_CHECKING:  # added at import time by layers/math_op_patch.py; declared here for type checkers
        def __add__(self, other: Any) -> Variable: ...
        def __radd__(self, other: Any) -> Variable: ...
        def __sub__(self, other: Any) -> Variable: ...
        def __rsub__(self, other: Any) -> Variable: ...
        def __mul__(self, other: Any) -> Variable: ...
        def __rmul__(self, other: Any) -> Variable: ...
        def __truediv__(self, other: Any) -> Variable: ...
        def __rtruediv__(self, other: Any) -> Variable: ...
        def __pow__(self, other: Any) -> Variable: ...
        def __rpow__(self, other: Any) -> Variable: ...
        def __neg__(self) -> Variable: ...
        def __matmul__(self, other: Any) -> Variable: ...
        def __lt__(self, other: Any) -> Variable: ...
        def __le__(self, other: Any) -> Variable: ...
        def __gt__(self, other: Any) -> Variable: ...
        def __ge__(self, other: Any) -> Variable: ...
        def __eq__(self, other: Any) -> Variable: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Variable: ...  # type: ignore[override]
        def __floordiv__(self, other: Any) -> Variable: ...
        def __mod__(self, other: Any) -> Variable: ...
        def astype(self, dtype: Any) -> Variable: ...
        def __getitem__(self, item: Any) -> Variable: ...

    def __init__(self, block: Any, name: Optional[str] = None, shape: Optional[Sequence[Optional[int]]] = None,
                 dtype: Any = None, type: str = VarType.LOD_TENSOR, lod_level: int = 0, persistable: bool = False,
                 stop_gradient: bool = False, is_data: bool = False, need_check_feed: bool = False,
                 error_clip: Any = None, **kwargs: Any) -> None:
        # straight into __dict__: a new variable changes no program yet (create_var bumps the version)
        fields = self.__dict__
        fields["block"] = block
        fields["name"] = name if name is not None else unique_name.generate_with_ignorable_key("_generated_var")
        fields["shape"] = _shape_tuple(shape)
        fields["dtype"] = convert_dtype(dtype) if dtype is not None else None
        fields["type"] = plain(type)
        fields["lod_level"] = int(lod_level or 0)
        fields["persistable"] = bool(persistable)
        fields["stop_gradient"] = bool(stop_gradient)
        fields["is_data"] = bool(is_data)
        fields["need_check_feed"] = bool(need_check_feed)
        fields["error_clip"] = error_clip

    # Paddle-style accessors
    @property
    def grad_name(self) -> str:
        """The name this variable's gradient has (``name@GRAD``), whether or not it exists."""
        return grad_var_name(self.name)

    @property
    def op(self) -> Any:
        """The last op of the variable's block that writes it, or None."""
        block = self.__dict__.get("block")
        return block.last_writer(self.name) if block is not None and hasattr(block, "last_writer") else None

    def _set_info(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key`` with this variable (Paddle's free-form variable info)."""
        self.__dict__.setdefault("_info", {})[key] = value

    def _get_info(self, key: str) -> Any:
        """What ``_set_info`` kept under ``key``, or None."""
        return self.__dict__.get("_info", {}).get(key)

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
            self.block.program._bump_version()

    def __setattr__(self, key, value):
        object.__setattr__(self, key, plain(value) if key == "type" else value)
        if key in _PROGRAM_FIELDS:      # (what _bump does, without its call: shape inference sets these)
            block = self.__dict__.get("block")
            if block is not None and block.program is not None:
                block.program._bump_version()

    def _set_inferred(self, shape, dtype, lod_level, type):
        """Set the fields shape inference found (None: one left as it is), as setting each of them
        does (``type`` as its plain string), with one bump of the program's version."""
        fields = self.__dict__
        if shape is None and dtype is None and lod_level is None and type is None:
            return
        if shape is not None:
            fields["shape"] = shape
        if dtype is not None:
            fields["dtype"] = dtype
        if lod_level is not None:
            fields["lod_level"] = lod_level
        if type is not None:
            fields["type"] = plain(type)
        block = fields.get("block")
        if block is not None and block.program is not None:
            block.program._bump_version()

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
        if with_details:
            extra += ".persistable(%s).need_check_feed(%s).error_clip(%s)" % (
                self.persistable, self.need_check_feed, self.error_clip)
        return "%svar %s : %s.shape%s.dtype(%s).stop_gradient(%s)%s" % (
            prefix, self.name, self.type, shape, self.dtype, self.stop_gradient, extra)

    def __str__(self):
        return self.to_string()

    __repr__ = __str__


class Parameter(Variable):
    """A persistable, trainable Variable of the global block, with its optimisation attributes."""

    def __init__(self, block, shape, dtype, trainable=True, optimize_attr=None, regularizer=None,
                 gradient_clip_attr=None, do_model_average=None, is_distributed=False, **kwargs):
        if shape is None or len(shape) == 0:
            raise ValueError("the shape of parameter %r must be given, with at least one dimension, got %r"
                             % (kwargs.get("name"), shape))
        if dtype is None:
            raise ValueError("the dtype of parameter %r must be given" % kwargs.get("name"))
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
        s = super().to_string(throw_on_error, with_details)
        if with_details:
            s += ".optimize_attr(%s).regularizer(%s).do_model_average(%s)" % (
                self.optimize_attr, self.regularizer, self.do_model_average)
        return ("trainable param " if self.trainable else "param ") + s


def _copy_var(v, block, name=None):
    """``v`` (of any program) as a Variable/Parameter of ``block``: same kind and attributes (under
    ``name`` when one is given)."""
    d = v.__dict__.copy()
    d["block"] = block
    if name is not None:
        d["name"] = name
    kind = type(v)
    if kind is not Variable and isinstance(v, Parameter):
        d["optimize_attr"] = dict(v.optimize_attr)
    nv = _new_object(kind)
    _set_object_field(nv, "__dict__", d)
    return nv


_new_object, _set_object_field = object.__new__, object.__setattr__   # (_copy_var runs for every variable copied)
