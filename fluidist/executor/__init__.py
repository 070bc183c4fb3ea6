"""Running programs: the Executor and CompiledProgram (the runtime types live in ``fluidist.core``)."""
from ..device.places import CPUPlace, CUDAPlace, CUDAPinnedPlace, cpu_places, cuda_places, is_compiled_with_cuda  # noqa: F401
from ..core.scope import Scope, global_scope, scope_guard  # noqa: F401
from ..core.tensor import LoDTensor, SelectedRows, create_lod_tensor  # noqa: F401
from .executor import Executor  # noqa: F401
from .dataset_runner import FetchHandler  # noqa: F401
from .paddle_helpers import (_as_lodtensor, _fetch_var, as_numpy, check_feed_shape_type, dimension_is_compatible_with,  # noqa: F401
                             dtype_is_compatible_with, has_feed_operators, has_fetch_operators)

# the names a script imports from here (a type checker exports these, and only these)
__all__ = ["Executor", "global_scope", "scope_guard", "Scope", "CPUPlace", "CUDAPlace", "CUDAPinnedPlace",
           "cpu_places", "cuda_places", "is_compiled_with_cuda", "LoDTensor", "SelectedRows", "create_lod_tensor",
           "FetchHandler", "as_numpy", "check_feed_shape_type", "dimension_is_compatible_with",
           "dtype_is_compatible_with", "has_feed_operators", "has_fetch_operators"]
