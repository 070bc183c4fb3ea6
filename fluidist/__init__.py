"""fluidist: Paddle fluid's static graphs and DistributeTranspiler, in Python.

``import fluidist as fluid`` gives the names a Paddle fluid 1.x user expects.
"""
from .framework import unique_name  # noqa: F401
from . import ops  # noqa: F401  (fills the op registry)
from .framework.dtypes import VarType  # noqa: F401
from .framework.program import (Block, Operator, Parameter, Program, Variable,  # noqa: F401
                                default_main_program, default_startup_program, name_scope, program_guard)
from .executor import (CPUPlace, CUDAPinnedPlace, CUDAPlace, Executor, LoDTensor, Scope,  # noqa: F401
                       SelectedRows, cpu_places, create_lod_tensor, cuda_places, global_scope,
                       is_compiled_with_cuda, scope_guard)
from .device.places import cuda_pinned_places  # noqa: F401
from .framework.api import (ComplexVariable, device_guard, get_flags, in_dygraph_mode,  # noqa: F401
                            load_op_library, require_version, set_flags)
from .executor.compiler import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401
from . import parallel_executor  # noqa: F401
from . import install_check  # noqa: F401
from .parallel_executor import ParallelExecutor  # noqa: F401
from . import initializer, layers, optimizer, regularizer, clip  # noqa: F401
from . import io  # noqa: F401
from .io import load, load_program_state, save, set_program_state  # noqa: F401
from . import nets  # noqa: F401
from . import compiler, install_check, log_helper  # noqa: F401
from . import metrics  # noqa: F401
from .backward import append_backward, gradients  # noqa: F401
from .param_attr import ParamAttr, WeightNormParamAttr  # noqa: F401
from .layers.io import data  # noqa: F401
from .input import embedding, one_hot  # noqa: F401
from .transpiler import DistributeTranspiler, DistributeTranspilerConfig  # noqa: F401
from . import transpiler  # noqa: F401
from . import communicator  # noqa: F401  (fluid.communicator.Communicator)

from . import core  # noqa: F401
from . import reader  # noqa: F401
from . import dataset  # noqa: F401
from .dataset import DatasetFactory, InMemoryDataset, QueueDataset  # noqa: F401  (Paddle: from .dataset import *)
from .incubate import data_generator  # noqa: F401,E402
from .data_feeder import DataFeeder  # noqa: F401
from .layers.math_op_patch import monkey_patch_variable as _patch
from . import log_helper  # noqa: F401
from . import profiler, timeline  # noqa: F401  (fluid.profiler without its own import, as in Paddle)

from . import paddle_paths  # noqa: E402,F401  (Paddle 1.8's module paths: fluid.lod_tensor, fluid.unique_name, ...)
from . import contrib, dygraph  # noqa: E402,F401  (refused module trees)
from .layers.io import data  # noqa: E402,F811  (the function, not the module fluid.data that has it: as in Paddle)
from .paddle_paths import (DataFeedDesc, DistMultiTrainer, HashName, LoDTensorArray, MultiTrainer,  # noqa: F401,E402
                           PipelineTrainer, RoundRobin, Tensor, TrainerDesc, VarBase, create_random_int_lodtensor,
                           disable_dygraph, disable_imperative, enable_dygraph, enable_imperative,
                           learning_rate_decay, memory_optimize, release_memory)
from .paddle_paths import (BatchNorm, BCELoss, BilinearTensorProduct, Conv2D, Conv2DTranspose,  # noqa: F401,E402
                           Conv3D, Conv3DTranspose, Dropout, Embedding, GroupNorm, GRUUnit, InstanceNorm, L1Loss,
                           Layer, LayerNorm, Linear, MSELoss, NCE, NLLLoss, Pool2D, PRelu, SpectralNorm, TreeConv,
                           load_dygraph, monkey_patch_varbase, save_dygraph)

_patch()
log_helper.configure_from_env()  # FLUIDIST_LOG_LEVEL: the launcher's --log_level
from .interrupts import install_quiet_interrupt_hook as _quiet_interrupt  # noqa: E402
_quiet_interrupt()  # FLUIDIST_QUIET_INTERRUPT: a ctrl-C the launcher reports is not reported here again

__version__ = "0.1.0"
