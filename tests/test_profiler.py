"""fluidist.profiler: per-op timing while on, plain kernels (and unchanged results) while off."""
import json

import numpy as np
import pytest

import fluidist as fluid
import fluidist.profiler as profiler
from fluidist.device.places import to_host
from fluidist.ops import registry


def _mlp():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, 4], dtype="float32")
        h = fluid.layers.fc(x, 5, act="relu")
        loss = fluid.layers.mean(fluid.layers.fc(h, 1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def _kernels(exe, program):
    return [st.kernel for st in exe._plan(program, 0).steps]


def test_counts_every_kernel_call_by_type_and_role(tmp_path):
    main, startup, loss = _mlp()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": np.ones((2, 4), np.float32)}
    exe.run(main, feed=feed, fetch_list=[loss])          # a plan without the profiler is cached
    path = tmp_path / "profile.json"
    with profiler.profiler("CPU", sorted_key="total", profile_path=str(path)):
        for _ in range(3):
            exe.run(main, feed=feed, fetch_list=[loss])
    stats = profiler.op_stats()
    calls = {}
    for s in stats:
        calls[s["op_type"]] = calls.get(s["op_type"], 0) + s["calls"]
        assert 0 <= s["min"] <= s["ave"] <= s["max"] and s["total"] > 0
    want = {}
    for op in main.global_block().ops:
        want[op.type] = want.get(op.type, 0) + 3
    assert calls == want
    # the roles are kept apart: forward mul (0) and backward mul_grad (1), sgd is Optimize (2)
    roles = {(s["op_type"], s["op_role"]) for s in stats}
    assert ("mul", 0) in roles and ("mul_grad", 1) in roles and ("sgd", 2) in roles
    assert len(profiler.op_events()) == sum(want.values())
    report = json.loads(path.read_text())
    assert {r["event"] for r in report["events"]} == set(want)
    assert [r["total"] for r in report["events"]] == sorted((r["total"] for r in report["events"]), reverse=True)


def test_off_means_plain_kernels_and_same_results():
    main, startup, loss = _mlp()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    plain = [registry.get(op.type).kernel for op in main.global_block().ops]
    feed = {"x": np.arange(8, dtype=np.float32).reshape(2, 4)}
    exe.run(main, feed=feed, fetch_list=[loss])
    assert _kernels(exe, main) == plain
    scope_a = fluid.global_scope()
    params_before = {p.name: to_host(scope_a.vals[p.name]).copy() for p in main.global_block().all_parameters()}
    profiler.start_profiler("CPU")
    assert profiler.is_profiler_enabled()
    wrapped = _kernels(exe, main)
    assert all(k is not p and k.__wrapped__ is p for k, p in zip(wrapped, plain))
    got_on, = exe.run(main, feed=feed, fetch_list=[loss])
    profiler.stop_profiler(profile_path=None)
    assert not profiler.is_profiler_enabled()
    assert _kernels(exe, main) == plain
    # the same step from the same parameters, without the profiler, gives the same loss
    for n, v in params_before.items():
        scope_a.vals[n] = v.copy()
    got_off, = exe.run(main, feed=feed, fetch_list=[loss])
    np.testing.assert_array_equal(got_on, got_off)


def test_reset_and_restart_start_clean():
    main, startup, loss = _mlp()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    feed = {"x": np.ones((1, 4), np.float32)}
    profiler.start_profiler("CPU")
    exe.run(main, feed=feed, fetch_list=[loss])
    assert profiler.op_stats()
    profiler.reset_profiler()
    assert profiler.op_stats() == [] and profiler.op_events() == []
    exe.run(main, feed=feed, fetch_list=[loss])
    n = len(profiler.op_events())
    assert n == len(main.global_block().ops)
    profiler.stop_profiler(profile_path=None)
    exe.run(main, feed=feed, fetch_list=[loss])          # off: nothing more is recorded
    assert len(profiler.op_events()) == n
    profiler.start_profiler("CPU")                       # a new session starts from nothing
    assert profiler.op_events() == []
    profiler.stop_profiler(profile_path=None)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="state"):
        profiler.start_profiler("TPU")
    with pytest.raises(ValueError, match="sorted_key"):
        with profiler.profiler("CPU", sorted_key="median"):
            pass
    assert not profiler.is_profiler_enabled()
