"""The helpers of Paddle's reader, executor and core modules its own tests reach: places' ``_type`` /
``_equals`` (Paddle 1.8.5: CPUPlace is 1), ``GeneratorLoader._check_input_array`` and ``_reset``,
``DataLoaderBase``, ``executor._as_lodtensor``, a ``py_reader``'s feeding thread and
``core._create_loaded_parameter``."""
import numpy as np
import pytest

import fluidist as fluid


def test_places_type_and_equals_as_paddle():
    cpu = fluid.CPUPlace()
    assert cpu._type() == 1 and fluid.CUDAPlace(0)._type() == 0 and fluid.CUDAPinnedPlace()._type() == 2
    assert cpu._equals(fluid.CPUPlace()) and not cpu._equals(fluid.CUDAPinnedPlace())
    assert fluid.CUDAPlace(1)._equals(fluid.CUDAPlace(1)) and not fluid.CUDAPlace(0)._equals(fluid.CUDAPlace(1))
    t = fluid.LoDTensor()
    t.set(np.ones((2, 2), "float32"), cpu)
    assert t._place()._equals(cpu)
    held = fluid.core.Place()
    held.set_place(cpu)
    assert held._type() == 1 and held._equals(cpu) and cpu._equals(held)


def test_check_input_array_refuses_ragged_batches():
    ok = fluid.reader.GeneratorLoader._check_input_array([np.arange(2), np.arange(2)])
    assert ok.shape == (2, 2)
    with pytest.raises(TypeError, match="create_lod_tensor"):
        fluid.reader.GeneratorLoader._check_input_array([np.arange(2), np.arange(1), np.arange(3)])


def test_data_loader_base_says_it_cannot_iterate():
    base = fluid.reader.DataLoaderBase()
    with pytest.raises(NotImplementedError):
        iter(base)
    with pytest.raises(NotImplementedError):
        next(base)
    assert isinstance(fluid.io.DataLoader.from_generator(feed_list=[fluid.data("x", [None, 1])], capacity=2),
                      fluid.reader.DataLoaderBase)


def test_reset_ends_an_iterable_pass_midway():
    x = fluid.data("x", [None, 1], dtype="float32")
    loader = fluid.io.DataLoader.from_generator(feed_list=[x], capacity=2)
    loader.set_batch_generator(lambda: ([np.full((1, 1), i, "float32")] for i in range(100)), fluid.cpu_places(1))
    first = [np.array(next(iter(loader))[0]["x"])[0, 0]]
    loader._reset()
    again = [float(np.array(d[0]["x"])[0, 0]) for d in loader()]
    assert first == [0.0] and again == [float(i) for i in range(100)]


def test_as_lodtensor():
    t = fluid.executor._as_lodtensor(np.arange(6, dtype="int64").reshape(2, 3), fluid.CPUPlace())
    assert np.array(t).tolist() == [[0, 1, 2], [3, 4, 5]] and t.lod() == []
    assert np.array(fluid.executor._as_lodtensor(2.5, fluid.CPUPlace(), "float32")).dtype == np.float32
    with pytest.raises(RuntimeError, match="create_lod_tensor"):
        fluid.executor._as_lodtensor([np.ones(2), np.ones(3)], fluid.CPUPlace())


def test_py_reader_exposes_its_feeding_thread():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        reader = fluid.layers.py_reader(capacity=2, shapes=[[-1, 1]], dtypes=["float32"])
        x = fluid.layers.read_file(reader)
    reader.decorate_batch_generator(lambda: ([np.full((1, 1), i, "float32")] for i in range(3)))
    assert reader.thread is None
    reader.start()
    exe = fluid.Executor(fluid.CPUPlace())
    got = []
    with pytest.raises(fluid.core.EOFException):
        while True:
            got.append(exe.run(main, fetch_list=[x])[0][0, 0])
    reader.thread.join(timeout=10)
    assert got == [0, 1, 2] and not reader.thread.is_alive()
    reader.reset()
    assert reader.exited


def test_create_loaded_parameter_gives_each_variable_a_tensor_to_set():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        fluid.layers.fc(fluid.data("x", [None, 3]), 2)
    params = [v for v in main.list_vars() if fluid.io.is_parameter(v)]
    scope = fluid.core.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    fluid.core._create_loaded_parameter(params, scope, exe._default_executor)
    shapes = {v.name: np.array(scope.find_var(v.name).get_tensor()).shape for v in params}
    assert shapes == {"fc_0.w_0": (3, 2), "fc_0.b_0": (2,)}
    t = scope.find_var("fc_0.w_0").get_tensor()
    place = t._place()
    assert place.is_cpu_place() and not place.is_gpu_place() and not place.is_cuda_pinned_place()
    t.set(np.ones((3, 2), "float32"), fluid.CPUPlace())
    assert np.array(scope.find_var("fc_0.w_0").get_tensor()).sum() == 6
