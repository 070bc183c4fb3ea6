"""The module paths and small framework functions of Paddle 1.x that scripts import: fluid.compiler,
fluid.log_helper, fluid.layers.collective, fluid.transpiler.details.program_to_code, fluid.install_check,
memory_optimize, require_version, set_flags / get_flags, layers.load."""
import logging
import os

import numpy as np
import pytest

import fluidist as fluid


def test_compiler_module_is_pythons_import_path():
    from fluidist import compiler
    assert compiler.CompiledProgram is fluid.CompiledProgram
    assert compiler.BuildStrategy is fluid.BuildStrategy and compiler.ExecutionStrategy is fluid.ExecutionStrategy
    import fluidist.install_check  # noqa: F401


def test_log_helper_logger_has_its_own_handler(capsys):
    from fluidist import log_helper
    log = log_helper.get_logger("fluidist.test_log_helper", logging.INFO, fmt="%(levelname)s|%(message)s")
    assert log.level == logging.INFO and not log.propagate
    log.info("hello")
    assert "INFO|hello" in capsys.readouterr().err


def test_collective_helpers_build_the_c_ops():
    from fluidist.layers import collective
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[4, 3], dtype="float32", append_batch_size=False)
        s = collective._c_allreduce(x, reduce_type="max", ring_id=1, use_calc_stream=True)
        a = collective._allreduce(x)
        collective._c_broadcast(x, root=1, ring_id=2)
        collective._broadcast(x, 0, sync_mode=True)
        g = collective._c_allgather(x, nranks=2)
        r = collective._c_reducescatter(x, nranks=2)
        collective._c_sync_calc_stream(x)
        collective._c_sync_comm_stream(x, ring_id=1)
    prog.lint()
    ops = prog.global_block().ops
    assert [o.type for o in ops] == ["c_allreduce_max", "c_allreduce_sum", "c_broadcast", "c_broadcast",
                                     "c_allgather", "c_reducescatter", "c_sync_calc_stream", "c_sync_comm_stream"]
    assert ops[0].attr("ring_id") == 1 and ops[0].attr("use_calc_stream") is True
    assert ops[2].attr("root") == 1 and ops[2].output("Out") == ["x"]
    assert s.shape == (4, 3) and a.stop_gradient and g.shape == (8, 3) and r.shape == (2, 3)
    with pytest.raises(TypeError, match="reduce_type"):
        collective._c_allreduce(x, reduce_type="mean")


def test_program_to_code_prints_the_ops_a_fetch_needs(capsys):
    from fluidist.transpiler.details import program_to_code
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        h = fluid.layers.fc(x, 2)
        fluid.layers.relu(h)
    program_to_code(prog)
    full = capsys.readouterr().out
    assert full.startswith("{ // block 0") and "= mul(inputs={X=['x']" in full and "= relu(" in full
    program_to_code(prog, fetch_list=[h])
    part = capsys.readouterr().out
    assert "= mul(" in part and "= relu(" not in part


def test_memory_optimize_is_a_deprecated_no_op(caplog):
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        fluid.layers.relu(fluid.layers.data(name="x", shape=[3], dtype="float32"))
    before = prog.to_string()
    with caplog.at_level(logging.WARNING):
        fluid.transpiler.memory_optimize(prog)
        fluid.transpiler.release_memory(prog)
    assert prog.to_string() == before and "deprecated" in caplog.text


def test_require_version_checks_against_paddle_1_8_5():
    fluid.require_version("1.6")
    fluid.require_version("1.8.5", "1.8.5")
    with pytest.raises(Exception, match="2.0"):
        fluid.require_version("2.0")
    with pytest.raises(Exception, match="1.7"):
        fluid.require_version("1.5", max_version="1.7")
    with pytest.raises(TypeError):
        fluid.require_version(1.8)
    with pytest.raises(ValueError):
        fluid.require_version("one.eight")
    assert fluid.in_dygraph_mode() is False


def test_require_version_reads_the_version_module_at_each_call(monkeypatch):
    from fluidist.framework import version
    for attr, value in zip(("major", "minor", "patch", "rc"), ("1", "4", "1", "0")):
        monkeypatch.setattr(version, attr, value)
    fluid.require_version("1.4.1", "1.6.0")
    with pytest.raises(Exception, match="1.8"):
        fluid.require_version("1.8")
    for attr in ("major", "minor", "patch"):
        monkeypatch.setattr(version, attr, "0")
    with pytest.warns(UserWarning, match="not checked"):       # Paddle 1.8: a 0.0.0.0 build only warns
        fluid.require_version("100")


def test_flags_fluidist_reads_take_effect_others_warn(monkeypatch):
    monkeypatch.delenv("FLAGS_rpc_deadline", raising=False)
    assert fluid.get_flags("FLAGS_rpc_deadline") == {"FLAGS_rpc_deadline": None}
    fluid.set_flags({"FLAGS_rpc_deadline": 3000})
    assert os.environ["FLAGS_rpc_deadline"] == "3000"
    assert fluid.get_flags(["FLAGS_rpc_deadline"]) == {"FLAGS_rpc_deadline": "3000"}
    with pytest.warns(UserWarning, match="no effect"):
        fluid.set_flags({"FLAGS_eager_delete_tensor_gb": 0.0})
    assert fluid.get_flags("FLAGS_eager_delete_tensor_gb") == {"FLAGS_eager_delete_tensor_gb": 0.0}
    with pytest.raises(ValueError, match="FLAGS_"):
        fluid.set_flags({"rpc_deadline": 1})
    with pytest.raises(ValueError, match="neither"):
        fluid.get_flags("FLAGS_never_set")


def test_layers_load_fills_a_variable_from_a_saved_file(tmp_path):
    path = str(tmp_path / "w.npy")
    value = np.arange(6, dtype="float32").reshape(2, 3)
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        w = fluid.layers.create_tensor("float32", name="w")
        fluid.layers.load(w, path)
        h = fluid.layers.create_tensor("float16", name="h")
        fluid.layers.load(h, path, load_as_fp16=True)
    prog.lint()
    np.save(path, value)
    exe = fluid.Executor(fluid.CPUPlace())
    got, half = exe.run(prog, fetch_list=["w", "h"])
    np.testing.assert_array_equal(got, value)
    assert half.dtype == np.float16


def test_infer_no_need_buffer_slots_as_paddle():
    """Paddle 1.8.5's answers: slots read for their shape only, whatever inputs are given."""
    ask = fluid.core.infer_no_need_buffer_slots
    assert ask("elementwise_add_grad", {"X": ["x"], "Y": ["y"]}, {}, {}) == {"X", "Y"}
    assert ask("lookup_table_grad", {}, {}, {}) == {"W"} and ask("slice_grad", {}, {}, {}) == {"Input"}
    assert ask("elementwise_add", {}, {}, {}) == set() and ask("fill_constant", {}, {}, {}) == set()
    with pytest.raises(ValueError, match="unknown op type"):
        ask("no_such_op", {}, {}, {})
