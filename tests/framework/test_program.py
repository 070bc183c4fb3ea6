import json

import numpy as np
import pytest

import fluidist as fluid
from fluidist.framework import unique_name
from fluidist.framework.op_role import OpRole


def build_regression():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        pred = fluid.layers.fc(input=x, size=1, act=None)
        avg_cost = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=0.01).minimize(avg_cost)
    return main, startup, test_program, avg_cost


def test_unique_name_generate_and_guard():
    assert unique_name.generate("fc") == "fc_0"
    assert unique_name.generate("fc") == "fc_1"
    with unique_name.guard():
        assert unique_name.generate("fc") == "fc_0"
    assert unique_name.generate("fc") == "fc_2"
    with unique_name.guard("p_"):
        assert unique_name.generate("fc") == "p_fc_0"


def test_program_guard_and_defaults():
    main, startup = fluid.Program(), fluid.Program()
    assert fluid.default_main_program() is not main
    with fluid.program_guard(main, startup):
        assert fluid.default_main_program() is main
        assert fluid.default_startup_program() is startup
        fluid.layers.fc(fluid.data("a", [None, 4]), size=3)
    assert fluid.default_main_program() is not main
    assert [op.type for op in main.global_block().ops] == ["mul", "elementwise_add"]
    assert [op.type for op in startup.global_block().ops] == ["fill_constant", "uniform_random"]
    with pytest.raises(TypeError):
        with fluid.program_guard("not a program"):
            pass


def test_op_types_roles_and_names():
    main, startup, test_program, loss = build_regression()
    ops = main.global_block().ops
    assert [op.type for op in ops] == [
        "mul", "elementwise_add", "elementwise_sub", "square", "mean", "fill_constant", "mean_grad",
        "square_grad", "elementwise_sub_grad", "elementwise_add_grad", "mul_grad", "sgd", "sgd"]
    roles = [op.attr("op_role") for op in ops]
    assert roles == [0, 0, 0, 0, OpRole.Loss, OpRole.Backward | OpRole.Loss] + [OpRole.Backward] * 5 + \
        [OpRole.Optimize] * 2
    assert ops[9].attr("op_role_var") == ["fc_0.b_0", "fc_0.b_0@GRAD"]
    assert ops[10].attr("op_role_var") == ["fc_0.w_0", "fc_0.w_0@GRAD"]
    # optimizer visits params sorted by name
    assert [op.input("Param")[0] for op in ops[-2:]] == ["fc_0.b_0", "fc_0.w_0"]
    assert ops[-1].attr("op_role_var") == ["fc_0.w_0", "fc_0.w_0@GRAD"]
    # initialisers are prepended: the last created comes first
    assert [op.type for op in startup.global_block().ops] == ["fill_constant", "fill_constant", "uniform_random"]
    assert startup.global_block().ops[0].output("Out") == ["learning_rate_0"]


def test_block_and_operator_api():
    main, _, _, _ = build_regression()
    b = main.global_block()
    assert main.num_blocks == 1 and main.block(0) is b
    assert b.has_var("x") and not b.has_var("nope")
    with pytest.raises(ValueError, match="nope"):
        b.var("nope")
    assert [p.name for p in b.all_parameters()] == ["fc_0.w_0", "fc_0.b_0"]
    assert [p.name for p in b.iter_parameters()] == ["fc_0.w_0", "fc_0.b_0"]
    mul = b.ops[0]
    assert mul.input("X") == ["x"] and mul.output("Out") == ["fc_0.tmp_0"]
    assert mul.input_arg_names == ["x", "fc_0.w_0"]
    assert mul.has_attr("x_num_col_dims") and mul.attr("x_num_col_dims") == 1
    v0 = main._version
    mul._set_attr("x_num_col_dims", 1)
    assert main._version > v0
    # insert / remove
    op = b._insert_op(1, "scale", inputs={"X": ["fc_0.tmp_0"]}, outputs={"Out": ["fc_0.tmp_0"]}, attrs={"scale": 1.0})
    assert b.ops[1] is op and op.idx == 1
    b._remove_op(1)
    assert b.ops[1].type == "elementwise_add"
    after = b.insert_after(b.ops[0], "scale", inputs={"X": ["fc_0.tmp_0"]}, outputs={"Out": ["fc_0.tmp_0"]})
    assert b.ops[1] is after
    with pytest.raises(ValueError, match="'no_such_op' is not registered"):
        b.append_op("no_such_op")
    with pytest.raises(ValueError, match="an op needs a type"):
        b.append_op()


