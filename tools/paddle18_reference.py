"""Record what Paddle 1.8.5 computes for the layer cases of ``tests/compat/layer_cases.py``.

Run it with a Python that has ``paddlepaddle==1.8.5`` (a throwaway Python 3.8 venv):

    /tmp/pd18/bin/python tools/paddle18_reference.py [case names...]

It writes ``tests/data/paddle18_layers.npz`` (plain arrays and strings, no pickle): per case its
inputs, the fixed parameter values and loss weights it was fed, the outputs, the gradients, the
forward op types and the declared output shapes. Naming some cases re-records only those.
``layer_cases.run_case`` runs a case, here on Paddle and in the test on fluidist: one procedure for both.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data", "paddle18_layers.npz")


def main(names):
    sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
    import paddle
    import paddle.fluid as fluid
    from layer_cases import CASES, run_case
    assert paddle.__version__ == "1.8.5", paddle.__version__
    old = dict(np.load(DATA, allow_pickle=False)) if os.path.exists(DATA) and names else {}
    keep = {k: v for k, v in old.items() if k.split("/")[0] not in names}
    for c in CASES:
        if names and c.name not in names:
            continue
        try:
            rec = run_case(fluid, c)
        except Exception as e:  # a case Paddle cannot run does not belong in the list: say so
            print("FAILED in Paddle:", c.name, type(e).__name__, str(e).strip().splitlines()[-1][:300])
            continue
        for n, a in c.inputs.items():
            keep["%s/in_%s" % (c.name, n)] = a
        for k, a in rec.items():
            keep["%s/%s" % (c.name, k)] = a
        print("recorded", c.name)
    os.makedirs(os.path.dirname(DATA), exist_ok=True)
    np.savez_compressed(DATA, **keep)


if __name__ == "__main__":
    main(sys.argv[1:])
