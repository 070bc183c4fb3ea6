"""Arithmetic on Variables: ``a + b``, ``x * 2.0``, ``-x``, ``a @ b`` build ops as Paddle's did; ``x[1:3, 0]``\nslices (``variable_index``)."""
from ..framework import unique_name
from ..framework.program import Variable
from .variable_index import getitem


def _new_var(ref, dtype=None):
    block = ref.block.program.current_block()
    return block.create_var(name=unique_name.generate_with_ignorable_key("tmp"), dtype=dtype or ref.dtype,
                            shape=ref.shape, stop_gradient=False)


def _scalar_op(x, scale, bias):
    out = _new_var(x)
    x.block.program.current_block().append_op("scale", inputs={"X": [x]}, outputs={"Out": [out]},
                                              attrs={"scale": float(scale), "bias": float(bias)})
    return out


def _const_like(x, value):
    out = _new_var(x)
    out.shape = (1,)
    out.stop_gradient = True
    x.block.program.current_block().append_op("fill_constant", outputs={"Out": [out]},
                                              attrs={"shape": [1], "value": float(value), "dtype": x.dtype})
    return out


def _binary(op_type, reverse=False, scalar=None):
    def method(self, other):
        if not isinstance(other, Variable):
            if scalar is not None:
                s, b = scalar(other)
                return _scalar_op(self, s, b)
            other = _const_like(self, other)
        x, y = (other, self) if reverse else (self, other)
        out = _new_var(x if x.shape is not None and (y.shape is None or len(x.shape) >= len(y.shape)) else y)
        self.block.program.current_block().append_op(op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                                                     attrs={"axis": -1})
        return out
    return method


def _compare(op_type):
    def method(self, other):
        if not isinstance(other, Variable):
            other = _const_like(self, other)
        out = _new_var(self, "bool")
        out.stop_gradient = True
        self.block.program.current_block().append_op(op_type, inputs={"X": [self], "Y": [other]},
                                                     outputs={"Out": [out]})
        return out
    return method


def monkey_patch_variable():
    Variable.__add__ = _binary("elementwise_add", scalar=lambda v: (1.0, v))
    Variable.__radd__ = _binary("elementwise_add", scalar=lambda v: (1.0, v))
    Variable.__sub__ = _binary("elementwise_sub", scalar=lambda v: (1.0, -v))
    Variable.__rsub__ = _binary("elementwise_sub", reverse=True, scalar=lambda v: (-1.0, v))
    Variable.__mul__ = _binary("elementwise_mul", scalar=lambda v: (v, 0.0))
    Variable.__rmul__ = _binary("elementwise_mul", scalar=lambda v: (v, 0.0))
    Variable.__truediv__ = _binary("elementwise_div", scalar=lambda v: (1.0 / v, 0.0))
    Variable.__rtruediv__ = _binary("elementwise_div", reverse=True)
    Variable.__pow__ = _binary("elementwise_pow")
    Variable.__rpow__ = _binary("elementwise_pow", reverse=True)
    Variable.__neg__ = lambda self: _scalar_op(self, -1.0, 0.0)
    Variable.__matmul__ = lambda self, other: _matmul(self, other)
    for name, op in (("__lt__", "less_than"), ("__le__", "less_equal"), ("__gt__", "greater_than"),
                     ("__ge__", "greater_equal")):
        setattr(Variable, name, _compare(op))
    Variable.__hash__ = object.__hash__
    Variable.astype = _astype
    Variable.__getitem__ = getitem
    # not iterable (``iter(x)`` is a TypeError): with ``__getitem__`` alone Python would iterate by
    # indexing 0, 1, 2, ... and never stop on an axis of unknown size
    Variable.__iter__ = None


def _astype(self, dtype):
    """``x.astype("int64")``: a ``cast`` op, as in Paddle."""
    from .tensor import cast
    return cast(self, dtype)


def _matmul(x, y):
    from .nn import matmul
    return matmul(x, y)