def test_append_op_names_a_bad_argument_and_gives_each_op_its_own_attrs():
    main = fluid.Program()
    b = main.global_block()
    x = b.create_var(name="x", shape=[1, 3, 8, 8], dtype="float32")
    b.create_var(name="y", dtype="float32")
    with pytest.raises(TypeError, match="input 'X' of op 'pool2d' must be a Variable or a variable name, got 'int'"):
        b.append_op("pool2d", inputs={"X": [3]}, outputs={"Out": ["y"]})
    with pytest.raises(TypeError, match="output 'Out' of op 'pool2d' must be a Variable or a variable name, got 'float'"):
        b.append_op("pool2d", inputs={"X": x}, outputs={"Out": 1.5})
    assert not b.ops and main.global_block().var("y").shape is None
    # missing attrs take the registry's defaults, each op its own copy of them
    first = b.append_op("pool2d", inputs={"X": x}, outputs={"Out": "y"}, attrs={"ksize": (2, 2)})
    second = b.append_op("pool2d", inputs={"X": [x]}, outputs={"Out": ["y"]}, attrs={"ksize": np.array([2, 2])})
    assert first.attr("ksize") == second.attr("ksize") == [2, 2] and type(second.attr("ksize")[0]) is int
    assert main.global_block().var("y").shape == (1, 3, 7, 7)      # inferred at append time
    assert first.attr("strides") == [1, 1] and first.attr("strides") is not second.attr("strides")
    first.attr("strides")[0] = 7
    assert second.attr("strides") == [1, 1] and fluid.framework.registry.lookup("pool2d").attrs["strides"] == [1, 1]
    assert b.append_op("pool2d", inputs={"X": x}, outputs={"Out": "y"}).attr("strides") == [1, 1]
    # the attrs: those given, in their order, then the role and name scope, then the other defaults
    names = first.attr_names
    assert names[:4] == ["ksize", "op_role", "op_role_var", "op_namescope"] and "strides" in names[4:]
    # an op type's own role (the registry's role fact) when no role guard is active, else the guard's
    assert b.append_op("sgd", inputs={"Param": x}, outputs={"ParamOut": x}).attr("op_role") == OpRole.Optimize
    with main._optimized_guard([x.name]):
        op = b.append_op("scale", inputs={"X": x}, outputs={"Out": x})
    assert op.attr("op_role") == OpRole.Optimize and op.attr("op_role_var") == ["x"]
    assert b.append_op("cast", inputs={"X": x}, outputs={"Out": x}, attrs={"out_dtype": 6}).attr("out_dtype") == "float64"


def test_rename_var_renames_every_use_and_keeps_the_def_use_index():
    main, _, _, _ = build_regression()
    b = main.global_block()
    grad = "fc_0.w_0@GRAD"
    writers, readers = b.writers_of(grad), b.readers_of(grad)
    assert [op.type for op in writers] == ["mul_grad"] and [op.type for op in readers] == ["sgd"]
    b._rename_var(grad, "w_grad.trainer_0")
    assert b.writers_of("w_grad.trainer_0") == writers and b.readers_of("w_grad.trainer_0") == readers
    assert b.writers_of(grad) == [] and b.readers_of(grad) == [] and not b.has_var(grad)
    assert readers[0].input("Grad") == ["w_grad.trainer_0"] and writers[0].output("Y@GRAD") == ["w_grad.trainer_0"]
    assert readers[0].input("Param") == ["fc_0.w_0"] and b.readers_of("fc_0.w_0")[-1] is readers[0]
    main.lint()     # the index kept is the one the renamed ops give afresh
    with pytest.raises(ValueError, match="already has a variable"):
        b._rename_var("w_grad.trainer_0", "fc_0.w_0")


