"""beam_search (selection, Paddle's tie order, finished branches, pruning), gather_tree, and
beam_search_decode's backtrace; expected values are Paddle 1.8.5's outputs on the same inputs."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import run_op

L = fluid.layers


def lt(value, lod, dtype):
    t = fluid.LoDTensor(np.array(value, dtype))
    t.set_lod(lod)
    return t


def _step(beam_size, is_accumulated=True, with_ids=True, pre_ids=((1,), (0,), (3,))):
    lod = [[0, 2, 3], [0, 1, 2, 3]]
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        p_ids = fluid.data("pre_ids", [None, 1], "int64", lod_level=2)
        p_scores = fluid.data("pre_scores", [None, 1], "float32", lod_level=2)
        ids = fluid.data("ids", [None, 4], "int64", lod_level=2)
        scores = fluid.data("scores", [None, 4], "float32", lod_level=2)
        out = L.beam_search(p_ids, p_scores, ids if with_ids else None, scores, beam_size=beam_size, end_id=0,
                            is_accumulated=is_accumulated, return_parent_idx=True)
    feed = {"pre_ids": lt(pre_ids, lod, "int64"), "pre_scores": lt([[0.5], [0.9], [0.2]], lod, "float32"),
            "ids": lt([[4, 2, 5, 0], [1, 1, 1, 1], [7, 8, 9, 0]], lod, "int64"),
            "scores": lt([[0.6, 0.9, 0.1, 0.9], [0.3, 0.3, 0.3, 0.3], [0.4, 0.5, 0.45, 0.5]], lod, "float32")}
    got = fluid.Executor().run(main, feed=feed, fetch_list=list(out), scope=fluid.Scope(), return_numpy=False)
    return [np.array(t).reshape(-1).tolist() for t in got], got[0].lod()


def test_beam_search_selects_like_paddle():
    (ids, scores, parents), lod = _step(2)
    # source 0: prefix 1 has ended (keeps end_id at 0.9); ties go to the later prefix, then the earlier id
    assert ids == [2, 0, 8, 0] and parents == [0, 1, 2, 2]
    np.testing.assert_allclose(scores, [0.9, 0.9, 0.5, 0.5], rtol=1e-6)
    assert lod == [[0, 2, 3], [0, 1, 2, 4]]


def test_beam_search_without_ids_and_not_accumulated():
    (ids, scores, _), lod = _step(3, is_accumulated=False, with_ids=False)
    assert ids == [1, 3, 0, 1, 3, 2] and lod == [[0, 2, 3], [0, 2, 3, 6]]
    np.testing.assert_allclose(scores, [0.3946394622325897, 0.3946394622325897, 0.8999999761581421,
                                        -0.49314719438552856, -0.49314719438552856, -0.5985077619552612], rtol=1e-6)


def test_beam_search_prunes_a_source_whose_branches_all_ended():
    (ids, _, parents), lod = _step(1, pre_ids=((0,), (0,), (3,)))
    # source 0: both prefixes ended and end_id is chosen again: dropped from the output; source 1:
    # among equal scores of one prefix the candidate inserted last wins the single place (Paddle's)
    assert lod == [[0, 2, 3], [0, 0, 0, 1]] and ids == [0] and parents == [2]


def test_beam_search_needs_a_two_level_lod():
    with pytest.raises(ValueError, match="must have a 2-level LoD"):
        run_op("beam_search", {"pre_ids": np.zeros((1, 1), "int64"), "pre_scores": np.zeros((1, 1), "float32"),
                               "scores": np.zeros((1, 2), "float32")}, {"beam_size": 1},
               outputs=("selected_ids", "selected_scores"))


def test_gather_tree_backtraces_parents():
    ids = np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]], "int64")
    parents = np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]], "int64")
    got = run_op("gather_tree", {"Ids": ids, "Parents": parents})["Out"][0]
    want = np.empty_like(ids)
    for b in range(2):
        for k in range(2):
            want[2, b, k] = ids[2, b, k]
            p = parents[2, b, k]
            for t in (1, 0):
                want[t, b, k] = ids[t, b, p]
                p = parents[t, b, p]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]])
