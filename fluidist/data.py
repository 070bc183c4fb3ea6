"""``fluid.data``: the module of ``fluid.data(name, shape, dtype, lod_level)``."""
from .layers.io import data  # noqa: F401

__all__ = ["data"]
