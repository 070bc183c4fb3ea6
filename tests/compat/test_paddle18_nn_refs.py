"""fluidist runs the layer cases of ``paddle18_nn_cases.py`` to Paddle 1.8.5's own numbers (outputs,
their LoD, and gradients), recorded by ``tools/paddle18_nn_refs.py``."""
import json
import os

import numpy as np
import pytest

import fluidist as fluid
import paddle18_nn_cases as cases

with open(os.path.join(os.path.dirname(__file__), "data", "paddle18_nn_refs.json")) as f:
    REFS = json.load(f)

# cases whose results are only as close as float32 sums in another order allow
TOL = {"default": (2e-4, 2e-5)}


def test_every_case_has_reference_numbers():
    assert sorted(cases.CASES) == sorted(k for k in REFS if not k.startswith("_"))


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_case_matches_paddle18(name):
    got = cases.run_case(fluid, name, on_build=lambda prog: prog.lint())
    want = REFS[name]
    assert sorted(got) == sorted(want)
    rtol, atol = TOL.get(name, TOL["default"])
    for label, ref in want.items():
        arr, lod = got[label]
        assert list(arr.shape) == ref["shape"], label
        assert lod == ref["lod"], label
        np.testing.assert_allclose(arr.astype(np.float64).reshape(-1), np.array(ref["data"], np.float64),
                                   rtol=rtol, atol=atol, err_msg="%s: %s" % (name, label))
