"""The trainer's sparse path of a distributed table: ``split_ids`` (ids and row-sparse gradients),
``merge_ids`` over several Ids inputs at once, and ``SelectedRows.merged`` / ``sum`` against a loop
adding each id's rows as Paddle 1.8 does, and against Paddle's own numbers."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.core.tensor import SelectedRows
from op_test import run_op

rng = np.random.RandomState(2)


@pytest.mark.cpu_only("SelectedRows built from host arrays, merged outside any place")
def test_merged_sums_repeated_rows_in_sorted_order_like_add_at():
    rows = rng.randint(0, 50, 400).astype(np.int64)
    value = rng.uniform(-1, 1, (400, 3))
    m = SelectedRows(rows, value, 50).merged()
    uniq, inv = np.unique(rows, return_inverse=True)
    want = np.zeros((len(uniq), 3))
    np.add.at(want, inv, value)
    np.testing.assert_array_equal(m.rows, uniq)
    np.testing.assert_allclose(m.value, want, rtol=1e-12, atol=1e-12)
    assert m.height == 50


@pytest.mark.cpu_only("SelectedRows built from host arrays, merged outside any place")
def test_merged_keeps_a_gradient_without_repeats_and_an_empty_one():
    g = SelectedRows(np.array([3, 1]), np.ones((2, 2)), 5)
    assert g.merged() is g
    empty = SelectedRows(np.zeros(0, np.int64), np.zeros((0, 2)), 5)
    assert empty.merged() is empty


def _named(prefix, arrays):
    return [("%s%d" % (prefix, i), a) for i, a in enumerate(arrays)]


def test_split_ids_then_merge_ids_give_every_input_its_rows():
    table = rng.uniform(-1, 1, (1000, 4)).astype(np.float32)
    ids = [rng.randint(0, 1000, (7 + i, 1)).astype(np.int64) for i in range(5)]
    parts = run_op("split_ids", {"Ids": _named("ids", ids)}, outputs=(("Out", 3),))["Out"]
    everything = np.unique(np.concatenate([v.reshape(-1) for v in ids]))
    for k, part in enumerate(parts):
        np.testing.assert_array_equal(part.reshape(-1), everything[everything % 3 == k])
    got = run_op("merge_ids", {"Ids": _named("ids", ids), "Rows": _named("rows", parts),
                               "X": _named("x", [table[p.reshape(-1)] for p in parts])},
                 outputs=(("Out", 5),))["Out"]
    for i in range(5):
        np.testing.assert_array_equal(got[i], table[ids[i].reshape(-1)])


@pytest.mark.parametrize("scale", [1, 10 ** 7])     # ids under a position map / over it: a binary search
def test_merge_ids_names_ids_that_were_not_prefetched(scale):
    for missing in (7, 0, 3):         # above, below and between the prefetched ids
        with pytest.raises(ValueError, match="not prefetched"):
            run_op("merge_ids", {"Ids": _named("ids", [np.array([[1], [missing]], np.int64) * scale]),
                                 "Rows": _named("rows", [np.array([[1], [2]], np.int64) * scale]),
                                 "X": _named("x", [np.zeros((2, 3), np.float32)])})


def test_merge_ids_of_ids_far_apart_takes_the_binary_search_and_gives_every_row():
    rows = [np.array([[4 * 10 ** 9], [6]], np.int64), np.array([[5], [3 * 10 ** 9 + 1]], np.int64)]
    ids = [np.array([[6], [3 * 10 ** 9 + 1], [6]], np.int64), np.array([[4 * 10 ** 9], [5]], np.int64)]
    xs = [np.array([[1.0], [2.0]], np.float32), np.array([[3.0], [4.0]], np.float32)]
    got = run_op("merge_ids", {"Ids": _named("ids", ids), "Rows": _named("rows", rows), "X": _named("x", xs)},
                 outputs=(("Out", 2),))["Out"]
    np.testing.assert_array_equal(got[0].reshape(-1), [2.0, 4.0, 2.0])
    np.testing.assert_array_equal(got[1].reshape(-1), [1.0, 3.0])


def test_split_ids_of_a_gradient_gives_each_shard_its_rows_summed():
    """With ``shard_rows`` (fluidist's transpiler, for the distributed table's gradient)."""
    rows = rng.randint(0, 20, 60).astype(np.int64)
    value = rng.uniform(-1, 1, (60, 2))
    prog = fluid.Program()
    b = prog.global_block()
    for n in ("g", "p0", "p1"):
        b.create_var(name=n, type="SELECTED_ROWS")
    b.append_op("split_ids", inputs={"Ids": ["g"]}, outputs={"Out": ["p0", "p1"]}, attrs={"shard_rows": True})
    place = fluid.CPUPlace()          # the stand-in device's place under FLUIDIST_TEST_DEVICE=standin
    scope = fluid.Scope()
    scope._set_value("g", SelectedRows(place.to_device(rows), place.to_device(value), 20))
    fluid.Executor(place).run(prog, scope=scope)
    dense = np.zeros((20, 2))
    np.add.at(dense, rows, value)
    for k in range(2):
        part = scope._find_value("p%d" % k)
        got_rows, got_value = place.to_host(part.rows), place.to_host(part.value)
        assert part.height == 10
        np.testing.assert_array_equal(got_rows * 2 + k, np.unique(rows[rows % 2 == k]))
        np.testing.assert_allclose(got_value, dense[got_rows * 2 + k], rtol=1e-12)


def _table(scope, name, rows, value, height):
    """A SelectedRows variable made as Paddle scripts make one (scope.var(...).get_selected_rows())."""
    handle = scope.var(name).get_selected_rows()
    handle.set_height(height)
    handle.set_rows(rows)
    handle.get_tensor().set(value, fluid.CPUPlace())
    return handle


@pytest.mark.cpu_only("fluid.op.Operator runs on the CPU place it is given")
def test_lookup_sparse_table_grows_a_table_id_by_id_and_reads_zeros_under_is_test():
    from fluidist.op import Operator
    scope = fluid.Scope()
    value = np.arange(6 * 2, dtype=np.float32).reshape(6, 2)
    table = _table(scope, "W", [], value, 1000)
    lookup = dict(W="W", Ids="Ids", Out="Out")
    for ids, want_rows in (([7, 3, 7, 500], [7, 3, 500]), ([3, 9], [7, 3, 500, 9])):
        scope.var("Ids").get_tensor().set(np.array(ids, np.int64), fluid.CPUPlace())
        Operator("lookup_sparse_table", **lookup).run(scope, fluid.CPUPlace())
        assert table.rows() == want_rows       # each new id takes the next value row, in order of arrival
        np.testing.assert_array_equal(np.array(scope.find_var("Out").get_tensor()),
                                      value[[want_rows.index(i) for i in ids]])
    scope.var("Ids").get_tensor().set(np.array([9, 42], np.int64), fluid.CPUPlace())
    Operator("lookup_sparse_table", is_test=True, **lookup).run(scope, fluid.CPUPlace())
    np.testing.assert_array_equal(np.array(scope.find_var("Out").get_tensor()), [value[3], [0, 0]])
    assert table.rows() == [7, 3, 500, 9]      # is_test never grows the table
    scope.var("Ids").get_tensor().set(np.arange(100, 103, dtype=np.int64), fluid.CPUPlace())
    with pytest.raises(ValueError, match="full"):
        Operator("lookup_sparse_table", **lookup).run(scope, fluid.CPUPlace())


@pytest.mark.cpu_only("fluid.op.Operator runs on the CPU place it is given")
def test_sgd_on_a_table_updates_the_value_rows_of_the_gradient_ids():
    from fluidist.op import Operator
    scope = fluid.Scope()
    value = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    param = _table(scope, "Param", [10, 2, 7, 5], value, 4)
    grad_value = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    _table(scope, "Grad", [7, 10, 7], grad_value, 4)
    scope.var("LearningRate").get_tensor().set(np.array([0.5], np.float32), fluid.CPUPlace())
    Operator("sgd", Param="Param", Grad="Grad", ParamOut="Param", LearningRate="LearningRate").run(
        scope, fluid.CPUPlace())
    want = value.copy()
    for row, g in zip([2, 0, 2], grad_value):    # ids 7, 10, 7 sit at value rows 2, 0, 2
        want[row] -= np.float32(0.5) * g
    np.testing.assert_allclose(np.array(param.get_tensor()), want, rtol=1e-6)
    _table(scope, "Grad", [3], grad_value[:1], 4)
    with pytest.raises(ValueError, match="does not hold"):
        Operator("sgd", Param="Param", Grad="Grad", ParamOut="Param", LearningRate="LearningRate").run(
            scope, fluid.CPUPlace())


@pytest.mark.cpu_only("fluid.op.Operator runs on the CPU place it is given")
def test_sum_of_row_sparse_inputs_merges_their_rows_as_paddle():
    """Paddle 1.8's sum of SelectedRows: each distinct row once, sorted, its values summed over the
    inputs; an input without rows adds nothing (whatever its value holds)."""
    from fluidist.op import Operator
    scope = fluid.Scope()
    a, b = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (2, 2))
    _table(scope, "A", [5, 1, 5], a, 8)
    _table(scope, "B", [1, 3], b, 8)
    _table(scope, "E", [], np.ones((4, 2)), 8)
    out = scope.var("Out").get_selected_rows()
    Operator("sum", X=["A", "E", "B"], Out="Out").run(scope, fluid.CPUPlace())
    assert out.rows() == [1, 3, 5] and out.height() == 8
    np.testing.assert_allclose(np.array(out.get_tensor()), [a[1] + b[0], b[1], a[0] + a[2]], rtol=1e-12)


@pytest.mark.cpu_only("fluid.op.Operator runs on the CPU place it is given")
def test_split_ids_of_a_selected_rows_keeps_ids_order_and_height_as_paddle():
    """Paddle 1.8's split of a SelectedRows (checked there): rows ``id % N == k`` in their order, the
    ids and the height kept; a repeated id's rows carry its last occurrence's value."""
    from fluidist.op import Operator
    scope = fluid.Scope()
    value = np.arange(12, dtype=np.float32).reshape(6, 2)
    _table(scope, "X", [0, 5, 7, 4, 9, 7], value, 20)
    outs = [scope.var("out%d" % k).get_selected_rows() for k in range(3)]
    Operator("split_ids", Ids="X", Out=["out0", "out1", "out2"]).run(scope, fluid.CPUPlace())
    assert [o.rows() for o in outs] == [[0, 9], [7, 4, 7], [5]]
    assert [o.height() for o in outs] == [20, 20, 20]
    np.testing.assert_array_equal(np.array(outs[1].get_tensor()), value[[5, 3, 5]])
    np.testing.assert_array_equal(np.array(outs[0].get_tensor()), value[[0, 4]])


@pytest.mark.cpu_only("scatter_add's NumPy path on host arrays")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scatter_add_of_rows_is_add_at_bit_for_bit(dtype):
    # the row-sparse update of a sync pserver's table (sgd with a SelectedRows gradient): rows added in
    # rounds of distinct rows must give exactly np.add.at's sums, repeated rows in their order
    from fluidist.core.tensor import scatter_add
    local = np.random.RandomState(7)
    for height, count in [(5, 40), (50, 60), (1000, 300), (3, 1), (200, 0)]:
        out = local.standard_normal((height, 4)).astype(dtype)
        idx = local.randint(0, height, count).astype(np.int64)
        val = (local.standard_normal((count, 4)) * 1e3).astype(dtype)
        want = out.copy()
        np.add.at(want, idx, val)
        got = out.copy()
        assert scatter_add(np, got, idx, val) is got
        np.testing.assert_array_equal(got, want)
    # what it leaves to np.add.at gives add.at's results too: negative ids, many repeats, mixed dtypes
    out = np.zeros((6, 2), dtype)
    for idx, val in [(np.array([-1, 5, 0]), np.ones((3, 2), dtype)), (np.zeros(30, np.int64), np.ones((30, 2), dtype)),
                     (np.array([1, 1]), np.full((2, 2), 0.1, "float64" if dtype == "float32" else "float32"))]:
        want = out.copy()
        np.add.at(want, idx, val)
        got = out.copy()
        scatter_add(np, got, idx, val)
        np.testing.assert_array_equal(got, want)
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        scatter_add(np, out, np.array([0, 6]), np.ones((2, 2), dtype))
    assert not out.any()                      # nothing written before the bad index was found


def _merge_reference(rows, value):
    """Paddle 1.8's CPU merge of repeated rows, one row at a time: the sorted distinct rows, each one
    starting from zeros and receiving its value rows in the order they came."""
    uniq = np.unique(rows)
    where = np.searchsorted(uniq, rows)
    out = np.zeros((len(uniq),) + value.shape[1:], value.dtype)
    for i, row in zip(where.tolist(), value):
        out[i] = out[i] + row
    return uniq, out


def _ctr_gradient_rows(local, slots, batch, height):
    """A CTR batch's gradient rows: per slot a Zipf-drawn id per example (a few ids very frequent)."""
    ranks = np.minimum(local.zipf(1.2, (batch, slots)), 1 << 30).astype(np.int64)
    return (ranks * 2654435761 + (np.arange(slots) + 1) * 1000003) % height