def test_renames_in_one_pass_give_what_renaming_one_at_a_time_gives():
    renames = [("fc_0.w_0@GRAD", "w_grad.trainer_0"), ("fc_0.b_0@GRAD", "b_grad"), ("b_grad", "b_grad.trainer_0")]
    with unique_name.guard():
        one_at_a_time, _, _, _ = build_regression()
    for old, new in renames:
        one_at_a_time.global_block()._rename_var(old, new)
    for index_first in (False, True):
        with unique_name.guard():
            main, _, _, _ = build_regression()
        b = main.global_block()
        if index_first:
            b.readers_of("fc_0.w_0@GRAD")       # a block with its def-use index renames through it
        with b.renames() as r:
            for old, new in renames:            # (the last one renames the second again)
                r.rename(old, new)
            b.create_var(name="made_meanwhile", shape=[1], dtype="float32")
        one_at_a_time.global_block().create_var(name="made_meanwhile", shape=[1], dtype="float32")
        # the same ops and variables, in the same order (a renamed variable moves to the end)
        assert _names_and_slots(main) == _names_and_slots(one_at_a_time)
        one_at_a_time.global_block()._remove_var("made_meanwhile")
        assert [op.type for op in b.writers_of("w_grad.trainer_0")] == ["mul_grad"]
        assert [op.type for op in b.readers_of("b_grad.trainer_0")] == ["sgd"] and b.readers_of("b_grad") == []
        main.lint()
        with pytest.raises(ValueError, match="already has a variable"):
            with b.renames() as r:
                r.rename("w_grad.trainer_0", "fc_0.w_0")


def _names_and_slots(program):
    b = program.global_block()
    return [v._meta() for v in b.vars.values()], [(op.type, op.inputs, op.outputs) for op in b.ops]


def test_sub_blocks():
    p = fluid.Program()
    sub = p._create_block()
    assert sub.idx == 1 and sub.parent_idx == 0 and p.current_block() is sub
    sub2 = p._create_block()
    assert sub2.parent_idx == 1
    p._rollback()
    assert p.current_block() is sub
    p._rollback()
    assert p.current_block_idx == 0
    p.global_block().create_var(name="g", shape=[1], dtype="float32")
    assert sub2._find_var_recursive("g") is p.global_block().var("g")


def test_clone_for_test_drops_training_ops_and_sets_test_mode():
    main, _, test_program, _ = build_regression()
    assert [op.type for op in test_program.global_block().ops] == [
        "mul", "elementwise_add", "elementwise_sub", "square", "mean"]
    clone = main.clone(for_test=True)
    assert [op.type for op in clone.global_block().ops] == [
        "mul", "elementwise_add", "elementwise_sub", "square", "mean"]
    full = main.clone()
    assert str(full) == str(main)
    assert full.global_block().var("fc_0.w_0").__class__.__name__ == "Parameter"


def test_json_round_trip_is_exact():
    main, startup, _, _ = build_regression()
    main.random_seed = 7
    sub = main._create_block()
    sub.append_op("scale", inputs={"X": ["x"]}, outputs={"Out": ["x"]}, attrs={"scale": 0.5})
    main._rollback()
    main.global_block().append_op("conditional_block" if False else "scale", inputs={"X": ["x"]},
                                  outputs={"Out": ["x"]}, attrs={"sub_block": sub, "scale": 1.0})
    text = main.to_json()
    back = fluid.Program.from_json(text)
    assert back.to_json() == text
    assert str(back) == str(main)
    assert back.random_seed == 7
    assert back.global_block().ops[-1].attr("sub_block") is back.block(1)
    assert json.loads(text)["blocks"][0]["ops"][-1]["attrs"]["sub_block"] == {"__block__": 1}
    with pytest.raises(ValueError):
        fluid.Program.from_json("{not json")


def test_str_program_is_readable():
    main, _, _, _ = build_regression()
    s = str(main)
    assert "{ // block 0" in s
    assert "trainable param persist var fc_0.w_0 : LOD_TENSOR.shape(13, 1).dtype(float32)" in s
    assert "= mul(inputs={X=['x'], Y=['fc_0.w_0']}" in s


