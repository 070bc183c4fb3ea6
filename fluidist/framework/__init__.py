"""The IR and nothing else."""
from . import unique_name  # noqa: F401
from .dtypes import VarType, convert_dtype  # noqa: F401
from .op_role import OpRole  # noqa: F401
from .program import (Block, Operator, Parameter, Program, Variable, default_main_program,  # noqa: F401
                      default_startup_program, grad_var_name, name_scope, program_guard)
