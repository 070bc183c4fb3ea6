"""House rules every source file of ``fluidist/`` keeps: no file over 600 lines, no function over 80,
and no module at the package root but those of a short list, each with its reason; the typing stubs
(``.pyi``) are exactly those the table of Paddle's paths makes.

A function's length counts from its ``def`` (decorators excluded) to its last line, docstring and
nested functions included; a nested function is checked on its own too."""
import ast
import os

import fluidist

ROOT = os.path.dirname(os.path.abspath(fluidist.__file__))
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _sources():
    for dirpath, _, files in os.walk(ROOT):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                yield os.path.relpath(path, os.path.dirname(ROOT)), path


def test_no_source_file_over_600_lines():
    long = []
    for rel, path in _sources():
        with open(path) as f:
            n = sum(1 for _ in f)
        if n > MAX_FILE_LINES:
            long.append("%s: %d lines" % (rel, n))
    assert not long, "files over %d lines (split them at a seam):\n%s" % (MAX_FILE_LINES, "\n".join(long))


def test_no_function_over_80_lines():
    long = []
    for rel, path in _sources():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append("%s:%d %s: %d lines" % (rel, node.lineno, node.name, n))
    assert not long, "functions over %d lines:\n%s" % (MAX_FUNCTION_LINES, "\n".join(long))


# The modules at the root of the package, each with why it stands there; everything else lives in the
# package of its floor (passes/, optim/, viz/, executor/, ...), and Paddle's other module paths are
# entries of fluidist/paddle_paths.py's table.
ROOT_MODULES = {
    "__init__.py": "the face: the names of `import fluidist as fluid`, loaded on first use",
    "_version.py": "the version, which the launcher and the packaging read without the framework",
    "paddle_paths.py": "the one table of Paddle's module paths, and the finder that applies it",
    "compat.py": "the refusals of Paddle names fluidist leaves out, and Paddle's modules of refusals only",
    "bounded_json.py": "JSON read with size bounds: a leaf both the IR (framework/) and the launcher use",
    "log_helper.py": "fluid.log_helper: the loggers' set-up, a leaf the launcher uses too",
    "initializer.py": "fluid.initializer",
    "param_attr.py": "fluid.param_attr",
    "nets.py": "fluid.nets",
    "metrics.py": "fluid.metrics",
    "profiler.py": "fluid.profiler",
    "install_check.py": "fluid.install_check",
    "average.py": "fluid.average (WeightedAverage)",
    "annotations.py": "fluid.annotations (the deprecated decorator)",
    "wrapped_decorator.py": "fluid.wrapped_decorator",
}


def test_the_root_holds_only_its_allow_list():
    here = sorted(f for f in os.listdir(ROOT) if f.endswith(".py"))
    stray = [f for f in here if f not in ROOT_MODULES]
    assert not stray, ("modules at the root of fluidist/ outside its list: %s (put each in the package of its "
                       "floor; a Paddle module path becomes an entry of fluidist/paddle_paths.py)" % stray)
    assert len(ROOT_MODULES) <= 15 and set(ROOT_MODULES) <= set(here), sorted(set(ROOT_MODULES) - set(here))


def test_the_typing_stubs_are_those_of_the_table_of_paddle_paths():
    """Each path of ``fluidist/paddle_paths.py``'s table has its stub (what mypy sees at
    ``fluidist.optimizer``), as the table makes it, and no other stub lies in the package."""
    from fluidist import paddle_paths
    expected = {paddle_paths.stub_file(path, ROOT): paddle_paths.typing_stub(path) for path in paddle_paths.stubbed_paths()}
    found = {os.path.join(d, f) for d, _, files in os.walk(ROOT) for f in files if f.endswith(".pyi")}
    assert found == set(expected), ("stubs not of the table: %s; missing: %s (write them with "
                                    "fluidist.paddle_paths.write_typing_stubs())"
                                    % (sorted(found - set(expected)), sorted(set(expected) - found)))
    stale = [f for f, text in expected.items() if open(f).read() != text]
    assert not stale, "stale stubs (write them with fluidist.paddle_paths.write_typing_stubs()): %s" % stale
