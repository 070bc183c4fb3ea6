"""The next batch's table rows asked for with the current step's message (``prefetch_ahead``), over
real processes: 2 pservers x 2 trainers of a distributed lookup table fed through a DataLoader equal
one process on the whole batch, with the look-ahead used at every step it can be, or refused by the
step's own ids."""
import numpy as np
import pytest

from test_pserver_equivalence import assert_equal_local, run_cluster

pytestmark = pytest.mark.timeout(180)

STEPS = 4


def counters(result):
    return {k[len("ahead_"):]: int(v) for k, v in result.items() if k.startswith("ahead_")}


@pytest.mark.parametrize("loader", ["iterable", "reader"])
def test_sync_through_a_loader_takes_the_next_rows_with_each_step_and_equals_local(tmp_path, loader):
    """Every step after the first finds its rows kept (no prefetch round trip), and the training is
    the whole batch's on one process: the rows came after the round that updated them. Trainer 1
    starts each step late, so trainer 0's message always waits for the round (trainer 0's next batch
    shares ids with its current one: rows from before the round would change its loss)."""
    results = run_cluster(tmp_path, "dtable", "sgd", steps=STEPS, extra=["--loader", loader, "--slow_trainer", "1:0.3"])
    assert_equal_local(results, "dtable", "sgd", False, steps=STEPS)
    for r in results:
        got = counters(r)
        assert got["round_trips_avoided"] == STEPS - 1, got
        assert got["parts_from_look_ahead"] == 2 * (STEPS - 1) and got["parts_asked"] == 2, got
        assert got["parts_posted"] == 2 * (STEPS - 1) and got["no_next_batch"] == 1, got
        assert got["parts_refused"] == 0 and got["failed"] == 0 and got["paused"] == 0, got


@pytest.mark.parametrize("decoy", ["decoy", "outside"])
def test_sync_whose_queued_batch_is_not_the_next_step_asks_again_and_equals_local(tmp_path, decoy):
    """The loop skips the batch the look-ahead saw (a decoy of other ids): each step's ids differ from
    the kept ones, the rows are asked for as without look-ahead, and training is unchanged. Ids outside
    the table ("outside") make the pservers refuse the look-ahead's parts: the steps go on all the same.
    After 4 look-aheads in a row unused, the trainer stops looking ahead (the last 4 steps here)."""
    steps = 8
    results = run_cluster(tmp_path, "dtable", "sgd", steps=steps, extra=["--loader", decoy])
    assert_equal_local(results, "dtable", "sgd", False, steps=steps)
    for r in results:
        got = counters(r)
        assert got["parts_posted"] == 2 * 4 and got["paused"] == 4, got
        assert got["round_trips_avoided"] == 0 and got["parts_from_look_ahead"] == 0, got
        assert got["parts_asked"] == 2 * steps and got["failed"] == 0, got
        assert got["parts_refused"] == (2 * 4 if decoy == "outside" else 0), got


def test_async_one_trainer_through_a_loader_equals_local(tmp_path):
    """Async: the pserver answers the look-ahead at once, after the step's gradients in the same
    message; with one trainer that is the table local training reads next."""
    results = run_cluster(tmp_path, "dtable", "sgd", steps=STEPS, async_mode=True, trainers=1,
                          extra=["--loader", "iterable"])
    got = counters(results[0])
    assert got["round_trips_avoided"] == STEPS - 1, got
    from dist_models import local_history
    ref, params = local_history("dtable", "sgd", False, STEPS, 4)
    for step in range(STEPS):
        np.testing.assert_allclose(results[0]["loss_%d" % step], ref["loss_%d" % step], rtol=1e-5)
        for name in params:
            np.testing.assert_allclose(results[0]["%s_%d" % (name, step)], ref["%s_%d" % (name, step)],
                                       rtol=1e-5, atol=1e-7)
