"""The rest of the ``fluid.core`` names scripts reach: variable-name constants, the flag registry
(``core.globals()``), feed / fetch holders, build facts (``is_compiled_with_*``) and the op-role names.
The native inference API (``core.AnalysisConfig``, ``create_paddle_predictor``, ...) runs programs and
the program descriptions (``core.ProgramDesc``) are views over the IR, so they live above ``core``;
``fluid.core`` finds them through ``fluidist.paddle_paths``."""
from ..compat import refused, refused_class
from ..framework import api as _flags
from ..framework.op_role import OP_NAMESCOPE_ATTR, OP_ROLE_ATTR, OP_ROLE_VAR_ATTR, OpRole
from ..framework.variable import EMPTY_VAR_NAME
from .scope import ScopeVariable
from .tensor import LoDTensor, LoDTensorArray
from .enforce import EnforceNotMet, InvalidArgumentError, as_enforce_not_met  # noqa: F401


class Place:
    """A place of either kind: ``set_place(p)`` stores one, ``is_gpu_place()`` / ``gpu_device_id()`` ask."""

    def __init__(self):
        self._place = None

    def set_place(self, place):
        self._place = place._place if isinstance(place, Place) else place

    def is_gpu_place(self):
        return type(self._place).__name__ == "CUDAPlace"

    def is_cpu_place(self):
        return type(self._place).__name__ == "CPUPlace"

    def is_cuda_pinned_place(self):
        return type(self._place).__name__ == "CUDAPinnedPlace"

    def gpu_device_id(self):
        return int(getattr(self._place, "device_id", 0))

    def _type(self):
        return self._place._type()

    def _equals(self, other):
        return self._place._equals(other)


Variable = ScopeVariable


def kEmptyVarName():
    return EMPTY_VAR_NAME


def kTempVarName():
    return "@TEMP@"


def kGradVarSuffix():
    return "@GRAD"


def kZeroVarSuffix():
    return "@ZERO"


grad_var_suffix, empty_var_name = kGradVarSuffix, kEmptyVarName


class _OpProtoAndCheckerMaker:
    """``core.op_proto_and_checker_maker``: the names of the op-role attrs and the roles."""
    OpRole = OpRole

    @staticmethod
    def kOpRoleAttrName():
        return OP_ROLE_ATTR

    @staticmethod
    def kOpRoleVarAttrName():
        return OP_ROLE_VAR_ATTR

    @staticmethod
    def kOpNameScopeAttrName():
        return OP_NAMESCOPE_ATTR

    @staticmethod
    def kOpCreationCallstackAttrName():
        return "op_callstack"


op_proto_and_checker_maker = _OpProtoAndCheckerMaker()


class _FlagRegistry:
    """``core.globals()``: the FLAGS_* values as a mapping (``set_flags`` / ``get_flags`` underneath)."""

    def __getitem__(self, name):
        return _flags.get_flags(name)[name]

    def __setitem__(self, name, value):
        _flags.set_flags({name: value})

    def __contains__(self, name):
        try:
            self[name]
        except ValueError:
            return False
        return True

    def get(self, name, default=None):
        return self[name] if name in self else default

    def is_public(self, name):
        return str(name).startswith("FLAGS_")


_FLAGS = _FlagRegistry()


def globals():  # noqa: A001  (Paddle's name)
    return _FLAGS


def is_compiled_with_mkldnn():
    return False


def is_compiled_with_brpc():
    return False


def is_compiled_with_dist():
    """True: parameter-server and collective training are part of fluidist."""
    return True


def init_devices(*args, **kwargs):
    """Paddle initialised its device contexts here; fluidist's places need nothing."""


def init_gflags(args=None):
    """Paddle parsed ``--FLAGS`` here; fluidist reads FLAGS_* from the environment and ``set_flags``."""
    return True


def init_glog(name=None):
    """Paddle started glog here; fluidist logs through Python's logging (``FLUIDIST_LOG_LEVEL``)."""


def _set_eager_deletion_mode(threshold=0.0, fraction=1.0, fast_mode=True):
    """Paddle frees each temporary variable after its last use under this mode; the values a run
    fetches and the persistable values it leaves are the same with it or without, which is all
    fluidist's executor gives (its temporaries stay in the run's scope), so there is nothing to set."""


def __unittest_throw_exception__():
    """Raise an EnforceNotMet (Paddle's self-test that its C++ errors reach Python as one)."""
    raise EnforceNotMet("test exception")


_threads = {"n": 1}


def set_num_threads(n):
    """Recorded (NumPy's own BLAS threads are set by its environment variables, e.g. OMP_NUM_THREADS)."""
    _threads["n"] = int(n)


def set_feed_variable(scope, value, var_name, index):
    """Put ``value`` (a LoDTensor or array) at ``index`` of the feed holder ``var_name`` of ``scope``."""
    holder = _holder(scope, var_name)
    while len(holder) <= index:
        holder.append(None)
    holder[index] = value if isinstance(value, LoDTensor) else LoDTensor(value)


def get_fetch_variable(scope, var_name, index):
    """The LoDTensor at ``index`` of the fetch holder ``var_name`` of ``scope``."""
    holder = _holder(scope, var_name)
    if index >= len(holder) or holder[index] is None:
        raise IndexError("fetch holder %r has nothing at index %d" % (var_name, index))
    return holder[index]


def _holder(scope, var_name):
    v = scope.var(var_name)
    if not isinstance(v.value(), LoDTensorArray):
        v.set_value(LoDTensorArray())
    return v.value()


def get_variable_tensor(scope, var_name):
    """The tensor of variable ``var_name`` of ``scope`` (a live view)."""
    var = scope.find_var(var_name)
    if var is None:
        raise ValueError("variable %r is not in the scope" % var_name)
    return var.get_tensor()


class ProfilerState:
    kDisabled, kCPU, kCUDA, kAll = 0, 1, 2, 3


class EventSortingKey:
    kDefault, kCalls, kTotal, kMax, kMin, kAve = 0, 1, 2, 3, 4, 5


_PROFILER = "use fluid.profiler.profiler(state, sorted_key) or start_profiler / stop_profiler"
enable_profiler = refused("fluid.core.enable_profiler", _PROFILER)
disable_profiler = refused("fluid.core.disable_profiler", _PROFILER)
reset_profiler = refused("fluid.core.reset_profiler", "use fluid.profiler.reset_profiler()")
is_profiler_enabled = refused("fluid.core.is_profiler_enabled", "use fluid.profiler.is_profiler_enabled()")
get_all_op_protos = refused("fluid.core.get_all_op_protos",
                            "fluidist.framework.registry.all_op_types() lists the registered op types")
_IR = ("Paddle's C++ IR graph passes are not provided; rewrite the Program itself "
       "(block.ops, block.insert_before / insert_after / remove_op)")
Graph = refused_class("fluid.core.Graph", _IR)
Node = refused_class("fluid.core.Node", _IR)
Fleet = refused_class("fluid.core.Fleet", "it is PSLib's FleetWrapper (client-to-client settings, cache "
                      "thresholds, local tables); run parameter-server jobs with the fleet of "
                      "fluid.incubate.fleet.parameter_server.distribute_transpiler")
Executor = refused_class("fluid.core.Executor", "run programs with fluid.Executor(place).run(program, ...)")


def is_compiled_with_ngraph():
    """False: fluidist has no nGraph kernels."""
    return False


load_op_library = refused("fluid.core.load_op_library",
                          "write the op in Python with fluidist.framework.registry.register_op instead")
