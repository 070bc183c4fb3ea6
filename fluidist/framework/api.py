"""The small functions of Paddle 1.8's ``framework`` module beyond the IR: the dygraph switch (always
static here), ``require_version``, ``set_flags`` / ``get_flags``, and the names fluidist refuses."""
import os
import re
import warnings

from ..compat import refused, refused_class

__all__ = ["in_dygraph_mode", "require_version", "set_flags", "get_flags", "ComplexVariable", "load_op_library",
           "device_guard"]

from . import version as _version

#: the Paddle release whose fluid API fluidist provides; ``require_version`` checks against
#: ``framework.version`` (these values, unless a script changed them)
PADDLE_API_VERSION = _version.full_version

#: the flags fluidist reads (from the environment, when it needs them)
FLUIDIST_FLAGS = ("FLAGS_rpc_deadline", "FLAGS_rpc_retry_times", "FLAGS_rpc_send_thread_num",
                  "FLAGS_rpc_get_thread_num", "FLAGS_rpc_prefetch_thread_num", "FLAGS_selected_gpus",
                  "FLAGS_sync_nccl_allreduce", "FLAGS_communicator_send_queue_size",
                  "FLAGS_communicator_max_merge_var_num", "FLAGS_communicator_independent_recv_thread",
                  "FLAGS_communicator_min_send_grad_num_before_recv", "FLAGS_communicator_thread_pool_size",
                  "FLAGS_communicator_send_wait_times", "FLAGS_communicator_is_sgd_optimizer",
                  "FLAGS_communicator_fake_rpc", "FLAGS_communicator_merge_sparse_grad", "FLAGS_check_nan_inf")
_other_flags: dict = {}
_warned: set = set()


def in_dygraph_mode():
    """False: fluidist builds static programs only (Paddle's dygraph mode is not provided)."""
    return False


def _version_tuple(v, what):
    if not isinstance(v, str):
        raise TypeError("require_version: %s must be a str, got %r" % (what, type(v).__name__))
    if not re.match(r"^\d+(\.\d+){0,3}$", v):
        raise ValueError("require_version: %s must look like '1.8' or '1.8.5', got %r" % (what, v))
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (4 - len(parts)))


def require_version(min_version, max_version=None):
    """Raise unless the fluid API version fluidist provides (Paddle 1.8.5's, ``framework.version``)
    lies in ``[min_version, max_version]``, as a Paddle script checks its installed Paddle. A version
    of 0.0.0.0 (a development build, in Paddle) only warns."""
    lo = _version_tuple(min_version, "min_version")
    hi = _version_tuple(max_version, "max_version") if max_version is not None else None
    v = _version
    have = tuple(int(p) for p in (v.major, v.minor, v.patch, v.rc))
    want = ">= %s" % min_version + (" and <= %s" % max_version if max_version is not None else "")
    if have == (0, 0, 0, 0):
        warnings.warn("this program requires the Paddle fluid API %s; the version given is %s (a development "
                      "version?): not checked" % (want, v.full_version), stacklevel=2)
        return
    if have < lo or (hi is not None and have > hi):
        raise Exception("this program requires the Paddle fluid API %s; fluidist provides Paddle %s's"
                        % (want, v.full_version))


def _flag_name(name):
    if not isinstance(name, str) or not name.startswith("FLAGS_"):
        raise ValueError("flag names start with 'FLAGS_', got %r" % (name,))
    return name


def set_flags(flags):
    """Set flags ({name: value}). The flags fluidist reads take effect (they live in the
    environment, where fluidist and its child processes read them); other Paddle flags are kept for
    ``get_flags`` and warned about once, as they change nothing here."""
    if not isinstance(flags, dict):
        raise TypeError("set_flags: flags must be a dict {name: value}, got %r" % type(flags).__name__)
    for name, value in flags.items():
        name = _flag_name(name)
        if name in FLUIDIST_FLAGS:
            os.environ[name] = str(value) if not isinstance(value, bool) else str(value).lower()
        else:
            _other_flags[name] = value
            if name not in _warned:
                _warned.add(name)
                warnings.warn("%s has no effect in fluidist (flags it reads: %s)" % (name, ", ".join(FLUIDIST_FLAGS)),
                              stacklevel=2)


