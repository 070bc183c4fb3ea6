"""What Paddle users reach through ``fluid.core``: a few runtime types under their old names."""
from .executor import CPUPlace, CUDAPinnedPlace, CUDAPlace, LoDTensor, Scope  # noqa: F401
from .executor.place import is_compiled_with_cuda  # noqa: F401
from .executor.tensor import SelectedRows  # noqa: F401
from .framework.dtypes import VarType
from .framework.op_role import OpRole as op_proto_and_checker_maker_OpRole  # noqa: F401


class VarDesc:
    VarType = VarType


def get_cuda_device_count():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0
