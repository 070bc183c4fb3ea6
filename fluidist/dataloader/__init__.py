"""``fluid.dataloader``: the map-style ``Dataset`` and ``BatchSampler`` of Paddle 1.8's preview of its
2.0 data API; ``fluid.io.DataLoader.from_generator`` feeds what they produce."""
from .batch_sampler import BatchSampler  # noqa: F401
from .dataset import Dataset  # noqa: F401

__all__ = ["Dataset", "BatchSampler"]
