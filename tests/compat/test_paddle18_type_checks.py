"""fluidist's layers refuse with TypeError what Paddle 1.8's refuse with TypeError (a NumPy array
where a Variable goes, a Variable of a dtype the layer's checks exclude), and build what Paddle's
build (``type_checks_cases.py``; ``tools/paddle18_layer_facts.py type_checks`` recorded Paddle's
outcome of every variant in ``data/paddle18_type_checks.json``)."""
import json
import os

import pytest

import fluidist as fluid
import type_checks_cases as cases

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "paddle18_type_checks.json")) as _f:
    REFS = json.load(_f)

# variants Paddle 1.8 builds and fluidist refuses: (case, variant) -> why
ACCEPTED_DIFFERENCES: dict = {}


def test_every_case_has_paddles_record():
    assert sorted(k for k in REFS if not k.startswith("_")) == sorted(cases.CASES)
    refused = {name for name, rec in REFS.items() if not name.startswith("_") and rec["ok"] != "ok"}
    assert refused == cases.PADDLE_REFUSES, "a case's valid call is not valid in Paddle 1.8"


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_layer_refuses_what_paddle18_refuses_and_builds_what_it_builds(name):
    got = cases.run(fluid, name)
    if got["ok"] == "NotImplementedError":
        pytest.skip("fluidist does not provide %s" % name)
    wrong = []
    for variant, want in REFS[name].items():
        if want == "TypeError" and got[variant] != "TypeError":
            wrong.append("%s: Paddle 1.8 raises TypeError, fluidist %s" % (variant, got[variant]))
        elif want == "ok" and got[variant] != "ok" and (name, variant) not in ACCEPTED_DIFFERENCES:
            wrong.append("%s: Paddle 1.8 builds it, fluidist raises %s" % (variant, got[variant]))
    assert not wrong, "%s:\n  %s" % (name, "\n  ".join(wrong))
