"""The helpers of Paddle 1.8's ``fluid.io`` beyond its ``__all__`` that scripts call: reading a
parameter's value, and adding feed / fetch ops to a program (which fluidist's executor does not
need: it feeds and fetches by name, so those two are refused)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..compat import refused
from ..device.places import to_host
from ..core.scope import global_scope
from ..framework.program import default_main_program
from .common import is_parameter


def get_parameter_value(para: Any, executor: Any) -> np.ndarray:
    """The value of the Parameter ``para`` in the global scope, as a NumPy array (a copy).

    Raises:
        TypeError: ``para`` is not a Parameter.
        ValueError: it holds no value yet (run the startup program first).

    Examples:
        >>> from fluidist.io import get_parameter_value_by_name
        >>> x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        >>> y = fluid.layers.fc(x, size=1, param_attr=fluid.initializer.Constant(0.5))
        >>> exe = fluid.Executor(fluid.CPUPlace())
        >>> _ = exe.run(fluid.default_startup_program())
        >>> get_parameter_value_by_name("fc_0.w_0", exe).ravel().tolist()
        [0.5, 0.5]
    """
    if not is_parameter(para):
        raise TypeError("get_parameter_value: %r is not a Parameter" % (getattr(para, "name", para),))
    var = global_scope().find_var(para.name)
    if var is None or not var.is_initialized():
        raise ValueError("parameter %r holds no value: run the startup program first" % para.name)
    return np.array(to_host(var.value()), copy=True)


def get_parameter_value_by_name(name: str, executor: Any, program: Any = None) -> np.ndarray:
    """The value of the parameter ``name`` of ``program`` (the default main program)."""
    program = program if program is not None else default_main_program()
    return get_parameter_value(program.global_block().var(name), executor)


_FEED_FETCH = ("fluidist's Executor feeds and fetches by name: pass feed={name: value} and fetch_list=[...] "
               "to exe.run; save_inference_model records the feed and fetch names")
prepend_feed_ops = refused("fluid.io.prepend_feed_ops", _FEED_FETCH)
append_fetch_ops = refused("fluid.io.append_fetch_ops", _FEED_FETCH)


def _create_loaded_parameter(var_list: Any, scope: Any, executor: Any = None) -> None:
    """``core._create_loaded_parameter``: give each variable of ``var_list`` a tensor of its shape
    and dtype in ``scope`` (zeros, on the executor's place), for a loader to ``set`` its value into."""
    from ..device.places import CPUPlace
    from ..framework.dtypes import convert_dtype
    place = getattr(executor, "place", None) or CPUPlace()
    for v in var_list:
        shape = list(v.shape or ())
        if any(d < 0 for d in shape):
            raise ValueError("_create_loaded_parameter: %r has unknown dimensions %s" % (v.name, shape))
        scope.var(v.name).get_tensor().set(np.zeros(shape, dtype=convert_dtype(v.dtype)), place)
