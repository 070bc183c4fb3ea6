"""The sdist and the wheel carry the LICENSE (Apache-2.0), py.typed, the classifiers and the example
scripts (``fluidist/examples`` in the wheel, ``python -m fluidist.examples`` lists and copies them); an
editable install is a plain path that static tools (mypy) follow."""
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

import fluidist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.timeout(300)


def _copy_project(src):
    """A copy of what a build reads, so building leaves nothing in the checkout."""
    for folder in ("fluidist", "examples"):
        shutil.copytree(os.path.join(ROOT, folder), str(src / folder), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in"):
        shutil.copy(os.path.join(ROOT, name), str(src / name))


EXAMPLES = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py"))


def test_license_and_metadata_in_sdist_and_wheel(tmp_path):
    src = tmp_path / "src"
    _copy_project(src)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                        str(tmp_path), str(src)], capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stderr
    wheel, = [f for f in os.listdir(tmp_path) if f.endswith(".whl")]
    with zipfile.ZipFile(str(tmp_path / wheel)) as z:
        names = z.namelist()
        lic = [n for n in names if n.endswith(".dist-info/LICENSE") or "/licenses/LICENSE" in n]
        assert lic, names
        assert "Apache License" in z.read(lic[0]).decode()
        assert "fluidist/py.typed" in names
        # the typing stubs of Paddle's paths (fluidist/paddle_paths.py): what mypy sees at fluidist.optimizer
        assert {"fluidist/optimizer.pyi", "fluidist/trainer_desc.pyi", "fluidist/distributed/launch.pyi"} <= set(names)
        assert "fluidist/examples/__main__.py" in names
        assert {"fluidist/examples/" + f for f in EXAMPLES} <= set(names), names
        assert not [n for n in names if n.startswith(("examples/", "tests/", "tools/", "benchmarks/"))]
        z.extractall(str(tmp_path / "site"))
        meta = z.read([n for n in names if n.endswith(".dist-info/METADATA")][0]).decode()
        entry = z.read([n for n in names if n.endswith(".dist-info/entry_points.txt")][0]).decode()
    assert "Classifier: License :: OSI Approved :: Apache Software License" in meta
    assert "Classifier: Typing :: Typed" in meta
    assert "\nVersion: %s\n" % fluidist.__version__ in meta    # pyproject.toml reads fluidist/_version.py
    assert "fluidist-launch = fluidist.launch.cli:main" in entry and "fluidist-draw = fluidist.viz.draw:main" in entry
    r = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)], cwd=str(src),
                       capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stderr
    sdist, = [f for f in os.listdir(tmp_path) if f.endswith(".tar.gz")]
    with tarfile.open(str(tmp_path / sdist)) as t:
        assert any(n.endswith("/LICENSE") for n in t.getnames())
        assert {"examples/" + f for f in EXAMPLES} <= {n.split("/", 1)[-1] for n in t.getnames()}
    # the installed examples: listed, copied, and found in the wheel's own files
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    r = subprocess.run([sys.executable, "-m", "fluidist.examples"], env=env, cwd=str(tmp_path), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert str(tmp_path / "site" / "fluidist" / "examples") in r.stdout and "dist_digits.py" in r.stdout
    r = subprocess.run([sys.executable, "-m", "fluidist.examples", "copy", str(tmp_path / "mine")], env=env,
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(str(tmp_path / "mine"))) == EXAMPLES


def test_editable_install_is_a_plain_path(tmp_path):
    """pip install -e . writes a .pth that names the project's folder (no import hook), so mypy finds the
    package of an editable install."""
    src = tmp_path / "src"
    _copy_project(src)
    code = "from setuptools import build_meta; print(build_meta.build_editable(%r))" % str(tmp_path)
    r = subprocess.run([sys.executable, "-c", code], cwd=str(src), capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stderr[-3000:]
    wheel = tmp_path / r.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(str(wheel)) as z:
        pth = [n for n in z.namelist() if n.endswith(".pth")]
        assert len(pth) == 1, z.namelist()
        lines = z.read(pth[0]).decode().split()
    assert lines == [str(src)], lines


def test_project_examples_cli_names_what_exists():
    from fluidist import examples
    listed = examples.list_examples()
    assert sorted(listed) == EXAMPLES and all(listed.values()), listed
    with pytest.raises(KeyError, match="no example 'nope'.*dist_digits.py"):
        examples.script_path("nope")
    assert examples.script_path("dist_digits").endswith(os.path.join("examples", "dist_digits.py"))
