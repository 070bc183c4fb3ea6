"""The API reference as a user reads it: every public layer sits on one family page of the docs
site, its docstring has the sections mkdocstrings renders (Args, Returns, Examples) and its signature
is annotated, and every
docstring example in the documented modules runs as written, each in a fresh program."""
import doctest
import importlib
import inspect
import os
import pkgutil
import re

import numpy as np
import pytest

import fluidist as fluid
import fluidist.layers as layers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYER_PAGES = os.path.join(ROOT, "docs", "api", "layers")
pytestmark = pytest.mark.timeout(120)


def _public_layers():
    """name -> object for each working public layer (refused ones and submodules left out)."""
    out = {}
    for name in dir(layers):
        obj = getattr(layers, name)
        if name.startswith("_") or inspect.ismodule(obj) or not callable(obj):
            continue
        if getattr(obj, "__fluidist_refused__", False):
            continue
        out[name] = obj
    return out


def _page_members():
    """page -> the members its ``::: fluidist.layers`` blocks list, and the layers it renders from their own
    module (``::: fluidist.layers.embedding.embedding``: a layer named as a module of fluidist.layers)."""
    pages = {}
    for fname in sorted(os.listdir(LAYER_PAGES)):
        text = open(os.path.join(LAYER_PAGES, fname)).read()
        pages[fname] = (re.findall(r"^ {8}- (\w+)$", text, flags=re.M)
                        + re.findall(r"^::: fluidist\.layers\.\w+\.(\w+)$", text, flags=re.M))
    return pages


def test_every_layer_is_on_one_family_page():
    pages = _page_members()
    seen = {}
    for page, members in pages.items():
        for m in members:
            assert m not in seen, "%s is listed on %s and %s" % (m, seen[m], page)
            assert hasattr(layers, m), "%s lists %s, which fluid.layers does not have" % (page, m)
            seen[m] = page
    by_object = {id(getattr(layers, m)) for m in seen}
    missing = sorted(n for n, obj in _public_layers().items() if id(obj) not in by_object)
    assert not missing, "layers on no page of docs/api/layers/: %s" % missing


def _sections_missing(name, obj):
    doc = inspect.getdoc(obj) or ""
    fn = obj.__init__ if inspect.isclass(obj) else obj
    want = ["Example"]
    # a class without its own __init__ (a base class like RNNCell) takes no arguments
    params = [] if fn is object.__init__ else [p for p in inspect.signature(fn).parameters if p not in ("self", "cls")]
    if params:
        want.append("Args:")
    if not inspect.isclass(obj) and inspect.signature(fn).return_annotation not in (None, "None"):
        want.append("Returns:")
    return [s for s in want if s not in doc]


# the layer modules whose docstrings are written out in sections so far
SECTIONED = {"fluidist.layers." + m for m in ("nn", "ops", "logic", "conv", "embedding", "loss", "metric_op",
                                              "activation", "tensor", "manipulation", "nn_elementwise",
                                              "nn_reduce", "tensor_fill", "tensor_search", "rearrange",
                                              "indexing", "io", "learning_rate_scheduler", "norm", "conv_nd",
                                              "nn_misc", "resize", "distance_loss", "sequence_lod", "lod",
                                              "control_flow", "conditional_block", "while_loop", "tensor_array",
                                              "nn_math", "nn_random", "nn_model", "rnn", "crf", "ctc",
                                              "sequence_loss", "sampled_loss", "vision", "py_func", "rnn_api",
                                              "rnn_blocks", "rnn_decode", "rnn_helpers", "layer_helper",
                                              "detection", "detection_heads", "roi", "deformable")}
SECTIONED_LAYERS = sorted(n for n, obj in _public_layers().items() if obj.__module__ in SECTIONED)


@pytest.mark.parametrize("name", SECTIONED_LAYERS)
def test_layer_docstring_has_args_returns_and_example(name):
    obj = _public_layers()[name]
    missing = _sections_missing(name, obj)
    assert not missing, "fluid.layers.%s's docstring lacks %s" % (name, missing)
    sig = inspect.signature(obj)
    untyped = [p for p, v in sig.parameters.items() if v.annotation is inspect.Parameter.empty
               and not (inspect.isclass(obj) and obj.__init__ is object.__init__)]
    assert not untyped and (inspect.isclass(obj) or sig.return_annotation is not inspect.Signature.empty), untyped


DOCUMENTED = ["fluidist.layers", "fluidist.framework", "fluidist.core", "fluidist.executor", "fluidist.optimizer",
              "fluidist.optim.base", "fluidist.io", "fluidist.transpiler", "fluidist.incubate", "fluidist.role_maker",
              "fluidist.fleet", "fluidist.param_attr", "fluidist.initializer", "fluidist.regularizer", "fluidist.clip",
              "fluidist.optim.recompute_optimizer", "fluidist.data_feeder", "fluidist.optim.model_averaging", "fluidist.optim.lookahead",
              "fluidist.nets", "fluidist.metrics", "fluidist.backward",
              "fluidist.reader", "fluidist.dataset", "fluidist.profiler", "fluidist.op", "fluidist.paddle_format.desc"]


def _modules_with_examples():
    names = []
    for root in DOCUMENTED:
        pkg = importlib.import_module(root)
        names.append(root)
        for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), root + "."):
            names.append(info.name)
    return names


class _FreshProgram:
    """Each docstring's example builds into its own programs and unique names."""

    def set_up(self, test):
        self.guards = [fluid.program_guard(fluid.Program(), fluid.Program()), fluid.unique_name.guard(),
                       fluid.scope_guard(fluid.Scope())]
        for g in self.guards:
            g.__enter__()
        test.globs.update(fluid=fluid, np=np)

    def tear_down(self, test):
        for g in reversed(self.guards):
            g.__exit__(None, None, None)


@pytest.mark.parametrize("modname", _modules_with_examples())
def test_docstring_examples_run(modname):
    mod = importlib.import_module(modname)
    fresh = _FreshProgram()
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(mod, modname):
        if test.examples and test.name.split(".")[-1].startswith("_"):
            continue
        fresh.set_up(test)
        try:
            runner.run(test)
        finally:
            fresh.tear_down(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "%d of %d docstring examples in %s failed (above)" % (result.failed, result.attempted,
                                                                                   modname)
