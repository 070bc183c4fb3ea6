"""Fleet: Paddle 1.x's high-level API for distributed jobs.

* ``fluidist.fleet.collective``: ``fleet`` (every process a worker, all-reduce), ``DistributedStrategy``.
* ``fluidist.fleet.parameter_server``: ``fleet`` (workers and parameter servers, through the
  DistributeTranspiler), ``StrategyFactory`` and the Sync/Async/HalfAsync strategies.

The two ``fleet`` objects are different singletons, as in Paddle. The 1.x import paths
(``fluidist.incubate.fleet.collective``, ``fluidist.incubate.fleet.parameter_server.distribute_transpiler``,
``fluidist.incubate.fleet.base.role_maker``) lead here too.
"""
from .base import DistributedOptimizer, Fleet, Mode  # noqa: F401
from .strategy import (AsyncStrategy, DistFCConfig, DistributedStrategy, GeoStrategy, HalfAsyncStrategy,  # noqa: F401
                       PSDistributedStrategy, StrategyFactory, SyncStrategy, TrainerRuntimeConfig)
from . import collective, parameter_server  # noqa: F401
