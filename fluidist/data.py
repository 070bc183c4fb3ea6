"""``fluid.data``: the module of ``fluid.data(name, shape, dtype, lod_level)``.

The package binds ``fluidist.data`` to the function, as Paddle does. Python 3.11's import machinery
binds a package's attribute to the submodule again whenever ``fluidist.data`` is imported by path
(``importlib.import_module("fluidist.data")``), which would turn ``fluid.data(...)`` into calling a
module; so this module is callable too and calls the function."""
import sys
import types

from .layers.io import data  # noqa: F401

__all__ = ["data"]


class _CallableModule(types.ModuleType):
    def __call__(self, *args, **kwargs):
        return data(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
