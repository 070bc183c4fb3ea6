"""Comparison and logical layers and ``increment`` (Paddle keeps them in ``layers.control_flow``,
which re-exports them)."""
from .layer_helper import LayerHelper, check_variable

__all__ = ["less_than", "less_equal", "greater_than", "greater_equal", "equal", "not_equal",
           "logical_and", "logical_or", "logical_xor", "logical_not", "increment"]


_check_var = check_variable


def _compare_layer(op_type):
    def layer(x, y, force_cpu=None, cond=None, name=None):
        _check_var(x, op_type, "x")
        _check_var(y, op_type, "y")
        helper = LayerHelper(op_type, name=name)
        if cond is None:
            cond = helper.create_variable_for_type_inference(dtype="bool", stop_gradient=True)
        cond.stop_gradient = True
        attrs = {"force_cpu": bool(force_cpu)} if force_cpu is not None else {}
        helper.append_op(op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [cond]}, attrs=attrs)
        return cond
    layer.__name__ = op_type
    layer.__doc__ = "``%s(x, y)``: elementwise comparison, a bool Variable." % op_type
    return layer


less_than = _compare_layer("less_than")
less_equal = _compare_layer("less_equal")
greater_than = _compare_layer("greater_than")
greater_equal = _compare_layer("greater_equal")
equal = _compare_layer("equal")
not_equal = _compare_layer("not_equal")


def _logical_layer(op_type, binary=True):
    def layer(x, y=None, out=None, name=None):
        _check_var(x, op_type, "x")
        inputs = {"X": [x]}
        if binary:
            _check_var(y, op_type, "y")
            inputs["Y"] = [y]
        helper = LayerHelper(op_type, name=name)
        if out is None:
            out = helper.create_variable_for_type_inference(dtype="bool", stop_gradient=True)
        helper.append_op(op_type, inputs=inputs, outputs={"Out": [out]})
        return out
    layer.__name__ = op_type
    return layer


logical_and = _logical_layer("logical_and")
logical_or = _logical_layer("logical_or")
logical_xor = _logical_layer("logical_xor")
_logical_not = _logical_layer("logical_not", binary=False)


def logical_not(x, out=None, name=None):
    return _logical_not(x, out=out, name=name)


def increment(x, value=1.0, in_place=True):
    """``x + value`` by an ``increment`` op (into ``x`` itself when ``in_place``)."""
    _check_var(x, "increment", "x")
    helper = LayerHelper("increment")
    out = x if in_place else helper.create_variable_for_type_inference(dtype=x.dtype)
    helper.append_op("increment", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"step": float(value)})
    return out