@pytest.mark.cpu_only("merge_rows' NumPy path on host arrays")
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")   # inf - inf: NaN, as meant
def test_merge_rows_sums_each_ids_rows_in_paddles_order_bit_for_bit():
    """Every path of the merge (ids ranked over their range, or sorted: ids far apart, over 65,536
    distinct, negative) sums each id's rows as Paddle 1.8 does, one after another from zeros, to the
    last bit: values spread over twelve decades (so the order of the additions shows), signed zeros
    (+0.0 out of -0.0 rows) and NaNs, for every dtype, row width and shape of the values, ids met
    hundreds of times included (add.reduceat's sums differ from these in most such cases)."""
    from fluidist.core.tensor import merge_rows
    local = np.random.RandomState(11)
    cases = [(_ctr_gradient_rows(local, 26, 1024, 10 ** 6).reshape(-1), (16,), "float32"),
             (_ctr_gradient_rows(local, 26, 128, 10 ** 5).reshape(-1), (1,), "float32"),
             (_ctr_gradient_rows(local, 4, 300, 10 ** 4).reshape(-1), (), "float64"),
             (local.randint(0, 50, 400), (3,), "float64"), (local.randint(0, 9, 30).astype(np.int32), (), "float16"),
             (local.randint(0, 10 ** 5, 200), (2, 3), "float32"),                  # a range too wide for a mask
             (local.randint(0, 3 * 10 ** 5, 2 * 10 ** 5), (1,), "float32"),        # over 65,536 distinct ids
             (local.randint(-5, 5, 100), (2,), "float32"), (np.array([7, 7]), (4,), "float32"),
             (np.full(40, 3), (1,), "float32"), (np.full(40, 3), (), "float32"), (np.array([2, 9, 2, 2]), (0,), "float32"),
             (local.randint(0, 3, 300), (5,), "int64")]
    for case, (rows, width, dtype) in enumerate(cases):
        value = (local.standard_normal((len(rows),) + width) * 10.0 ** local.randint(-4, 9, (len(rows),) + width))
        value = value.astype(dtype)
        value[local.rand(*value.shape) < 0.1] = -0.0
        if case < 8:      # not where a NaN would hide every other sum
            value.reshape(-1)[:3] = [np.nan, np.inf, 0.0][:value.size]
        want_rows, want = _merge_reference(rows, value)
        got_rows, got = merge_rows(np, rows, value)
        assert got_rows.dtype == rows.dtype and got.dtype == value.dtype
        np.testing.assert_array_equal(got_rows, want_rows)
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), (len(rows), width, dtype)


