"""Random initialisers of a table's shard (rows row_begin:row_end:row_step of the whole table) are
drawn in chunks of rows: the same values as slicing one draw of the whole table, in less memory."""
import numpy as np
import pytest

import fluidist.ops.random_init as tensor_ops


class _Ctx:
    xp = np


@pytest.mark.parametrize("kind", ["uniform", "normal"])
@pytest.mark.parametrize("full", [(50, 16), (51, 3), (7, 16), (100, 4)])
@pytest.mark.parametrize("rows", [(0, -1, 2), (1, -1, 2), (2, -1, 3), (5, 20, 1), (3, 40, 4), (1, 100, 2), (10, 11, 5)])
def test_chunked_shard_draw_equals_the_slice_of_the_whole(monkeypatch, kind, full, rows):
    monkeypatch.setattr(tensor_ops, "_DRAW_CHUNK_BYTES", 8 * full[1] * 7)     # 7 rows per chunk
    rb, re_, step = rows
    attrs = {"shape": [0], "full_shape": list(full), "row_begin": rb, "row_end": re_, "row_step": step,
             "dtype": "float32"}

    def sampler():
        r = np.random.RandomState(5)
        return (lambda shape: r.uniform(-1, 1, shape)) if kind == "uniform" else (lambda shape: r.normal(0, 1, shape))

    got = tensor_ops._draw(_Ctx(), attrs, sampler())["Out"]
    want = sampler()(full)[rb:re_:step].astype(np.float32)
    np.testing.assert_array_equal(got, want)


def _uniform(attrs):
    import fluidist as fluid
    prog = fluid.Program()
    out = prog.global_block().create_var(name="out", dtype="float32")
    prog.global_block().append_op("uniform_random", outputs={"Out": [out]},
                                  attrs=dict({"min": -0.5, "max": 0.5, "seed": 3}, **attrs))
    return fluid.Executor(fluid.CPUPlace()).run(prog, fetch_list=[out], scope=fluid.Scope())[0]


@pytest.mark.parametrize("rows", [(0, -1, 1), (1, 9, 2), (2, 10, 3)])
def test_diagonal_of_a_shard_is_the_slice_of_the_whole_diagonal(rows):
    """``diag_num`` elements ``i * (diag_step + 1)`` of the whole flattened tensor are ``diag_val``
    (Paddle 1.8's uniform_random), and a shard holds exactly those of its rows."""
    diag = {"diag_num": 4, "diag_step": 6, "diag_val": 7.0}
    whole = _uniform(dict(diag, shape=[10, 5]))
    flat = whole.reshape(-1)
    assert flat[[0, 7, 14, 21]].tolist() == [7.0] * 4
    assert np.all(np.abs(np.delete(flat, [0, 7, 14, 21])) <= 0.5)
    rb, re_, step = rows
    shard = _uniform(dict(diag, shape=[len(range(*slice(rb, re_, step).indices(10))), 5], full_shape=[10, 5],
                          row_begin=rb, row_end=re_, row_step=step))
    np.testing.assert_array_equal(shard, whole[rb:re_:step])
    with pytest.raises(ValueError, match="do not fit"):
        _uniform(dict(diag, diag_num=9, shape=[10, 5]))


def test_uniform_initializer_sets_a_diagonal_and_asserts_its_arguments_as_paddle():
    import fluidist as fluid
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 6], "float32")
        fluid.layers.fc(x, 6, param_attr=fluid.initializer.Uniform(-0.5, 0.5, seed=2, diag_num=6, diag_step=6))
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    w = np.array(scope.find_var(main.all_parameters()[0].name).get_tensor())
    assert np.diag(w).tolist() == [1.0] * 6
    with pytest.raises(AssertionError):
        fluid.initializer.Uniform(diag_num=3)      # Paddle 1.8 asserts diag_step > 0 with it
    with pytest.raises(AssertionError):
        fluid.initializer.Uniform(1.0, -1.0)
