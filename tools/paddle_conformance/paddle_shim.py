"""The ``paddle`` package the conformance runner puts in front of Paddle's tests (copied into the scratch
folder as ``paddle/__init__.py``; not imported by fluidist itself).

It renames and nothing else: ``paddle.fluid`` *is* the ``fluidist`` module object, and every
``paddle.fluid.X`` import gives the module ``fluidist.X`` (one module, one op registry), except
``paddle.fluid.tests``, which is the scratch copy of Paddle's test tree. The rest of ``paddle``
(``paddle.reader``, ``paddle.batch``, ``paddle.compat``, ...) is Paddle's own pure-Python code, copied
beside this file at run time from the Paddle tree under test, and ``paddle.dataset`` the runner's
offline stand-ins (``offline_dataset``): Paddle's data servers are out of reach here.
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_TESTS = os.environ.get("FLUIDIST_PADDLE_TESTS_DIR", os.path.join(os.path.dirname(_HERE), "..", "tests"))
_PREFIX = "paddle.fluid"

# Paddle's DATA_HOME is ~/.cache/paddle/dataset, and some tests read their downloads there without
# asking DATA_HOME (dist_transformer.py), in child processes whose environment keeps neither HOME nor
# FLUIDIST_DATASET_HOME: so every process under the runner, on importing paddle, takes a home of its
# own in the scratch folder (``<scratch>/home``) and its DATA_HOME under it, as Paddle lays them out.
_SCRATCH_HOME = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "home")
os.environ["HOME"] = _SCRATCH_HOME
os.environ["FLUIDIST_DATASET_HOME"] = os.path.join(_SCRATCH_HOME, ".cache", "paddle", "dataset")


class _FluidRename(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``paddle.fluid[.X]`` -> ``fluidist[.X]`` (the same module objects), ``paddle.fluid.tests`` -> the copy."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PREFIX and not fullname.startswith(_PREFIX + "."):
            return None
        if fullname == _PREFIX + ".tests":
            init = os.path.join(_TESTS, "__init__.py")
            return importlib.util.spec_from_file_location(fullname, init, submodule_search_locations=[_TESTS])
        if fullname.startswith(_PREFIX + ".tests."):
            return None                         # found on paddle.fluid.tests.__path__ as usual
        real = "fluidist" + fullname[len(_PREFIX):]
        try:
            found = real in sys.modules or importlib.util.find_spec(real) is not None
        except (ImportError, AttributeError, ValueError):
            found = False
        if not found:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module("fluidist" + spec.name[len(_PREFIX):])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _FluidRename())

import paddle.fluid  # noqa: E402,F401  (the rename, checked at once)

# Paddle's ``import paddle.fluid`` loads the whole framework; fluidist's face loads it on its first use
# (PEP 562), which happens here, so that the modules below are aliased before any test imports them
paddle.fluid.Program  # noqa: B018

# every fluidist module already imported is already imported under its Paddle name too, as in Paddle:
# a first import of the alias would bind the module onto its package, hiding a package attribute of the
# same name (``fluid.layers.rnn`` is the function ``rnn``, not the module, after ``import
# paddle.fluid.layers.rnn``)
for _name, _module in list(sys.modules.items()):
    if _name.startswith("fluidist.") and _module is not None:
        sys.modules.setdefault(_PREFIX + _name[len("fluidist"):], _module)
from paddle.version import full_version as __version__  # noqa: E402,F401
from paddle.version import commit as __git_commit__  # noqa: E402,F401

# what Paddle's own paddle/__init__.py imports
import paddle.reader  # noqa: E402,F401
import paddle.dataset  # noqa: E402,F401
import paddle.batch  # noqa: E402,F401
import paddle.compat  # noqa: E402,F401
import paddle.distributed  # noqa: E402,F401
batch = batch.batch  # noqa: F821  (as in Paddle: the module's function)
