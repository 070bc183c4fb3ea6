"""Paddle's test tree, copied into a scratch folder at run time, with the ``paddle`` package in front.

The Paddle tree is read from a source checkout (a folder holding ``python/paddle``) or from a git
directory at a commit (``git archive``), never from this repository: Paddle's files are not
committed here. The scratch folder holds::

    site/paddle/__init__.py     the rename (paddle_shim.py): paddle.fluid is fluidist
    site/paddle/version.py      the Paddle API version fluidist provides
    site/paddle/{reader,batch.py,compat.py,distributed,utils,...}   Paddle's own pure-Python modules
    site/paddle/dataset/        the offline stand-ins (offline_dataset/)
    tests/                      python/paddle/fluid/tests, with unittests/op_test.py replaced by ours
"""
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_COMMIT = "985e4bae5e41ee2fcce56dd732ae5c93193242b0"
# where a session's `fetch github:wangxicoding/Paddle` puts the git directory
DEFAULT_GIT_DIRS = ("/work/.mirror/wangxicoding+Paddle/repo",)
# Paddle's pure-Python modules beside paddle.fluid that its tests import (paddle.dataset is ours)
PADDLE_SIDE_MODULES = ("reader", "batch.py", "compat.py", "distributed", "utils", "check_import_scipy.py")


@dataclass
class Layout:
    """The folders of a prepared scratch copy."""
    root: str
    site: str          # on PYTHONPATH: the paddle package
    tests: str         # python/paddle/fluid/tests copied
    unittests: str
    book: str
    commit: str        # the Paddle commit (or "checkout")


def _is_git_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))


def find_source(paddle: Optional[str]) -> str:
    """The Paddle tree to read: ``paddle`` if given, else ``$PADDLE_SRC``, else a fetched git directory."""
    candidates = [paddle] if paddle else [os.environ.get("PADDLE_SRC", "")] + list(DEFAULT_GIT_DIRS)
    for path in candidates:
        if path and (os.path.isdir(os.path.join(path, "python", "paddle")) or _is_git_dir(path)):
            return path
    raise SystemExit("no Paddle tree: pass --paddle DIR (a checkout holding python/paddle, or a git directory "
                     "with commit %s; the library's `fetch github:wangxicoding/Paddle` brings one) or set "
                     "PADDLE_SRC" % DEFAULT_COMMIT)


def _export_paddle_python(source: str, commit: str, into: str) -> str:
    """Copy ``python/paddle`` of the source into ``into``; returns the commit read."""
    if _is_git_dir(source):
        archive = os.path.join(into, "paddle.tar")
        with open(archive, "wb") as out:
            subprocess.run(["git", "--git-dir", source, "archive", commit, "python/paddle"], stdout=out, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(into)
        os.remove(archive)
        return commit
    shutil.copytree(os.path.join(source, "python", "paddle"), os.path.join(into, "python", "paddle"))
    return "checkout"


def prepare(source: str, scratch: Optional[str] = None, commit: str = DEFAULT_COMMIT,
            reference: bool = False) -> Layout:
    """Build a fresh scratch folder from the Paddle tree ``source`` (at ``commit`` for a git directory).

    ``reference``: for runs under Paddle 1.8.5 itself: the tests as they are (Paddle's own op_test), no
    ``paddle`` package of ours, only the offline datasets put in place of ``paddle.dataset``."""
    root = scratch or tempfile.mkdtemp(prefix="fluidist-paddle-tests-")
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    raw = os.path.join(root, "raw")
    os.makedirs(raw)
    read = _export_paddle_python(source, commit, raw)
    paddle_src = os.path.join(raw, "python", "paddle")
    if reference:
        return _prepare_reference(root, raw, paddle_src, read)
    site_pkg = os.path.join(root, "site", "paddle")
    os.makedirs(site_pkg)
    for name in PADDLE_SIDE_MODULES:
        src = os.path.join(paddle_src, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(site_pkg, name))
        elif os.path.isfile(src):
            shutil.copy(src, os.path.join(site_pkg, name))
    shutil.copy(os.path.join(HERE, "paddle_shim.py"), os.path.join(site_pkg, "__init__.py"))
    shutil.copytree(os.path.join(HERE, "offline_dataset"), os.path.join(site_pkg, "dataset"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(site_pkg, "version.py"), "w") as f:
        # the very module fluid.require_version reads, so that a test changing its values is heard
        f.write("import sys\nfrom fluidist.framework import version\nsys.modules[__name__] = version\n")
    tests = os.path.join(root, "tests")
    shutil.move(os.path.join(paddle_src, "fluid", "tests"), tests)
    shutil.copy(os.path.join(HERE, "op_test.py"), os.path.join(tests, "unittests", "op_test.py"))
    shutil.copy(os.path.join(HERE, "paddle18_op_slots.json"), tests)
    shutil.rmtree(raw)
    return Layout(root=root, site=os.path.join(root, "site"), tests=tests,
                  unittests=os.path.join(tests, "unittests"), book=os.path.join(tests, "book"), commit=read)


def _prepare_reference(root: str, raw: str, paddle_src: str, read: str) -> Layout:
    site = os.path.join(root, "site")
    os.makedirs(site)
    shutil.copytree(os.path.join(HERE, "offline_dataset"), os.path.join(site, "fluidist_offline_dataset"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(HERE, "reference_shim.py"), os.path.join(site, "sitecustomize.py"))
    tests = os.path.join(root, "tests")
    shutil.move(os.path.join(paddle_src, "fluid", "tests"), tests)
    shutil.rmtree(raw)
    return Layout(root=root, site=site, tests=tests, unittests=os.path.join(tests, "unittests"),
                  book=os.path.join(tests, "book"), commit=read)
