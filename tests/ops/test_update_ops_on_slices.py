"""Every parameter update op on a slice of its parameter: what the pserver transpiler relies on.

The transpiler slices a parameter (and the accumulators its update rule says are shaped like it)
into row blocks on several pservers, unless the rule says it needs the whole parameter. So for each
registered update op: with ``whole_param`` False, updating a row block must give exactly those rows
of the whole update; with ``whole_param`` True (norm-based rules), it must not (else the fact would be
needless and the parameter could be sliced).
"""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.framework import registry


def _update_types():
    return [t for t in registry.all_op_types() if registry.fact(t, "update") is not None]


def _run_update(op_type, arrays, attrs):
    """Run one ``op_type`` op on copies of ``arrays`` ({slot: array}); returns {output slot: array}."""
    d = registry.get(op_type)
    rule = registry.fact(op_type, "update")
    prog = fluid.Program()
    block = prog.global_block()
    scope = fluid.Scope()
    inputs, outputs = {}, {"ParamOut": ["Param"]}
    for slot, arr in arrays.items():
        block.create_var(name=slot, shape=arr.shape, dtype=str(arr.dtype), persistable=True)
        inputs[slot] = [slot]
        scope.var(slot).get_tensor().set(arr.copy(), fluid.CPUPlace())
    for acc, out in zip(rule.param_like, rule.outputs):
        outputs[out] = [acc]
    block.append_op(op_type, inputs=inputs, outputs=outputs, attrs=attrs)
    prog.lint()
    fluid.Executor(fluid.CPUPlace()).run(prog, scope=scope)
    return {slot: np.array(scope.find_var(slot).get_tensor()) for slot in ["Param"] + list(rule.param_like)}


def _inputs(op_type, rows, width, seed):
    """Values for the op's input slots as the registry declares them: Param, Grad and the
    parameter-shaped accumulators get [rows, width]; LearningRate and the scalars one value."""
    d = registry.get(op_type)
    rule = registry.fact(op_type, "update")
    r = np.random.RandomState(seed)
    arrays = {}
    for slot in d.inputs:
        if slot in ("Param", "Grad"):
            arrays[slot] = r.uniform(-1, 1, (rows, width)).astype("float32")
        elif slot in rule.param_like:
            # accumulators that are squares or norms must not be negative
            arrays[slot] = r.uniform(0.1, 1.0, (rows, width)).astype("float32")
        elif slot == "LearningRate":
            arrays[slot] = np.array([0.05], dtype="float32")
        elif slot in rule.scalars:
            arrays[slot] = np.array([0.5], dtype="float32")
        elif slot not in d.optional:
            raise AssertionError("%s: input slot %r is neither Param, Grad, LearningRate nor one of its update "
                                 "rule's accumulators" % (op_type, slot))
    return arrays


@pytest.mark.parametrize("op_type", _update_types())
def test_update_on_a_row_block_is_that_block_of_the_whole_update(op_type):
    rule = registry.fact(op_type, "update")
    attrs = registry.defaults_for(op_type)
    whole = _inputs(op_type, 8, 5, seed=3)
    want = _run_update(op_type, whole, attrs)
    begin, end = 3, 7                                 # a row block, as slice_variable cuts them
    part = {s: (a[begin:end] if s in ("Param", "Grad") + tuple(rule.param_like) else a) for s, a in whole.items()}
    got = _run_update(op_type, part, attrs)
    same = all(np.allclose(got[s], want[s][begin:end], rtol=1e-6, atol=1e-7) for s in got)
    if rule.whole_param:
        assert not same, ("%s is marked whole_param but updates a row block like the whole parameter: the "
                          "fact keeps it from being sliced for nothing" % op_type)
    else:
        assert same, "%s on rows %d:%d differs from those rows of the whole update" % (op_type, begin, end)


def test_the_update_ops_and_their_facts():
    """The list this test covers: every optimizer op of fluid 1.x, and which need the whole tensor."""
    types = set(_update_types())
    assert {"sgd", "momentum", "adam", "adamax", "adagrad", "decayed_adagrad", "rmsprop", "ftrl", "lamb",
            "lars_momentum"} <= types
    assert {t for t in types if registry.fact(t, "update").whole_param} >= {"lamb", "lars_momentum"}
