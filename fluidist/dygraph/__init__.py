"""``fluid.dygraph``: Paddle's imperative (dynamic graph) mode is not provided. Every module path under
``fluid.dygraph`` imports, and each of its names (``guard``, ``Layer``, ``to_variable``, ``Linear``,
...) raises NotImplementedError saying to build a static program instead."""
from ..compat import refuse_module_tree

refuse_module_tree(globals(), "fluid.dygraph",
                   "fluidist runs static programs only: build the network with fluid.layers inside "
                   "fluid.program_guard, then run it with fluid.Executor (fluid.in_dygraph_mode() is False)")
