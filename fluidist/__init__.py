"""fluidist: Paddle fluid's static graphs and DistributeTranspiler, in Python.

``import fluidist as fluid`` gives the names a Paddle fluid 1.x user expects.

The face is lazy (PEP 562): importing ``fluidist`` loads only the version, the table of Paddle's
module paths (:mod:`fluidist.paddle_paths`), the logging set-up and the ctrl-C hook of
:mod:`fluidist.console.interrupts`, so the launcher
(``fluidist-launch``) and the runtime modules (``fluidist.distributed.*``) never load the kernels. The
first use of a name of the face (``fluid.layers``, ``fluid.Program``, ...) loads the framework as a
whole, as one import did before: every op family (the op registry), the layers (and with them the
operators of ``Variable``); a device a script chose with ``fluidist.device.use`` before that holds. The IR's ``program.desc`` views
and the op registry's entries are made on first use wherever they are asked for
(``framework/desc_views.py``, ``framework/op_table.py``), face or not.
"""
import importlib as _importlib
import os as _os
import sys as _sys
import threading as _threading
from typing import TYPE_CHECKING

from . import compat as _compat
from . import paddle_paths as _paddle_paths
from ._version import __version__  # noqa: F401
from .console.interrupts import install_quiet_interrupt_hook as _quiet_interrupt
from .log_helper import configure_from_env as _configure_logging


def _names(module, *names):
    return {name: "%s:%s" % (module, name) for name in names}


def _modules(*names):
    return {name: "fluidist." + name for name in names}


# The dygraph names Paddle's fluid/__init__ takes from dygraph.nn, dygraph.layers and dygraph.checkpoint:
# refusals of fluidist.dygraph (declared there one by one).
_DYGRAPH_TOP_LEVEL = ("Conv2D", "Conv3D", "Pool2D", "Linear", "BatchNorm", "Dropout", "Embedding", "GRUUnit",
                      "InstanceNorm", "LayerNorm", "NCE", "PRelu", "BilinearTensorProduct", "Conv2DTranspose",
                      "Conv3DTranspose", "GroupNorm", "SpectralNorm", "TreeConv", "MSELoss", "L1Loss", "NLLLoss",
                      "BCELoss", "Layer", "save_dygraph", "load_dygraph", "monkey_patch_varbase")

# The names of ``import fluidist as fluid``: name -> the module ("module:attribute" for a name it
# defines). Loaded in this order: the op families first, so that every later module finds the registry full.
_FACE = {
    "unique_name": "fluidist.framework.unique_name",
    **_modules("ops"),
    **_names("fluidist.framework.dtypes", "VarType"),
    **_names("fluidist.framework.program", "Block", "Operator", "Parameter", "Program", "Variable",
             "default_main_program", "default_startup_program", "name_scope", "program_guard"),
    **_names("fluidist.executor", "CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "Executor", "LoDTensor", "Scope",
             "SelectedRows", "cpu_places", "create_lod_tensor", "cuda_places", "global_scope",
             "is_compiled_with_cuda", "scope_guard"),
    **_names("fluidist.device.places", "cuda_pinned_places"),
    **_names("fluidist.framework.api", "ComplexVariable", "device_guard", "get_flags", "in_dygraph_mode",
             "load_op_library", "require_version", "set_flags"),
    **_names("fluidist.executor.compiler", "BuildStrategy", "CompiledProgram", "ExecutionStrategy"),
    **_modules("executor", "framework", "parallel_executor", "install_check"),
    **_names("fluidist.executor.parallel_executor", "ParallelExecutor"),
    **_modules("initializer", "layers", "optimizer", "regularizer", "clip", "io"),
    **_names("fluidist.io", "load", "load_program_state", "save", "set_program_state"),
    **_modules("nets", "compiler", "log_helper", "metrics", "backward"),
    **_names("fluidist.passes.backward", "append_backward", "gradients"),
    **_names("fluidist.param_attr", "ParamAttr", "WeightNormParamAttr"),
    **_modules("param_attr", "input"),
    **_names("fluidist.layers.input", "embedding", "one_hot"),
    **_names("fluidist.transpiler", "DistributeTranspiler", "DistributeTranspilerConfig", "HashName", "RoundRobin",
             "memory_optimize", "release_memory"),
    **_modules("transpiler", "communicator", "core", "reader", "dataset", "incubate"),
    **_names("fluidist.dataset", "DatasetFactory", "InMemoryDataset", "QueueDataset"),
    "data_generator": "fluidist.incubate.data_generator",
    **_modules("data_feeder"),
    **_names("fluidist.reader.data_feeder", "DataFeeder"),
    **_modules("profiler", "timeline", "contrib", "dygraph", "lod_tensor"),
    **_names("fluidist.core", "LoDTensorArray"),
    "Tensor": "fluidist.core:LoDTensor",   # Paddle 1.8's fluid.Tensor is LoDTensor (core.Tensor has no LoD)
    **_names("fluidist.core.lod_tensor", "create_random_int_lodtensor"),
    **_names("fluidist.data_feed_desc", "DataFeedDesc"),
    **_names("fluidist.trainer_desc", "DistMultiTrainer", "MultiTrainer", "PipelineTrainer", "TrainerDesc"),
    **_names("fluidist.dygraph", "VarBase", "disable_dygraph", "disable_imperative", "enable_dygraph",
             "enable_imperative", *_DYGRAPH_TOP_LEVEL),
    "learning_rate_decay": "fluidist.layers.learning_rate_scheduler",
    "data": "fluidist.layers.io:data",   # the function (Paddle's fluid.data), not the module of that path
}

