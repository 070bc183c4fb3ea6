"""The runtime types, and what Paddle users reach through ``fluid.core``.

This package sits below everything that runs programs: places (where kernels run and with which
array module), ``LoDTensor`` / ``SelectedRows`` (values) and ``Scope`` (values by name). It imports
nothing from the rest of fluidist but ``framework``'s dtypes and op roles.
"""
from ..framework.dtypes import VarType
from ..framework.op_role import OpRole as op_proto_and_checker_maker_OpRole  # noqa: F401
from .blocking_queue import EOFException  # noqa: F401
from .place import (CPUPlace, CUDAPinnedPlace, CUDAPlace, cpu_places, cuda_pinned_places, cuda_places,  # noqa: F401
                    is_compiled_with_cuda)
from .scope import Scope, global_scope, scope_guard  # noqa: F401
from .tensor import LoDRankTable, LoDTensor, LoDTensorArray, Tensor, create_lod_tensor, from_dlpack  # noqa: F401
# Paddle's core.SelectedRows is the handle scripts fill and read; the value it stands for is tensor.SelectedRows
from .rows_handle import SelectedRowsHandle as SelectedRows  # noqa: F401
from .paddle_names import (BlockDesc, EnforceNotMet, EventSortingKey, OpDesc, Place, ProfilerState,  # noqa: F401
                           ProgramDesc, Variable, disable_profiler, empty_var_name, enable_profiler,
                           get_all_op_protos, get_fetch_variable, get_variable_tensor, globals, grad_var_suffix,
                           init_devices, init_gflags, init_glog, is_compiled_with_brpc, is_compiled_with_dist,
                           is_compiled_with_mkldnn, is_profiler_enabled, kEmptyVarName, kGradVarSuffix,
                           kTempVarName, kZeroVarSuffix, load_op_library, op_proto_and_checker_maker,
                           reset_profiler, set_feed_variable, set_num_threads)
from .paddle_names import (Executor, Fleet, Graph, Node, __unittest_throw_exception__, _set_eager_deletion_mode,  # noqa: F401
                           is_compiled_with_ngraph)

LodRankTable = LoDRankTable


class VarDesc:
    VarType = VarType


def get_cuda_device_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0
