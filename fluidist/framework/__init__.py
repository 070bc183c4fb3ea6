"""The IR and nothing else."""
import sys as _sys

from . import unique_name  # noqa: F401
from .dtypes import VarType, convert_dtype  # noqa: F401
from .op_role import OpRole  # noqa: F401
from .program import (Block, Operator, Parameter, Program, Variable, default_main_program,  # noqa: F401
                      default_startup_program, grad_var_name, name_scope, program_guard)
from .program import switch_main_program, switch_startup_program  # noqa: F401
from .name_scope import NameScope, full_name_scope as _full_name_scope  # noqa: F401 (Paddle's names)
from .api import (_get_var, ComplexVariable, IrGraph, IrNode, IrOpNode, IrVarNode, OpProtoHolder,  # noqa: F401
                  ParamBase, ParameterMetaClass, VariableMetaClass, convert_np_dtype_to_dtype_, device_guard,
                  dtype_is_floating, generate_control_dev_var_name, get_all_op_protos, get_flags, in_dygraph_mode,
                  load_op_library, require_version, set_flags, switch_device)
from .dygraph_switch import (_current_expected_place, _dygraph_current_expected_place_, _dygraph_guard,  # noqa: F401
                             _dygraph_not_support_, _dygraph_only_, _dygraph_place_guard, _dygraph_tracer,
                             _dygraph_tracer_, dygraph_not_support, dygraph_only)
from .variable import EMPTY_VAR_NAME, TEMP_VAR_NAME  # noqa: F401,E402
from .variable import GRAD_SUFFIX as GRAD_VAR_SUFFIX  # noqa: F401,E402

# the names a script imports from here (a type checker exports these, and only these); Paddle 1.8's __all__ first
__all__ = ["Program", "default_startup_program", "default_main_program", "program_guard", "name_scope", "cuda_places",
           "cpu_places", "cuda_pinned_places", "in_dygraph_mode", "is_compiled_with_cuda", "Variable",
           "ComplexVariable", "load_op_library", "require_version", "device_guard", "set_flags", "get_flags", "Block",
           "Operator", "Parameter", "VarType", "OpRole", "NameScope", "unique_name", "grad_var_name",
           "switch_main_program", "switch_startup_program", "convert_np_dtype_to_dtype_", "dtype_is_floating",
           "IrGraph", "IrNode", "IrOpNode", "IrVarNode", "OpProtoHolder", "ParamBase",
           "generate_control_dev_var_name", "get_all_op_protos", "switch_device", "dygraph_not_support",
           "dygraph_only"]

# Paddle's framework module constants (the suffix of zero-filled gradients, the prefix of control
# dependency variables)
ZERO_VAR_SUFFIX = "@ZERO"
CONTROL_DEP_VAR_PREFIX = "__control_var"


def __getattr__(name):
    """The names of Paddle's ``fluid.framework`` that fluidist defines in ``core`` (``cpu_places``,
    ``cuda_places``, ...: the IR imports nothing of the runtime), found through ``fluidist.paddle_paths``."""
    from ..paddle_paths import paddle_name
    return paddle_name(__name__, name)


def __dir__():
    from ..paddle_paths import paddle_names
    return sorted(set(vars(_sys.modules[__name__])) | set(paddle_names(__name__)))
