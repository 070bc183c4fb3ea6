"""Paddle 1.8's module paths that fluidist's own layout does not give by itself: one table, applied in
one place.

``PADDLE_PATHS`` maps a Paddle module path (``fluidist.<path>`` as ``paddle.fluid.<path>``, and
``paddle.distributed``'s launcher as ``fluidist.distributed.*``) to the module that is it: importing
the path gives that very module object (``fluidist.compiler is fluidist.executor.compiler``), and
nothing is imported before a script asks for the path. A value that is not a module name makes the
module: :func:`fluidist.compat.refused_module` for Paddle's modules of refusals only, or a callable
module for ``fluid.data``. The finder (:class:`PaddlePathFinder`) is installed by ``fluidist/__init__``;
``python -m <path>`` runs the real module as a script (``python -m fluidist.distributed.launch``).

``PADDLE_NAMES`` holds the names Paddle's ``fluid.core`` and ``fluid.framework`` modules have that
fluidist defines above those packages (``core.Operator`` runs a one-op program with an Executor,
``core.AnalysisConfig`` runs inference programs, ``framework.cpu_places`` makes places of ``core``,
which the IR does not import): each of the two packages' ``__getattr__`` (PEP 562) asks
:func:`paddle_name`, so the name is found where Paddle has it and defined where it belongs.

``tests/compat/fluid18_modules.txt`` lists every path and name checked. This module imports nothing
of fluidist but the refusal helpers and the table of Paddle 2.x's names: it names modules, it does not
load them.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
from typing import Callable, Dict, Optional, Union

from .compat import REFUSED_MODULES, import_refusal, refused_module


class _CallableModule:
    """A maker of the module of one function that is also callable as it.

    ``fluid.data`` is both a function (the package binds it) and a module path. Python 3.11's import
    machinery binds a package's attribute to the submodule again whenever the path is imported
    (``importlib.import_module("fluidist.data")``), which would turn ``fluid.data(...)`` into calling
    a module; this module calls the function."""

    def __init__(self, module_name: str, function_name: str) -> None:
        self.module_name, self.function_name = module_name, function_name

    def __call__(self, path: str) -> types.ModuleType:
        function = getattr(importlib.import_module(self.module_name), self.function_name)

        class _Module(types.ModuleType):
            def __call__(self, *args, **kwargs):
                return function(*args, **kwargs)

        module = _Module(path, "``%s``: the module of ``%s``." % (path, self.function_name))
        vars(module).update({self.function_name: function, "__all__": [self.function_name]})
        return module


#: Paddle's module path -> the module that is it (a dotted name), or a maker of the module.
PADDLE_PATHS: Dict[str, Union[str, Callable[[str], types.ModuleType]]] = {
    "fluidist.backward": "fluidist.passes.backward",
    "fluidist.clip": "fluidist.passes.clip",
    "fluidist.regularizer": "fluidist.passes.regularizer",
    "fluidist.optimizer": "fluidist.optim.optimizer",
    "fluidist.debugger": "fluidist.viz.debugger",
    "fluidist.graphviz": "fluidist.viz.graphviz",
    "fluidist.net_drawer": "fluidist.viz.net_drawer",
    "fluidist.communicator": "fluidist.transpiler.communicator",
    "fluidist.data_feeder": "fluidist.reader.data_feeder",
    "fluidist.default_scope_funcs": "fluidist.core.scope_stack",
    "fluidist.distribute_lookup_table": "fluidist.transpiler.distribute_lookup_table",
    "fluidist.input": "fluidist.layers.input",
    "fluidist.lod_tensor": "fluidist.core.lod_tensor",
    "fluidist.multiprocess_utils": "fluidist.reader.cleanup",
    "fluidist.op": "fluidist.executor.eager_op",
    "fluidist.parallel_executor": "fluidist.executor.parallel_executor",
    "fluidist.compiler": "fluidist.executor.compiler",
    "fluidist.data": _CallableModule("fluidist.layers.io", "data"),
    "fluidist.layer_helper": "fluidist.layers.layer_helper",
    "fluidist.layer_helper_base": "fluidist.layers.layer_helper",
    "fluidist.trainer_factory": "fluidist.executor.dataset_runner",
    "fluidist.unique_name": "fluidist.framework.unique_name",
    # modules of refusals only (fluidist.compat.REFUSED_MODULES)
    "fluidist.data_feed_desc": refused_module,
    "fluidist.device_worker": refused_module,
    "fluidist.dygraph_utils": refused_module,
    "fluidist.evaluator": refused_module,
    "fluidist.trainer_desc": refused_module,
    # paddle.distributed's launchers
    "fluidist.distributed.launch": "fluidist.launch.cli",
    "fluidist.distributed.launch_ps": "fluidist.launch.paddle_ps",
}

_INFERENCE = "fluidist.inference"
_DESC = "fluidist.paddle_format.desc"
_PLACES = "fluidist.device.places"

#: Paddle's module -> {name: "module" or "module:attribute" that defines it}, for the names that
#: module's package does not define itself.
PADDLE_NAMES: Dict[str, Dict[str, str]] = {
    "fluidist.core": {
        **{name: _INFERENCE for name in ("PaddleTensor", "PaddleBuf", "PaddleDType", "NativeConfig",
                                         "AnalysisConfig", "PaddlePredictor", "AnalysisPredictor",
                                         "NativePaddlePredictor", "ZeroCopyTensor", "create_paddle_predictor")},
        "Operator": "fluidist.executor.eager_op:EagerOperator",
        "op_support_gpu": "fluidist.executor.eager_op",
        "get_op_attrs_default_value": "fluidist.executor.eager_op",
        "infer_no_need_buffer_slots": "fluidist.executor.eager_op",
        "Dataset": "fluidist.dataset:CoreDataset",           # a dataset's settings and in-memory operations
        "_create_loaded_parameter": "fluidist.io.paddle_helpers",   # fills a scope
        **{name: _DESC for name in ("AttrType", "ProgramDesc", "BlockDesc", "OpDesc", "VarDesc",
                                    "get_grad_op_desc")},
    },
    "fluidist.framework": {name: _PLACES for name in ("cpu_places", "cuda_places", "cuda_pinned_places",
                                                       "is_compiled_with_cuda")},
}


def paddle_name(module: str, name: str):
    """The object Paddle's ``module`` calls ``name`` (``PADDLE_NAMES``); AttributeError if none."""
    where = PADDLE_NAMES.get(module, {}).get(name)
    if where is None:
        raise AttributeError("module %r has no attribute %r" % (module, name))
    module_name, _, attribute = where.partition(":")
    return getattr(importlib.import_module(module_name), attribute or name)


