"""Alias of :mod:`fluidist.fleet.collective` (Paddle 1.x ``incubate.fleet.collective``)."""
from fluidist.fleet.collective import (Collective, CollectiveOptimizer, DistFCConfig, DistributedStrategy,  # noqa: F401
                                       fleet)
