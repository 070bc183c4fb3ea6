"""``sitecustomize`` of the reference runs: Paddle 1.8.5 itself runs the same test files, with only
``paddle.dataset`` swapped for the runner's offline stand-ins (``fluidist_offline_dataset``, the same
synthetic data the fluidist runs read), so that both sides train on the same numbers.

Copied into the reference scratch folder as ``site/sitecustomize.py``; Python imports it at start-up.
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

_FROM, _TO = "paddle.dataset", "fluidist_offline_dataset"

# As in the fluidist runs (paddle_shim.py): a home in the scratch folder and Paddle's DATA_HOME under
# it, for this process and the test's children (which get neither variable, but import this file).
_SCRATCH_HOME = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "home")
os.environ["HOME"] = _SCRATCH_HOME
os.environ["FLUIDIST_DATASET_HOME"] = os.path.join(_SCRATCH_HOME, ".cache", "paddle", "dataset")


class _DatasetRename(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != _FROM and not fullname.startswith(_FROM + "."):
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module(_TO + spec.name[len(_FROM):])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _DatasetRename())
