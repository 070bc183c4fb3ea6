"""Paddle's description API over fluidist's IR (``program.desc``, ``block.desc``, ``op.desc``,
``var.desc``, ``core.ProgramDesc()``, ``core.get_grad_op_desc``) and the framework accessors Paddle's
own tests use (``Variable.grad_name`` / ``op``, ``Program._prune``, ``_inference_optimize``, ...)."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist import core
from fluidist.paddle_format import framework_pb2

VT = core.VarDesc.VarType


def test_desc_edits_are_the_program():
    main = fluid.Program()
    block = main.desc.block(0)
    v = block.var(b"w")
    v.set_type(VT.LOD_TENSOR)
    v.set_dtype(VT.FP64)
    v.set_shape([3, 2])
    assert main.global_block().var("w").dtype == "float64" and main.global_block().var("w").shape == (3, 2)
    assert v.dtype() == VT.FP64 and v.type() == VT.LOD_TENSOR and v.shape() == [3, 2]
    assert block.find_var(b"w") == v and block.find_var("nope") is None and set(block.all_vars()) == {v}
    op = block.append_op()
    op.set_type("scale")
    op.set_input("X", ["w"])
    op.set_output("Out", ["w2"])
    block.var("w2")
    op._set_attr("scale", 3.0)
    op.check_attrs()                                   # the registry's defaults for the rest
    assert op.attr("bias") == 0.0 and op.attr_type("scale") == core.AttrType.FLOAT
    op.infer_shape(block)
    assert main.global_block().var("w2").shape == (3, 2)
    assert [o.type for o in main.global_block().ops] == ["scale"] and block.op(0) == op and block.op_size() == 1
    scope = fluid.Scope()
    scope.var("w").get_tensor().set(np.ones((3, 2)), fluid.CPUPlace())
    got, = fluid.Executor(fluid.CPUPlace()).run(main, fetch_list=["w2"], scope=scope)
    np.testing.assert_array_equal(got, np.full((3, 2), 3.0))


def test_block_desc_orders_and_removes_ops():
    desc = core.ProgramDesc()
    block = desc.block(0)
    op1, op2 = block.append_op(), block.append_op()
    op0 = block._prepend_op()
    assert [block.op(i) for i in range(block.op_size())] == [op0, op1, op2]
    block._remove_op(1, 2)
    assert [block.op(i) for i in range(block.op_size())] == [op0, op2]
    b1 = desc.append_block(block)
    b2 = desc.append_block(b1)
    assert (b1.parent, b2.parent, desc.num_blocks()) == (0, b1.id, 3)
    assert desc._program.current_block_idx == 0          # appending a block leaves the current one
    op0.set_block_attr("sub_block", b2)
    assert op0._block_attr_id("sub_block") == 2


def test_serialized_desc_is_paddles_and_parses_back():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        fluid.layers.fc(x, size=2)
    blob = main.desc.serialize_to_string()
    parsed = framework_pb2.ProgramDesc.FromString(blob)
    assert [od.type for od in parsed.blocks[0].ops] == [op.type for op in main.global_block().ops]
    again = core.ProgramDesc(blob)
    assert again.block(0).op(0).type() == "mul" and again.block(0).find_var("x").dtype() == VT.FP32
    op_blob = main.global_block().ops[0].desc.serialize_to_string()
    assert framework_pb2.OpDesc.FromString(op_blob).type == "mul"


def test_get_grad_op_desc_builds_a_running_gradient():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        block = main.global_block()
        x = block.create_var(name="x", shape=[2, 3], dtype="float32")
        y = block.create_var(name="y", shape=[3, 4], dtype="float32")
        out = block.create_var(name="out", shape=[2, 4], dtype="float32")
        mul = block.append_op(type="mul", inputs={"X": x, "Y": y}, outputs={"Out": out})
        block.create_var(name="out@GRAD", shape=[2, 4], dtype="float32")
    grads, grad_to_var = core.get_grad_op_desc(mul.desc, {"y@GRAD"}, [])
    assert [g.type() for g in grads] == ["mul_grad"] and grad_to_var == {"x@GRAD": "x"}
    new = block.desc.append_op()
    new.copy_from(grads[0])
    for name in grads[0].output_arg_names():
        block.desc.var(name.encode())
    grads[0].infer_var_type(block.desc)
    grads[0].infer_shape(block.desc)
    main._sync_with_cpp()
    assert block.var("x@GRAD").shape == (2, 3) and "y@GRAD" not in block.vars
    rng = np.random.RandomState(0)
    xv, yv, dout = (rng.rand(*s).astype("float32") for s in ((2, 3), (3, 4), (2, 4)))
    got, = fluid.Executor(fluid.CPUPlace()).run(main, feed={"x": xv, "y": yv, "out@GRAD": dout},
                                                fetch_list=["x@GRAD"], scope=fluid.Scope())
    np.testing.assert_allclose(got, dout @ yv.T, rtol=1e-6)


def test_operator_and_variable_accessors():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.layers.scale(x, scale=2.0)
    op = main.global_block().ops[-1]
    assert y.op is op and x.op is None and x.grad_name == "x@GRAD"
    assert op.attr_type("scale") == core.AttrType.FLOAT and op.desc.type() == "scale"
    assert y.desc.name() == y.name and y.desc.dtype() == VT.FP32
    x._set_info("k", [1])
    assert x._get_info("k") == [1] and x._get_info("other") is None
    assert main.desc == main.desc and op.desc == op.desc and hash(op.desc) == hash(op.desc)


def test_redeclaring_a_variable_checks_what_it_is():
    block = fluid.Program().global_block()
    w = block.create_var(name="w", shape=[3, 4], dtype="float64", lod_level=0)
    assert block.create_var(name="w") is w and block.create_var(name="w", shape=(3, 4), dtype="float64") is w
    for kwargs in ({"shape": [4, 4]}, {"dtype": "float32"}, {"lod_level": 1}):
        with pytest.raises(ValueError, match="declared already"):
            block.create_var(name="w", **kwargs)


def test_parameter_needs_a_shape_and_dtype():
    block = fluid.Program().global_block()
    for kwargs in ({"shape": None, "dtype": "float32"}, {"shape": [1], "dtype": None},
                   {"shape": [], "dtype": "float32"}, {"shape": [-1], "dtype": "float32"}):
        with pytest.raises(ValueError):
            block.create_parameter(name="p", **kwargs)


def test_prune_keeps_what_the_targets_need():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        y = fluid.layers.fc(x, size=2, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(y, label))
        fluid.layers.scale(x, scale=3.0)                 # not needed by the loss
    types = [op.type for op in main.global_block().ops]
    assert [op.type for op in main._prune(loss).global_block().ops] == types[:-1]
    pruned = main._prune_with_input([y.name, label.name], [loss])
    assert [op.type for op in pruned.global_block().ops] == ["cross_entropy2", "mean"]
    assert [op.type for op in main.global_block().ops] == types          # the program itself is kept
    with pytest.raises(ValueError):
        main._prune(None)


def test_inference_optimize_drops_the_reader_and_sets_is_test():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        reader = fluid.layers.py_reader(capacity=4, shapes=[[-1, 3], [-1, 1]], dtypes=["float32", "int64"],
                                        lod_levels=[0, 0])
        x, label = fluid.layers.read_file(reader)
        fluid.layers.dropout(x, dropout_prob=0.5)
    kept = main._inference_optimize(prune_read_op=False).global_block().ops
    pruned = main._inference_optimize().global_block()
    first_read = [op.type for op in kept].index("read")
    assert [op.type for op in pruned.ops] == [op.type for op in kept][first_read + 1:]
    assert all(v.type != VT.READER for v in pruned.vars.values())
    assert pruned.ops[-1].attr("is_test") is True


def test_to_string_with_details_says_more():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        fluid.layers.fc(fluid.data(name="x", shape=[2, 3], dtype="float32"), size=3)
    plain, detailed = main.to_string(True, False), main.to_string(False, True)
    assert len(detailed) > len(plain) and "persistable(True)" in detailed and "optimize_attr" in detailed


def test_framework_constants_and_proto_module():
    import fluidist.framework as framework
    import fluidist.proto.framework_pb2 as pb
    names = (framework.GRAD_VAR_SUFFIX, framework.TEMP_VAR_NAME, framework.ZERO_VAR_SUFFIX)
    assert names == ("@GRAD", "@TEMP@", "@ZERO")
    assert pb is framework_pb2 and pb.OpProto().IsInitialized() is False
    with pytest.raises(core.EnforceNotMet, match="test exception"):
        core.__unittest_throw_exception__()


def test_a_process_that_never_touches_the_face_has_descs_and_ops():
    """Paddle's own tests import ``fluid.framework`` and ``fluid.layers`` and never a name of the lazy
    face: ``program.desc``, ``op.attr_type``, ``Program.parse_from_string`` and the op registry are
    there all the same (made on first use), in a fresh interpreter."""
    import subprocess
    import sys
    script = "\n".join([
        "import sys",
        "from fluidist.framework import Program",
        "p = Program()",
        "b = p.global_block()",
        "x = b.create_var(name='X', shape=[2, 3], dtype='float32')",
        "y = b.create_var(name='Y', shape=[3, 4], dtype='float32')",
        "out = b.create_var(name='Out', dtype='float32')",
        "op = b.append_op(type='mul', inputs={'X': [x], 'Y': [y]}, outputs={'Out': [out]})",
        "q = Program.parse_from_string(p.desc.serialize_to_string())",
        "print(q.global_block().ops[0].type, op.desc.type(), op.attr_type('x_num_col_dims'), x.desc.name(),",
        "      list(q.global_block().var('Out').shape), 'fluidist.layers' in sys.modules)",
    ])
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["mul", "mul", "0", "X", "[2,", "4]", "False"], r.stdout
