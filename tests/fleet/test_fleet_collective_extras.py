"""The optimizers, recompute and gradient merge in the collective fleet over real processes: two
workers end every step (every update, with gradient merge) with the parameters and optimizer state
of one process training on the concatenated batches."""
import numpy as np
import pytest

import fluidist as fluid
from fleet_extras import KINDS, MERGE_K, minimize_for
from fleet_models import PARAMS, build, global_batch, initial_params, rel_err
from test_fleet_collective import run_workers

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def reference(what, steps, batch):
    """One process on the whole batches (gradient merge: on MERGE_K batches at a time)."""
    plain = what in ("recompute", "gradient_merge")
    minimize, state = minimize_for("sgd" if plain else what)
    main, startup, loss = build(minimize)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    out, names = {}, PARAMS + state
    group = MERGE_K if what == "gradient_merge" else 1
    for step in range(0, steps, group):
        feeds = [global_batch(s, batch) for s in range(step, step + group)]
        feed = {k: np.concatenate([f[k] for f in feeds]) for k in feeds[0]}
        res = exe.run(main, feed=feed, fetch_list=names, scope=scope)
        for name, v in zip(names, res):
            out["%s_%d" % (name, step + group - 1)] = v
    return out


@pytest.mark.parametrize("what,mode", [(k, "grad_allreduce") for k in KINDS] +
                         [("model_average", "nccl2"), ("gradient_merge", "nccl2")])
def test_two_workers_equal_one_process(tmp_path, what, mode):
    steps, batch = 4, 8
    results = run_workers(tmp_path, 2, ["--mode", mode, "--optimizer", what, "--steps", steps, "--batch", batch])
    ref = reference(what, steps, batch)
    assert ref
    for key, want in ref.items():
        for rank, r in enumerate(results):
            err = rel_err(r[key], want)
            assert err < 1e-5, "%s: worker %d %s: relative error %g" % (what, rank, key, err)
    if what == "gradient_merge":       # before the first update the parameters are the initial ones
        start = initial_params()
        for r in results:
            for p in PARAMS:
                np.testing.assert_array_equal(r["%s_0" % p], start[p])
