"""``fluid.compiler``: the module path Paddle 1.x users import ``CompiledProgram``, ``BuildStrategy``
and ``ExecutionStrategy`` from (``from paddle.fluid import compiler``)."""
from .executor.compiler import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401

__all__ = ["CompiledProgram", "ExecutionStrategy", "BuildStrategy"]
