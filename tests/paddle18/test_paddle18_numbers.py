"""Sequence, control-flow and RNN programs give Paddle 1.8's own numbers (``cases.py`` made
``paddle18.json`` with paddlepaddle 1.8.5; here the same cases run on fluidist)."""
import json
import os
import sys

import numpy as np
import pytest

import fluidist as fluid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import paddle18_cases as cases  # noqa: E402

REFS = json.load(open(os.path.join(HERE, "paddle18.json")))


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_same_numbers_as_paddle18(name):
    got = cases.run(fluid, name)
    want = REFS[name]
    for i, (g, w) in enumerate(zip(got["values"], want["values"])):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-5, atol=1e-6,
                                   err_msg="%s: fetch %d" % (name, i))
    # the LoD of values; Paddle's gradient ops set the LoD of a gradient or not, op by op
    lods = lambda r: [l for l, g in zip(r["lods"], got["grads"]) if not g]  # noqa: E731
    assert lods(got) == lods(want)
