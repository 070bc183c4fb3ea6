"""The example scripts (``examples/*.py`` of the repository), shipped in the wheel as this package's files.

``python -m fluidist.examples`` lists them, ``python -m fluidist.examples copy DIR`` copies them into
``DIR`` (run them from there: ``python DIR/dist_digits.py``), ``python -m fluidist.examples run NAME
[ARGS...]`` runs one in place. In a checkout (or an editable install) they are read from the
repository's ``examples/`` folder; a wheel carries them next to this file (``setup.py`` copies them in).
They need scikit-learn for their data (``pip install "fluidist[examples]"``).
"""
from __future__ import annotations

import ast
import os
from typing import Dict, List

_HERE = os.path.dirname(os.path.abspath(__file__))
_CHECKOUT = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "examples")


def examples_dir() -> str:
    """The folder that holds the example scripts: this package's own (a wheel) or the checkout's."""
    if os.path.exists(os.path.join(_HERE, "dist_digits.py")):
        return _HERE
    if os.path.isdir(_CHECKOUT):
        return _CHECKOUT
    raise FileNotFoundError("the example scripts are neither in %s nor in %s" % (_HERE, _CHECKOUT))


def list_examples() -> Dict[str, str]:
    """``{script name: the first line of its docstring}`` for each example script, by name."""
    out = {}
    folder = examples_dir()
    for fname in sorted(os.listdir(folder)):
        if not fname.endswith(".py") or fname.startswith("_"):
            continue
        with open(os.path.join(folder, fname)) as f:
            doc = ast.get_docstring(ast.parse(f.read())) or ""
        out[fname] = doc.split("\n")[0]
    return out


def script_path(name: str) -> str:
    """The path of the example ``name`` (``dist_digits`` or ``dist_digits.py``); KeyError naming the
    ones there are when it is not one of them."""
    fname = name if name.endswith(".py") else name + ".py"
    known = list_examples()
    if fname not in known:
        raise KeyError("no example %r; the examples are: %s" % (name, ", ".join(sorted(known))))
    return os.path.join(examples_dir(), fname)


def copy_examples(dest: str) -> List[str]:
    """Copy every example script into ``dest`` (made if missing); return the paths written."""
    import shutil
    os.makedirs(dest, exist_ok=True)
    written = []
    for fname in list_examples():
        written.append(shutil.copy(os.path.join(examples_dir(), fname), os.path.join(dest, fname)))
    return written


__all__ = ["examples_dir", "list_examples", "script_path", "copy_examples"]
