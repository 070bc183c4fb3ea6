"""Names of Paddle fluid 1.x that fluidist does not implement.

A fluid 1.x name is never silently missing: it exists, and using it raises ``NotImplementedError``
naming it and what to use instead. Each such object carries ``__fluidist_refused__ = True`` so that
tools (the migration page's compatibility table, the name inventory test) can count refusals.

    layers.warpctc = refused("fluid.layers.warpctc", "use layers.linear_chain_crf or ...")
    DetectionMAP = refused_class("fluid.metrics.DetectionMAP", "compute mAP with numpy on fetched boxes")

Paddle 2.x's names met at fluid 1.x's paths (``fluid.enable_static``, ``fluid.static.nn.fc``) are not
refusals: they raise AttributeError saying fluid 1.x's spelling (:data:`PADDLE2_NAMES`, the last section).
"""
import importlib
import linecache
import re
import sys
from types import FrameType
from typing import Dict, Optional



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


# ---------------------------------------------------------------- Paddle 2.x's names
# Paddle 2.x's names met at fluid 1.x's paths: what a 2.x-era line finds in fluidist.
#
# A user who learned Paddle 2.x writes ``paddle.enable_static()``, ``paddle.static.data(...)``,
# ``paddle.static.nn.fc(...)`` or ``paddle.nn.Linear(...)``; with ``import fluidist as fluid`` (or ``as
# paddle``) those lines meet fluidist's face, which is Paddle fluid 1.x's. A plain ``AttributeError``
# would leave them guessing, so the face's ``__getattr__`` (``fluidist/__init__``, and
# ``fluid.optimizer``'s) asks :func:`hint` for the missing name and the AttributeError says what fluidist
# is and the 1.x spelling where one exists (``static.nn.fc`` -> ``fluid.layers.fc``) or why none is
# needed (``enable_static``). It stays an AttributeError, so ``hasattr(fluid, "enable_static")`` is False
# and a script that probes for 2.x keeps its 1.x path. Imports of such a path (``import
# fluidist.static``, ``from fluidist import static``) raise ModuleNotFoundError with the same text
# (:mod:`fluidist.paddle_paths`' finder).
#
# Like the rest of this module, they import nothing of fluidist at load time: the generic rules look the names up in
# ``fluid.layers`` (and the face) only when a message is made, after the face has loaded.
WHAT_FLUIDIST_IS = ("fluidist is Paddle fluid 1.x's static-graph API (build a Program, run it with "
                    "fluid.Executor; no dynamic mode)")

_NOT_NEEDED = "not needed (a fluidist program is always static): drop the call"
_NO_DYNAMIC = "fluidist has no dynamic mode: build the program, then run it with fluid.Executor(place).run(...)"
_NO_TENSORS = ("fluidist has no eager tensors: feed NumPy arrays to exe.run(program, feed={name: array}), "
               "or make a LoDTensor with fluid.create_lod_tensor(array, lod, place)")
_STATIC_CLASSES = "a layer is a function call that adds its ops (and parameters) to the program"

