"""``fluid.dygraph``: Paddle's imperative (dynamic graph) mode is not provided. Every module path under
``fluid.dygraph`` imports, and each of its names (``guard``, ``Layer``, ``to_variable``, ``Linear``,
...) raises NotImplementedError saying to build a static program instead."""
from ..compat import refuse_module_tree, refused, refused_class

refuse_module_tree(globals(), "fluid.dygraph",
                   "fluidist runs static programs only: build the network with fluid.layers inside "
                   "fluid.program_guard, then run it with fluid.Executor (fluid.in_dygraph_mode() is False)")

# The switches of Paddle's imperative mode (``fluid.enable_dygraph`` ...) and its tensor, which
# ``fluid`` also holds at the top.
_DYGRAPH = "fluidist runs static programs only: build the network with fluid.layers and run it with fluid.Executor"
_STATIC = "fluidist is always in static mode: nothing to disable"
enable_dygraph = refused("fluid.enable_dygraph", _DYGRAPH)
disable_dygraph = refused("fluid.disable_dygraph", _STATIC)
enable_imperative = refused("fluid.enable_imperative", _DYGRAPH)
disable_imperative = refused("fluid.disable_imperative", _STATIC)
VarBase = refused_class("fluid.VarBase", _DYGRAPH)
save_dygraph = refused("fluid.save_dygraph", _DYGRAPH + " (save a static program with fluid.save)")
load_dygraph = refused("fluid.load_dygraph", _DYGRAPH + " (load a static program with fluid.load)")
monkey_patch_varbase = refused("fluid.monkey_patch_varbase", _DYGRAPH)
# Paddle's fluid/__init__ also holds the classes of dygraph.nn and dygraph.layers (fluid.Conv2D,
# fluid.Layer, ...): the face takes them from here, where the tree's __getattr__ refuses each by name.
