"""Alias of :mod:`fluidist.fleet.parameter_server` (Paddle 1.x
``incubate.fleet.parameter_server.distribute_transpiler``)."""
from fluidist.fleet.parameter_server import (AsyncStrategy, DistributedStrategy, DistributedTranspiler,  # noqa: F401
                                             GeoStrategy, HalfAsyncStrategy, StrategyFactory, SyncStrategy,
                                             TrainerRuntimeConfig, TranspilerOptimizer, fleet)
