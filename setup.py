"""Kept for tools that still call setup.py; the metadata lives in pyproject.toml.

One build step is added here: the example scripts (``examples/*.py``) go into the wheel as the files
of ``fluidist.examples``, so ``python -m fluidist.examples`` finds them in an installed package. A
checkout or an editable install reads them from ``examples/`` instead.
"""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithExamples(build_py):
    """build_py, then the example scripts copied into the built ``fluidist/examples``."""

    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "fluidist", "examples")
        os.makedirs(dest, exist_ok=True)
        for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
            shutil.copy(path, dest)


setup(cmdclass={"build_py": BuildPyWithExamples})