def test_lint():
    main, _, _, _ = build_regression()
    assert main.lint() is main
    main.global_block().ops[0].inputs["X"] = ["ghost"]
    with pytest.raises(ValueError, match="ghost"):
        main.lint()


def test_same_seed_same_parameters_as_paddle18():
    def init(seed):
        main, startup = fluid.Program(), fluid.Program()
        startup.random_seed = seed
        with fluid.program_guard(main, startup), unique_name.guard():
            x = fluid.data("x", [None, 8])
            fluid.layers.fc(fluid.layers.fc(x, 8), 8)
        scope = fluid.Scope()
        fluid.Executor().run(startup, scope=scope)
        return [np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters() if ".w_" in p.name]
    a, b, c = init(5), init(5), init(6)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.allclose(a[0], c[0])
    # as in Paddle 1.8, the seed alone decides an initialiser's numbers: two parameters of one shape start equal
    np.testing.assert_array_equal(a[0], a[1])


def test_get_var_reads_the_global_block_of_the_default_or_given_program():
    main, other = fluid.Program(), fluid.Program()
    with fluid.program_guard(main):
        x = fluid.data("x", [None, 3])
        assert fluid.framework._get_var("x") is x
    with fluid.program_guard(other):
        assert fluid.framework._get_var("x", main) is x
        with pytest.raises(ValueError, match="x"):
            fluid.framework._get_var("x")            # not in the default (other) program
    with pytest.raises(TypeError, match="Program"):
        fluid.framework._get_var("x", "main")


def test_copy_data_info_from_marks_data_and_stop_gradient_as_the_source():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        h = fluid.layers.fc(x, 2)
        h.stop_gradient = True
    clone = main.clone()
    for v in clone.list_vars():
        v.is_data, v.stop_gradient = False, False
    clone._copy_data_info_from(main)
    assert clone.global_block().var("x").is_data and clone.global_block().var(h.name).stop_gradient
    assert not clone.global_block().var("fc_0.w_0").stop_gradient
    assert isinstance(main.global_block().vars, __import__("collections").OrderedDict)
    with pytest.raises(TypeError):
        main._copy_data_info_from(startup.global_block())
    with pytest.raises(ValueError):
        main._copy_data_info_from(startup)        # x is no variable of the startup program


def test_clone_for_test_after_minimize_keeps_the_variables_of_its_ops_as_paddle():
    """Paddle 1.8.5: a program with a backward pass, cloned for test, keeps only the variables its
    remaining ops use (so it equals the for_test clone taken before minimize, unused ones aside)."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 3])
        fluid.data("unused", [None, 2])
        fluid.layers.create_parameter([2, 2], "float32", name="lonely")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        before = main.clone(for_test=True)
        fluid.optimizer.SGD(0.1, regularization=fluid.regularizer.L2Decay(1e-4)).minimize(loss)
        after = main.clone(for_test=True)
    assert sorted(before.global_block().vars) == ["fc_0.b_0", "fc_0.tmp_0", "fc_0.tmp_1", "fc_0.w_0", "lonely",
                                                  "mean_0.tmp_0", "unused", "x"]
    assert sorted(after.global_block().vars) == ["fc_0.b_0", "fc_0.tmp_0", "fc_0.tmp_1", "fc_0.w_0", "mean_0.tmp_0", "x"]
    assert [op.type for op in after.global_block().ops] == [op.type for op in before.global_block().ops]


def test_append_op_takes_input_names_given_as_bytes_as_paddle_does():
    """Paddle 1.8 decodes a name given as bytes (``cpt.to_text``): ``inputs={'X': [b'x']}`` runs."""
    prog = fluid.Program()
    block = prog.global_block()
    block.create_var(name="x", shape=[2], dtype="float32")
    y = block.create_var(name="y", shape=[2], dtype="float32")
    op = block.append_op(type="relu", inputs={"X": [b"x"]}, outputs={"Out": [y]})
    assert op.input("X") == ["x"] and op.output("Out") == ["y"]
    with pytest.raises(TypeError, match="must be a Variable or a variable name"):
        block.append_op(type="relu", inputs={"X": [3]}, outputs={"Out": [y]})
