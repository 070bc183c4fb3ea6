"""Variables and Parameters: named, typed slots of a Block (values live in a Scope), and the
gradient-name conventions."""
from __future__ import annotations

import numpy as np

from . import unique_name
from .dtypes import VarType, convert_dtype

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


def _copy_var(v, block):
    """``v`` (of any program) as a Variable/Parameter of ``block``: same kind and attributes."""
    nv = object.__new__(type(v))
    d = dict(v.__dict__)
    d["block"] = block
    if isinstance(v, Parameter):
        d["optimize_attr"] = dict(v.optimize_attr)
    nv.__dict__.update(d)
    return nv