# Paddle 1.8.5's numbers (CPU): the SelectedRows below set in a scope, then Operator("sum", X=["A", "B"])
# and Operator("merge_selected_rows", X="A") run there; rows of 4 sum to 7.0 in Paddle where the first row
# plus the pairwise sum of the others gives 0.0, and -0.0 rows sum to +0.0.
_PADDLE_A_ROWS = [4, 1, 4, 4, 9, 4, 1, 4, 4, 4, 4, 4]
_PADDLE_A = [[1e8, 16777216.0], [1.0, -0.0], [1.0, 1.0], [-1e8, 1.0], [-0.0, -0.0], [1.0, 1.0],
             [3.0, -0.0], [1.0, -16777216.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
_PADDLE_B_ROWS = [4, 1, 9]
_PADDLE_B = [[1.0, 1.0], [0.5, -0.0], [-0.0, -0.0]]
_PADDLE_SUM = [[4.5, 0.0], [7.0, 5.0], [0.0, 0.0]]            # bits 0x40900000 0x0 0x40e00000 0x40a00000 0x0 0x0
_PADDLE_MERGED_A = [[4.0, 0.0], [6.0, 4.0], [0.0, 0.0]]       # bits 0x40800000 0x0 0x40c00000 0x40800000 0x0 0x0


@pytest.mark.cpu_only("fluid.op.Operator runs on the CPU place it is given")
def test_sum_and_merge_selected_rows_add_repeated_rows_as_paddle_18_bit_for_bit():
    from fluidist.op import Operator
    scope = fluid.Scope()
    _table(scope, "A", _PADDLE_A_ROWS, np.array(_PADDLE_A, np.float32), 10)
    _table(scope, "B", _PADDLE_B_ROWS, np.array(_PADDLE_B, np.float32), 10)
    summed, merged = scope.var("S").get_selected_rows(), scope.var("M").get_selected_rows()
    Operator("sum", X=["A", "B"], Out="S").run(scope, fluid.CPUPlace())
    Operator("merge_selected_rows", X="A", Out="M").run(scope, fluid.CPUPlace())
    assert summed.rows() == [1, 4, 9] and merged.rows() == [1, 4, 9]
    assert np.array(summed.get_tensor()).tobytes() == np.array(_PADDLE_SUM, np.float32).tobytes()
    assert np.array(merged.get_tensor()).tobytes() == np.array(_PADDLE_MERGED_A, np.float32).tobytes()


@pytest.mark.cpu_only("fluid.op.Operator runs on the CPU place it is given")
def test_sum_of_row_sparse_inputs_without_a_repeated_row_keeps_their_rows_as_they_are():
    """Paddle 1.8 (checked there): where no row repeats over the inputs, ``sum`` gives their rows one
    after another, unsorted, and their values as they are (-0.0 kept); ``merge_selected_rows`` too."""
    from fluidist.op import Operator
    scope = fluid.Scope()
    a, b = np.array([[1, -0.0], [2, 0]], np.float32), np.array([[3, -0.0], [4, 0]], np.float32)
    _table(scope, "A", [7, 3], a, 20)
    _table(scope, "B", [5, 1], b, 20)
    out, merged = scope.var("Out").get_selected_rows(), scope.var("M").get_selected_rows()
    Operator("sum", X=["A", "B"], Out="Out").run(scope, fluid.CPUPlace())
    Operator("merge_selected_rows", X="A", Out="M").run(scope, fluid.CPUPlace())
    assert out.rows() == [7, 3, 5, 1] and out.height() == 20
    assert np.array(out.get_tensor()).tobytes() == np.concatenate([a, b]).tobytes()
    assert merged.rows() == [7, 3] and np.array(merged.get_tensor()).tobytes() == a.tobytes()


@pytest.mark.cpu_only("fluid.op.Operator runs on the CPU place it is given")
def test_sum_of_a_ctr_batchs_slot_gradients_is_paddles_merge_and_split_ids_takes_it_as_it_is():
    """The trainer's ``sum`` of the 26 ``lookup_table_grad`` outputs of a CTR batch (one shared table):
    the distinct ids sorted, each one's gradient rows summed as Paddle's merge sums them; the
    distributed table's ``split_ids`` then deals the merged rows to the shards unchanged."""
    from fluidist.op import Operator
    local = np.random.RandomState(5)
    ids = _ctr_gradient_rows(local, 26, 256, 10 ** 5)
    grads = local.standard_normal((26, 256, 8)).astype(np.float32)
    scope = fluid.Scope()
    for s in range(26):
        _table(scope, "g%d" % s, ids[:, s].tolist(), grads[s], 10 ** 5)
    out = scope.var("sum").get_selected_rows()
    Operator("sum", X=["g%d" % s for s in range(26)], Out="sum").run(scope, fluid.CPUPlace())
    want_rows, want = _merge_reference(ids.T.reshape(-1), grads.reshape(-1, 8))
    assert out.rows() == want_rows.tolist() and out.height() == 10 ** 5
    assert np.array(out.get_tensor()).tobytes() == want.tobytes()
    merged = scope._find_value("sum")
    assert merged.merged() is merged
    parts = [scope.var("p%d" % k).get_selected_rows() for k in range(2)]
    Operator("split_ids", Ids="sum", Out=["p0", "p1"], shard_rows=True).run(scope, fluid.CPUPlace())
    for k, part in enumerate(parts):
        mine = want_rows % 2 == k
        assert part.rows() == (want_rows[mine] // 2).tolist()
        assert np.array(part.get_tensor()).tobytes() == want[mine].tobytes()


def test_concat_of_a_ctr_batchs_embeddings_is_numpys_concatenation():
    """``concat`` along axis 1 of a CTR batch's embeddings, each slot a block of ``merge_ids``' one
    gathered array (copied a run of blocks at a time), with the dense features or any other input
    between them: what NumPy's concatenate gives, bit for bit, whatever the blocks' order or layout."""
    local = np.random.RandomState(3)
    gathered = local.standard_normal((26 * 64, 16)).astype(np.float32)
    slots = [gathered[i * 64:(i + 1) * 64] for i in range(26)]
    dense = local.standard_normal((64, 13)).astype(np.float32)
    grad = local.standard_normal((64, 26 * 16 + 13)).astype(np.float32)
    columns = np.split(grad, np.arange(16, 26 * 16 + 1, 16), axis=1)[:26]     # concat_grad's column blocks
    other = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    for xs in [slots + [dense], slots[::-1] + [dense], [dense] + slots[:10] + [other] + slots[10:],
               slots[::2] + [dense] + slots[1::2], columns[::-1], columns[:5] + slots[5:9] + columns[9:]]:
        got, = run_op("concat", {"X": _named("x", xs)}, attrs={"axis": 1})["Out"]
        assert got.tobytes() == np.concatenate(xs, axis=1).tobytes()
