"""DynamicRNN and StaticRNN: gradients across time steps against finite differences, and the op
lists Paddle 1.8 builds (``test_paddle_refs`` checks their numbers against Paddle's own)."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import check_program_grad, sequence_pool_op

L = fluid.layers


def _dynamic_rnn(x):
    drnn = L.DynamicRNN()
    with drnn.block():
        word = drnn.step_input(x)
        prev = drnn.memory(shape=[3], dtype=x.dtype)
        h = L.fc([word, prev], 3, act="tanh", param_attr=[fluid.ParamAttr(name="wx"), fluid.ParamAttr(name="wh")],
                 bias_attr=fluid.ParamAttr(name="b"))
        drnn.update_memory(prev, h)
        drnn.output(h)
    return drnn()


def test_dynamic_rnn_gradients():
    def build():
        x = fluid.data("x", [None, 2], "float64", lod_level=1)
        x.stop_gradient = False
        out = _dynamic_rnn(x)
        return L.reduce_sum(sequence_pool_op(out, "sum") * sequence_pool_op(out, "max"))
    xv = np.random.RandomState(0).uniform(-1, 1, (6, 2))
    t = fluid.create_lod_tensor(xv, [[2, 3, 1]], fluid.CPUPlace())
    check_program_grad(build, {"x": t}, ["x", "wx", "wh", "b"])


def test_dynamic_rnn_program_is_paddles():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        out = _dynamic_rnn(x)
    main.lint()
    assert [op.type for op in main.global_block().ops] == [
        "fill_constant", "lod_rank_table", "max_sequence_len", "less_than", "lod_tensor_to_array",
        "fill_constant", "read_from_array", "fill_constant_batch_size_like", "write_to_array", "while",
        "array_to_lod_tensor"]
    assert [op.type for op in main.block(1).ops] == [
        "read_from_array", "read_from_array", "shrink_rnn_memory", "mul", "mul", "sum", "elementwise_add", "tanh",
        "write_to_array", "increment", "write_to_array", "less_than"]
    assert out.lod_level == 1
    with pytest.raises(ValueError, match="only be used after its block"):
        d = L.DynamicRNN()
        d()


def test_dynamic_rnn_sequences_of_one_step_and_empty_batch_rows():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 1], "float32", lod_level=1)
        drnn = L.DynamicRNN()
        with drnn.block():
            w = drnn.step_input(x)
            prev = drnn.memory(shape=[1])
            s = L.elementwise_add(w, prev)
            drnn.update_memory(prev, s)
            drnn.output(s)
        out = drnn()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    t = fluid.create_lod_tensor(np.arange(1, 7, dtype="float32").reshape(6, 1), [[1, 4, 1]], fluid.CPUPlace())
    got = exe.run(main, feed={"x": t}, fetch_list=[out], scope=scope, return_numpy=False)[0]
    # running sums within each sequence
    np.testing.assert_allclose(np.array(got)[:, 0], [1, 2, 5, 9, 14, 6])
    assert got.lod() == [[0, 1, 5, 6]]


def _static_rnn(x, h0):
    rnn = L.StaticRNN()
    with rnn.step():
        word = rnn.step_input(x)
        prev = rnn.memory(init=h0)
        prev2 = rnn.memory(shape=[-1, 2], batch_ref=word, init_value=0.5)
        h = L.fc([word, prev], 3, act="tanh", param_attr=[fluid.ParamAttr(name="wx"), fluid.ParamAttr(name="wh")],
                 bias_attr=fluid.ParamAttr(name="b"))
        h2 = L.elementwise_add(L.elementwise_mul(prev2, word), word)
        rnn.update_memory(prev, h)
        rnn.update_memory(prev2, h2)
        rnn.step_output(h)
        rnn.step_output(h2)
    return rnn()


def test_static_rnn_gradients():
    def build():
        x = fluid.data("x", [4, 3, 2], "float64")
        x.stop_gradient = False
        h0 = fluid.data("h0", [3, 3], "float64")
        h0.stop_gradient = False
        out, out2 = _static_rnn(x, h0)
        return L.reduce_sum(L.elementwise_mul(out, out)) + L.reduce_sum(out2)
    rng = np.random.RandomState(0)
    check_program_grad(build, {"x": rng.uniform(-1, 1, (4, 3, 2)), "h0": rng.uniform(-1, 1, (3, 3))},
                       ["x", "h0", "wx", "wh", "b"])


def test_static_rnn_program_and_errors():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [4, 3, 2], "float32")
        h0 = fluid.data("h0", [3, 3], "float32")
        out, out2 = _static_rnn(x, h0)
    main.lint()
    rec = [op for op in main.global_block().ops if op.type == "recurrent"][0]
    assert rec.input("inputs") == ["x"] and rec.input("initial_states")[0] == "h0"
    assert sorted(rec.input("parameters")) == ["b", "wh", "wx"]
    assert out.shape == (4, 3, 3) and len(rec.attr("ex_states")) == 2 and rec.attr("has_states")
    with pytest.raises(ValueError, match="is never updated"):
        with fluid.program_guard(fluid.Program(), fluid.Program()):
            x = fluid.data("x", [4, 3, 2], "float32")
            rnn = L.StaticRNN()
            with rnn.step():
                w = rnn.step_input(x)
                rnn.memory(shape=[-1, 2], batch_ref=w)
                rnn.step_output(w)


@pytest.mark.parametrize("fmt", [None, "paddle"])
def test_dynamic_rnn_inference_model_round_trip(tmp_path, fmt):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        out = L.sequence_last_step(_dynamic_rnn(x))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    t = fluid.create_lod_tensor(np.arange(12, dtype="float32").reshape(6, 2) / 10, [[2, 3, 1]], fluid.CPUPlace())
    want = exe.run(main, feed={"x": t}, fetch_list=[out], scope=scope)[0]
    with fluid.scope_guard(scope):
        fluid.io.save_inference_model(str(tmp_path), ["x"], [out], exe, main_program=main,
                                      **({"format": fmt} if fmt else {}))
    scope2 = fluid.Scope()
    with fluid.scope_guard(scope2):
        prog, feeds, fetches = fluid.io.load_inference_model(str(tmp_path), exe)
    assert [op.type for op in prog.global_block().ops].count("while") == 1
    got = exe.run(prog, feed={feeds[0]: t}, fetch_list=fetches, scope=scope2)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_fc_on_several_inputs_makes_a_weight_per_input():
    # the book's DynamicRNN step: fc([word, prev]) with one (unnamed) param_attr
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 5], "float32", lod_level=1)
        drnn = L.DynamicRNN()
        with drnn.block():
            w = drnn.step_input(x)
            prev = drnn.memory(shape=[3])
            h = L.fc([w, prev], 3, act="tanh")
            drnn.update_memory(prev, h)
            drnn.output(h)
        out = drnn()
    shapes = sorted(tuple(p.shape) for p in main.global_block().all_parameters())
    assert shapes == [(3,), (3, 3), (5, 3)]
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    t = fluid.create_lod_tensor(np.ones((4, 5), "float32"), [[3, 1]], fluid.CPUPlace())
    assert exe.run(main, feed={"x": t}, fetch_list=[out], scope=scope)[0].shape == (4, 3)
