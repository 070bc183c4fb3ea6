"""LazyRows (a pserver's accumulators of a distributed table): reads, writes, growth, the dense
form, errors, and an optimizer op updating rows of it exactly as of a dense accumulator."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.core.lazy_rows import LazyRows
from fluidist.core.tensor import SelectedRows

# LazyRows built here on the host (the lazy_rows op builds them on its place)
pytestmark = pytest.mark.cpu_only("LazyRows and their inputs are built on the host here")


def test_unwritten_rows_read_as_the_fill_value_and_cost_no_row_memory():
    t = LazyRows(10_000_000, 16, "float32", 0.25)
    assert t.shape == (10_000_000, 16) and t.rows_materialised == 0
    np.testing.assert_array_equal(t[np.array([0, 9_999_999])], np.full((2, 16), 0.25, np.float32))
    assert t.nbytes == 4 * 10_000_000         # the slot map only


def test_writes_materialise_rows_and_grow_past_the_first_capacity():
    rng = np.random.RandomState(0)
    t = LazyRows(100_000, 3, "float32", 0.0)
    dense = np.zeros((100_000, 3), np.float32)
    for _ in range(5):
        rows = rng.choice(100_000, 700, replace=False)
        vals = rng.rand(700, 3).astype(np.float32)
        t[rows] = t[rows] + vals
        dense[rows] += vals
    assert 1024 < t.rows_materialised <= 3500
    probe = rng.randint(0, 100_000, 5000)
    np.testing.assert_array_equal(t[probe], dense[probe])
    np.testing.assert_array_equal(np.asarray(t), dense)


def test_bad_rows_are_named():
    t = LazyRows(5, 2)
    with pytest.raises(IndexError, match=r"outside \[0, 5\)"):
        t[np.array([5])]
    with pytest.raises(TypeError, match="integers"):
        t[np.array([0.5])] = np.zeros((1, 2))


def _run_adagrad(moment, rows, grads):
    main, startup = fluid.Program(), fluid.Program()
    block = main.global_block()
    for name in ("p", "g", "lr", "m"):
        block.create_var(name=name, persistable=True)
    block.append_op("adagrad", inputs={"Param": ["p"], "Grad": ["g"], "LearningRate": ["lr"], "Moment": ["m"]},
                    outputs={"ParamOut": ["p"], "MomentOut": ["m"]}, attrs={"epsilon": 1e-6})
    scope = fluid.Scope()
    scope._set_value("p", np.linspace(-1, 1, 64, dtype=np.float32).reshape(16, 4))
    scope._set_value("lr", np.array([0.1], np.float32))
    scope._set_value("m", moment)
    exe = fluid.Executor(fluid.CPUPlace())
    for r, g in zip(rows, grads):
        scope._set_value("g", SelectedRows(np.array(r), g, 16))
        exe.run(main, scope=scope)
    return np.asarray(scope._find_value("p")), scope._find_value("m")


def test_adagrad_on_lazy_rows_equals_adagrad_on_a_dense_moment():
    rng = np.random.RandomState(3)
    rows = [[1, 5, 5, 9], [0, 9, 15], [5]]
    grads = [rng.rand(len(r), 4).astype(np.float32) for r in rows]
    p_dense, m_dense = _run_adagrad(np.zeros((16, 4), np.float32), rows, grads)
    p_lazy, m_lazy = _run_adagrad(LazyRows(16, 4), rows, grads)
    assert isinstance(m_lazy, LazyRows) and m_lazy.rows_materialised == 5
    np.testing.assert_array_equal(p_lazy, p_dense)
    np.testing.assert_array_equal(np.asarray(m_lazy), m_dense)


def test_a_rule_updating_every_row_refuses_lazy_rows():
    main = fluid.Program()
    block = main.global_block()
    for name in ("p", "g", "lr", "v"):
        block.create_var(name=name, persistable=True)
    block.append_op("momentum", inputs={"Param": ["p"], "Grad": ["g"], "LearningRate": ["lr"], "Velocity": ["v"]},
                    outputs={"ParamOut": ["p"], "VelocityOut": ["v"]}, attrs={"mu": 0.9})
    scope = fluid.Scope()
    scope._set_value("p", np.zeros((4, 2), np.float32))
    scope._set_value("lr", np.array([0.1], np.float32))
    scope._set_value("v", LazyRows(4, 2))
    scope._set_value("g", SelectedRows(np.array([1]), np.ones((1, 2), np.float32), 4))
    with pytest.raises(ValueError, match="updates every row.*LazyRows"):
        fluid.Executor(fluid.CPUPlace()).run(main, scope=scope)
