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

    def __init__(self, package, paddle_name, instead):
        self.package, self.paddle_name, self.instead = package, paddle_name, instead

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


def _refusing_getattr(paddle_module, instead):
    made = {}

    def __getattr__(name):
        if name.startswith("_"):
            raise AttributeError("module %r has no attribute %r" % (paddle_module, name))
        if name not in made:
            made[name] = refused_class("%s.%s" % (paddle_module, name), instead)
        return made[name]
    return __getattr__


def refuse_module_tree(package_globals, paddle_name, instead):
    """Make the package whose globals are given, and every module path under it, a refused tree:
    importing any of them works, and each public name in them is a refused class (calling it, or
    instantiating a subclass, raises NotImplementedError naming ``paddle_name.<module>.<name>`` and
    ``instead``). For Paddle's APIs fluidist leaves out wholesale (dygraph, contrib)."""
    import sys
    package = package_globals["__name__"]
    package_globals["__getattr__"] = _refusing_getattr(paddle_name, instead)
    if not any(isinstance(f, _RefusedTree) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(_RefusedTree(package, paddle_name, instead))


# ---------------------------------------------------------------- Paddle modules of refusals only
_TRAINERS = ("Executor.train_from_dataset(program, dataset, thread=n, fetch_list=..., fetch_info=...) "
             "chooses its trainer itself")
_WORKERS = "Executor.train_from_dataset(program, dataset, thread=n) runs Hogwild-style threads itself"
_PIPELINE = "pipeline training is not provided; train with pservers or all-reduce"
_DOWNPOUR = "PSLib's Downpour is not provided; use fleet's parameter-server mode"

#: The modules of Paddle 1.8 that fluidist answers with refusals only: path -> (docstring, ``__all__``,
#: {name: (the Paddle name the refusal gives, what to use instead)}). ``fluidist.paddle_paths`` makes
#: each module (:func:`refused_module`) when a script first imports its path.
REFUSED_MODULES = {
    "fluidist.trainer_desc": (
        "``fluid.trainer_desc``: the C++ trainers Paddle's ``train_from_dataset`` configured. fluidist's "
        "``Executor.train_from_dataset`` runs its own threads; these classes are refused.",
        ["TrainerDesc", "MultiTrainer", "DistMultiTrainer", "PipelineTrainer"],
        {"TrainerDesc": ("fluid.TrainerDesc", _TRAINERS), "MultiTrainer": ("fluid.MultiTrainer", _TRAINERS),
         "DistMultiTrainer": ("fluid.DistMultiTrainer", _TRAINERS),
         "PipelineTrainer": ("fluid.PipelineTrainer", _PIPELINE)}),
    "fluidist.device_worker": (
        "``fluid.device_worker``: the per-thread workers of Paddle's C++ trainers (Hogwild, DownpourSGD, "
        "Section). fluidist's ``train_from_dataset`` runs Hogwild-style threads itself; these are refused.",
        ["DeviceWorker", "Hogwild", "DownpourSGD", "Section", "DownpourSGDOPT"],
        {"DeviceWorker": ("fluid.device_worker.DeviceWorker", _WORKERS),
         "Hogwild": ("fluid.device_worker.Hogwild", _WORKERS),
         "DownpourSGD": ("fluid.device_worker.DownpourSGD", _DOWNPOUR),
         "DownpourSGDOPT": ("fluid.device_worker.DownpourSGDOPT", _DOWNPOUR),
         "Section": ("fluid.device_worker.Section", _PIPELINE),
         "DeviceWorkerFactory": ("fluid.device_worker.DeviceWorkerFactory", _WORKERS)}),
    "fluidist.evaluator": (
        "``fluid.evaluator``: Paddle's evaluators, deprecated since Paddle 1.2 in favour of ``fluid.metrics``. "
        "Each raises NotImplementedError naming its ``fluid.metrics`` replacement.",
        ["ChunkEvaluator", "EditDistance", "DetectionMAP"],
        {"Evaluator": ("fluid.evaluator.Evaluator",
                       "deprecated in Paddle; subclass fluid.metrics.MetricBase and feed it fetched values"),
         "ChunkEvaluator": ("fluid.evaluator.ChunkEvaluator",
                            "deprecated in Paddle; use layers.chunk_eval with fluid.metrics.ChunkEvaluator"),
         "EditDistance": ("fluid.evaluator.EditDistance",
                          "deprecated in Paddle; use layers.edit_distance with fluid.metrics.EditDistance"),
         "DetectionMAP": ("fluid.evaluator.DetectionMAP", "compute mAP in NumPy on the fetched detections")}),
    "fluidist.data_feed_desc": (
        "``fluid.data_feed_desc``: Paddle's ``DataFeedDesc`` configured a C++ data feed from a protobuf text "
        "file. fluidist's datasets take their slots from the variables instead.",
        ["DataFeedDesc"],
        {"DataFeedDesc": ("fluid.DataFeedDesc", "create the dataset with fluid.DatasetFactory().create_dataset(...) "
                                                "and give it its slots with dataset.set_use_var([...]) and "
                                                "set_batch_size(n)")}),
    "fluidist.dygraph_utils": (
        "``fluid.dygraph_utils``: Paddle's helpers for dygraph layers; fluidist has no dygraph mode, and the "
        "module holds nothing a static program uses.", [], {}),
}


def refused_module(path):
    """The module of refusals ``REFUSED_MODULES[path]`` describes (made anew on each call)."""
    import types
    doc, public, refusals = REFUSED_MODULES[path]
    module = types.ModuleType(path, doc)
    vars(module).update({name: refused_class(paddle_name, instead)
                         for name, (paddle_name, instead) in refusals.items()})
    module.__all__ = list(public)
    return module
