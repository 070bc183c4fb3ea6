"""Gradient merge (k micro-batches then one update) equals one step on the k batches concatenated:
as a program pass, as a BuildStrategy field (local and data parallel) and through Paddle's
multi_batch_merge_pass; ParallelExecutor; every BuildStrategy / ExecutionStrategy field either
honoured or warned once."""
import warnings

import numpy as np
import pytest

import fluidist as fluid
from fluidist.passes.gradient_merge import apply_gradient_merge

K = 4
MICRO = 3


def model(optimizer="adam", lr_decay=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 6], "float32")
        y = fluid.data("y", [None, 1], "float32")
        h = fluid.layers.fc(x, 8, act="tanh")
        pred = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        lr = fluid.layers.exponential_decay(0.1, decay_steps=1, decay_rate=0.5, staircase=True) if lr_decay else 0.1
        opt = {"adam": lambda: fluid.optimizer.Adam(lr),
               "momentum": lambda: fluid.optimizer.Momentum(lr, 0.9, regularization=fluid.regularizer.L2Decay(0.01)),
               "sgd": lambda: fluid.optimizer.SGD(lr, grad_clip=fluid.clip.GradientClipByGlobalNorm(0.5))}[optimizer]()
        opt.minimize(loss)
    return main, startup, loss


def micro_batches(n):
    r = np.random.RandomState(4)
    out = []
    for _ in range(n):
        x = r.randn(MICRO, 6).astype("float32")
        out.append({"x": x, "y": np.cos(x.sum(1, keepdims=True)).astype("float32")})
    return out


def concat(feeds):
    return {k: np.concatenate([f[k] for f in feeds]) for k in feeds[0]}


def params(scope, main):
    return {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.global_block().all_parameters()}


def reference(optimizer, lr_decay, updates):
    main, startup, loss = model(optimizer, lr_decay)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    history = []
    for i in range(updates):
        exe.run(main, feed=concat(micro_batches(K * updates)[i * K:(i + 1) * K]), scope=scope)
        history.append(params(scope, main))
    return history


