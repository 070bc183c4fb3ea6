"""Record what Paddle 1.8.5's layers build, compute and refuse for a table of cases in ``tests/compat``.

Run it with the Python of a throwaway venv holding paddlepaddle 1.8.5 (Python 3.8)::

    python3.8 -m venv /tmp/pd18 && /tmp/pd18/bin/pip install paddlepaddle==1.8.5 protobuf==3.20.3 numpy==1.21.6
    /tmp/pd18/bin/python tools/paddle18_layer_facts.py shape_tensors [case ...]
    /tmp/pd18/bin/python tools/paddle18_layer_facts.py type_checks [case ...]

A table is a module ``tests/compat/<table>_cases.py`` with ``CASES`` (the case names) and
``run(fluid, name)`` (one case on ``fluid``, Paddle's or fluidist's, as a JSON-able record of facts:
op types, slots and attrs, shapes, values, the exception raised). The records go to
``tests/compat/data/paddle18_<table>.json`` (all cases, or the ones named, updated in place);
``tests/compat/test_paddle18_<table>.py`` runs the same cases on fluidist against them. Only facts
are written, never Paddle's text.
"""
import importlib
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "..", "tests", "compat")


def main(table, names):
    import paddle
    import paddle.fluid as fluid
    assert paddle.__version__ == "1.8.5", paddle.__version__
    warnings.simplefilter("ignore")
    sys.path.insert(0, CASES_DIR)
    cases = importlib.import_module("%s_cases" % table)
    out = os.path.join(CASES_DIR, "data", "paddle18_%s.json" % table)
    refs = {}
    if os.path.exists(out) and names:
        with open(out) as f:
            refs = json.load(f)
    refs["_paddle_version"] = paddle.__version__
    for name in names or sorted(cases.CASES):
        refs[name] = cases.run(fluid, name)
        print("%-40s %s" % (name, refs[name] if table == "type_checks" else sorted(refs[name])))
    with open(out, "w") as f:
        json.dump(refs, f, indent=0, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
