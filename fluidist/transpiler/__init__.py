"""The transpiler: rewrites a single-process program for pserver, nccl2 or collective training."""
from .config import DistributeTranspilerConfig, DistributedMode, ServerRuntimeConfig  # noqa: F401
from .dispatcher import HashName, PSDispatcher, RoundRobin  # noqa: F401
from .distribute_transpiler import DistributeTranspiler  # noqa: F401
from .slicing import slice_variable  # noqa: F401
from .memory_optimization import memory_optimize, release_memory  # noqa: F401

# the names a script imports from here (a type checker exports these, and only these)
__all__ = ["DistributeTranspiler", "memory_optimize", "release_memory", "HashName", "RoundRobin",
           "DistributeTranspilerConfig", "DistributedMode", "ServerRuntimeConfig", "PSDispatcher", "slice_variable"]
