"""Small helpers shared by the tensor and math layers: argument checks and the one-op layer."""
from .layer_helper import LayerHelper, check_variable

check_var = check_variable


def int_list(value, layer, arg, length=None):
    """``value`` (an int or a list/tuple of ints) as a list of ints, of ``length`` when given."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value] * (length or 1)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise TypeError("%s: %s must be an int or a list of ints, got %r" % (layer, arg, value))
    if length is not None and len(value) != length:
        raise ValueError("%s: %s must have %d entries, got %s" % (layer, arg, length, list(value)))
    return [int(v) for v in value]


def one_op(op_type, inputs, attrs=None, out_slot="Out", dtype=None, name=None, layer=None, stop_gradient=False,
           lod_level=None):
    """Append one ``op_type`` op writing a new Variable to ``out_slot``; returns it. ``dtype`` defaults
    to the first input's; ``lod_level``, when given, is set on the output."""
    helper = LayerHelper(layer or op_type, name=name)
    if dtype is None:
        first = next(iter(inputs.values()))
        dtype = (first[0] if isinstance(first, (list, tuple)) else first).dtype
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=stop_gradient)
    helper.append_op(op_type, inputs={k: v if isinstance(v, (list, tuple)) else [v] for k, v in inputs.items()},
                     outputs={out_slot: [out]}, attrs=attrs or {})
    if lod_level is not None:
        out.lod_level = lod_level
    if stop_gradient:
        out.stop_gradient = True
    return out


def xshape_op(op_type, x, attrs, name=None, tensors=None):
    """A reshaping op with Paddle's ``XShape`` side output (what its gradient reads); ``tensors``: its
    other inputs (the axes as tensors)."""
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(x.dtype)
    x_shape = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(op_type, inputs=dict(tensors or {}, X=[x]), outputs={"Out": [out], "XShape": [x_shape]},
                     attrs=attrs)
    return out


def _unary(op_type, x, name=None, attrs=None, out_dtype=None):
    """One ``op_type`` op from ``X`` to a new ``Out`` (of ``x``'s dtype unless ``out_dtype``): the
    one-input layers' body (``fluid.layers.nn`` re-exports it for the modules that import it there)."""
    check_variable(x, op_type, "x")
    helper = LayerHelper(op_type, name=name)
    out = helper.create_variable_for_type_inference(out_dtype or x.dtype)
    helper.append_op(op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs or {})
    return out


def multi_out_op(layer, op_type, inputs, outputs, attrs, name=None, stop_gradient=False):
    """Append ``op_type`` with new output Variables ``outputs`` = {slot: dtype}; the outputs in order.
    Attrs given as None keep the op's defaults (as Paddle drops None attrs)."""
    helper = LayerHelper(layer, name=name)
    outs = {slot: helper.create_variable_for_type_inference(dtype) for slot, dtype in outputs.items()}
    helper.append_op(op_type, inputs={k: [v] for k, v in inputs.items() if v is not None},
                     outputs={k: [v] for k, v in outs.items()},
                     attrs={k: v for k, v in attrs.items() if v is not None})
    for v in outs.values():
        v.stop_gradient = v.stop_gradient or stop_gradient
    return tuple(outs.values())
