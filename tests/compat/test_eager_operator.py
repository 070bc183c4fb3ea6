"""``fluid.op.Operator``: one op made from keyword arguments and run on the values of a ``core.Scope``
(through a one-op program and an Executor), with the scope and tensor API Paddle's op tests use:
``core.SelectedRows`` handles, LoDTensorArrays, tensor slicing, op protos."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist import core
from fluidist.op import OpDescCreationMethod, Operator, get_all_op_protos
from fluidist.paddle_format import framework_pb2

PLACE = fluid.CPUPlace()


def _tensor(scope, name, array):
    scope.var(name).get_tensor().set(np.asarray(array), PLACE)


def test_dense_sgd_runs_on_the_scope():
    scope = core.Scope()
    param = np.arange(6, dtype="float32").reshape(2, 3)
    grad = np.full((2, 3), 0.5, "float32")
    _tensor(scope, "p", param)
    _tensor(scope, "g", grad)
    _tensor(scope, "lr", np.array([0.1], "float32"))
    view = scope.find_var("p").get_tensor()            # a view taken before the run sees its result
    op = Operator("sgd", Param="p", Grad="g", LearningRate="lr", ParamOut="p")
    # as Paddle 1.8.5 prints it
    assert str(op) == "Op(sgd), inputs:{Grad[g], LearningRate[lr], Param[p]}, outputs:{ParamOut[p]}."
    assert op.type() == "sgd" and op.input_vars() == ["g", "lr", "p"] and op.outputs() == {"ParamOut": ["p"]}
    op.run(scope, PLACE)
    np.testing.assert_allclose(np.array(view), param - 0.1 * grad, rtol=1e-6)


def test_sparse_sgd_updates_only_the_gradient_rows():
    scope = core.Scope()
    grad = scope.var("Grad").get_selected_rows()
    grad.set_height(6)
    grad.set_rows([0, 4, 4])
    grad.get_tensor().set(np.ones((3, 2), "float32"), PLACE)
    _tensor(scope, "Param", np.full((6, 2), 5.0, "float32"))
    _tensor(scope, "LR", np.array([2.0], "float32"))
    Operator("sgd", Param="Param", Grad="Grad", LearningRate="LR", ParamOut="Param").run(scope, PLACE)
    want = np.full((6, 2), 5.0, "float32")
    want[0] -= 2.0
    want[4] -= 4.0          # a repeated row's gradients add up
    np.testing.assert_array_equal(np.array(scope.find_var("Param").get_tensor()), want)


def test_scale_of_selected_rows_keeps_rows_and_height():
    scope = core.Scope()
    x = scope.var("X").get_selected_rows()
    x.set_height(10)
    x.set_rows([0, 4, 7])
    x.get_tensor().set(np.arange(6, dtype="float32").reshape(3, 2), PLACE)
    out = scope.var("Out").get_selected_rows()
    Operator("scale", X="X", Out="Out", scale=2.0).run(scope, PLACE)
    assert out.rows() == [0, 4, 7] and out.height() == 10
    np.testing.assert_array_equal(np.array(out.get_tensor()), 2 * np.arange(6).reshape(3, 2))


def test_filling_a_selected_rows_variable_fills_its_value():
    scope = core.Scope()
    out = scope.var("X").get_selected_rows()
    Operator("fill_constant", Out="X", shape=[3, 4], value=1.5).run(scope, PLACE)
    assert out.get_tensor().shape() == [3, 4] and out.rows() == []
    assert np.all(np.array(out.get_tensor()) == 1.5)
    Operator("uniform_random", Out="X", shape=[50, 8], min=-1.0, max=1.0, seed=3).run(scope, PLACE)
    values = np.array(out.get_tensor())
    assert values.shape == (50, 8) and -1 <= values.min() and values.max() <= 1 and values.std() > 0.3


def test_sum_of_lod_tensor_arrays_and_dense_tensors():
    scope = core.Scope()
    arr = scope.var("arr").get_lod_tensor_array()
    for i in range(2):
        t = core.LoDTensor()
        t.set(np.full((2, 1), float(i), "float32"), PLACE)
        arr.append(t)
    assert len(scope.find_var("arr").get_lod_tensor_array()) == 2
    _tensor(scope, "a", np.ones((2, 2), "float32"))
    _tensor(scope, "b", np.full((2, 2), 2.0, "float32"))
    Operator("sum", X=["a", "b"], Out="s").run(scope, PLACE)
    np.testing.assert_array_equal(np.array(scope.find_var("s").get_tensor()), np.full((2, 2), 3.0))


def test_fill_op_with_an_int_dtype_attr():
    scope = core.Scope()
    out = scope.var("Out").get_tensor()
    values = np.random.RandomState(0).rand(3, 4)
    Operator("fill", value=values.flatten(), shape=[3, 4], dtype=int(core.VarDesc.VarType.FP32), Out="Out").run(
        scope, PLACE)
    np.testing.assert_array_equal(np.array(out), values.astype("float32"))


def test_factory_knows_the_ops_slots_and_attrs():
    assert ("Param", False) in Operator.get_op_inputs("sgd") and Operator.get_op_outputs("sgd") == [("ParamOut", False)]
    assert ("X", True) in Operator.get_op_inputs("sum")
    names = Operator.get_op_attr_names("scale")
    assert {"scale", "bias", "bias_after_scale", "op_role", "op_callstack"} <= set(names)
    with pytest.raises(ValueError, match="not registered"):
        Operator("no_such_op", X="x")
    with pytest.raises(ValueError, match="expects only one"):
        Operator("sgd", Param=["a", "b"])
    with pytest.raises(ValueError):
        Operator("scale", "extra", X="x")
    protos = {p.type: p for p in get_all_op_protos()}
    assert protos["sum"].inputs[0].duplicable and protos["scale"].IsInitialized()


def test_op_desc_creation_from_a_proto():
    proto = framework_pb2.OpProto(type="test", comment="")
    proto.inputs.add(name="X", comment="", duplicable=True)
    proto.outputs.add(name="Out", comment="")
    proto.attrs.add(name="ints", type=framework_pb2.INTS, comment="")
    proto.attrs.add(name="scale", type=framework_pb2.FLOAT, comment="")
    desc = OpDescCreationMethod(proto)(X=["a", "b"], Out="c", ints=np.array([1, 2]), scale=0.5, ignored=3)
    assert desc.type == "test" and list(desc.inputs[0].arguments) == ["a", "b"]
    assert {a.name: (list(a.ints) or a.f) for a in desc.attrs} == {"ints": [1, 2], "scale": 0.5}
    with pytest.raises(TypeError):
        OpDescCreationMethod("not a proto")
    op = core.Operator.create(framework_pb2.OpDesc(type="scale", inputs=[framework_pb2.OpDesc.Var(
        parameter="X", arguments=["x"])], outputs=[framework_pb2.OpDesc.Var(parameter="Out", arguments=["y"])]
    ).SerializeToString())
    scope = core.Scope()
    _tensor(scope, "x", np.ones(3, "float32"))
    op.run(scope, PLACE)
    np.testing.assert_array_equal(np.array(scope.find_var("y").get_tensor()), np.ones(3))


def test_selected_rows_handle_and_scalars():
    sr = core.SelectedRows([0, 4, 7], 10)
    sr.get_tensor().set(np.arange(36, dtype="float32").reshape(3, 12), PLACE)
    assert sr.rows() == [0, 4, 7] and sr.height() == 10 and sr.numel() == 36
    assert sr.get_tensor()._get_float_element(13) == 13.0
    sr.sync_index()
    scope = core.Scope()
    _tensor(scope, "dense", np.ones(2))
    with pytest.raises(TypeError, match="not a SelectedRows"):      # a variable keeps its kind, as in Paddle
        scope.var("dense").get_selected_rows()
    var = core.Scope().var("f")
    var.set_float(1.5)
    assert var.is_float() and var.get_float() == 1.5 and not var.is_int()
    with pytest.raises(TypeError):
        var.get_int()


def test_tensor_indexing_keeps_the_axis_of_an_int():
    t = core.LoDTensor()
    t.set(np.arange(24, dtype="float32").reshape(2, 3, 4), PLACE)
    a = np.arange(24, dtype="float32").reshape(2, 3, 4)
    np.testing.assert_array_equal(np.array(t[1]), a[1:2])
    np.testing.assert_array_equal(np.array(t[0::1, 0::-1, 2:]), a[0::1, 0::-1, 2:])
    np.testing.assert_array_equal(np.array(t[2::-2][0]), a[2::-2][0:1])
    assert len(list(t)) == 2          # an out-of-range int ends iteration (IndexError)
    with pytest.raises(IndexError):
        t[2]
    fresh = core.Scope().var("t").get_tensor()
    assert isinstance(fresh._mutable_data(PLACE, core.VarDesc.VarType.FP32), int) and fresh.shape() == [0]


def test_small_core_names():
    from fluidist.transpiler.details import VarStruct
    assert core.op_support_gpu("sgd") == core.is_compiled_with_cuda() and not core.op_support_gpu("no_such_op")
    assert core._set_eager_deletion_mode(0.0, 1.0, True) is None
    v = VarStruct(name="w", shape=[2, 3], dtype="float32", type=core.VarDesc.VarType.LOD_TENSOR, lod_level=0,
                  persistable=True)
    assert (v.name, v.shape, v.persistable) == ("w", [2, 3], True)
    with pytest.raises(NotImplementedError):
        fluid.op.DynamicRecurrentOp(inputs=["x"])


def test_lookup_in_a_selected_rows_table_finds_ids_among_its_rows():
    scope = core.Scope()
    table = scope.var("W").get_selected_rows()
    table.set_height(4)                                  # ids are row keys: not bounded by the height
    table.set_rows([30, 7, 12])
    table.get_tensor().set(np.array([[3.0, 3.5], [7.0, 7.5], [12.0, 12.5]], "float32"), PLACE)
    _tensor(scope, "Ids", np.array([[12], [30], [12]], "int64"))
    Operator("lookup_table", W="W", Ids="Ids", Out="Out").run(scope, PLACE)
    np.testing.assert_array_equal(np.array(scope.find_var("Out").get_tensor()),
                                  [[12.0, 12.5], [3.0, 3.5], [12.0, 12.5]])
    _tensor(scope, "Ids", np.array([[5]], "int64"))
    with pytest.raises(ValueError, match="not a row"):
        Operator("lookup_table", W="W", Ids="Ids", Out="Out").run(scope, PLACE)


def test_op_attr_defaults_and_refused_core_names():
    defaults = core.get_op_attrs_default_value(b"fill_constant")
    # the keys and values Paddle 1.8.5 gives for fill_constant (its dtype default reads as int code 5)
    assert {k: defaults[k] for k in ("op_role", "op_role_var", "op_namescope", "op_callstack", "op_device",
                                     "force_cpu", "str_value", "value", "shape")} == {
        "op_role": 4096, "op_role_var": [], "op_namescope": "", "op_callstack": [], "op_device": "",
        "force_cpu": False, "str_value": "", "value": 0.0, "shape": []}
    assert defaults["dtype"] == 5 and not core.is_compiled_with_ngraph()
    for refused_name in ("Graph", "Node", "Executor"):
        with pytest.raises(NotImplementedError, match="fluid.core." + refused_name):
            getattr(core, refused_name)()
