"""The models of ``zoo/``, built and trained by fluidist in one process, equal Paddle 1.8's own run of
the same source (one changed import), on the same data and initial values: per-step losses,
fetched values (accuracy, auc and its stat buckets, CRF decoding, similarities), beam-search
translations, parameter names and shapes, and the op types of the forward pass.

Paddle's numbers are in ``paddle18_reference.json``, written by ``tools/paddle18_models.py`` under
paddlepaddle 1.8.5."""
import json
import os

import numpy as np
import pytest

import fluidist as fluid
import harness

pytestmark = pytest.mark.timeout(120)

with open(os.path.join(harness.HERE, "paddle18_reference.json")) as _f:
    REFERENCE = json.load(_f)

# float32 kernels summing in another order drift apart by about 1e-7 a step; these bounds leave
# room for that over a few steps and nothing more
LOSS_RTOL = 1e-5
# ... except where rounding gets amplified: a learning rate far too high makes every step amplify the
# last one's; Adam turns gradients that are rounding noise (a few weights of the second conv get
# gradients of ~1e-8, summed in another order than Paddle's) into full-size steps
LOSS_RTOL_BY_CASE = {"se_resnext_high_lr": 1e-4, "recognize_digits_conv": 1e-4}
FETCH_RTOL, FETCH_ATOL = 1e-4, 1e-6

CASES = sorted(harness.CASES)


@pytest.fixture(scope="module")
def runs():
    """One fluidist run per case, shared by the tests of this module."""
    made = {}

    def get(case):
        if case not in made:
            made[case] = harness.run_local(fluid, case)
        return made[case]
    return get


def test_reference_covers_every_case():
    assert sorted(REFERENCE["cases"]) == CASES
    assert REFERENCE["produced_by"]["paddle"] == "1.8.5"
    for case in CASES:
        model, options, batch, steps = harness.CASES[case]
        assert REFERENCE["cases"][case]["setup"] == {"model": model, "options": options, "batch": batch,
                                                     "steps": steps}, case


@pytest.mark.parametrize("case", CASES)
def test_losses_equal_paddle18(runs, case):
    ref = REFERENCE["cases"][case]
    result, net = runs(case)
    assert result["reference_init"] == ref["reference_init"], "randomly initialised parameters differ"
    got, want = np.array(result["loss"]), np.array(ref["loss"])
    assert np.all(np.isfinite(got)), got
    err = np.abs(got - want) / np.abs(want)
    assert err.max() < LOSS_RTOL_BY_CASE.get(case, LOSS_RTOL), "losses %s, Paddle 1.8 %s (relative error %s)" % (got, want, err)


@pytest.mark.parametrize("case", CASES)
def test_fetched_values_equal_paddle18(runs, case):
    ref = REFERENCE["cases"][case]
    result, _ = runs(case)
    names = sorted(k for k in ref if k not in ("loss", "infer", "parameters", "forward_ops", "reference_init",
                                                "setup"))
    assert names == sorted(k for k in result if k not in ("loss", "infer", "reference_init"))
    for name in names:
        for step, (got, want) in enumerate(zip(result[name], ref[name])):
            got, want = np.array(harness.unpack(got)), np.array(harness.unpack(want))
            assert got.shape == want.shape, "%s step %d: shape %s, Paddle %s" % (name, step, got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=FETCH_RTOL, atol=FETCH_ATOL,
                                       err_msg="%s, fetched at step %d" % (name, step))


@pytest.mark.parametrize("case", [c for c in CASES if REFERENCE["cases"][c]["infer"]])
def test_inference_equals_paddle18(runs, case):
    ref = REFERENCE["cases"][case]["infer"]
    result, _ = runs(case)
    got = result["infer"]
    assert sorted(got) == sorted(ref)
    for name in ref:
        assert got[name]["lod"] == ref[name]["lod"], "%s: LoD %s, Paddle %s" % (name, got[name]["lod"], ref[name]["lod"])
        if name == "ids":
            assert got[name]["values"] == ref[name]["values"]
        else:
            np.testing.assert_allclose(got[name]["values"], ref[name]["values"], rtol=FETCH_RTOL, atol=FETCH_ATOL)


@pytest.mark.parametrize("case", CASES)
def test_parameters_and_forward_ops_as_paddle18(runs, case):
    ref = REFERENCE["cases"][case]
    _, net = runs(case)
    assert [list(p) for p in harness.parameters(net)] == ref["parameters"]
    assert harness.forward_op_types(net["main"]) == ref["forward_ops"]
    net["main"].lint()
