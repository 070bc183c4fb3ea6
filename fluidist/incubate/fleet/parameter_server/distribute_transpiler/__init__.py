"""Paddle 1.x's ``incubate.fleet.parameter_server.distribute_transpiler``: the parameter-server fleet of
``fluidist.fleet.parameter_server``."""
from fluidist.fleet.parameter_server import (AsyncStrategy, DistributedStrategy, DistributedTranspiler,  # noqa: F401
                                             GeoStrategy, HalfAsyncStrategy, StrategyFactory, SyncStrategy,
                                             TrainerRuntimeConfig, TranspilerOptimizer, fleet)

# the names a script imports from here (a type checker exports these, and only these)
__all__ = ["fleet", "DistributedTranspiler", "TranspilerOptimizer", "StrategyFactory", "DistributedStrategy",
           "SyncStrategy", "AsyncStrategy", "HalfAsyncStrategy", "GeoStrategy", "TrainerRuntimeConfig"]
