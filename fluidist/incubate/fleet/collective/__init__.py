"""Paddle 1.x's ``incubate.fleet.collective``: the collective fleet of ``fluidist.fleet.collective``, with
the small classes Paddle's module also defines."""
from fluidist.compat import refused_class
from fluidist.fleet.collective import (Collective, CollectiveOptimizer, DistFCConfig, DistributedStrategy,  # noqa: F401
                                       fleet)

# the names a script imports from here (a type checker exports these, and only these)
__all__ = ["fleet", "Collective", "CollectiveOptimizer", "DistributedStrategy", "DistFCConfig", "LambConfig",
           "TrainStatus", "CollectiveOpBasedOptimizer"]


class LambConfig:
    """Paddle's (empty) configuration holder for LAMB in the collective strategy."""


class TrainStatus:
    """The epoch a collective job has reached (Paddle's checkpoint bookkeeping): ``next()`` is the
    epoch to run after it; two statuses are equal when their epochs are."""

    def __init__(self, epoch_no=-1):
        self._epoch_no = epoch_no

    def next(self):
        return self._epoch_no + 1

    def __eq__(self, other):
        return isinstance(other, TrainStatus) and self._epoch_no == other._epoch_no

    def __ne__(self, other):
        return not self == other


CollectiveOpBasedOptimizer = refused_class("fluid.incubate.fleet.collective.CollectiveOpBasedOptimizer",
                                           "use fleet.distributed_optimizer(optimizer, strategy), "
                                           "a CollectiveOptimizer")
