"""Alias of the parameter-server strategies in :mod:`fluidist.fleet.strategy` (Paddle 1.x
``distribute_transpiler.distributed_strategy``)."""
from fluidist.fleet.strategy import (AsyncStrategy, GeoStrategy, HalfAsyncStrategy, StrategyFactory,  # noqa: F401
                                     SyncStrategy, TrainerRuntimeConfig)
from fluidist.fleet.strategy import PSDistributedStrategy as DistributedStrategy  # noqa: F401
from fluidist.transpiler.config import ServerRuntimeConfig  # noqa: F401
