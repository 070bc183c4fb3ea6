"""Records Paddle 1.8's own numbers for the models of ``tests/models/zoo`` (not a test).

Run it with the Python that has paddlepaddle 1.8.5 (Python 3.8):

    ~/.pyenv/versions/3.8.18/bin/python -m venv /tmp/pd18
    /tmp/pd18/bin/pip install paddlepaddle==1.8.5 protobuf==3.20.3 numpy==1.21.6
    /tmp/pd18/bin/python tools/paddle18_models.py            # every case
    /tmp/pd18/bin/python tools/paddle18_models.py ctr mnist  # some, merged into the file

For each case it writes to ``tests/models/paddle18_reference.json``: the per-step losses and fetched
values of a local run on the whole batch (initial values from ``harness.reference_value``), the
inference outputs where the model has an inference program, the parameters (names and shapes) and
the forward op types of the main program. ``tests/models/test_models_local.py`` compares fluidist
with these.
"""
import argparse
import json
import os
import platform
import sys
import traceback

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "models")
sys.path.insert(0, MODELS)

import harness  # noqa: E402

OUT = os.path.join(MODELS, "paddle18_reference.json")


def record(fluid, case):
    result, net = harness.run_local(fluid, case, framework="paddle")
    result["parameters"] = harness.parameters(net)
    result["forward_ops"] = harness.forward_op_types(net["main"])
    name, options, batch, steps = harness.CASES[case]
    result["setup"] = {"model": name, "options": options, "batch": batch, "steps": steps}
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="cases of harness.CASES (default: all)")
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    import numpy as np
    import paddle
    import paddle.fluid as fluid

    cases = a.cases or sorted(harness.CASES)
    data = {"cases": {}}
    if os.path.exists(a.out):
        with open(a.out) as f:
            data = json.load(f)
    data["produced_by"] = {"paddle": paddle.__version__, "numpy": np.__version__,
                           "python": platform.python_version(), "script": "tools/paddle18_models.py"}
    failed = []
    for case in cases:
        try:
            data["cases"][case] = record(fluid, case)
            print("%-28s loss %s" % (case, ["%.6g" % v for v in data["cases"][case]["loss"]]), flush=True)
        except Exception:   # noqa: B902 - reported, the other cases still run
            failed.append(case)
            traceback.print_exc()
    with open(a.out, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    if failed:
        sys.exit("failed: %s" % ", ".join(failed))


if __name__ == "__main__":
    main()
