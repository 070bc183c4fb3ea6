"""Arithmetic on Variables: ``a + b``, ``x * 2.0``, ``-x``, ``a @ b``, ``a == b``, ``a % 2`` build ops as
Paddle's did; ``x[1:3, 0]`` slices (``variable_index``)."""
from ..framework import unique_name
from ..framework.program import Variable
from .variable_index import getitem

_INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")
_COMPARE_OPS = ("equal", "not_equal", "less_than", "less_equal", "greater_than", "greater_equal")


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
    """``x <op> other`` as Paddle 1.8 builds it: a Python number with ``+ - * /`` is a ``scale`` op
    (not for an integer ``x / n``, which stays an ``elementwise_div``); any other non-Variable operand
    becomes a ``[1]`` constant of ``x``'s dtype; a Variable of another dtype is cast to ``x``'s; a
    comparison gives a bool Variable that stops gradients."""
    compare = op_type in _COMPARE_OPS

    def method(self, other):
        if scalar is not None and isinstance(other, (int, float)) and \
                not (op_type == "elementwise_div" and self.dtype in _INT_DTYPES):
            s, b = scalar(float(other))
            return _scalar_op(self, s, b)
        if not isinstance(other, Variable):
            other = _const_like(self, other)
        elif self.dtype is not None and other.dtype is not None and other.dtype != self.dtype:
            other = _astype(other, self.dtype)
        x, y = (other, self) if reverse else (self, other)
        out = _new_var(x if x.shape is not None and (y.shape is None or len(x.shape) >= len(y.shape)) else y,
                       "bool" if compare else self.dtype)
        out.stop_gradient = compare
        axis = 0 if other.shape and other.shape[0] == -1 else -1
        self.block.program.current_block().append_op(op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                                                     attrs={"axis": axis})
        return out
    method.__name__ = op_type
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
    Variable.__floordiv__ = _binary("elementwise_floordiv")
    Variable.__mod__ = _binary("elementwise_mod")
    Variable.__neg__ = lambda self: _scalar_op(self, -1.0, 0.0)
    Variable.__matmul__ = lambda self, other: _matmul(self, other)
    # as in Paddle, ``a == b`` on Variables builds an ``equal`` op and returns a Variable: fluidist's own
    # code never compares Variables with ``==``, ``in`` or ``list.index`` (it compares names or identity)
    for name, op in (("__eq__", "equal"), ("__ne__", "not_equal"), ("__lt__", "less_than"),
                     ("__le__", "less_equal"), ("__gt__", "greater_than"), ("__ge__", "greater_equal")):
        setattr(Variable, name, _binary(op))
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
