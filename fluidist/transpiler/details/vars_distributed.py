"""``transpiler.details.vars_distributed``: Paddle's record of how variables were split over pservers.
fluidist's transpiler keeps that in its plan; these classes are refused."""
from ...compat import refused_class

_INSTEAD = ("read the split from the programs: the variables of t.get_pserver_program(ep) are the blocks "
            "pserver ep holds, and the trainer program's split_byref / send ops name each block's pserver")
VarStruct = refused_class("fluid.transpiler.details.vars_distributed.VarStruct", _INSTEAD)
VarDistributed = refused_class("fluid.transpiler.details.vars_distributed.VarDistributed", _INSTEAD)
VarsDistributed = refused_class("fluid.transpiler.details.vars_distributed.VarsDistributed", _INSTEAD)