# ``from fluidist import *`` and what type checkers take as exported (mypy --strict): the version and
# every name of _FACE (tests/test_typing.py keeps the two lists equal)
__all__ = ["__version__", "unique_name", "ops", "VarType", "Block", "Operator", "Parameter", "Program", "Variable",
           "default_main_program", "default_startup_program", "name_scope", "program_guard", "CPUPlace",
           "CUDAPinnedPlace", "CUDAPlace", "Executor", "LoDTensor", "Scope", "SelectedRows", "cpu_places",
           "create_lod_tensor", "cuda_places", "global_scope", "is_compiled_with_cuda", "scope_guard",
           "cuda_pinned_places", "ComplexVariable", "device_guard", "get_flags", "in_dygraph_mode", "load_op_library",
           "require_version", "set_flags", "BuildStrategy", "CompiledProgram", "ExecutionStrategy", "executor",
           "framework", "parallel_executor", "install_check", "ParallelExecutor", "initializer", "layers",
           "optimizer", "regularizer", "clip", "io", "load", "load_program_state", "save", "set_program_state",
           "nets", "compiler", "log_helper", "metrics", "backward", "append_backward", "gradients", "ParamAttr",
           "WeightNormParamAttr", "param_attr", "input", "embedding", "one_hot", "DistributeTranspiler",
           "DistributeTranspilerConfig", "HashName", "RoundRobin", "memory_optimize", "release_memory", "transpiler",
           "communicator", "core", "reader", "dataset", "incubate", "DatasetFactory", "InMemoryDataset",
           "QueueDataset", "data_generator", "data_feeder", "DataFeeder", "profiler", "timeline", "contrib",
           "dygraph", "lod_tensor", "LoDTensorArray", "Tensor", "create_random_int_lodtensor", "DataFeedDesc",
           "DistMultiTrainer", "MultiTrainer", "PipelineTrainer", "TrainerDesc", "VarBase", "disable_dygraph",
           "disable_imperative", "enable_dygraph", "enable_imperative", "Conv2D", "Conv3D", "Pool2D", "Linear",
           "BatchNorm", "Dropout", "Embedding", "GRUUnit", "InstanceNorm", "LayerNorm", "NCE", "PRelu",
           "BilinearTensorProduct", "Conv2DTranspose", "Conv3DTranspose", "GroupNorm", "SpectralNorm", "TreeConv",
           "MSELoss", "L1Loss", "NLLLoss", "BCELoss", "Layer", "save_dygraph", "load_dygraph", "monkey_patch_varbase",
           "learning_rate_decay", "data"]

