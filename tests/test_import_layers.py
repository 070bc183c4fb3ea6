"""The package's import graph: no cycles anywhere (between modules, and between packages), the low
layers import nothing above them, and the runtime never imports the launcher.

Every ``import`` in ``fluidist`` counts, at module level or inside a function (a lazy import is
still a dependency), except those under ``if TYPE_CHECKING:`` (never run). ``from . import x`` names the module ``x``; a package's ``__init__`` is a module
like any other, so a subpackage re-exporting a sibling is an edge too.
"""
import ast
import functools
import os

import fluidist

ROOT = os.path.dirname(os.path.abspath(fluidist.__file__))

# layer -> packages/modules it must not import (the IR and the runtime types sit at the bottom)
FORBIDDEN = {
    "fluidist.framework": ("fluidist.ops", "fluidist.layers", "fluidist.executor", "fluidist.distributed",
                           "fluidist.core", "fluidist.transpiler", "fluidist.fleet"),
    "fluidist.core": ("fluidist.ops", "fluidist.layers", "fluidist.executor", "fluidist.distributed",
                      "fluidist.transpiler", "fluidist.fleet"),
    "fluidist.distributed": ("fluidist.ops", "fluidist.layers", "fluidist.executor", "fluidist.transpiler",
                             "fluidist.fleet", "fluidist.passes", "fluidist.optim",
                             "fluidist.launch"),
    "fluidist.transpiler": ("fluidist.executor", "fluidist.fleet"),
}

# The launcher sits above the runtime but uses only these pieces of it (and nothing else of fluidist
# but the package's version).
LAUNCH_MAY_IMPORT = ("fluidist.launch", "fluidist._version", "fluidist.distributed.ports", "fluidist.distributed.security",
                     # leaf modules that import nothing of fluidist: bounded JSON parsing, log line budgets
                     "fluidist.bounded_json", "fluidist.log_helper")


def _modules():
    mods = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
            if rel.endswith(".__init__"):
                rel = rel[:-len(".__init__")]
            mods[rel] = path
    return mods


def _resolve(mod, is_pkg, level, name):
    parts = mod.split(".")
    base = parts if is_pkg else parts[:-1]
    if level > 1:
        base = base[:-(level - 1)]
    return ".".join(base + ([name] if name else []))


def _runtime_nodes(tree):
    """Every node but those under ``if TYPE_CHECKING:`` (imports for annotations only never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", getattr(child.test, "attr", "")) == \
                    "TYPE_CHECKING":
                stack.extend(child.orelse)
                continue
            stack.append(child)


@functools.lru_cache(maxsize=None)
def import_graph():
    """{module: the modules it imports}, read once per test session (every test here asks for it)."""
    mods = _modules()
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.endswith("__init__.py")
        tree = ast.parse(open(path).read(), path)
        for node in _runtime_nodes(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node.level, node.module) if node.level else node.module
                for a in node.names:
                    sub = base + "." + a.name
                    targets.append(sub if sub in mods else base)
            for t in targets:
                while t and t not in mods:      # fluidist.x.y.Name -> the module that holds it
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys
    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _under(mod, prefix):
    return mod == prefix or mod.startswith(prefix + ".")


def _package(mod):
    """A module's package: its first two dotted parts (``fluidist.executor.plan`` -> ``fluidist.executor``;
    a top-level module such as ``fluidist.io`` or ``fluidist.optimizer`` is a package of its own)."""
    return ".".join(mod.split(".")[:2])


# Package-level cycles allowed, each with its reason (none today).
ALLOWED_PACKAGE_CYCLES = []


def package_graph():
    graph = {}
    for mod, deps in import_graph().items():
        src = graph.setdefault(_package(mod), set())
        for d in deps:
            if _package(d) != _package(mod):
                src.add(_package(d))
                graph.setdefault(_package(d), set())
    return graph


def test_no_package_import_cycles():
    cycles = [c for c in _cycles(package_graph()) if c not in ALLOWED_PACKAGE_CYCLES]
    assert not cycles, "package import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_import_cycles():
    cycles = _cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_low_layers_import_nothing_above_them():
    graph = import_graph()
    bad = []
    for mod, deps in graph.items():
        for layer, forbidden in FORBIDDEN.items():
            if not _under(mod, layer):
                continue
            for d in deps:
                if any(_under(d, f) for f in forbidden):
                    bad.append("%s imports %s" % (mod, d))
    assert not bad, "\n".join(sorted(bad))


def test_the_launcher_uses_only_the_runtime_pieces_it_needs():
    graph = import_graph()
    bad = ["%s imports %s" % (mod, d) for mod, deps in graph.items() if _under(mod, "fluidist.launch")
           for d in deps if not any(_under(d, ok) for ok in LAUNCH_MAY_IMPORT)]
    assert not bad, "\n".join(sorted(bad))


def test_no_module_goes_through_the_face_while_it_is_imported():
    """A module of fluidist takes what it uses from the module that defines it: ``from .. import layers``
    at a module's top would ask the lazy face (``fluidist.__getattr__``), which loads the whole framework in
    the middle of that import. Only the face's light names (the launcher, the runtime and the leaves they
    use: ``fluidist._LIGHT``) may be taken from the package itself."""
    bad = []
    for mod, path in _modules().items():
        if mod == "fluidist":
            continue
        is_pkg = path.endswith("__init__.py")
        for node in ast.parse(open(path).read(), path).body:      # the statements run at import
            if isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node.level, node.module) if node.level else node.module
                if base == "fluidist":
                    bad += ["%s: from fluidist import %s" % (mod, a.name) for a in node.names
                            if a.name not in fluidist._LIGHT and a.name != "__version__"]
    assert not bad, "\n".join(bad)


def test_the_places_import_nothing_of_fluidist_outside_their_package():
    """``fluidist.device`` (the places, the stand-in GPU, the switch) sits under ``core``: it imports no
    other module of fluidist, so every layer can name a place."""
    graph = import_graph()
    bad = ["%s imports %s" % (mod, d) for mod, deps in graph.items() if _under(mod, "fluidist.device")
           for d in deps if not _under(d, "fluidist.device")]
    assert not bad, "\n".join(sorted(bad))