def assert_params(got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("optimizer,lr_decay", [("adam", False), ("momentum", True), ("sgd", False)])
def test_pass_equals_one_step_on_the_concatenated_batches(optimizer, lr_decay):
    updates = 2
    ref = reference(optimizer, lr_decay, updates)
    main, startup, loss = model(optimizer, lr_decay)
    apply_gradient_merge(main, startup, K)
    main.lint()
    assert "conditional_block" in [op.type for op in main.global_block().ops]
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    before = params(scope, main)
    for i, feed in enumerate(micro_batches(K * updates)):
        exe.run(main, feed=feed, scope=scope)
        if (i + 1) % K:
            continue
        assert_params(params(scope, main), ref[i // K])
        if i == K - 1:
            assert not np.allclose(before["fc_0.w_0"], params(scope, main)["fc_0.w_0"])
    with pytest.raises(ValueError, match="already applied"):
        apply_gradient_merge(main, startup, K)


def test_build_strategy_field_locally_and_on_two_places():
    ref = reference("adam", False, 1)[0]
    for places in (None, fluid.cpu_places(2)):
        main, startup, loss = model()
        exe, scope = fluid.Executor(), fluid.Scope()
        exe.run(startup, scope=scope)
        bs = fluid.BuildStrategy()
        bs.gradient_merge = True
        bs.gradient_merge_configs = {"k_steps": K, "avg": True}
        prog = fluid.CompiledProgram(main, bs)
        if places is not None:
            prog = prog.with_data_parallel(loss_name=loss.name, places=places)
            feeds = [concat(micro_batches(2 * K)[2 * i:2 * i + 2]) for i in range(K // 2)]
            # two places take half of each feed: 2 steps of 2 places = 4 micro-batches
            bs.gradient_merge_configs = {"k_steps": K // 2, "avg": True}
        else:
            feeds = micro_batches(K)
        for f in feeds:
            exe.run(prog, feed=f, scope=scope)
        assert_params(params(scope, main), ref)
        assert "conditional_block" not in [op.type for op in main.global_block().ops]   # the user's program stays


def test_multi_batch_merge_pass():
    ref = reference("adam", False, 1)[0]
    main, startup, loss = model()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    bs = fluid.BuildStrategy()
    bs._finalize_strategy_and_create_passes().insert_pass(0, "multi_batch_merge_pass").set("num_repeats", K)
    prog = fluid.CompiledProgram(main, bs)
    for f in micro_batches(K):
        exe.run(prog, feed=f, scope=scope)
    assert_params(params(scope, main), ref)
    with pytest.raises(NotImplementedError, match="fuse_elewise_add_act_pass"):
        bs._finalize_strategy_and_create_passes().append_pass("fuse_elewise_add_act_pass")


def test_parallel_executor_equals_compiled_program(monkeypatch):
    monkeypatch.setenv("CPU_NUM", "2")
    main, startup, loss = model("momentum")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    ref_scope = fluid.Scope()
    exe.run(startup, scope=ref_scope)
    ref_prog = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main, scope=scope)
    assert pe.device_count == 2
    test_prog = main.clone(for_test=True)
    feeds = micro_batches(4)
    for f in feeds:
        got, = pe.run(fetch_list=[loss.name], feed=f)
    test_pe = fluid.ParallelExecutor(use_cuda=False, main_program=test_prog, share_vars_from=pe, scope=scope)
    assert test_pe.run(fetch_list=[loss.name], feed=feeds[0])[0].shape == (pe.device_count,)
    pe.drop_local_exe_scopes()
    assert scope.find_var("fc_0.w_0") is not None
    for f in feeds:
        exe.run(ref_prog, feed=f, scope=ref_scope)
    assert_params(params(scope, main), params(ref_scope, main))


def test_num_iteration_per_run_runs_the_program_that_many_times():
    main, startup, loss = model("sgd")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    ref_scope = fluid.Scope()
    exe.run(startup, scope=ref_scope)
    es = fluid.ExecutionStrategy()
    es.num_iteration_per_run = 3
    prog = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, exec_strategy=es,
                                                          places=fluid.cpu_places(1))
    feed = micro_batches(1)[0]
    exe.run(prog, feed=feed, scope=scope)
    for _ in range(3):
        exe.run(main, feed=feed, scope=ref_scope)
    assert_params(params(scope, main), params(ref_scope, main))


def test_fields_without_effect_warn_once():
    from fluidist.executor import strategy_fields
    strategy_fields._warned.clear()
    main, startup, loss = model("sgd")
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    bs, es = fluid.BuildStrategy(), fluid.ExecutionStrategy()
    bs.fuse_elewise_add_act_ops = True
    bs.memory_optimize = True
    bs.reduce_strategy = fluid.BuildStrategy.ReduceStrategy.Reduce
    es.num_iteration_per_drop_scope = 10
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            prog = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                                  exec_strategy=es, places=fluid.cpu_places(1))
            exe.run(prog, feed=micro_batches(1)[0], scope=scope)
    msgs = [str(w.message) for w in caught]
    for field in ("fuse_elewise_add_act_ops", "memory_optimize", "reduce_strategy", "num_iteration_per_drop_scope"):
        assert sum(field in m and "no effect in fluidist" in m for m in msgs) == 1, (field, msgs)
    # Paddle's defaults say nothing
    assert not any("fuse_all_reduce_ops" in m or "enable_inplace" in m for m in msgs)
    paddle_fields = ["reduce_strategy", "gradient_scale_strategy", "num_trainers", "trainer_id", "trainers_endpoints",
                     "nccl_comm_num", "use_hierarchical_allreduce", "hierarchical_allreduce_inter_nranks",
                     "fuse_all_reduce_ops", "fuse_broadcast_ops", "fuse_elewise_add_act_ops", "fuse_all_optimizer_ops",
                     "fuse_relu_depthwise_conv", "fuse_bn_act_ops", "enable_auto_fusion", "enable_inplace",
                     "memory_optimize", "cache_runtime_context", "remove_unnecessary_lock", "mkldnn_enabled_op_types",
                     "sync_batch_norm", "enable_backward_optimizer_op_deps", "enable_sequential_execution",
                     "debug_graphviz_path", "is_distribution", "async_mode"]
    assert all(hasattr(fluid.BuildStrategy(), f) for f in paddle_fields)
    assert all(hasattr(fluid.ExecutionStrategy(), f) for f in ["num_threads", "num_iteration_per_drop_scope",
                                                               "num_iteration_per_run", "use_thread_barrier",
                                                               "allow_op_delay", "use_cuda",
                                                               "use_experimental_executor"])


def test_drop_local_exe_scopes_keeps_the_merged_gradients(monkeypatch):
    """Gradient merge adds persistables of its own (the step counter, the sums): dropping the places'
    temporaries between merged steps must keep them."""
    monkeypatch.setenv("CPU_NUM", "2")
    ref = reference("adam", False, 1)[0]
    main, startup, loss = model()
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    bs = fluid.BuildStrategy()
    bs.gradient_merge = True
    bs.gradient_merge_configs = {"k_steps": K // 2, "avg": True}
    pe = fluid.ParallelExecutor(use_cuda=False, loss_name=loss.name, main_program=main, build_strategy=bs,
                                scope=scope)
    for i in range(K // 2):
        pe.run(fetch_list=[loss.name], feed=concat(micro_batches(2 * K)[2 * i:2 * i + 2]))
        pe.drop_local_exe_scopes()
    assert_params(params(scope, main), ref)
