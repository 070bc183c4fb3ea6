"""The runtime objects as Paddle 1.8 scripts use them: ``fluid.Tensor`` / ``LoDTensor`` and their pybind
methods, scope variables, ``fluid.core`` names, ``create_random_int_lodtensor``, and Paddle's native
inference API over a saved model (fluidist's and Paddle's format), compared with the Executor."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist import core


def test_tensor_dims_elements_and_allocation():
    t = fluid.Tensor()
    assert not t._is_initialized()
    t._set_dims([2, 3])
    assert t._get_dims() == [2, 3] and t.shape() == [2, 3]
    t._alloc_float(fluid.CPUPlace())
    assert t._is_initialized() and t._dtype() == np.float32
    t._set_float_element(4, 2.5)
    assert t._get_float_element(4) == 2.5 and np.array(t)[1, 1] == 2.5
    with pytest.raises(IndexError, match="offset 6"):
        t._get_float_element(6)
    with pytest.raises(TypeError, match="float64"):
        t._get_double_element(0)
    t._set_dims([3, 2])                      # same number of elements: the data is kept
    assert np.array(t).shape == (3, 2) and t._get_float_element(4) == 2.5
    t._clear()
    assert not t._is_initialized() and t._get_dims() == [3, 2]
    t._alloc_double(fluid.CPUPlace())
    t._set_double_element(0, 1.25)
    assert t._get_double_element(0) == 1.25
    t._alloc_int(fluid.CPUPlace())
    assert np.array(t).dtype == np.int32
    assert isinstance(fluid.LoDTensor(), core.Tensor) and isinstance(t._place(), fluid.CPUPlace)


def test_lod_tensor_copy_and_sharing():
    t = fluid.LoDTensor()
    t.set(np.arange(6, dtype="float32").reshape(3, 2), fluid.CPUPlace())
    t.set_recursive_sequence_lengths([[1, 2]])
    c = t._copy(fluid.CPUPlace())
    assert c.lod() == [[0, 1, 3]] and np.array_equal(np.array(c), np.array(t))
    shared = fluid.LoDTensor()
    shared._share_data_with(t)
    t._set_float_element(0, 9.0)
    assert shared._get_float_element(0) == 9.0 and c._get_float_element(0) == 0.0


def test_scope_variables_as_scripts_read_them():
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        fluid.layers.fc(x, 3, param_attr=fluid.ParamAttr(name="w"))
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    w = scope.find_var("w").get_tensor()
    assert w._get_dims() == [2, 3]
    assert w._get_float_element(5) == pytest.approx(float(np.array(w).reshape(-1)[5]))
    with fluid.scope_guard(scope):
        np.testing.assert_array_equal(fluid.executor._fetch_var("w"), np.array(w))
    assert np.array(core.get_variable_tensor(scope, "w")).shape == (2, 3)


def test_core_names_scripts_use():
    assert core.kEmptyVarName() == "@EMPTY@" and core.kGradVarSuffix() == "@GRAD"
    assert core.is_compiled_with_dist() and not core.is_compiled_with_mkldnn()
    assert core.op_proto_and_checker_maker.kOpRoleAttrName() == "op_role"
    assert core.VarDesc.VarType.FP32 == "float32"
    scope = fluid.Scope()
    core.set_feed_variable(scope, np.ones((2, 2), "float32"), "feed", 1)
    assert np.array(core.get_fetch_variable(scope, "feed", 1)).sum() == 4
    desc = core.ProgramDesc()            # a view over a new Program: Paddle's bytes parse back
    desc.block(0).var(b"x").set_dtype(core.VarDesc.VarType.FP64)
    assert fluid.Program.parse_from_string(desc.serialize_to_string()).global_block().var("x").dtype == "float64"


def test_create_random_int_lodtensor():
    np.random.seed(3)
    t = fluid.create_random_int_lodtensor([[2, 3]], [1], fluid.CPUPlace(), low=0, high=9)
    arr = np.array(t)
    assert arr.shape == (5, 1) and arr.dtype == np.int64 and arr.min() >= 0 and arr.max() <= 9
    assert t.recursive_sequence_lengths() == [[2, 3]]
    from fluidist.lod_tensor import create_random_int_lodtensor
    assert create_random_int_lodtensor is fluid.create_random_int_lodtensor
    with pytest.raises(ValueError, match="low"):
        fluid.create_random_int_lodtensor([[1]], [1], fluid.CPUPlace(), low=5, high=1)


def _save_model(tmp_path, fmt=None, params_filename=None):
    """A small trained model saved for inference; returns (dir, input batch, the executor's output)."""
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        h = fluid.layers.fc(x, 8, act="relu")
        pred = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    scope = fluid.Scope()
    exe = fluid.Executor(fluid.CPUPlace())
    rng = np.random.RandomState(0)
    xb = rng.rand(5, 4).astype("float32")
    with fluid.scope_guard(scope):
        exe.run(startup)
        for _ in range(3):
            exe.run(prog, feed={"x": xb, "y": xb.sum(1, keepdims=True)}, fetch_list=[loss])
        dirname = str(tmp_path / ("model_%s" % (fmt or "fluidist")))
        fluid.io.save_inference_model(dirname, ["x"], [pred], exe, main_program=prog, format=fmt,
                                      params_filename=params_filename)
        expected, = exe.run(prog.clone(for_test=True), feed={"x": xb, "y": xb[:, :1]}, fetch_list=[pred])
    return dirname, xb, expected


@pytest.mark.parametrize("fmt", [None, "paddle"])
def test_predictor_run_equals_the_executor(tmp_path, fmt):
    dirname, xb, expected = _save_model(tmp_path, fmt)
    config = core.AnalysisConfig(dirname)
    config.disable_gpu()
    config.switch_ir_optim(True)
    predictor = core.create_paddle_predictor(config)
    assert predictor.get_input_names() == ["x"] and len(predictor.get_output_names()) == 1
    out, = predictor.run([core.PaddleTensor(xb)])
    assert out.shape == [5, 1] and out.dtype == core.PaddleDType.FLOAT32
    np.testing.assert_allclose(out.as_ndarray(), expected, rtol=1e-6)
    np.testing.assert_allclose(np.array(out.data.float_data()).reshape(5, 1), expected, rtol=1e-6)
    native = core.NativeConfig()
    native.model_dir = dirname
    out2, = core.create_paddle_predictor(native).run([core.PaddleTensor(xb, name="x")])
    np.testing.assert_allclose(out2.as_ndarray(), expected, rtol=1e-6)


def test_zero_copy_path_and_combined_params(tmp_path):
    dirname, xb, expected = _save_model(tmp_path, "paddle", params_filename="__params__")
    config = core.AnalysisConfig(dirname + "/__model__", dirname + "/__params__")
    config.switch_use_feed_fetch_ops(False)
    predictor = core.create_paddle_predictor(config)
    inp = predictor.get_input_tensor("x")
    inp.reshape([5, 4])
    inp.copy_from_cpu(xb)
    predictor.zero_copy_run()
    out = predictor.get_output_tensor(predictor.get_output_names()[0])
    assert out.shape() == [5, 1]
    np.testing.assert_allclose(out.copy_to_cpu(), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="not an input"):
        predictor.get_input_tensor("nope")
    with pytest.raises(ValueError, match="takes 1 inputs"):
        predictor.run([core.PaddleTensor(xb), core.PaddleTensor(xb)])


def test_compiled_program_inference_path(tmp_path):
    dirname, xb, expected = _save_model(tmp_path)
    compiled = fluid.CompiledProgram(fluid.Program())._with_inference_optimize(core.AnalysisConfig(dirname))
    exe = fluid.Executor(fluid.CPUPlace())
    out, = exe.run(compiled, feed=[core.PaddleTensor(xb)])
    np.testing.assert_allclose(out.as_ndarray(), expected, rtol=1e-6)
    out, = exe.run(compiled, feed={"x": xb})
    np.testing.assert_allclose(out.as_ndarray(), expected, rtol=1e-6)
    with pytest.raises(TypeError, match="NativeConfig or an AnalysisConfig"):
        fluid.CompiledProgram(fluid.Program())._with_inference_optimize("dir")


def test_paddle_buf():
    buf = core.PaddleBuf([1.0, 2.0, 3.0])
    assert buf.length() == 12 and buf.float_data() == [1.0, 2.0, 3.0] and not buf.empty()
    buf.resize(8)
    assert buf.float_data() == [1.0, 2.0]
    buf.reset(np.array([4, 5], dtype="int64"))
    assert buf.int64_data() == [4, 5]
    with pytest.raises(TypeError, match="int8"):
        core.PaddleBuf(np.zeros(2, "int8"))
    # Paddle 1.8.5 reads the buffer's bytes as the type asked for
    buf = core.PaddleBuf(np.array([1.5, 2.5], "float32"))
    assert buf.int32_data() == buf.tolist("int32") == [1069547520, 1075838976]
    assert buf.int64_data() == [4620693218751676416] and buf.tolist("float32") == [1.5, 2.5]


def test_set_lod_refuses_offsets_that_are_no_lod():
    t = fluid.LoDTensor()
    # accepted and refused as by Paddle 1.8.5's set_recursive_sequence_lengths
    for ok in ([], [[0]], [[1], [0]], [[2], [1, 3]], [[2, 3], [1, 3, 1, 2, 2]]):
        t.set_recursive_sequence_lengths(ok)
        assert t.recursive_sequence_lengths() == ok
    for bad in ([[]], [[], [1], [3]], [[0], [2], [3]], [[1], [2], [3]]):
        with pytest.raises(ValueError, match="not a LoD"):
            t.set_recursive_sequence_lengths(bad)
    for bad in ([[1, 2]], [[0, 3, 2]], [[0, 1], [0, 2, 3]]):
        with pytest.raises(ValueError, match="not a LoD"):
            t.set_lod(bad)
    t.set_recursive_sequence_lengths([[2, 3], [1, 3, 1, 2, 1]])
    t.set(np.zeros((8, 1)), fluid.CPUPlace())
    assert t.has_valid_recursive_sequence_lengths()
    t.set(np.zeros((9, 1)), fluid.CPUPlace())
    assert not t.has_valid_recursive_sequence_lengths()
    with pytest.raises(AssertionError):        # Paddle's create_lod_tensor asserts the fit
        fluid.create_lod_tensor([[1, 2, 3], [3, 4]], [[2, 2]], fluid.CPUPlace())


def test_dtype_is_paddles_value_and_dlpack_round_trips():
    t = fluid.create_lod_tensor(np.array([[1], [2], [3]], "int64"), [[1, 2]], fluid.CPUPlace())
    assert t._dtype() == core.VarDesc.VarType.INT64 and repr(t._dtype()) == "VarType.INT64"
    back = core.from_dlpack(t._to_dlpack())
    assert isinstance(back, core.Tensor) and np.array_equal(np.array(back), [[1], [2], [3]])
    shared = core.from_dlpack(np.arange(3.0))          # an object with __dlpack__ works too
    assert np.array(shared).tolist() == [0.0, 1.0, 2.0]
