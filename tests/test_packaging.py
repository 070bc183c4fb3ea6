"""The sdist and the wheel carry the LICENSE (Apache-2.0), py.typed and the classifiers."""
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.timeout(300)


def test_license_and_metadata_in_sdist_and_wheel(tmp_path):
    src = tmp_path / "src"  # a copy, so building leaves nothing in the checkout
    shutil.copytree(os.path.join(ROOT, "fluidist"), str(src / "fluidist"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(os.path.join(ROOT, name), str(src / name))
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
        meta = z.read([n for n in names if n.endswith(".dist-info/METADATA")][0]).decode()
        entry = z.read([n for n in names if n.endswith(".dist-info/entry_points.txt")][0]).decode()
    assert "Classifier: License :: OSI Approved :: Apache Software License" in meta
    assert "Classifier: Typing :: Typed" in meta
    assert "fluidist-launch = fluidist.launch.cli:main" in entry and "fluidist-draw = fluidist.draw:main" in entry
    r = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)], cwd=str(src),
                       capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stderr
    sdist, = [f for f in os.listdir(tmp_path) if f.endswith(".tar.gz")]
    with tarfile.open(str(tmp_path / sdist)) as t:
        assert any(n.endswith("/LICENSE") for n in t.getnames())
