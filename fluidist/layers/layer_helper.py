"""LayerHelper: what every layer uses to create parameters, temporaries and ops."""
from __future__ import annotations

import copy
from typing import Any, Sequence

from ..framework import unique_name
from ..framework.dtypes import convert_dtype
from ..framework.program import Program, Variable, default_main_program, default_startup_program
from .hints import DType
from ..initializer import ConstantInitializer, XavierInitializer
from ..param_attr import ParamAttr, WeightNormParamAttr
from .input_dtypes import INPUT_DTYPES


def check_variable(x: Any, layer: str, arg: str, dtypes: Sequence[str] | None = None) -> Variable:
    """TypeError naming the layer and argument unless ``x`` is a Variable of one of ``dtypes``
    (default: the dtypes Paddle 1.8's ``layer`` takes for ``arg``, ``input_dtypes.INPUT_DTYPES``;
    any dtype where it has none)."""
    if not isinstance(x, Variable):
        raise TypeError("%s: argument '%s' takes a Variable, got %s" % (layer, arg, type(x).__name__))
    allowed = dtypes or INPUT_DTYPES.get((layer, arg))
    if allowed and x.dtype is not None and convert_dtype(x.dtype) not in allowed:
        raise TypeError("%s: argument '%s' takes dtype %s, got %s (variable %r)"
                        % (layer, arg, " or ".join(allowed), convert_dtype(x.dtype), x.name))
    return x

def refuse_tuple(value, layer, arg):
    """TypeError for a tuple where Paddle 1.8's layer takes a list of Variables only (its op, or its
    check, refuses a tuple)."""
    if isinstance(value, tuple):
        raise TypeError("%s: argument '%s' takes a list of Variables (or one Variable), got a tuple" % (layer, arg))


