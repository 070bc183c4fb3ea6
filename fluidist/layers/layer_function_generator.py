"""``fluid.layers.layer_function_generator``: how Paddle made a layer function from an op type.

``generate_layer_fn(op_type)`` / ``generate_activation_fn(op_type)`` return a layer that appends one
op of that type from fluidist's op registry (its slots and attrs): keyword arguments name input
slots (in lower case, as Paddle's generated layers take them) or attrs; the first output slot is
returned. ``autodoc`` / ``templatedoc`` / ``deprecated`` are the decorators Paddle documented
layers with: they return the function unchanged (``deprecated`` warns once per call site)."""
import functools
import warnings

from ..framework import registry
from .layer_helper import LayerHelper

__all__ = ["deprecated", "generate_layer_fn", "generate_activation_fn", "autodoc", "templatedoc"]


def generate_layer_fn(op_type):
    """A layer function appending one ``op_type`` op: inputs and attrs by keyword (the output too, as
    its slot's name in lower case: ``out=var``), returns its output."""
    opdef = registry.get(op_type)
    input_slots, output_slots = list(opdef.inputs), list(opdef.outputs)

    def layer(*args, **kwargs):
        helper = LayerHelper(op_type, **{k: v for k, v in kwargs.items() if k == "name"})
        inputs = {}
        for slot, value in zip(input_slots, args):
            inputs[slot] = value
        for slot in input_slots:
            if slot.lower() in kwargs:
                inputs[slot] = kwargs.pop(slot.lower())
            elif slot in kwargs:
                inputs[slot] = kwargs.pop(slot)
        kwargs.pop("name", None)
        if not inputs:
            raise ValueError("%s: give its inputs %s as keyword arguments" % (op_type, input_slots))
        first = next(iter(inputs.values()))
        first = first[0] if isinstance(first, (list, tuple)) else first
        given = kwargs.pop(output_slots[0].lower(), None)       # Paddle's ``out=`` names the output
        given = given[0] if isinstance(given, (list, tuple)) and given else given
        out = given if given is not None else helper.create_variable_for_type_inference(dtype=first.dtype)
        inputs = {k: v if isinstance(v, (list, tuple)) else [v] for k, v in inputs.items()}
        outputs = {output_slots[0]: [out]}
        for slot in output_slots[1:]:
            outputs[slot] = [helper.create_variable_for_type_inference(dtype=first.dtype)]
        helper.append_op(type=op_type, inputs=inputs, outputs=outputs, attrs=kwargs)
        return out

    layer.__name__ = op_type
    layer.__doc__ = "The %s op as a layer (generated from the op registry)." % op_type
    return layer


def generate_activation_fn(op_type):
    """A layer ``fn(x, name=None)`` appending one ``op_type`` op on ``x``."""
    make = generate_layer_fn(op_type)

    def activation(x, name=None):
        return make(x, name=name) if name else make(x)

    activation.__name__ = op_type
    activation.__doc__ = "The %s activation (generated from the op registry)." % op_type
    return activation


def autodoc(comment=""):
    """Paddle filled a layer's docstring from its op proto; here the function is returned as it is."""
    return lambda func: func


def templatedoc(op_type=None):
    """Paddle filled a layer's docstring template from its op proto; here the function is unchanged."""
    return lambda func: func


def deprecated(func_or_class):
    """Warn (DeprecationWarning) when the function is called; otherwise unchanged."""
    @functools.wraps(func_or_class)
    def wrapper(*args, **kwargs):
        warnings.warn("%s is deprecated" % func_or_class.__name__, DeprecationWarning, stacklevel=2)
        return func_or_class(*args, **kwargs)
    return wrapper
