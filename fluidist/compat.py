"""Names of Paddle fluid 1.x that fluidist does not implement.

A fluid 1.x name is never silently missing: it exists, and using it raises ``NotImplementedError``
naming it and what to use instead. Each such object carries ``__fluidist_refused__ = True`` so that
tools (the migration page's compatibility table, the name inventory test) can count refusals.

    layers.warpctc = refused("fluid.layers.warpctc", "use layers.linear_chain_crf or ...")
    DetectionMAP = refused_class("fluid.metrics.DetectionMAP", "compute mAP with numpy on fetched boxes")
"""


def _message(name, instead):
    return "%s is not implemented in fluidist%s" % (name, (": " + instead) if instead else "")


def refused(name, instead=""):
    """A function standing for the fluid 1.x function ``name``: calling it raises NotImplementedError."""
    msg = _message(name, instead)

    def refused_function(*args, **kwargs):
        raise NotImplementedError(msg)

    short = name.rpartition(".")[2]
    refused_function.__name__ = refused_function.__qualname__ = short
    refused_function.__doc__ = "Not implemented in fluidist. " + (instead or "")
    refused_function.__fluidist_refused__ = True
    return refused_function


class _RefusedMeta(type):
    """The type of refused classes: a public attribute of one is a refusal too, so that a refused
    name standing where Paddle has a module (``from fluid.dygraph import nn``, then ``nn.Linear``)
    refuses ``nn.Linear`` by name instead of raising AttributeError."""

    def __getattr__(cls, attr):
        if attr.startswith("_"):
            raise AttributeError("type object %r has no attribute %r" % (cls.__name__, attr))
        return refused_class("%s.%s" % (cls.__paddle_name__, attr), cls.__instead__)


def refused_class(name, instead=""):
    """A class standing for the fluid 1.x class ``name``: instantiating it raises NotImplementedError."""
    msg = _message(name, instead)

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(msg)

    short = name.rpartition(".")[2]
    return _RefusedMeta(short, (), {"__new__": __new__, "__doc__": "Not implemented in fluidist. " + (instead or ""),
                                    "__fluidist_refused__": True, "__module__": "fluidist",
                                    "__paddle_name__": name, "__instead__": instead})


def is_refused(obj):
    return bool(getattr(obj, "__fluidist_refused__", False))


class _RefusedTree:
    """Imports of ``<package>.<anything>`` under a refused tree: each gives a module whose public
    names are refusals (see :func:`refuse_module_tree`)."""

    def __init__(self, package, paddle_name, instead, star_names=None):
        self.package, self.paddle_name, self.instead = package, paddle_name, instead
        self.star_names = dict(star_names or {})

    def find_spec(self, fullname, path=None, target=None):
        import importlib.util
        if fullname.startswith(self.package + "."):
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__path__ = []
        module.__getattr__ = _refusing_getattr(self.paddle_name + module.__name__[len(self.package):], self.instead)
        names = self.star_names.get(module.__name__[len(self.package) + 1:])
        if names is not None:       # what ``from <module> import *`` gives: each a refusal
            module.__all__ = list(names)


def _refusing_getattr(paddle_module, instead):
    made = {}

    def __getattr__(name):
        if name.startswith("_"):
            raise AttributeError("module %r has no attribute %r" % (paddle_module, name))
        if name not in made:
            made[name] = refused_class("%s.%s" % (paddle_module, name), instead)
        return made[name]
    return __getattr__


def refuse_module_tree(package_globals, paddle_name, instead, star_names=None):
    """Make the package whose globals are given, and every module path under it, a refused tree:
    importing any of them works, and each public name in them is a refused class (calling it, or
    instantiating a subclass, raises NotImplementedError naming ``paddle_name.<module>.<name>`` and
    ``instead``). For Paddle's APIs fluidist leaves out wholesale (dygraph, contrib).
    ``star_names``: ``{module path under the package: Paddle's __all__ there}``, the names
    ``from <module> import *`` gives (as refusals)."""
    import sys
    package = package_globals["__name__"]
    package_globals["__getattr__"] = _refusing_getattr(paddle_name, instead)
    if not any(isinstance(f, _RefusedTree) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(_RefusedTree(package, paddle_name, instead, star_names))
