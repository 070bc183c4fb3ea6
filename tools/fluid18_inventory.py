"""Write the Paddle 1.8 fluid inventories that ``tests/compat`` checks fluidist against.

Run it with a Python that has ``paddlepaddle==1.8.5`` installed (a throwaway Python 3.8 venv):

    /tmp/pd18/bin/python tools/fluid18_inventory.py > tests/compat/fluid18_names.txt
    /tmp/pd18/bin/python tools/fluid18_inventory.py --modules > tests/compat/fluid18_modules.txt

The first lists the public names (``__all__``) of the fluid modules fluidist answers for, one
``module name`` per line (the table ``tools/compat_table.py`` prints). The second lists every module
of the ``paddle.fluid`` package a script can import, found by walking the package, with the names a
script reaches there: its ``__all__``, the public classes and functions the module itself defines
(``Operator`` in ``fluid.framework``, ``is_persistable`` in ``fluid.io``), and the few names beyond
those that scripts are known to use (``EXTRA``). One ``module [name]`` per line, the module written
from ``fluid`` (``fluid.layers.nn fc``); a module with no names stands alone on its line.

The names are facts about Paddle's API; nothing else of Paddle is read or kept. Left out of the
module inventory (``SKIPPED``): Paddle's own tests, its protobuf modules (fluidist reads Paddle's
files without them), the AVX / no-AVX builds of ``core`` (``fluid.core`` is the one scripts import),
and the parameter-server modules of Paddle's PSLib (``fluid.distributed``, ``...pslib``, ``fleet_util``,
``http_server``), which do not import in Paddle 1.8.5 itself without its PSLib build. In the dygraph
and ``contrib.slim`` trees, which fluidist refuses as whole modules, only ``__all__`` is listed.
"""
import argparse
import importlib
import inspect
import pkgutil
import sys

MODULES = ["framework", "executor", "compiler", "parallel_executor", "io", "reader", "initializer",
           "regularizer", "clip", "optimizer", "nets", "metrics", "profiler",
           "layers.nn", "layers.tensor", "layers.control_flow", "layers.io", "layers.loss",
           "layers.sequence_lod", "layers.learning_rate_scheduler", "layers.metric_op", "layers.rnn",
           "layers.ops", "transpiler", "install_check"]

# module paths (relative to paddle.fluid) left out of the module inventory, with everything under them
SKIPPED = ("tests", "proto", "core_avx", "core_noavx", "distributed", "incubate.fleet.parameter_server.pslib",
           "incubate.fleet.utils.fleet_util", "incubate.fleet.utils.http_server",
           "incubate.data_generator.test_data_generator")
# trees refused as whole modules: only their __all__ is listed
REFUSED_TREES = ("dygraph", "contrib.slim")
# artefacts of how Paddle builds a module, not names a script reaches
NOT_NAMES = {("layers.nn", "func"), ("layers.layer_function_generator", "escape_math")}

# names scripts reach beyond __all__ and the module's own definitions: fluid.core (a compiled module
# with no __all__), the collective helpers (underscored in Paddle, imported by its collective tests),
# and names a module re-exports that scripts import from it
EXTRA = {
    "core": """LoDTensor Tensor LoDTensorArray SelectedRows Scope Variable CPUPlace CUDAPlace CUDAPinnedPlace
        Place VarDesc EOFException EnforceNotMet LodRankTable ProgramDesc BlockDesc OpDesc
        PaddleTensor PaddleBuf PaddleDType NativeConfig AnalysisConfig PaddlePredictor AnalysisPredictor
        NativePaddlePredictor ZeroCopyTensor create_paddle_predictor
        is_compiled_with_cuda is_compiled_with_mkldnn is_compiled_with_dist is_compiled_with_brpc
        get_cuda_device_count globals op_proto_and_checker_maker kAutoGradOpRoleAttrName
        set_feed_variable get_fetch_variable get_variable_tensor kEmptyVarName kTempVarName kGradVarSuffix
        kZeroVarSuffix grad_var_suffix empty_var_name init_devices init_gflags init_glog set_num_threads
        get_all_op_protos load_op_library ProfilerState EventSortingKey enable_profiler disable_profiler
        reset_profiler is_profiler_enabled""".split(),
    "layers.collective": "_allreduce _broadcast _c_allreduce _c_broadcast _c_allgather _c_reducescatter "
                         "_c_sync_calc_stream _c_sync_comm_stream".split(),
    "framework": "Parameter Operator Block default_main_program".split(),
    "executor": "Executor global_scope scope_guard _fetch_var".split(),
    "layer_helper": ["LayerHelper"],
    "incubate.fleet.collective": ["fleet"],
    "incubate.fleet.parameter_server.distribute_transpiler": ["fleet"],
    "lod_tensor": ["create_lod_tensor", "create_random_int_lodtensor"],
    "unique_name": ["generate", "switch", "guard"],
}


def main(out=sys.stdout):
    """fluid18_names.txt: the ``__all__`` of the modules in MODULES."""
    import paddle
    out.write("# Paddle %s fluid: module name (from each module's __all__); see tools/fluid18_inventory.py\n"
              % paddle.__version__)
    seen = set()
    for m in MODULES:
        mod = importlib.import_module("paddle.fluid." + m)
        for name in mod.__all__:
            if (m, name) not in seen:
                seen.add((m, name))
                out.write("%s %s\n" % (m, name))


def _under(path, roots):
    return any(path == r or path.startswith(r + ".") for r in roots)


def importable_modules():
    """The module paths (relative to paddle.fluid, '' for the package) of the fluid package."""
    import paddle.fluid as fluid
    paths = [""]
    for info in pkgutil.walk_packages(fluid.__path__, "paddle.fluid.", onerror=lambda name: None):
        rel = info.name[len("paddle.fluid."):]
        if _under(rel, SKIPPED):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001  (modules Paddle itself cannot import are not scripts' paths)
            continue
        paths.append(rel)
    return paths


def names_of(rel, mod):
    """The names of ``paddle.fluid.<rel>`` a script reaches, in a stable order."""
    names = list(getattr(mod, "__all__", None) or [])
    if rel == "core":   # a compiled module: every class of it counts as "defined there"; EXTRA says which matter
        return [n for n in EXTRA["core"] if hasattr(mod, n)]
    if not _under(rel, REFUSED_TREES):
        for key, value in sorted(vars(mod).items()):
            if (key.startswith("_") or key in names or not (inspect.isclass(value) or inspect.isfunction(value))
                    or getattr(value, "__module__", None) != mod.__name__ or (rel, key) in NOT_NAMES):
                continue
            names.append(key)
        names += [n for n in EXTRA.get(rel, ()) if n not in names and hasattr(mod, n)]
    return [n for n in names if (rel, n) not in NOT_NAMES]


def modules_inventory(out=sys.stdout):
    """fluid18_modules.txt: every importable module of paddle.fluid with the names scripts reach there."""
    import paddle
    out.write("# Paddle %s: every importable module of paddle.fluid and the names a script reaches there\n"
              "# (__all__, the module's own public classes and functions, known extras); module [name].\n"
              "# Made by tools/fluid18_inventory.py --modules; see its docstring for what is left out.\n"
              % paddle.__version__)
    for rel in importable_modules():
        mod = importlib.import_module("paddle.fluid" + ("." + rel if rel else ""))
        path = "fluid" + ("." + rel if rel else "")
        names = names_of(rel, mod)
        if not names:
            out.write("%s\n" % path)
        for name in names:
            out.write("%s %s\n" % (path, name))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", action="store_true", help="write the module inventory instead")
    if parser.parse_args().modules:
        modules_inventory()
    else:
        main()
