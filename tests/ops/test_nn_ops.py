"""lookup_table (dense / sparse gradients, padding_idx) and sequence_pool (every pool type, LoD cases)."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.backward import append_backward
from fluidist.device.places import to_host
from fluidist.core.tensor import SelectedRows
from op_test import check_grad, run_op

rng = np.random.RandomState(7)


def table(rows=6, width=3, dtype=np.float64):
    return rng.uniform(-1, 1, (rows, width)).astype(dtype)


# ------------------------------------------------------------------ lookup_table forward
@pytest.mark.parametrize("ids_shape,out_shape", [((5, 1), (5, 3)), ((5,), (5, 3)), ((2, 4, 1), (2, 4, 3))])
def test_lookup_table_rows_and_shapes(ids_shape, out_shape):
    w = table()
    ids = rng.randint(0, 6, ids_shape).astype(np.int64)
    out = run_op("lookup_table", {"W": w, "Ids": ids})["Out"][0]
    assert out.shape == out_shape
    np.testing.assert_array_equal(out.reshape(-1, 3), w[ids.reshape(-1)])


def test_lookup_table_v2_keeps_the_ids_shape():
    w = table()
    ids = rng.randint(0, 6, (2, 3)).astype(np.int64)
    out = run_op("lookup_table_v2", {"W": w, "Ids": ids})["Out"][0]
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out, w[ids])


def test_lookup_table_padding_idx_gives_zero_rows():
    w = table()
    ids = np.array([[0], [2], [5], [2]], np.int64)
    out = run_op("lookup_table", {"W": w, "Ids": ids}, {"padding_idx": 2})["Out"][0]
    expect = w[ids[:, 0]].copy()
    expect[[1, 3]] = 0
    np.testing.assert_array_equal(out, expect)


@pytest.mark.cpu_only("on a device an id out of range gives a NaN row (tests/device/test_device_checks.py)")
def test_lookup_table_rejects_ids_out_of_range():
    with pytest.raises(ValueError, match="id 6 .* out of range .* 6 rows"):
        run_op("lookup_table", {"W": table(), "Ids": np.array([[1], [6]], np.int64)})
    with pytest.raises(ValueError, match="trailing dimension of 1"):
        run_op("lookup_table", {"W": table(), "Ids": np.zeros((2, 3), np.int64)})


def test_lookup_table_keeps_the_lod_of_ids():
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(ids, size=[10, 2])
    assert emb.shape == (-1, 2) and emb.lod_level == 1
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    t = fluid.create_lod_tensor(np.array([[1], [2], [3]], np.int64), [[1, 2]], fluid.CPUPlace())
    out = exe.run(prog, feed={"ids": t}, fetch_list=[emb], scope=scope, return_numpy=False)[0]
    assert out.lod() == [[0, 1, 3]]


# ------------------------------------------------------------------ lookup_table gradients
@pytest.mark.parametrize("padding_idx", [-1, 3])
def test_lookup_table_dense_grad(padding_idx):
    ids = np.array([[1], [3], [1], [4], [0]], np.int64)  # repeated ids accumulate
    check_grad("lookup_table", {"W": table(), "Ids": ids}, ["W"], {"padding_idx": padding_idx})


def _grad_program(is_sparse, padding_idx=-1, ids=None):
    prog = fluid.Program()
    block = prog.global_block()
    w = table(6, 2)
    ids = ids if ids is not None else np.array([[4], [1], [4], [2]], np.int64)
    block.create_var(name="w", shape=w.shape, dtype="float64")
    block.create_var(name="ids", shape=ids.shape, dtype="int64", stop_gradient=True)
    block.create_var(name="out", dtype="float64")
    block.create_var(name="loss", shape=(1,), dtype="float64")
    block.append_op("lookup_table", inputs={"W": ["w"], "Ids": ["ids"]}, outputs={"Out": ["out"]},
                    attrs={"is_sparse": is_sparse, "padding_idx": padding_idx})
    block.create_var(name="sq", dtype="float64")
    block.append_op("square", inputs={"X": ["out"]}, outputs={"Out": ["sq"]})
    block.append_op("reduce_sum", inputs={"X": ["sq"]}, outputs={"Out": ["loss"]}, attrs={"reduce_all": True})
    append_backward(block.var("loss"))
    return prog, {"w": w, "ids": ids}


def test_sparse_grad_is_selected_rows_with_duplicates_kept():
    prog, feed = _grad_program(True)
    assert prog.global_block().var("w@GRAD").type == "SELECTED_ROWS"
    g = fluid.Executor(fluid.CPUPlace()).run(prog, feed=feed, fetch_list=["w@GRAD"], scope=fluid.Scope(),
                                             return_numpy=False)[0]
    assert isinstance(g, SelectedRows)
    rows = to_host(g.rows)     # rows and values stay on the executor's place
    np.testing.assert_array_equal(rows, [4, 1, 4, 2])
    assert rows.dtype == np.int64 and g.height == 6
    np.testing.assert_allclose(np.array(g.get_tensor()), 2 * feed["w"][[4, 1, 4, 2]])
    # the same gradient, densified, as the dense kernel computes it
    dprog, _ = _grad_program(False)
    assert dprog.global_block().var("w@GRAD").type == "LOD_TENSOR"
    dense = fluid.Executor(fluid.CPUPlace()).run(dprog, feed=feed, fetch_list=["w@GRAD"], scope=fluid.Scope())[0]
    np.testing.assert_allclose(to_host(g.to_dense()), dense)
    np.testing.assert_allclose(dense[4], 4 * feed["w"][4])
    np.testing.assert_array_equal(dense[[0, 3, 5]], 0)


@pytest.mark.parametrize("is_sparse", [True, False])
def test_padding_rows_get_no_gradient(is_sparse):
    """The CPU drops the padding ids' rows from a sparse gradient; a device zeroes them (dropping
    would read the number of rows left back to the host)."""
    place = fluid.CPUPlace()
    prog, feed = _grad_program(is_sparse, padding_idx=4)
    g = fluid.Executor(place).run(prog, feed=feed, fetch_list=["w@GRAD"], scope=fluid.Scope(),
                                  return_numpy=False)[0]
    if is_sparse:
        rows, values = to_host(g.rows), to_host(g.value)
        if getattr(place, "is_device", False):
            np.testing.assert_array_equal(rows, [4, 1, 4, 2])
            np.testing.assert_array_equal(values[rows == 4], 0)
        else:
            np.testing.assert_array_equal(rows, [1, 2])
        dense = to_host(g.to_dense())
    else:
        dense = np.array(g)
    np.testing.assert_array_equal(dense[4], 0)
    np.testing.assert_allclose(dense[1], 2 * feed["w"][1])


def test_sgd_applies_a_selected_rows_gradient_row_wise():
    """The sgd op merges repeated rows and touches only those rows."""
    prog = fluid.Program()
    block = prog.global_block()
    for n, shape in (("p", (5, 2)), ("g", (5, 2)), ("lr", (1,))):
        block.create_var(name=n, shape=shape, dtype="float64", persistable=True)
    block.var("g").type = "SELECTED_ROWS"
    block.append_op("sgd", inputs={"Param": ["p"], "Grad": ["g"], "LearningRate": ["lr"]},
                    outputs={"ParamOut": ["p"]})
    scope = fluid.Scope()
    p0 = table(5, 2)
    value = rng.uniform(-1, 1, (3, 2))
    scope.var("p").get_tensor().set(p0.copy())
    scope.var("lr").get_tensor().set(np.array([0.5]))
    scope.var("g").set_value(SelectedRows(np.array([3, 0, 3], np.int64), value, 5))
    fluid.Executor(fluid.CPUPlace()).run(prog, scope=scope)
    expect = p0.copy()
    expect[3] -= 0.5 * (value[0] + value[2])
    expect[0] -= 0.5 * value[1]
    np.testing.assert_allclose(np.array(scope.find_var("p").get_tensor()), expect)


def _train_embedding(is_sparse, steps=5):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        emb = fluid.layers.embedding(ids, size=[12, 4], is_sparse=is_sparse, padding_idx=0,
                                     param_attr=fluid.ParamAttr(name="emb"))
        pred = fluid.layers.fc(emb, 1, param_attr=fluid.ParamAttr(name="w"), bias_attr=fluid.ParamAttr(name="b"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.2).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    init = np.array(scope.find_var("emb").get_tensor())
    data = np.random.RandomState(5)
    for _ in range(steps):
        feed = {"ids": data.choice([0, 2, 2, 5, 7], size=(8, 1)).astype(np.int64),
                "y": data.uniform(-1, 1, (8, 1)).astype(np.float32)}
        exe.run(main, feed=feed, scope=scope)
    return init, {n: np.array(scope.find_var(n).get_tensor()) for n in ("emb", "w", "b")}


def test_sparse_embedding_with_sgd_matches_dense():
    init, sparse = _train_embedding(True)
    _, dense = _train_embedding(False)
    for n in dense:
        np.testing.assert_allclose(sparse[n], dense[n], rtol=1e-6, atol=1e-7, err_msg=n)
    touched = [2, 5, 7]
    untouched = [1, 3, 4, 6, 8, 9, 10, 11]
    assert not np.allclose(sparse["emb"][touched], init[touched])
    np.testing.assert_array_equal(sparse["emb"][untouched], init[untouched])
    np.testing.assert_array_equal(sparse["emb"][0], init[0])  # the padding row never moves


# ------------------------------------------------------------------ sequence_pool
def _ref_pool(x, lengths, kind, pad_value=0.0):
    out, index = [], []
    start = 0
    for n in lengths:
        seq = x[start:start + n]
        if n == 0:
            out.append(np.full(x.shape[1:], pad_value))
            index.append(np.full(x.shape[1:], -1))
        elif kind == "AVERAGE":
            out.append(seq.mean(0))
        elif kind == "SUM":
            out.append(seq.sum(0))
        elif kind == "SQRT":
            out.append(seq.sum(0) / np.sqrt(n))
        elif kind == "MAX":
            out.append(seq.max(0))
            index.append(seq.argmax(0) + start)
        elif kind == "FIRST":
            out.append(seq[0])
        elif kind == "LAST":
            out.append(seq[-1])
        start += n
    return np.array(out), np.array(index)


KINDS = ["AVERAGE", "SUM", "SQRT", "MAX", "FIRST", "LAST"]


def _offsets(lengths):
    return [list(np.concatenate([[0], np.cumsum(lengths)]).astype(int))]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lengths", [[3, 1, 2], [2, 0, 3, 0]])
def test_sequence_pool_forward(kind, lengths):
    x = rng.uniform(-1, 1, (sum(lengths), 3)).astype(np.float64)
    outputs = ("Out", "MaxIndex") if kind == "MAX" else ("Out",)  # MaxIndex is written by max-pooling only
    got = run_op("sequence_pool", {"X": x}, {"pooltype": kind, "pad_value": 0.5}, outputs=outputs,
                 lods={"x_in": _offsets(lengths)})
    out, index = _ref_pool(x, lengths, kind, 0.5)
    np.testing.assert_allclose(got["Out"][0], out)
    if kind == "MAX":
        assert got["MaxIndex"][0].dtype == np.int32
        np.testing.assert_array_equal(got["MaxIndex"][0], index)


def test_sequence_pool_rows_of_higher_rank():
    x = rng.uniform(-1, 1, (5, 2, 3))
    got = run_op("sequence_pool", {"X": x}, {"pooltype": "MAX"}, outputs=("Out", "MaxIndex"),
                 lods={"x_in": [[0, 2, 5]]})
    np.testing.assert_allclose(got["Out"][0], np.stack([x[:2].max(0), x[2:].max(0)]))
    np.testing.assert_array_equal(got["MaxIndex"][0], np.stack([x[:2].argmax(0), x[2:].argmax(0) + 2]))


@pytest.mark.parametrize("kind", KINDS)
def test_sequence_pool_grad(kind):
    x = rng.uniform(-1, 1, (6, 3)).astype(np.float64)
    outputs = ("Out", "MaxIndex") if kind == "MAX" else ("Out",)
    check_grad("sequence_pool", {"X": x}, ["X"], {"pooltype": kind}, outputs=outputs,
               lods={"x_in": [[0, 2, 2, 6]]})  # the middle sequence is empty


def test_sequence_pool_two_level_lod_keeps_the_outer_level():
    x = rng.uniform(-1, 1, (6, 2)).astype("float32")
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        xv = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=2)
        out = fluid.layers.sequence_pool(xv, "sum")
    assert out.lod_level == 1 and out.shape == (-1, 2)
    t = fluid.create_lod_tensor(x, [[2, 1], [1, 2, 3]], fluid.CPUPlace())
    got = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": t}, fetch_list=[out], scope=fluid.Scope(),
                                               return_numpy=False)[0]
    assert got.lod() == [[0, 2, 3]]
    np.testing.assert_allclose(np.array(got), [x[:1].sum(0), x[1:3].sum(0), x[3:].sum(0)], rtol=1e-6)


def test_sequence_pool_needs_lod():
    with pytest.raises(ValueError, match="has no LoD"):
        run_op("sequence_pool", {"X": table()}, {"pooltype": "SUM"})
    with pytest.raises(ValueError, match="pooltype 'MEDIAN'"):
        run_op("sequence_pool", {"X": table()}, {"pooltype": "MEDIAN"}, lods={"x_in": [[0, 6]]})