def paddle_names(module: str) -> list:
    """The names ``PADDLE_NAMES`` gives ``module`` (for its ``__dir__``)."""
    return sorted(PADDLE_NAMES.get(module, ()))


def _target(path: str) -> Optional[Union[str, Callable[[str], types.ModuleType]]]:
    """What ``path`` is: an entry of the table, or a module under an entry that is a package."""
    if path in PADDLE_PATHS:
        return PADDLE_PATHS[path]
    for prefix, target in PADDLE_PATHS.items():
        if isinstance(target, str) and path.startswith(prefix + "."):
            return target + path[len(prefix):]
    return None


class PaddlePathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of a path of ``PADDLE_PATHS``: the module there, under Paddle's name as well."""

    def find_spec(self, fullname, path=None, target=None):
        found = _target(fullname) if fullname.startswith("fluidist.") else None
        if found is None:
            refusal = import_refusal(fullname)   # Paddle 2.x's paths (fluidist.static): say what fluidist is
            if refusal is not None:
                raise refusal
            return None
        if not isinstance(found, str):
            return importlib.util.spec_from_loader(fullname, self)
        real = importlib.util.find_spec(found)
        if real is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=real.origin,
                                               is_package=real.submodule_search_locations is not None)

    def create_module(self, spec):
        return None     # a placeholder module: exec_module puts the real one in its place

    def exec_module(self, module):
        """Put the module the table names into ``sys.modules`` under Paddle's path (the import system
        then returns it, and binds it on the parent package)."""
        path = module.__name__
        found = _target(path)
        sys.modules[path] = importlib.import_module(found) if isinstance(found, str) else found(path)

    def get_code(self, fullname):
        """``python -m <Paddle's path>``: run the real module as the script."""
        found = _target(fullname)
        if not isinstance(found, str):
            raise ImportError("%s cannot be run as a script" % fullname)
        return compile("import runpy\nrunpy.run_module(%r, run_name='__main__')\n" % found, fullname, "exec")


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(f, PaddlePathFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, PaddlePathFinder())


# ---------------------------------------------------------------- what type checkers see
# The finder is invisible to static tools: mypy looks for ``fluidist/optimizer.py`` or ``.pyi`` on
# disk. So each path of the table that names a module, or a module of refusals, has a stub there
# (``fluidist/optimizer.pyi``: the names of the real module), made from the table by
# :func:`write_typing_stubs` and kept equal to it by ``tests/test_house_rules.py``; the import system
# never reads a ``.pyi``. ``fluid.data`` has none: checkers see the function through the face, and the
# docs' reader (griffe) would take a stub there for the module instead of the function.
_STUB_HEAD = ("# Made from fluidist/paddle_paths.py by write_typing_stubs(): what type checkers see at Paddle's\n"
              "# path %s, which the import system finds through the table.\n")


def stubbed_paths() -> list:
    """The paths of the table that have a typing stub (all but the callable module ``fluidist.data``)."""
    return [path for path, target in PADDLE_PATHS.items() if isinstance(target, str) or target is refused_module]


def typing_stub(path: str) -> str:
    """The text of the stub of Paddle's path ``path`` (one of :func:`stubbed_paths`)."""
    target = PADDLE_PATHS[path]
    head = _STUB_HEAD % path + "from typing import Any\n\n"
    if target is refused_module:        # a module of refusals: its names, each a refused class
        _, public, refusals = REFUSED_MODULES[path]
        return head + "".join("%s: Any\n" % name for name in sorted(set(public) | set(refusals)))
    assert isinstance(target, str), path
    # the real module's names; those outside its __all__ (Paddle's scripts import some) are Any
    return head + "from %s import *  # noqa: F401,F403\n\n\ndef __getattr__(name: str) -> Any: ...\n" % target


def stub_file(path: str, package_dir: str) -> str:
    """Where the stub of ``path`` lies under ``package_dir`` (the directory of ``fluidist``)."""
    import os
    return os.path.join(package_dir, *path.split(".")[1:]) + ".pyi"


def write_typing_stubs(package_dir: Optional[str] = None) -> None:
    """Write every stub (after an edit of the table:
    ``python -c "from fluidist.paddle_paths import write_typing_stubs; write_typing_stubs()"``)."""
    import os
    package_dir = package_dir or os.path.dirname(os.path.abspath(__file__))
    for path in stubbed_paths():
        with open(stub_file(path, package_dir), "w") as f:
            f.write(typing_stub(path))