def get_flags(flags):
    """{name: value} of the flags named (a name or a list of names); a flag fluidist reads and nobody
    set gives None."""
    names = [flags] if isinstance(flags, str) else list(flags)
    out = {}
    for name in names:
        name = _flag_name(name)
        if name in FLUIDIST_FLAGS:
            out[name] = os.environ.get(name)
        elif name in _other_flags:
            out[name] = _other_flags[name]
        else:
            raise ValueError("flag %s is neither read by fluidist nor set by set_flags" % name)
    return out


ComplexVariable = refused_class("fluid.framework.ComplexVariable",
                                "it is a dygraph type; fluidist builds static programs of real tensors (keep the "
                                "real and imaginary parts as two Variables)")
load_op_library = refused("fluid.load_op_library",
                          "C++ custom op libraries cannot be loaded; write the op in Python with "
                          "fluidist.framework.registry.register_op (a NumPy/CuPy kernel) instead")
device_guard = refused("fluid.device_guard",
                       "fluidist runs every op of a program on the Executor's place; choose it with "
                       "fluid.Executor(fluid.CPUPlace()) or fluid.Executor(fluid.CUDAPlace(i))")


# ---------------------------------------------------------------- more of Paddle's framework module
def convert_np_dtype_to_dtype_(np_dtype):
    """The VarType of a NumPy dtype (``VarType.FP32``, which is also the dtype string ``'float32'``)."""
    from .dtypes import convert_dtype, var_type_value
    return var_type_value(convert_dtype(np_dtype))


def dtype_is_floating(dtype):
    """True for float16 / float32 / float64."""
    from .dtypes import convert_dtype
    return convert_dtype(dtype) in ("float16", "float32", "float64")


def generate_control_dev_var_name():
    """A fresh name for a control-dependency variable (``@LOCAL_DEV_VAR@`` + a counter)."""
    from . import unique_name
    return unique_name.generate("@LOCAL_DEV_VAR@")


_IR = ("Paddle's C++ IR graph passes are not provided; rewrite the Program itself "
       "(block.ops, block.insert_before / insert_after / remove_op) ")
IrGraph = refused_class("fluid.framework.IrGraph", _IR)
IrNode = refused_class("fluid.framework.IrNode", _IR)
IrOpNode = refused_class("fluid.framework.IrOpNode", _IR)
IrVarNode = refused_class("fluid.framework.IrVarNode", _IR)
OpProtoHolder = refused_class("fluid.framework.OpProtoHolder",
                              "fluidist.framework.registry.get(op_type) gives an op's slots and attr defaults")
get_all_op_protos = refused("fluid.framework.get_all_op_protos",
                            "fluidist.framework.registry.all_op_types() lists the registered op types")
_DYGRAPH = "it is a dygraph type; fluidist builds static programs (fluid.layers.create_parameter, Variables)"
ParamBase = refused_class("fluid.framework.ParamBase", _DYGRAPH)
ParameterMetaClass = refused_class("fluid.framework.ParameterMetaClass", _DYGRAPH)
VariableMetaClass = refused_class("fluid.framework.VariableMetaClass", _DYGRAPH)
switch_device = refused("fluid.framework.switch_device",
                        "fluidist runs every op of a program on the Executor's place")


def _get_var(name, program=None):
    """The variable ``name`` of the global block of ``program`` (default: the default main program);
    Paddle's private helper, which its model scripts use."""
    from .program import Program, default_main_program
    program = default_main_program() if program is None else program
    if not isinstance(name, str):
        raise TypeError("_get_var: name must be a str, got %r" % type(name).__name__)
    if not isinstance(program, Program):
        raise TypeError("_get_var: program must be a Program, got %r" % type(program).__name__)
    return program.global_block().var(name)
