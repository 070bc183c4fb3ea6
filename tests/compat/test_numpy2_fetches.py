"""Fetched values behave under NumPy 2 as under NumPy 1 where Paddle 1.x scripts depend on it:
``float(loss)``, ``int(step)``, ``'%f' % loss``, ``'%d' % n`` of a one-element fetched value, and
otherwise they are plain ndarrays (arithmetic, NumPy functions, ``np.array``, repr, pickle, np.save)."""
import io
import pickle

import numpy as np
import pytest

import fluidist as fluid


def _fetch_loss_and_count():
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        count = fluid.layers.fill_constant([1], "int64", 7)
        hidden = fluid.layers.fc(x, 2)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return exe.run(prog, feed={"x": np.ones((4, 3), "float32")}, fetch_list=[loss, count, hidden], scope=scope)


def test_one_element_fetches_convert_to_python_numbers():
    loss, count, hidden = _fetch_loss_and_count()
    assert loss.shape == (1,) and count.shape == (1,)
    assert isinstance(float(loss), float) and float(loss) == pytest.approx(loss[0])
    assert int(count) == 7 and int(loss) == int(loss[0])
    assert "%f" % loss == "%f" % loss[0] and "%d" % count == "7" and "%.2f" % loss == "%.2f" % loss[0]
    assert "%d" % (count * 2) == "14"                       # derived values keep the behaviour
    with pytest.raises(TypeError):
        float(hidden)                                      # several elements: an error, as in NumPy 1


def test_otherwise_plain_ndarrays():
    loss, count, hidden = _fetch_loss_and_count()
    assert isinstance(loss, np.ndarray) and repr(count) == "array([7])"
    assert type(np.array(hidden)) is np.ndarray and type(np.asarray(hidden).copy()) in (np.ndarray, type(hidden))
    np.testing.assert_array_equal(hidden + 1, np.array(hidden) + 1)
    assert float(np.mean(hidden)) == pytest.approx(np.array(hidden).mean())
    back = pickle.loads(pickle.dumps(hidden))
    assert type(back) is np.ndarray and np.array_equal(back, hidden)
    buf = io.BytesIO()
    np.save(buf, loss)
    buf.seek(0)
    saved = np.load(buf)
    assert type(saved) is np.ndarray and saved.shape == (1,) and saved[0] == loss[0]


def test_fetches_of_arrays_and_data_parallel_runs():
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    compiled = fluid.CompiledProgram(prog).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    merged, = exe.run(compiled, feed={"x": np.ones((4, 3), "float32")}, fetch_list=[loss], scope=scope)
    assert merged.shape == (2,) and isinstance(float(merged.mean()), float)
    mean_of_places = np.mean(merged)
    assert "%.4f" % mean_of_places
