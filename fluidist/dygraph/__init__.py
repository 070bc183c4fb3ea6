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
# The classes of dygraph.nn and dygraph.layers that Paddle's fluid/__init__ also holds (fluid.Conv2D,
# fluid.Layer, ...), declared one by one so that type checkers see them (the tree's __getattr__ makes
# the other names of fluid.dygraph).
Conv2D = refused_class("fluid.dygraph.Conv2D", _DYGRAPH)
Conv3D = refused_class("fluid.dygraph.Conv3D", _DYGRAPH)
Pool2D = refused_class("fluid.dygraph.Pool2D", _DYGRAPH)
Linear = refused_class("fluid.dygraph.Linear", _DYGRAPH)
BatchNorm = refused_class("fluid.dygraph.BatchNorm", _DYGRAPH)
Dropout = refused_class("fluid.dygraph.Dropout", _DYGRAPH)
Embedding = refused_class("fluid.dygraph.Embedding", _DYGRAPH)
GRUUnit = refused_class("fluid.dygraph.GRUUnit", _DYGRAPH)
InstanceNorm = refused_class("fluid.dygraph.InstanceNorm", _DYGRAPH)
LayerNorm = refused_class("fluid.dygraph.LayerNorm", _DYGRAPH)
NCE = refused_class("fluid.dygraph.NCE", _DYGRAPH)
PRelu = refused_class("fluid.dygraph.PRelu", _DYGRAPH)
BilinearTensorProduct = refused_class("fluid.dygraph.BilinearTensorProduct", _DYGRAPH)
Conv2DTranspose = refused_class("fluid.dygraph.Conv2DTranspose", _DYGRAPH)
Conv3DTranspose = refused_class("fluid.dygraph.Conv3DTranspose", _DYGRAPH)
GroupNorm = refused_class("fluid.dygraph.GroupNorm", _DYGRAPH)
SpectralNorm = refused_class("fluid.dygraph.SpectralNorm", _DYGRAPH)
TreeConv = refused_class("fluid.dygraph.TreeConv", _DYGRAPH)
MSELoss = refused_class("fluid.dygraph.MSELoss", _DYGRAPH)
L1Loss = refused_class("fluid.dygraph.L1Loss", _DYGRAPH)
NLLLoss = refused_class("fluid.dygraph.NLLLoss", _DYGRAPH)
BCELoss = refused_class("fluid.dygraph.BCELoss", _DYGRAPH)
Layer = refused_class("fluid.dygraph.Layer", _DYGRAPH)
