"""Types as a user's checker sees them: mypy (configured in pyproject.toml) passes on the package, and on
the README's and the docs' examples checked against it as user code; decorators keep the signatures
they wrap; the package ships py.typed."""
import doctest
import glob
import inspect
import os
import re
import subprocess
import sys

import pytest

import fluidist as fluid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.timeout(300)
mypy_api = pytest.importorskip("mypy.api", reason="mypy comes with the [test] extra")

FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```$", re.M | re.S)
DOC_PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                               recursive=True))


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One mypy cache for the module's runs: the package is analysed once, not once per run."""
    return tmp_path_factory.mktemp("mypy_cache")


def _run_mypy(args, cache_dir):
    env = dict(os.environ, MYPYPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "docs", "hooks")]))
    cmd = [sys.executable, "-m", "mypy", "--cache-dir", str(cache_dir), "--config-file",
           os.path.join(ROOT, "pyproject.toml")] + args
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)


def test_mypy_passes_on_the_package(mypy_cache):
    r = _run_mypy([], mypy_cache)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]


def page_snippets(page):
    """The Python code of a page's ```python blocks: doctest blocks as the script doctest would run."""
    out = []
    for block in FENCE.findall(open(os.path.join(ROOT, page)).read()):
        if block.lstrip().startswith(">>>"):
            block = doctest.script_from_examples(block)
        out.append(block)
    return out


def test_readme_and_docs_examples_type_check(tmp_path, mypy_cache):
    """Each block is checked as a module of its own; names a fragment takes from its surroundings
    (``exe``, ``role``, ...) are allowed to be undefined, everything it calls on fluidist is checked."""
    files = []
    for page in DOC_PAGES:
        for i, code in enumerate(page_snippets(page)):
            path = tmp_path / ("%s_%d.py" % (re.sub(r"\W", "_", page[:-3]), i))
            path.write_text(code)
            files.append(str(path))
    assert len(files) >= 15, files
    r = _run_mypy(["--disable-error-code", "name-defined", "--allow-redefinition", "--follow-imports", "silent"] + files,
                  mypy_cache)
    assert r.returncode == 0, r.stdout[-5000:] + r.stderr[-2000:]


def test_decorated_transpile_shows_its_signature():
    sig = inspect.signature(fluid.DistributeTranspiler.transpile)
    assert list(sig.parameters)[:3] == ["self", "trainer_id", "program"]
    assert all(p.annotation is not inspect.Parameter.empty for n, p in sig.parameters.items() if n != "self")


def test_py_typed_is_shipped_next_to_the_package():
    assert os.path.exists(os.path.join(os.path.dirname(fluid.__file__), "py.typed"))


USER_SCRIPT = '''
import numpy as np
import fluidist as fluid

x = fluid.data(name="x", shape=[None, 4], dtype="float32")
label = fluid.data(name="label", shape=[None, 1], dtype="int64")
hidden = fluid.layers.fc(input=x, size=8, act="relu")
scaled = hidden * 2.0 + 1.0 - fluid.layers.reduce_mean(hidden)
logits = fluid.layers.fc(scaled, size=3)
loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
ops, params_grads = fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
out = exe.run(feed={"x": np.zeros((2, 4), "float32"), "label": np.zeros((2, 1), "int64")}, fetch_list=[loss])
name: str = loss.name
'''

WRONG_SCRIPT = '''
import fluidist as fluid
x = fluid.data(name="x", shape=[None, 4], dtype="float32")
y = fluid.layers.fc(input=x, size="eight")
'''


def test_a_users_training_script_type_checks_and_a_wrong_call_does_not(tmp_path, mypy_cache):
    """Layers, Variable arithmetic, an optimizer and the Executor as a strict-ish user's checker sees them;
    a string where fc's size is an int is reported, naming the argument."""
    good, bad = tmp_path / "train.py", tmp_path / "wrong.py"
    good.write_text(USER_SCRIPT)
    bad.write_text(WRONG_SCRIPT)
    r = _run_mypy(["--follow-imports", "silent", "--warn-return-any", str(good)], mypy_cache)
    assert r.returncode == 0, r.stdout[-3000:]
    r = _run_mypy(["--follow-imports", "silent", str(bad)], mypy_cache)
    assert r.returncode == 1 and '"size" to "fc"' in r.stdout, r.stdout[-3000:]