if TYPE_CHECKING:   # the face as type checkers see it: the names of _FACE, imported the plain way
    from . import (contrib, core, dataset, dygraph, executor, framework, incubate, initializer,  # noqa: F401
                   install_check, io, layers, log_helper, metrics, nets, ops, param_attr, profiler, reader,
                   timeline, transpiler)
    from .core import lod_tensor  # noqa: F401  (Paddle's paths: the modules fluidist.paddle_paths names)
    from .executor import compiler, parallel_executor  # noqa: F401
    from .layers import input  # noqa: F401
    from .optim import optimizer  # noqa: F401
    from .passes import backward, clip, regularizer  # noqa: F401
    from .reader import data_feeder  # noqa: F401
    from .transpiler import communicator  # noqa: F401
    from .core import LoDTensorArray  # noqa: F401
    from .core import LoDTensor as Tensor  # noqa: F401
    from .core.lod_tensor import create_random_int_lodtensor  # noqa: F401
    from .device.places import cuda_pinned_places  # noqa: F401
    from .dataset import DatasetFactory, InMemoryDataset, QueueDataset  # noqa: F401
    from .dygraph import (VarBase, disable_dygraph, disable_imperative, enable_dygraph,  # noqa: F401
                          enable_imperative, load_dygraph, monkey_patch_varbase, save_dygraph)
    from .dygraph import (BatchNorm, BCELoss, BilinearTensorProduct, Conv2D, Conv2DTranspose,  # noqa: F401
                          Conv3D, Conv3DTranspose, Dropout, Embedding, GroupNorm, GRUUnit, InstanceNorm, L1Loss,
                          Layer, LayerNorm, Linear, MSELoss, NCE, NLLLoss, Pool2D, PRelu, SpectralNorm, TreeConv)
    from .executor import (CPUPlace, CUDAPinnedPlace, CUDAPlace, Executor, LoDTensor, Scope,  # noqa: F401
                           SelectedRows, cpu_places, create_lod_tensor, cuda_places, global_scope,
                           is_compiled_with_cuda, scope_guard)
    from .executor.compiler import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401
    from .executor.parallel_executor import ParallelExecutor  # noqa: F401
    from .framework import unique_name  # noqa: F401
    from .framework.api import (ComplexVariable, device_guard, get_flags, in_dygraph_mode,  # noqa: F401
                                load_op_library, require_version, set_flags)
    from .framework.dtypes import VarType  # noqa: F401
    from .framework.program import (Block, Operator, Parameter, Program, Variable,  # noqa: F401
                                    default_main_program, default_startup_program, name_scope, program_guard)
    from .incubate import data_generator  # noqa: F401
    from .io import load, load_program_state, save, set_program_state  # noqa: F401
    from .layers import learning_rate_scheduler as learning_rate_decay  # noqa: F401
    from .layers.input import embedding, one_hot  # noqa: F401
    from .layers.io import data  # noqa: F401
    from .param_attr import ParamAttr, WeightNormParamAttr  # noqa: F401
    from .passes.backward import append_backward, gradients  # noqa: F401
    from .reader.data_feeder import DataFeeder  # noqa: F401
    from .transpiler import (DistributeTranspiler, DistributeTranspilerConfig, HashName, RoundRobin,  # noqa: F401
                             memory_optimize, release_memory)
    from .compat import refused_class as _refused_class
    DataFeedDesc = DistMultiTrainer = MultiTrainer = PipelineTrainer = TrainerDesc = _refused_class("")

# fluidist's modules that are not the framework (the launcher, the runtime and the leaves they use):
# getting them from the face imports only them.
_LIGHT = frozenset({"launch", "distributed", "timeline", "log_helper", "bounded_json", "compat", "paddle_paths"})

_loaded = False
_loading = _threading.RLock()   # a second thread asking for a name waits for the first one's load


def _load():
    """Load the framework and bind every name of the face (once; the later calls return at once)."""
    global _loaded
    with _loading:
        if _loaded:
            return
        _loaded = True      # the modules loaded below may use names of the face bound before them
        try:
            for name, where in _FACE.items():
                module_name, _, attribute = where.partition(":")
                module = _importlib.import_module(module_name)
                globals()[name] = getattr(module, attribute) if attribute else module
        except BaseException:
            _loaded = False
            raise
        from .device import switch
        if switch.active() != "cpu":    # fluidist.device.use(...) ran before the face loaded: bind its place again
            switch.use(switch.active())


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError("module 'fluidist' has no attribute %r" % name)
    imported = _sys.modules.get("fluidist." + name)
    if imported is not None:
        return imported         # a module being imported: Python binds it here once it has loaded
    if name not in _LIGHT:
        _load()
        if name in globals():
            return globals()[name]
        if name in _compat.PADDLE2_NAMES:    # Paddle 2.x's (fluid.enable_static, fluid.static): say so
            _compat.raise_missing("fluidist", name)
    try:
        return _importlib.import_module("fluidist." + name)   # a module of fluidist, or one of Paddle's paths
    except ModuleNotFoundError as e:
        if e.name != "fluidist." + name:
            raise
    _compat.raise_missing("fluidist", name)   # a 2.x-era name (fluid.concat) gets its 1.x spelling


def __dir__():
    return sorted(set(globals()) | set(_FACE))


_paddle_paths.install()
_configure_logging()   # FLUIDIST_LOG_LEVEL: the launcher's --log_level
_quiet_interrupt()     # FLUIDIST_QUIET_INTERRUPT: a ctrl-C the launcher reports is not reported here again
