"""``transpiler.details.vars_distributed``: Paddle's record of how variables were split over pservers.
fluidist's transpiler keeps that in its plan, so the records of the split are refused; ``VarStruct``,
a plain record of a variable's properties, is given."""
from typing import Any

from ...compat import refused_class


class VarStruct:
    """A variable's properties held in Python (a stand-in for a Variable where there is none)."""

    def __init__(self, name: str, shape: Any, dtype: Any, type: Any, lod_level: int, persistable: bool) -> None:
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.type = type
        self.lod_level = lod_level
        self.persistable = persistable


_INSTEAD = ("read the split from the programs: the variables of t.get_pserver_program(ep) are the blocks "
            "pserver ep holds, and the trainer program's split_byref / send ops name each block's pserver")
VarDistributed = refused_class("fluid.transpiler.details.vars_distributed.VarDistributed", _INSTEAD)
VarsDistributed = refused_class("fluid.transpiler.details.vars_distributed.VarsDistributed", _INSTEAD)
