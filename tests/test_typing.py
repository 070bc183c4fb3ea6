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
