"""with_data_parallel over several CPU places in one process equals one place on the whole batch."""
import numpy as np
import pytest

import fluidist as fluid


def model(optimizer="sgd"):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8])
        y = fluid.data("y", [None, 1])
        h = fluid.layers.fc(x, 16, act="relu")
        pred = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        opt = fluid.optimizer.SGD(0.1) if optimizer == "sgd" else fluid.optimizer.Adam(0.01)
        opt.minimize(loss)
    return main, startup, loss


def batches(steps, n):
    r = np.random.RandomState(0)
    for _ in range(steps):
        x = r.randn(n, 8).astype("float32")
        yield {"x": x, "y": x.sum(1, keepdims=True).astype("float32")}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("nplaces", [2, 3])
def test_places_equal_single_place(optimizer, nplaces):
    main, startup, loss = model(optimizer)
    exe = fluid.Executor(fluid.CPUPlace())
    ref_scope = fluid.Scope()
    exe.run(startup, scope=ref_scope)
    ref_losses = [exe.run(main, feed=b, fetch_list=[loss], scope=ref_scope)[0] for b in batches(4, 12)]

    main2, startup2, loss2 = model(optimizer)
    scope = fluid.Scope()
    exe.run(startup2, scope=scope)
    compiled = fluid.CompiledProgram(main2).with_data_parallel(loss_name=loss2.name,
                                                                places=fluid.cpu_places(nplaces))
    for b, ref in zip(batches(4, 12), ref_losses):
        out, = exe.run(compiled, feed=b, fetch_list=[loss2], scope=scope)
        assert out.shape == (nplaces,)
        np.testing.assert_allclose(out.mean(), ref[0], rtol=1e-5)
    for p in main.global_block().all_parameters():
        np.testing.assert_allclose(np.array(scope.find_var(p.name).get_tensor()),
                                   np.array(ref_scope.find_var(p.name).get_tensor()), rtol=1e-5, atol=1e-7)


def test_feed_splitting_rules_and_errors():
    main, startup, loss = model()
    exe = fluid.Executor()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    b = next(batches(1, 3))
    # 3 samples on 2 places: [1], [2]
    out = exe.run(compiled, feed=b, fetch_list=["x"], scope=scope, return_merged=False)
    assert [o[0].shape[0] for o in out] == [1, 2]
    with pytest.raises(ValueError, match=r"gives 1 part\(s\) for 2 places"):
        exe.run(compiled, feed={k: v[:1] for k, v in b.items()}, fetch_list=[loss], scope=scope)
    with pytest.raises(ValueError, match="one dict per place"):
        exe.run(compiled, feed=[b], fetch_list=[loss], scope=scope)
    out, = exe.run(compiled, feed=[{k: v[:1] for k, v in b.items()}, {k: v[1:] for k, v in b.items()}],
                   fetch_list=[loss], scope=scope)
    assert out.shape == (2,)
    with pytest.raises(ValueError, match="different scope/place"):
        exe.run(compiled, feed=b, fetch_list=[loss], scope=fluid.Scope())


def test_loss_name_required_and_called_once():
    main, startup, loss = model()
    with pytest.raises(ValueError, match="loss_name"):
        fluid.CompiledProgram(main).with_data_parallel()
    c = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name)
    with pytest.raises(RuntimeError, match="only once"):
        c.with_data_parallel(loss_name=loss.name)


def test_share_vars_from_sees_the_current_parameters_on_every_place():
    main, startup, loss = model()
    test_prog = main.clone(for_test=True)
    exe = fluid.Executor()
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    places = fluid.cpu_places(2)
    train = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=places)
    test = fluid.CompiledProgram(test_prog).with_data_parallel(share_vars_from=train, places=places)
    with pytest.raises(ValueError, match="has not run yet"):
        exe.run(test, feed=next(batches(1, 4)), fetch_list=[loss], scope=scope)
    b = next(batches(1, 4))
    for _ in range(3):
        exe.run(train, feed=b, fetch_list=[loss], scope=scope)
        got, = exe.run(test, feed=b, fetch_list=[loss], scope=scope)
        want, = exe.run(test_prog, feed=b, fetch_list=[loss], scope=scope)
        np.testing.assert_allclose(got.mean(), want[0], rtol=1e-5)


def test_gradient_scale_strategy_one_sums_the_places_gradients():
    main, startup, loss = model()
    exe = fluid.Executor()
    ref_scope, scope = fluid.Scope(), fluid.Scope()
    exe.run(startup, scope=ref_scope)
    exe.run(startup, scope=scope)
    b = next(batches(1, 4))
    halves = [{k: v[:2] for k, v in b.items()}, {k: v[2:] for k, v in b.items()}]
    w0 = np.array(scope.find_var("fc_0.w_0").get_tensor())
    # reference: the sum of the two halves' gradients = 2 x the whole batch's mean gradient
    g, = exe.run(main.clone(for_test=False), feed=b, fetch_list=["fc_0.w_0@GRAD"], scope=ref_scope)
    bs = fluid.BuildStrategy()
    bs.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.One
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs,
                                                               places=fluid.cpu_places(2))
    exe.run(compiled, feed=halves, fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(np.array(scope.find_var("fc_0.w_0").get_tensor()), w0 - 0.1 * 2 * g,
                               rtol=1e-5, atol=1e-6)
    bs2 = fluid.BuildStrategy()
    bs2.gradient_scale_strategy = fluid.BuildStrategy.GradientScaleStrategy.Customized
    c2 = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, build_strategy=bs2,
                                                         places=fluid.cpu_places(2))
    with pytest.raises(ValueError, match="Customized is not supported"):
        exe.run(c2, feed=b, fetch_list=[loss], scope=fluid.Scope())


def test_use_prune_of_a_compiled_program_is_refused_clearly():
    main, startup, loss = model()
    compiled = fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=fluid.cpu_places(2))
    with pytest.raises(ValueError, match=r"use_prune=True\) of a CompiledProgram is not supported"):
        fluid.Executor().run(compiled, use_prune=True)


@pytest.mark.gpu
@pytest.mark.cpu_only("names its places itself: two places on GPU 0")
def test_places_sharing_one_gpu_equal_single_place():
    """``[CUDAPlace(0)] * 2``: NCCL takes one rank per GPU, so the places' ring reduces through CuPy on
    the GPU they share (``device_ring.shared_gpu_thread_group``); training equals one place."""
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    main, startup, loss = model()
    exe = fluid.Executor(fluid.CUDAPlace(0))
    ref_scope = fluid.Scope()
    exe.run(startup, scope=ref_scope)
    ref_losses = [exe.run(main, feed=b, fetch_list=[loss], scope=ref_scope)[0] for b in batches(4, 12)]
    main2, startup2, loss2 = model()
    scope = fluid.Scope()
    exe.run(startup2, scope=scope)
    compiled = fluid.CompiledProgram(main2).with_data_parallel(loss_name=loss2.name,
                                                                places=[fluid.CUDAPlace(0)] * 2)
    for b, ref in zip(batches(4, 12), ref_losses):
        out, = exe.run(compiled, feed=b, fetch_list=[loss2], scope=scope)
        np.testing.assert_allclose(out.mean(), ref[0], rtol=1e-5)
