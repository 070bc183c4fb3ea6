"""Tensor arrays and rank tables: array_write/read/length, lod_rank_table, lod_tensor_to_array and
back, shrink_memory, reorder_lod_tensor_by_rank; values, LoD, and gradients by finite differences."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import check_program_grad

L = fluid.layers
cf = fluid.layers.control_flow   # where Paddle 1.8 keeps the rank-table layers


def _exe_run(main, feed, fetch):
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False)


def test_array_write_read_length_and_fetch():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [2, 3], "float32")
        arr = L.create_array("float32")
        i0 = L.fill_constant([1], "int64", 0)
        i2 = L.fill_constant([1], "int64", 2)
        L.array_write(x, i0, arr)
        L.array_write(L.scale(x, 2.0), i2, arr)
        n = L.array_length(arr)
        back = L.array_read(arr, i2)
    main.lint()
    xv = np.arange(6, dtype="float32").reshape(2, 3)
    exe, scope = fluid.Executor(), fluid.Scope()
    for _ in range(2):   # the array starts empty in every run
        got_arr, got_n, got_back = exe.run(main, feed={"x": xv}, fetch_list=[arr, n, back], scope=scope)
        assert got_n[0] == 3 and got_arr[1] is None
        np.testing.assert_array_equal(got_arr[0], xv)
        np.testing.assert_array_equal(got_back, 2 * xv)
    with pytest.raises(TypeError, match="must be a LoDTensorArray"):
        with fluid.program_guard(main, startup):
            L.array_read(x, i0)


def test_read_of_an_item_never_written_names_the_array():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        arr = L.create_array("float32")
        out = L.array_read(arr, L.fill_constant([1], "int64", 4))
    with pytest.raises(ValueError, match=r"item 4 of array %r was never written" % arr.name):
        _exe_run(main, {}, [out])


def _two_level():
    # 3 paragraphs of 2, 1 and 3 sentences; sentences of 1..3 words
    lod = [[0, 2, 3, 6], [0, 2, 3, 6, 7, 9, 10]]
    x = np.arange(10, dtype="float64").reshape(10, 1) * np.array([[1.0, -1.0]])
    t = fluid.LoDTensor(x)
    t.set_lod(lod)
    return x, lod, t


def test_lod_tensor_to_array_by_rank_and_back():
    x, lod, t = _two_level()
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        xv = fluid.data("x", [None, 2], "float64", lod_level=2)
        table = cf.lod_rank_table(xv, level=0)
        arr = cf.lod_tensor_to_array(xv, table)
        back = cf.array_to_lod_tensor(arr, table)
        mx = cf.max_sequence_len(table)
    main.lint()
    got_arr, got_back, got_max = _exe_run(main, {"x": t}, [arr, back, mx])
    assert np.array(got_max)[0] == 3
    # rank order: paragraph 2 (3 sentences), 0 (2), 1 (1); item t holds sentence t of each paragraph
    # still running (Paddle 1.8 gives the same items and LoD)
    items = [(np.array(it), it.lod()) for it in got_arr]
    assert [list(v[:, 0].astype(int)) for v, _ in items] == [[6, 0, 1, 3, 4, 5], [7, 8, 2], [9]]
    assert [l for _, l in items] == [[[0, 1, 3, 6]], [[0, 2, 3]], [[0, 1]]]
    np.testing.assert_array_equal(np.array(got_back), x)
    assert got_back.lod() == lod


def test_shrink_memory_and_reorder_by_rank():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        seq = fluid.data("seq", [None, 1], "float32", lod_level=1)
        mem = fluid.data("mem", [None, 2], "float32")
        table = cf.lod_rank_table(seq)
        i = L.fill_constant([1], "int64", 1)
        reordered = L.reorder_lod_tensor_by_rank(mem, table)
        shrunk = cf.shrink_memory(reordered, i, table)
    seq_t = fluid.create_lod_tensor(np.zeros((6, 1), "float32"), [[1, 3, 2]], fluid.CPUPlace())
    mem_v = np.array([[0, 0], [1, 1], [2, 2]], "float32")
    got_r, got_s = _exe_run(main, {"seq": seq_t, "mem": mem_v}, [reordered, shrunk])
    np.testing.assert_array_equal(np.array(got_r), mem_v[[1, 2, 0]])
    np.testing.assert_array_equal(np.array(got_s), mem_v[[1, 2]])   # two sequences are longer than 1


def test_array_gradients_by_finite_differences():
    x, lod, t = _two_level()
    w = np.random.RandomState(3).uniform(0.5, 1.5, (10, 2))

    def build():
        xv = fluid.data("x", [None, 2], "float64", lod_level=2)
        xv.stop_gradient = False
        table = cf.lod_rank_table(xv, level=0)
        arr = cf.lod_tensor_to_array(xv, table)
        back = cf.array_to_lod_tensor(arr, table)
        item = L.array_read(arr, L.fill_constant([1], "int64", 1))
        rank1 = cf.lod_rank_table(item, level=0)
        first = cf.shrink_memory(L.reorder_lod_tensor_by_rank(item, rank1), L.fill_constant([1], "int64", 2), rank1)
        wv = fluid.data("w", [10, 2], "float64")
        return L.reduce_sum(back * back * wv) + L.reduce_sum(item * item) + L.reduce_sum(first * 3.0)
    check_program_grad(build, {"x": t, "w": w}, ["x"])


def test_top_level_counter_increments_are_undone_in_backward():
    # as in Paddle 1.8: with the counter not stopping gradients, backward steps each increment back
    # (in place, no sum), so each array gradient op reads the index its forward op used
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        xs = [fluid.data("x%d" % k, [2, 3], "float32") for k in range(3)]
        for x in xs:
            x.stop_gradient = False
        i = L.zeros([1], "int64")
        i.stop_gradient = False
        arr = L.array_write(xs[0], i)
        for x in xs[1:]:
            i = L.increment(i)
            L.array_write(x, i, array=arr)
        j = L.zeros([1], "int64")
        j.stop_gradient = False
        reads = [L.array_read(arr, j)]
        for _ in range(2):
            j = L.increment(j)
            reads.append(L.array_read(arr, j))
        # weights 1, 2, 3 on the three reads: a wrong index would mix them up
        loss = L.sums([L.scale(L.reduce_sum(r), scale=float(k + 1)) for k, r in enumerate(reads)])
        fluid.backward.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    back = types[types.index("fill_constant", types.index("sum")):]
    assert back.count("increment") == 4 and "sum" not in back[:back.index("write_to_array_grad")]
    feed = {"x%d" % k: np.ones((2, 3), "float32") for k in range(3)}
    grads = fluid.Executor(fluid.CPUPlace()).run(main, feed=feed, fetch_list=["x%d@GRAD" % k for k in range(3)],
                                                 scope=fluid.Scope())
    for k, g in enumerate(grads):
        np.testing.assert_array_equal(g, np.full((2, 3), k + 1.0))
