"""Alias of :mod:`fluidist.fleet.base` (Paddle 1.x ``incubate.fleet.base.fleet_base``)."""
from fluidist.fleet.base import DistributedOptimizer, Fleet, Mode  # noqa: F401