class LayerHelper:
    """What a layer uses to build itself: its parameters, its temporary variables and its ops.

    A layer of your own makes one ``LayerHelper`` with its type and its keyword arguments
    (``input``, ``param_attr``, ``bias_attr``, ``act``, ``name``, ...) and builds into the default
    main program (and, for the parameters' initialisers, the default startup program), as
    Paddle 1.8's layers do.

    Args:
        layer_type: the layer's type, the prefix of generated names.
        **kwargs: the layer's arguments; ``input``, ``param_attr``, ``bias_attr``, ``act`` and
            ``name`` are read by the methods below.

    Examples:
        >>> def my_dense(input, size, act=None, param_attr=None, bias_attr=None, name=None):
        ...     helper = fluid.layers.LayerHelper("my_dense", input=input, act=act, param_attr=param_attr,
        ...                                       bias_attr=bias_attr, name=name)
        ...     w = helper.create_parameter(helper.param_attr, shape=[input.shape[1], size], dtype=input.dtype)
        ...     out = helper.create_variable_for_type_inference(input.dtype)
        ...     helper.append_op("mul", inputs={"X": [input], "Y": [w]}, outputs={"Out": [out]})
        ...     return helper.append_activation(helper.append_bias_op(out))
        >>> x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        >>> my_dense(x, size=3, act="relu").shape
        (-1, 3)
    """

    def __init__(self, layer_type: str, **kwargs: Any):
        self.kwargs = kwargs
        self.layer_type = layer_type
        name = kwargs.get("name")
        self.name = name if name is not None else unique_name.generate(layer_type)

    @property
    def main_program(self) -> Program:
        """The default main program (where the ops go)."""
        return default_main_program()

    @property
    def startup_program(self) -> Program:
        """The default startup program (where the initialisers go)."""
        return default_startup_program()

    @property
    def param_attr(self) -> Any:
        """The ``param_attr`` argument as a ``ParamAttr`` (a list of them for a list)."""
        return ParamAttr._to_attr(self.kwargs.get("param_attr"))

    @property
    def bias_attr(self) -> Any:
        """The ``bias_attr`` argument as a ``ParamAttr``, or False for no bias."""
        return ParamAttr._to_attr(self.kwargs.get("bias_attr"))

    def input(self, name: str = "input") -> Variable:
        """The one Variable of argument ``name`` (TypeError / ValueError otherwise)."""
        v = self.kwargs.get(name)
        if isinstance(v, (list, tuple)):
            if len(v) != 1:
                raise ValueError("%s: %r takes one Variable, got %d" % (self.layer_type, name, len(v)))
            v = v[0]
        if not isinstance(v, Variable):
            raise TypeError("%s: %r must be a Variable, got %r" % (self.layer_type, name, type(v).__name__))
        return v

    def multiple_input(self, name: str = "input") -> list[Variable]:
        """The Variables of argument ``name`` (one or a list), as a list."""
        v = self.kwargs.get(name)
        if isinstance(v, Variable):
            return [v]
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, Variable) for x in v):
            raise TypeError("%s: %r must be a Variable or a list of Variables" % (self.layer_type, name))
        return list(v)

    def input_dtype(self, name: str = "input") -> str:
        """The dtype of argument ``name``'s Variables (ValueError when they differ)."""
        dtypes = {v.dtype for v in self.multiple_input(name)}
        if len(dtypes) != 1:
            raise ValueError("%s: inputs of %r have different dtypes %s" % (self.layer_type, name, sorted(dtypes)))
        return dtypes.pop()

    def create_parameter(self, attr: Any, shape: Sequence[int], dtype: DType = "float32", is_bias: bool = False,
                         default_initializer: Any = None, stop_gradient: bool = False,
                         type: Any = None) -> Any:
        """A Parameter in the main program's global block, initialised in the startup program.

        The name comes from ``attr`` or is generated (``<layer name>.w_<n>`` / ``.b_<n>``); the
        initialiser is ``attr``'s, else ``default_initializer``, else Xavier (zeros for a bias).
        A parameter of that name that exists already is returned as it is (shared weights).
        Returns None when ``attr`` is False.
        """
        if attr is False:
            return None
        # a copy, as Paddle's: naming it must not name the caller's ParamAttr, which may stand for
        # several parameters (one per input of an fc, or the same attr passed to several layers)
        attr = copy.deepcopy(ParamAttr._to_attr(attr))
        if attr.initializer is None and default_initializer is None and \
                convert_dtype(dtype) not in ("float16", "float32", "float64"):
            # Paddle 1.8's rule (a conv2d or fc over int inputs ends here): the default initialisers
            # draw floats
            raise TypeError("Can not create parameter %r of dtype %s with the default initializer (it draws "
                            "floats): give the parameter's initializer" % (attr.name or self.name,
                                                                             convert_dtype(dtype)))
        if attr.name is None:
            attr.name = unique_name.generate(".".join([self.name, "b" if is_bias else "w"]))
        init = attr.initializer or default_initializer or (
            ConstantInitializer(0.0) if is_bias else XavierInitializer())
        dtype = convert_dtype(dtype)
        shape = [int(d) for d in shape]
        if isinstance(attr, WeightNormParamAttr):       # w = g * v / ||v|| (layers/weight_norm.py)
            from .weight_norm import create_weight_normalized
            w = create_weight_normalized(self, attr, shape, dtype, init)
            WeightNormParamAttr.params_with_weight_norm.append(w)
            return w
        kw = attr._to_kwargs()
        startup_block = self.startup_program.global_block()
        if not startup_block.has_var(attr.name):
            sp = startup_block.create_parameter(shape=shape, dtype=dtype, **kw)
            init(sp, startup_block)
        main_block = self.main_program.global_block()
        if main_block.has_var(attr.name):
            return main_block.var(attr.name)
        p = main_block.create_parameter(shape=shape, dtype=dtype, **kw)
        p.stop_gradient = stop_gradient or not p.trainable
        if type is not None:
            p.type = type
        return p

    def create_variable_for_type_inference(self, dtype: DType | None = None, stop_gradient: bool = False,
                                           shape: Sequence[int] | None = None, type: Any = None) -> Variable:
        """A new temporary Variable in the current block, for an op's output (its shape is then
        inferred from the op)."""
        kw = {}
        if type is not None:
            kw["type"] = type
        return self.main_program.current_block().create_var(
            name=unique_name.generate_with_ignorable_key(".".join([self.name, "tmp"])),
            dtype=convert_dtype(dtype) if dtype is not None else None, shape=shape, persistable=False,
            stop_gradient=stop_gradient, **kw)

    create_tmp_variable = create_variable_for_type_inference

    def create_variable(self, **kwargs: Any) -> Variable:
        """``create_var`` on the current block."""
        return self.main_program.current_block().create_var(**kwargs)

    def create_global_variable(self, persistable: bool = False, **kwargs: Any) -> Variable:
        """``create_var`` on the main program's global block."""
        return self.main_program.global_block().create_var(persistable=persistable, **kwargs)

    def set_variable_initializer(self, var: Variable, initializer: Any) -> Variable:
        """Also create ``var`` in the startup program and initialise it there."""
        sb = self.startup_program.global_block()
        sv = sb.create_var(name=var.name, shape=var.shape, dtype=var.dtype, type=var.type,
                           persistable=True)
        initializer(sv, sb)
        return sv

    def append_op(self, *args: Any, **kwargs: Any) -> Any:
        """``append_op`` on the current block: ``(type, inputs=..., outputs=..., attrs=...)``."""
        return self.main_program.current_block().append_op(*args, **kwargs)

    def append_bias_op(self, input_var: Variable, dim_start: int = 1, dim_end: int | None = None) -> Variable:
        """``input_var`` plus a bias parameter of its shape ``[dim_start:dim_end]`` (per
        ``bias_attr``; ``input_var`` itself when it is False)."""
        size = list(input_var.shape[dim_start:dim_end])
        bias_attr = self.bias_attr
        if not bias_attr:
            return input_var
        b = self.create_parameter(attr=bias_attr, shape=size, dtype=input_var.dtype, is_bias=True)
        tmp = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op("elementwise_add", inputs={"X": [input_var], "Y": [b]}, outputs={"Out": [tmp]},
                       attrs={"axis": dim_start})
        return tmp

    def append_activation(self, input_var: Variable, act: str | dict | None = None) -> Variable:
        """The ``act`` argument's activation op on ``input_var`` (a name, or a dict with ``type``
        and the op's attributes); ``input_var`` itself when there is none."""
        act = act if act is not None else self.kwargs.get("act")
        if act is None:
            return input_var
        attrs = {}
        if isinstance(act, dict):
            attrs = {k: v for k, v in act.items() if k != "type"}
            act = act["type"]
        tmp = self.create_variable_for_type_inference(dtype=input_var.dtype)
        self.append_op(act, inputs={"X": [input_var]}, outputs={"Out": [tmp]}, attrs=attrs)
        return tmp


# Paddle splits its helper in two classes (``fluid.layer_helper_base.LayerHelperBase`` holds the part
# that makes parameters and variables); fluidist's one class is both.
LayerHelperBase = LayerHelper