#: 2.x's path below ``paddle`` -> fluid 1.x's spelling (``fluid.``...) or, in words, why there is none.
#: A spelling (``fluid.``...) is code a user types, perhaps with a remark; anything else is a sentence.
PADDLE2_NAMES: Dict[str, str] = {
    "enable_static": _NOT_NEEDED,
    "disable_static": _NO_DYNAMIC,
    "in_dynamic_mode": "fluid.in_dygraph_mode()",
    "to_tensor": _NO_TENSORS,
    "set_device": "give the Executor its place: fluid.Executor(fluid.CPUPlace()) or fluid.Executor(fluid.CUDAPlace(0))",
    "get_device": "the place is the Executor's: exe.place",
    "seed": "set the programs' seed: fluid.default_main_program().random_seed = n (and the startup program's)",
    "no_grad": "not needed: only what optimizer.minimize(loss) or fluid.backward.append_backward(loss) "
               "differentiates gets gradients",
    "grad": "fluid.gradients",
    "Model": "no high-level Model API: write the loop, exe.run(main, feed=..., fetch_list=[loss]) per batch",
    "jit": "save a program for inference with fluid.io.save_inference_model",
    "metric": "fluid.metrics",
    "vision": "no model zoo or transforms in fluidist: build the network with fluid.layers and fluid.nets",
    "summary": "print the program: print(fluid.default_main_program())",
    "full": "fluid.layers.fill_constant",
    "add": "fluid.layers.elementwise_add",
    "subtract": "fluid.layers.elementwise_sub",
    "multiply": "fluid.layers.elementwise_mul",
    "divide": "fluid.layers.elementwise_div",
    "maximum": "fluid.layers.elementwise_max",
    "minimum": "fluid.layers.elementwise_min",
    "sum": "fluid.layers.reduce_sum",
    "max": "fluid.layers.reduce_max",
    "min": "fluid.layers.reduce_min",
    "prod": "fluid.layers.reduce_prod",
    "arange": "fluid.layers.range",
    "rand": "fluid.layers.uniform_random",
    "randn": "fluid.layers.gaussian_random",
    "mean": "fluid.layers.mean (fluid.layers.reduce_mean for a mean along dims)",
    "where": "fluid 1.x has no where(cond, x, y); fluid.layers.where(cond) gives the indices of true elements",
    # paddle.static: the 1.x names of the framework, at the top of fluid
    "static": "its names are at fluid's top (static.data is fluid.data, static.Program is fluid.Program, "
              "static.Executor is fluid.Executor) and static.nn's in fluid.layers (static.nn.fc is fluid.layers.fc)",
    "static.InputSpec": "fluid.data (a feed variable with its shape and dtype)",
    "static.nn": "fluid.layers",
    "static.save_inference_model": "fluid.io.save_inference_model",
    "static.load_inference_model": "fluid.io.load_inference_model",
    # paddle.nn: 2.x's layer classes are fluid 1.x's layer functions
    "nn": "its layer classes are fluid 1.x's layer functions, in fluid.layers (nn.Linear is fluid.layers.fc, "
          "nn.functional.relu is fluid.layers.relu)",
    "nn.functional": "fluid.layers",
    "nn.Linear": "fluid.layers.fc",
    "nn.Conv2D": "fluid.layers.conv2d",
    "nn.Conv2DTranspose": "fluid.layers.conv2d_transpose",
    "nn.Conv3D": "fluid.layers.conv3d",
    "nn.BatchNorm": "fluid.layers.batch_norm",
    "nn.BatchNorm1D": "fluid.layers.batch_norm",
    "nn.BatchNorm2D": "fluid.layers.batch_norm",
    "nn.LayerNorm": "fluid.layers.layer_norm",
    "nn.GroupNorm": "fluid.layers.group_norm",
    "nn.Embedding": "fluid.embedding",
    "nn.Dropout": "fluid.layers.dropout",
    "nn.MaxPool2D": "fluid.layers.pool2d(x, pool_type='max', ...)",
    "nn.AvgPool2D": "fluid.layers.pool2d(x, pool_type='avg', ...)",
    "nn.ReLU": "fluid.layers.relu",
    "nn.GELU": "fluid.layers.gelu",
    "nn.Sigmoid": "fluid.layers.sigmoid",
    "nn.Tanh": "fluid.layers.tanh",
    "nn.Softmax": "fluid.layers.softmax",
    "nn.LSTM": "fluid.layers.lstm (fluid.layers.dynamic_lstm for LoD sequences)",
    "nn.GRU": "fluid.layers.dynamic_gru",
    "nn.CrossEntropyLoss": "fluid.layers.softmax_with_cross_entropy (on logits) or fluid.layers.cross_entropy "
                           "(on probabilities)",
    "nn.MSELoss": "fluid.layers.mse_loss",
    "nn.BCEWithLogitsLoss": "fluid.layers.sigmoid_cross_entropy_with_logits",
    "nn.Layer": "no Layer classes: " + _STATIC_CLASSES,
    "nn.Sequential": "no Layer classes: call the layers one after the other; " + _STATIC_CLASSES,
    "nn.ClipGradByGlobalNorm": "fluid.clip.GradientClipByGlobalNorm",
    "nn.ClipGradByNorm": "fluid.clip.GradientClipByNorm",
    "nn.ClipGradByValue": "fluid.clip.GradientClipByValue",
    "nn.initializer": "fluid.initializer",
    "nn.initializer.XavierUniform": "fluid.initializer.Xavier(uniform=True)",
    "nn.initializer.XavierNormal": "fluid.initializer.Xavier(uniform=False)",
    "nn.initializer.KaimingUniform": "fluid.initializer.MSRA(uniform=True)",
    "nn.initializer.KaimingNormal": "fluid.initializer.MSRA(uniform=False)",
    # paddle.optimizer: fluid.optimizer has the same optimizers; these are 2.x's own
    "optimizer.AdamW": "fluidist has no decoupled weight decay (Paddle 1.8's "
                       "contrib.extend_with_decoupled_weight_decay is not implemented): fluid.optimizer.Adam with "
                       "regularization=fluid.regularizer.L2Decay(coeff) is the nearest (L2 on the gradient)",
    "optimizer.lr": "the learning-rate schedules of fluid.layers (fluid.layers.piecewise_decay, "
                    "fluid.layers.cosine_decay, ...), given as the optimizer's learning_rate",
    "optimizer.lr.PiecewiseDecay": "fluid.layers.piecewise_decay",
    "optimizer.lr.ExponentialDecay": "fluid.layers.exponential_decay",
    "optimizer.lr.NaturalExpDecay": "fluid.layers.natural_exp_decay",
    "optimizer.lr.InverseTimeDecay": "fluid.layers.inverse_time_decay",
    "optimizer.lr.PolynomialDecay": "fluid.layers.polynomial_decay",
    "optimizer.lr.CosineAnnealingDecay": "fluid.layers.cosine_decay",
    "optimizer.lr.NoamDecay": "fluid.layers.noam_decay",
    "optimizer.lr.LinearWarmup": "fluid.layers.linear_lr_warmup",
}

