"""The runtime types, and what Paddle users reach through ``fluid.core``.

This package sits below everything that runs programs: ``LoDTensor`` / ``SelectedRows`` (values),
``Scope`` (values by name) and ``placement`` (whole values moved to and from a place); it names
Paddle's places (``core.CPUPlace``, ...), which live in :mod:`fluidist.device`. It imports nothing from
the rest of fluidist but ``device`` and ``framework``'s dtypes and op roles.
"""
import sys as _sys

from ..framework.dtypes import VarType  # noqa: F401
from ..framework.op_role import OpRole as op_proto_and_checker_maker_OpRole  # noqa: F401
from .blocking_queue import EOFException  # noqa: F401
from ..device.places import (CPUPlace, CUDAPinnedPlace, CUDAPlace, cpu_places, cuda_pinned_places,  # noqa: F401
                             cuda_places, is_compiled_with_cuda)
from .scope import Scope, global_scope, scope_guard  # noqa: F401
from .tensor import LoDRankTable, LoDTensor, LoDTensorArray, Tensor, create_lod_tensor, from_dlpack  # noqa: F401
# Paddle's core.SelectedRows is the handle scripts fill and read; the value it stands for is tensor.SelectedRows
from .rows_handle import SelectedRowsHandle as SelectedRows  # noqa: F401
from .paddle_names import (EnforceNotMet, EventSortingKey, Place, ProfilerState, Variable,  # noqa: F401
                           disable_profiler, empty_var_name, enable_profiler,
                           get_all_op_protos, get_fetch_variable, get_variable_tensor, globals, grad_var_suffix,
                           init_devices, init_gflags, init_glog, is_compiled_with_brpc, is_compiled_with_dist,
                           is_compiled_with_mkldnn, is_profiler_enabled, kEmptyVarName, kGradVarSuffix,
                           kTempVarName, kZeroVarSuffix, load_op_library, op_proto_and_checker_maker,
                           reset_profiler, set_feed_variable, set_num_threads)
from .paddle_names import (Executor, Fleet, Graph, Node, __unittest_throw_exception__, _set_eager_deletion_mode,  # noqa: F401
                           is_compiled_with_ngraph)

LodRankTable = LoDRankTable


def get_cuda_device_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def __getattr__(name):
    """The names of Paddle's ``fluid.core`` that fluidist defines above this package (the native
    inference API, ``Operator``, the program descriptions, ...): ``fluidist.paddle_paths`` says where."""
    from ..paddle_paths import paddle_name
    return paddle_name(__name__, name)


def __dir__():
    from ..paddle_paths import paddle_names
    return sorted(set(vars(_sys.modules[__name__])) | set(paddle_names(__name__)))
