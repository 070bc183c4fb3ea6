"""``transpiler.memory_optimization_transpiler``: Paddle 1.8's deprecated no-ops, under their module path."""
from .memory_optimization import memory_optimize, release_memory  # noqa: F401