#: 2.x namespaces whose other names fluid 1.x keeps under one module (the generic rules of :func:`spelling`).
_NAMESPACES = {"static.nn": "layers", "nn.functional": "layers", "nn": "layers", "static": "", "": "layers"}


def _has(module: str, name: str) -> bool:
    """Whether fluidist's ``module`` (``""``: the face) has ``name``, without raising (a module not loaded
    yet is imported: the messages are made after the face has loaded)."""
    try:
        found = importlib.import_module("fluidist" + ("." + module if module else ""))
    except ImportError:
        return False
    return name in getattr(found, "__dict__", {}) and not getattr(getattr(found, name), "__fluidist_refused__", False)


def spelling(path: str) -> Optional[str]:
    """fluid 1.x's spelling of 2.x's ``paddle.<path>`` (``static.nn.fc`` -> ``fluid.layers.fc``), or the
    sentence saying why there is none; None for a path this module knows nothing of."""
    if path in PADDLE2_NAMES:
        return PADDLE2_NAMES[path]
    namespace, _, name = path.rpartition(".")
    if "." in name or name.startswith("_"):
        return None
    if namespace == "static":
        for module in ("", "io", "layers"):  # static.Program, static.save, static.create_global_var
            if _has(module, name):
                return "fluid.%s%s" % (module + "." if module else "", name)
        return None
    if namespace in _NAMESPACES and namespace != "" and _has(_NAMESPACES[namespace], name):
        return "fluid.%s.%s" % (_NAMESPACES[namespace], name)
    if namespace == "nn.initializer" and _has("initializer", name):
        return "fluid.initializer.%s" % name
    return None


def hint(module: str, name: str, frame: Optional[FrameType] = None) -> Optional[str]:
    """The AttributeError's text for ``module``'s missing ``name`` (``module`` a dotted name of fluidist) when
    it is Paddle 2.x's, else None. ``frame``: the frame that asked; where its line spells the path on
    (``fluid.static.nn.fc(...)``), the message gives the spelling of the whole path."""
    below = module[len("fluidist"):].lstrip(".")
    path = "%s.%s" % (below, name) if below else name
    if below == "" and name not in PADDLE2_NAMES and not _has("layers", name):
        return None   # the face: the names of the table, and fluid.layers' (paddle.concat: fluid.layers.concat)
    told = spelling(path) if path in PADDLE2_NAMES or below else "fluid.layers." + name
    if told is None:
        return None
    longer = _path_on_line(frame, name)
    if longer:
        told_longer = spelling(path + longer)
        if told_longer is not None:
            path, told = path + longer, told_longer
    if not told.startswith("fluid."):     # a sentence: why there is no spelling
        how = "paddle.%s is Paddle 2.x's; %s" % (path, told)
    else:
        how = "fluid 1.x spells paddle.%s as %s" % (path, told)
    return "module %r has no attribute %r: %s. %s." % (module, name, how, WHAT_FLUIDIST_IS)


def _path_on_line(frame: Optional[FrameType], name: str) -> str:
    """The attributes the asking expression takes after ``.name`` (``".nn.fc"`` for
    ``fluid.static.nn.fc(x)``): read from the source after the columns Python records for the instruction
    that asked (Python 3.11's ``co_positions``; nothing before 3.11, or without the source)."""
    if frame is None or not hasattr(frame.f_code, "co_positions"):
        return ""
    positions = frame.f_code.co_positions
    _, end_line, _, end_col = list(positions())[frame.f_lasti // 2]
    if end_line is None or end_col is None:
        return ""
    line = linecache.getline(frame.f_code.co_filename, end_line)
    if not line[:end_col].endswith(name):     # not the attribute itself (hasattr(fluid, "static"), ...)
        return ""
    match = re.match(r"(?:\.[A-Za-z_]\w*)+", line[end_col:])
    return match.group(0) if match else ""


def raise_missing(module: str, name: str, depth: int = 2) -> None:
    """Raise the AttributeError of ``module``'s missing ``name``: with :func:`hint`'s text for a 2.x name
    (the asking frame is ``depth`` frames up from here), else Python's own."""
    frame = sys._getframe(depth)
    text = hint(module, name, frame)
    raise AttributeError(text or "module %r has no attribute %r" % (module, name))


def import_refusal(fullname: str) -> Optional[ModuleNotFoundError]:
    """The error of an import of a 2.x path below fluidist (``import fluidist.static``), or None."""
    module, _, name = fullname.rpartition(".")
    if not module.startswith("fluidist") or not (module == "fluidist" and name in PADDLE2_NAMES):
        return None
    text = hint(module, name)
    return ModuleNotFoundError(text.replace("has no attribute", "has no module", 1)) if text else None
