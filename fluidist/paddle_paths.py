"""Paddle 1.8's ``paddle.fluid`` module paths that fluidist's own layout does not give by itself.

Imported last by ``fluidist/__init__``: it imports the modules that exist only under Paddle's names
(``fluid.lod_tensor``, ``fluid.data_feeder``'s checks, ``fluid.trainer_desc``, ...), makes
``fluidist.unique_name`` importable as the module it is (``framework.unique_name``), puts into
``fluidist.framework`` the names Paddle's framework module has that live in ``core`` here (the
framework package may not import ``core``: the import-layer rule), and gives the top-level names of
Paddle's ``fluid/__init__`` that come from those modules. ``tests/compat/fluid18_modules.txt`` lists
every path and name checked."""
import sys

from . import (annotations, average, contrib, data, data_feed_desc, dataloader, default_scope_funcs,  # noqa: F401
               device_worker, distribute_lookup_table, dygraph, dygraph_utils, evaluator, framework, layer_helper, layer_helper_base,
               lod_tensor, multiprocess_utils, op, trainer_desc, trainer_factory, wrapped_decorator)
from . import core, dataset, desc, inference, io
from .compat import refused, refused_class
from .core import LoDTensor, LoDTensorArray  # noqa: F401

Tensor = LoDTensor   # Paddle 1.8's fluid.Tensor is LoDTensor (core.Tensor is the LoD-less class)
from .core.place import cpu_places, cuda_pinned_places, cuda_places, is_compiled_with_cuda
from .data_feed_desc import DataFeedDesc  # noqa: F401
from .framework import unique_name
from .layers import learning_rate_scheduler as learning_rate_decay  # noqa: F401
from .lod_tensor import create_random_int_lodtensor  # noqa: F401
from .trainer_desc import DistMultiTrainer, MultiTrainer, PipelineTrainer, TrainerDesc  # noqa: F401
from .transpiler import HashName, RoundRobin, memory_optimize, release_memory  # noqa: F401

sys.modules[__package__ + ".unique_name"] = unique_name

for _name in inference.__all__:          # the native inference API runs programs: it lives above core
    setattr(core, _name, getattr(inference, _name))
setattr(core, "Dataset", dataset.CoreDataset)       # a dataset's settings and in-memory operations
setattr(core, "Operator", op.EagerOperator)         # runs a one-op program with an Executor: above core too
setattr(core, "op_support_gpu", op.op_support_gpu)  # asks the op registry
setattr(core, "infer_no_need_buffer_slots", op.infer_no_need_buffer_slots)
setattr(core, "_create_loaded_parameter", io.paddle_helpers._create_loaded_parameter)   # fills a scope: above core
setattr(core, "get_op_attrs_default_value", op.get_op_attrs_default_value)
desc.install()                                      # program.desc, op.desc, ...: views over the IR, above it
for _name in ("AttrType", "ProgramDesc", "BlockDesc", "OpDesc", "VarDesc", "get_grad_op_desc"):
    setattr(core, _name, getattr(desc, _name))

for _name, _value in [("cpu_places", cpu_places), ("cuda_places", cuda_places),
                      ("cuda_pinned_places", cuda_pinned_places), ("is_compiled_with_cuda", is_compiled_with_cuda)]:
    setattr(framework, _name, _value)

_DYGRAPH = ("fluidist runs static programs only: build the network with fluid.layers and run it with "
            "fluid.Executor")
enable_imperative = refused("fluid.enable_imperative", _DYGRAPH)
disable_imperative = refused("fluid.disable_imperative", "fluidist is always in static mode: nothing to disable")
enable_dygraph = refused("fluid.enable_dygraph", _DYGRAPH)
disable_dygraph = refused("fluid.disable_dygraph", "fluidist is always in static mode: nothing to disable")
VarBase = refused_class("fluid.VarBase", _DYGRAPH)

# the dygraph names Paddle's fluid/__init__ takes from dygraph.nn, dygraph.layers and dygraph.checkpoint
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
save_dygraph = refused("fluid.save_dygraph", _DYGRAPH + " (save a static program with fluid.save)")
load_dygraph = refused("fluid.load_dygraph", _DYGRAPH + " (load a static program with fluid.load)")
monkey_patch_varbase = refused("fluid.monkey_patch_varbase", _DYGRAPH)
