"""Layers built as Paddle 1.x users write them compute what Paddle 1.8.5 computes: the same forward
op types, the same declared output shapes, outputs and gradients equal to the numbers Paddle recorded
(``tools/paddle18_reference.py`` over ``layer_cases.py``)."""
import copy
import os

import numpy as np
import pytest

import fluidist as fluid

from layer_cases import CASES, run_case

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "paddle18_layers.npz")
REF = np.load(DATA, allow_pickle=False)
RECORDED = {k.split("/")[0] for k in REF.files}


def _ref(case):
    pre = case.name + "/"
    return {k[len(pre):]: REF[k] for k in REF.files if k.startswith(pre)}


def test_every_case_is_recorded():
    missing = [c.name for c in CASES if c.name not in RECORDED]
    assert not missing, "run tools/paddle18_reference.py for: %s" % missing


@pytest.mark.parametrize("case", [c for c in CASES if c.name in RECORDED], ids=lambda c: c.name)
def test_layer_matches_paddle18(case):
    ref = _ref(case)
    case = copy.copy(case)   # fed exactly the inputs Paddle saw
    case.inputs = {n: ref["in_" + n] for n in case.inputs}
    got = run_case(fluid, case)
    assert list(got["ops"]) == list(ref["ops"]), "forward op types differ from Paddle 1.8's"
    if case.shapes:
        assert list(got["shapes"]) == list(ref["shapes"]), "declared output shapes differ from Paddle 1.8's"
    keys = sorted(k for k in ref if k.startswith(("out", "grad", "lod")))
    assert sorted(k for k in got if k.startswith(("out", "grad", "lod"))) == keys
    for k in keys:
        want, have = ref[k], got[k]
        if case.check == "shape" and k.startswith("out"):
            assert have.shape == want.shape and have.dtype == want.dtype, k
            continue
        assert have.dtype == want.dtype, "%s: dtype %s, Paddle gives %s" % (k, have.dtype, want.dtype)
        assert have.shape == want.shape, "%s: shape %s, Paddle gives %s" % (k, have.shape, want.shape)
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=case.rtol, atol=case.atol, err_msg=k)
        else:
            np.testing.assert_array_equal(have, want, err_msg=k)