def test_type_checkers_see_every_name_of_the_lazy_face():
    """``fluidist/__init__`` loads its names on first use (``_FACE``); its ``if TYPE_CHECKING:`` block imports
    the same names the plain way so that checkers see them: the two lists agree."""
    import ast
    tree = ast.parse(open(fluid.__file__).read())
    block, = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING"]
    seen = set()
    for node in block.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            seen |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Assign):
            seen |= {t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
    seen = {name for name in seen if not name.startswith("_")}
    assert seen == set(fluid._FACE), (sorted(seen - set(fluid._FACE)), sorted(set(fluid._FACE) - seen))


PADDLE_PATHS_SCRIPT = '''
from fluidist.optimizer import SGDOptimizer
from fluidist.layer_helper import LayerHelper
from fluidist.trainer_desc import TrainerDesc
import fluidist.backward as backward

opt = SGDOptimizer(learning_rate=0.1)
helper = LayerHelper("fc")
append = backward.append_backward
'''


def test_paddles_module_paths_type_check_through_their_stubs(tmp_path):
    """Paddle's module paths that are entries of fluidist/paddle_paths.py's table (no file of their own)
    are seen by the checker through their stubs, with the real module's signatures: a string where
    SGDOptimizer's learning rate is a number is reported."""
    good, bad = tmp_path / "paths.py", tmp_path / "paths_wrong.py"
    good.write_text(PADDLE_PATHS_SCRIPT)
    bad.write_text(PADDLE_PATHS_SCRIPT + 'wrong = SGDOptimizer(learning_rate="fast")\n')
    # this checkout only: a fluidist installed elsewhere (site-packages) could answer for a missing stub
    own = ["--no-site-packages", "--follow-imports", "silent"]
    cache = tmp_path / "mypy_cache"
    r = _run_mypy(own + [str(good)], cache)
    assert r.returncode == 0, r.stdout[-3000:]
    r = _run_mypy(own + [str(bad)], cache)
    assert r.returncode == 1 and '"learning_rate" to "SGDOptimizer"' in r.stdout, r.stdout[-3000:]


STRICT_SCRIPT = '''
"""A training script as a user writes it: builds, trains, saves."""
from typing import List

import numpy as np

import fluidist as fluid
from fluidist.executor import global_scope
from fluidist.framework import Variable
from fluidist.initializer import Xavier
from fluidist.layers import cond, less_than


def build() -> "tuple[fluid.Program, fluid.Program, Variable, Variable]":
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        hidden = fluid.layers.fc(input=x, size=8, act="relu", param_attr=fluid.ParamAttr(initializer=Xavier()))
        logits = fluid.layers.fc(hidden, size=3)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(logits, label))
        small = less_than(loss, fluid.layers.fill_constant([1], "float32", 10.0))
        cond(small, lambda: fluid.layers.scale(loss, 1.0), lambda: fluid.layers.scale(loss, 0.5))
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return main, startup, logits, loss


def train(steps: int) -> float:
    main, startup, logits, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    xs = np.random.rand(8, 4).astype("float32")
    ys = np.random.randint(0, 3, (8, 1)).astype("int64")
    last = 0.0
    for _ in range(steps):
        fetched: List[np.ndarray] = exe.run(main, feed={"x": xs, "label": ys}, fetch_list=[loss])
        last = float(fetched[0].mean())
    fluid.io.save_inference_model("model_dir", ["x"], [logits], exe, main_program=main)
    fluid.save(main, "checkpoint")
    assert global_scope() is not None
    return last
'''


def _strict_mypy(args, cache_dir):
    """mypy --strict as a user runs it on their script (the installed packages' own errors are theirs:
    --follow-imports silent), with this checkout first on the path."""
    return _run_mypy(["--strict", "--follow-imports", "silent", "--no-incremental", "-v"] + args, cache_dir)


def _parsed_fluidist_files(verbose_log):
    return set(re.findall(r"Parsing (\S+/fluidist/\S+\.pyi?) \(fluidist", verbose_log))


def test_mypy_strict_passes_on_a_correct_training_script_and_types_its_fetches(tmp_path):
    """No "does not explicitly export" error on the face (``__all__``), and a fetch with the default
    return_numpy=True is a list of ndarrays: a misspelt array method is reported."""
    good, wrong = tmp_path / "train.py", tmp_path / "train_wrong.py"
    good.write_text(STRICT_SCRIPT)
    wrong.write_text(STRICT_SCRIPT + "\n\ndef misspelt(exe: fluid.Executor, loss: Variable) -> None:\n"
                     "    exe.run(fetch_list=[loss])[0].meen()\n")
    r = _strict_mypy([str(good)], tmp_path / "cache")
    assert r.returncode == 0, r.stdout[-3000:]
    parsed = _parsed_fluidist_files(r.stderr)   # numpy comes from site-packages; fluidist from this checkout
    assert parsed and all(p.startswith(ROOT) for p in parsed), sorted(p for p in parsed if not p.startswith(ROOT))[:5]
    r = _strict_mypy([str(wrong)], tmp_path / "cache")
    assert r.returncode == 1 and '"ndarray[' in r.stdout and 'has no attribute "meen"' in r.stdout, r.stdout[-3000:]


# the modules a script imports names from, and how many names each has at least
FACE_MODULES = {"fluidist": 120, "fluidist.layers": 300, "fluidist.optimizer": 25, "fluidist.io": 25,
                "fluidist.initializer": 15, "fluidist.executor": 10, "fluidist.framework": 15, "fluidist.transpiler": 5,
                "fluidist.param_attr": 2, "fluidist.regularizer": 4, "fluidist.clip": 5, "fluidist.nets": 4,
                "fluidist.metrics": 8, "fluidist.dataset": 3, "fluidist.compiler": 3, "fluidist.profiler": 4,
                "fluidist.incubate.fleet.base.role_maker": 5, "fluidist.incubate.fleet.collective": 5,
                "fluidist.incubate.fleet.parameter_server.distribute_transpiler": 5}


def public_names(module_name):
    """A module's ``__all__``; without one (fluid.layers: star imports), the public names bound there that
    are fluidist's functions and classes (not its submodules)."""
    import importlib
    import types
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n, v in vars(module).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)
            and (getattr(v, "__module__", None) or "").startswith("fluidist")]


def test_mypy_strict_sees_every_public_name_of_the_face_modules(tmp_path):
    """``from <module> import <name>`` for every public name of each module users import from passes
    mypy --strict: each is exported (``__all__``, ``name as name``), none defined out of a checker's
    sight (``globals()[...] = ...``, an ``__all__`` that is not a literal list)."""
    lines = []
    for module_name, at_least in FACE_MODULES.items():
        names = public_names(module_name)
        assert len(names) >= at_least, (module_name, len(names))
        lines += ["from %s import %s as _%d" % (module_name, name, len(lines) + i) for i, name in enumerate(names)]
    script = tmp_path / "every_name.py"
    script.write_text("\n".join(lines) + "\n")
    r = _run_mypy(["--strict", "--follow-imports", "silent", str(script)], tmp_path / "cache")
    assert r.returncode == 0, r.stdout[-4000:]


def test_the_face_exports_every_name_it_has():
    assert fluid.__all__ == ["__version__"] + list(fluid._FACE)
