"""``merge_ids`` (what a trainer runs in place of a distributed table's lookup) passes the LoD of its
Ids on to its Out, so a ``sequence_pool`` can follow it, as after the lookup it replaced."""
import numpy as np

import fluidist as fluid


def _program():
    prog = fluid.Program()
    b = prog.global_block()
    b.create_var(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
    for n in ("rows0", "rows1"):
        b.create_var(name=n, shape=[-1, 1], dtype="int64")
    for n in ("pre0", "pre1"):
        b.create_var(name=n, shape=[-1, 2], dtype="float32")
    b.create_var(name="emb", shape=[-1, 2], dtype="float32", lod_level=1)
    b.create_var(name="pooled", shape=[-1, 2], dtype="float32")
    b.create_var(name="idx", shape=[-1, 2], dtype="int32")
    b.append_op("merge_ids", inputs={"Ids": ["ids"], "Rows": ["rows0", "rows1"], "X": ["pre0", "pre1"]},
                outputs={"Out": ["emb"]})
    b.append_op("sequence_pool", inputs={"X": ["emb"]}, outputs={"Out": ["pooled"], "MaxIndex": ["idx"]},
                attrs={"pooltype": "SUM"})
    return prog.lint()


def test_merge_ids_keeps_the_lod_for_sequence_pool():
    ids = fluid.create_lod_tensor(np.array([[4], [1], [3], [4], [2]], "int64"), [[2, 3]], fluid.CPUPlace())
    table = {i: np.array([i, 10 * i], "float32") for i in range(5)}
    feed = {"ids": ids, "rows0": np.array([[2], [4]], "int64"), "rows1": np.array([[1], [3]], "int64"),
            "pre0": np.stack([table[2], table[4]]), "pre1": np.stack([table[1], table[3]])}
    exe = fluid.Executor(fluid.CPUPlace())
    emb, pooled = exe.run(_program(), feed=feed, fetch_list=["emb", "pooled"], return_numpy=False)
    assert emb.lod() == [[0, 2, 5]]
    np.testing.assert_array_equal(np.array(emb), np.stack([table[i] for i in (4, 1, 3, 4, 2)]))
    np.testing.assert_array_equal(np.array(pooled), [table[4] + table[1], table[3] + table[4] + table[2]])


def test_sequence_pool_names_the_op_that_dropped_the_lod():
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[2], dtype="float32", lod_level=1)
        y = fluid.layers.scale(fluid.layers.cast(x, "float32"), 2.0)   # both keep the LoD
        z = fluid.layers.reshape(y, [-1, 2])                             # reshape2 keeps none
        fluid.layers.sequence_pool(z, "sum")
    feed = {"x": fluid.create_lod_tensor(np.ones((3, 2), "float32"), [[1, 2]], fluid.CPUPlace())}
    exe = fluid.Executor(fluid.CPUPlace())
    try:
        exe.run(prog, feed=feed)
    except ValueError as e:
        assert "reshape2" in str(e) and "LoD" in str(e)
    else:
        raise AssertionError("sequence_pool ran on an input without LoD")
