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
from .tensor import LoDRankTable, LoDTensor, LoDTensorArray, SelectedRows, create_lod_tensor  # noqa: F401


class VarDesc:
    VarType = VarType


def get_cuda_device_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0
