"""Behaviours Paddle 1.8 scripts rely on: saving a whole program without targets, squeeze keeping the
LoD, FetchHandler given a list, the generated-layer helpers, the default-scope stack."""
import logging
import os
import time

import numpy as np
import pytest

import fluidist as fluid


def _program():
    prog, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(prog, startup):
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        loss = fluid.layers.mean(fluid.layers.fc(x, 2))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return prog, startup, loss


def test_save_inference_model_without_targets_saves_the_whole_program(tmp_path):
    prog, startup, loss = _program()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        fluid.io.save_inference_model(str(tmp_path), [], [], exe, main_program=prog, export_for_deployment=False)
    assert os.path.exists(tmp_path / "__model__.main_program")
    with open(tmp_path / "__model__.main_program") as f:
        saved = fluid.Program.from_json(f.read())
    assert [op.type for op in saved.global_block().ops] == [op.type for op in prog.global_block().ops]
    with pytest.raises(ValueError, match="non-empty"):
        fluid.io.save_inference_model(str(tmp_path / "d"), [], [], exe, main_program=prog)


def test_squeeze_and_unsqueeze_keep_the_lod():
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 1, 3], dtype="float32", lod_level=1)
        squeezed = fluid.layers.squeeze(x, axes=[1])
        back = fluid.layers.unsqueeze(squeezed, axes=[1])
        pooled = fluid.layers.sequence_pool(squeezed, "sum")
    value = np.arange(15, dtype="float32").reshape(5, 1, 3)
    t = fluid.create_lod_tensor(value, [[2, 3]], fluid.CPUPlace())
    s, b, p = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": t}, fetch_list=[squeezed, back, pooled],
                                                   return_numpy=False)
    assert s.recursive_sequence_lengths() == [[2, 3]] and b.recursive_sequence_lengths() == [[2, 3]]
    np.testing.assert_allclose(np.array(p), [value[:2, 0].sum(0), value[2:, 0].sum(0)])


def test_fetch_handler_takes_a_list_and_a_failing_handler_does_not_end_training(caplog):
    prog, startup, loss = _program()
    scope = fluid.Scope()
    fluid.Executor(fluid.CPUPlace()).run(startup, scope=scope)
    handler = fluid.executor.FetchHandler([loss, "fc_0.w_0"], period_secs=0.01)
    assert sorted(handler.var_dict) == sorted([loss.name, "fc_0.w_0"])
    seen = []

    class Failing(fluid.executor.FetchHandler):
        def handler(self, res):
            seen.append(sorted(res))
            return res[0]          # a list-minded handler: KeyError, as in Paddle's own tests
    monitor = fluid.trainer_factory.FetchHandlerMonitor(scope, Failing([loss.name, "fc_0.w_0"], period_secs=0.01))
    with caplog.at_level(logging.WARNING):
        monitor.start()
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        monitor.stop()                       # does not raise: the training that ran it goes on
    assert seen and seen[0] == sorted([loss.name, "fc_0.w_0"])
    assert isinstance(monitor.error, KeyError) and "no longer called" in caplog.text
    assert fluid.executor.FetchHandler("loss").var_dict == {"loss": "loss"}     # one name (Paddle takes it too)
    with pytest.raises(TypeError, match="var_dict"):
        fluid.executor.FetchHandler(3)


def test_generated_layers_and_the_default_scope_stack():
    from fluidist.layers.layer_function_generator import generate_activation_fn, generate_layer_fn
    from fluidist import default_scope_funcs as dsf
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.data(name="x", shape=[None, 2], dtype="float32")
        y = generate_activation_fn("relu")(x)
        z = generate_layer_fn("elementwise_add")(x=x, y=y, axis=-1)
    out, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": np.array([[-1.0, 2.0]], "float32")},
                                                fetch_list=[z])
    np.testing.assert_allclose(out, [[-1.0, 4.0]])
    dsf.enter_local_scope()
    dsf.var("tmp").set_value(np.ones(2))
    assert dsf.find_var("tmp") is not None and fluid.global_scope().find_var("tmp") is None
    dsf.leave_local_scope()
    assert dsf.get_cur_scope() is fluid.global_scope()


def test_layers_data_takes_values_of_another_shape_fluid_data_does_not():
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        loose = fluid.layers.data(name="loose", shape=[3], dtype="float32")    # declared [-1, 3]
        strict = fluid.data(name="strict", shape=[None, 3], dtype="float32")
        out = fluid.layers.sqrt(loose)
        fluid.layers.sqrt(strict)
    exe = fluid.Executor(fluid.CPUPlace())
    res, = exe.run(prog, feed={"loose": np.array([0, 9, 36], "float32"),
                               "strict": np.ones((1, 3), "float32")}, fetch_list=[out])
    np.testing.assert_allclose(res, [0, 3, 6])
    with pytest.raises(ValueError, match=r"'strict' expects shape \[-1, 3\] but got \[3\]"):
        exe.run(prog, feed={"loose": np.ones(3, "float32"), "strict": np.ones(3, "float32")}, fetch_list=[out])


@pytest.mark.parametrize("layer_call, error", [
    (lambda x, b: fluid.layers.sign(12), TypeError),
    (lambda x, b: fluid.layers.sign([1.0, -2.0]), TypeError),
    (lambda x, b: fluid.layers.transpose(x, perm=(1, 0, 2)), TypeError),
    (lambda x, b: fluid.layers.reshape(x, [-1, -1, 5]), AssertionError),
    (lambda x, b: fluid.layers.reshape(x, [2, 5, 5, 0]), AssertionError),
    (lambda x, b: fluid.layers.reshape(x, [-2, 25]), AssertionError),
    (lambda x, b: fluid.layers.reshape(x, []), AssertionError),
    (lambda x, b: fluid.layers.expand(b, [2, 1, 1]), ValueError),
    (lambda x, b: fluid.layers.fill_constant([1], "uint4", 1.0), ValueError),
])
def test_layers_refuse_arguments_with_paddle18s_exception_types(layer_call, error):
    """Each exception type is the one Paddle 1.8.5 raises for the same call (checked there)."""
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        x = fluid.data("x", [2, 5, 5], "float32")
        b = fluid.data("b", [2, 5, 5], "bool")
        with pytest.raises(error):
            layer_call(x, b)


def test_sign_of_an_ndarray_keeps_its_dtype():
    """Paddle 1.8 turns the array into a constant of its dtype (assign), then checks that dtype."""
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        s = fluid.layers.sign(np.array([-3.0, 0.0, 2.0], "float32"))
        got, = fluid.Executor(fluid.CPUPlace()).run(fetch_list=[s])
        with pytest.raises(TypeError):
            fluid.layers.sign(np.array([-3, 0, 2], "int32"))
    assert got.dtype == np.float32 and got.tolist() == [-1.0, 0.0, 1.0]
