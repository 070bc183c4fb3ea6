"""Every module of Paddle 1.8's ``paddle.fluid`` package that a script can import exists at its path in
fluidist (``fluid.layers.nn`` is ``fluidist.layers.nn``) with the names a script reaches there
(``fluid18_modules.txt``, made from Paddle 1.8.5 by ``tools/fluid18_inventory.py --modules``): each name
works, or is refused by name (NotImplementedError naming it and what to use instead); never an
ImportError or AttributeError. Rows in ``fluid18_modules_pending.txt`` are being added by other work."""
import importlib
import os
import subprocess
import sys

import pytest

from fluidist.compat import is_refused

HERE = os.path.dirname(os.path.abspath(__file__))


def _rows(name, with_owner=False):
    """``(module, name or None)`` rows of a file of tests/compat (a pending row ends with its owner)."""
    rows = []
    with open(os.path.join(HERE, name)) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if with_owner:
                fields = fields[:-1]
            if fields:
                rows.append((fields[0], fields[1] if len(fields) > 1 else None))
    return rows


INVENTORY = _rows("fluid18_modules.txt")
PENDING = set(_rows("fluid18_modules_pending.txt", with_owner=True))


def _fluidist_path(paddle_module):
    return "fluidist" + paddle_module[len("fluid"):]


def _lookup(module, name):
    """('ok' | 'refused' | 'no module' | 'no name', object or error)."""
    try:
        mod = importlib.import_module(_fluidist_path(module))
    except ImportError as e:
        return "no module", e
    if name is None:
        return "ok", mod
    try:
        obj = getattr(mod, name)
    except AttributeError as e:
        return "no name", e
    return ("refused" if is_refused(obj) else "ok"), obj


def test_inventory_is_paddles_module_tree():
    modules = {m for m, _ in INVENTORY}
    assert len(INVENTORY) > 1500 and len(modules) > 150
    for expected in [("fluid.layers.nn", "conv2d"), ("fluid.layers.loss", "nce"), ("fluid.framework", "Operator"),
                     ("fluid.lod_tensor", "create_random_int_lodtensor"), ("fluid.core", "AnalysisConfig"),
                     ("fluid.unique_name", "guard"), ("fluid.layers.device", "get_places"), ("fluid.incubate", None), ("fluid.executor", "_fetch_var")]:
        assert expected in INVENTORY, expected
    assert PENDING <= set(INVENTORY), PENDING - set(INVENTORY)


def test_every_module_imports_and_every_name_exists():
    missing = []
    for module, name in INVENTORY:
        state, what = _lookup(module, name)
        if state in ("no module", "no name") and (module, name) not in PENDING:
            missing.append("%s %s: %s" % (module, name or "", what))
    assert not missing, "%d paths of Paddle 1.8 missing in fluidist:\n%s" % (len(missing), "\n".join(missing))


def test_pending_rows_do_not_exist_yet():
    landed = [(m, n) for m, n in PENDING if _lookup(m, n)[0] in ("ok", "refused")]
    assert not landed, "these exist now: delete their lines from fluid18_modules_pending.txt: %s" % landed


def test_refusals_name_themselves_and_an_alternative():
    for module, name in INVENTORY:
        state, obj = _lookup(module, name)
        if state != "refused":
            continue
        with pytest.raises(NotImplementedError) as e:
            obj()
        msg = str(e.value)
        assert name in msg and "not implemented in fluidist: " in msg and len(msg.split(": ", 1)[1]) > 15, msg


def test_share_that_works():
    counts = {"ok": 0, "refused": 0}
    for module, name in INVENTORY:
        state = _lookup(module, name)[0]
        if state in counts:
            counts[state] += 1
    print("Paddle 1.8 module paths and names: %d, working %d, refused %d"
          % (len(INVENTORY), counts["ok"], counts["refused"]))
    outside_refused_trees = [(m, n) for m, n in INVENTORY
                             if not m.startswith(("fluid.dygraph", "fluid.contrib")) and n is not None]
    refused = sum(_lookup(m, n)[0] == "refused" for m, n in outside_refused_trees)
    assert refused / len(outside_refused_trees) < 0.2, "too many refusals: %d" % refused


def test_scripts_import_paths_the_paddle_way(tmp_path):
    """The import statements Paddle 1.x scripts write, in a fresh interpreter."""
    script = tmp_path / "imports.py"
    script.write_text(
        "import fluidist as fluid\n"
        "import fluidist.layers.nn as nn\n"
        "from fluidist.layers.nn import conv2d, fc\n"
        "from fluidist.layers.loss import nce\n"
        "from fluidist.layers.device import *\n"
        "from fluidist.lod_tensor import create_lod_tensor, create_random_int_lodtensor\n"
        "from fluidist import unique_name\n"
        "import fluidist.unique_name\n"
        "from fluidist.framework import Operator, Parameter, cuda_places\n"
        "from fluidist.executor import _fetch_var, global_scope\n"
        "from fluidist.transpiler.details.program_utils import program_to_code\n"
        "from fluidist.incubate.fleet.collective import fleet, DistributedStrategy, TrainStatus\n"
        "from fluidist.dygraph.nn import Linear\n"
        "from fluidist.contrib.slim.quantization import QuantizationTransformPass\n"
        "from fluidist.contrib.decoder.beam_search_decoder import *\n"     # Paddle's book test does this
        "try:\n    InitState(init=None)\nexcept NotImplementedError as e:\n    assert 'InitState' in str(e)\n"
        "from fluidist.layers.nn import *\n"
        "assert nn.conv2d is fluid.layers.conv2d and fluidist.unique_name is unique_name\n"
        "import fluidist.data, inspect\n"
        "assert callable(fluid.data) and fluid.data(name='x', shape=[None, 2]).name == 'x'\n"
        "assert 'conv2d' in nn.__all__ and 'embedding' in dir()\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
