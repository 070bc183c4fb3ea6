"""``fluid.install_check.run_check()``: train a tiny model to show that fluidist works here, on one
place and then data parallel on two CPU places (or the GPUs, when CuPy sees some)."""
import numpy as np

__all__ = ["run_check"]


def _model(fluid):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("inp", [None, 2], "float32")
        y = fluid.data("out", [None, 1], "float32")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def _train(fluid, places, steps=20):
    """The loss before and after ``steps`` steps on ``places`` (data parallel when several)."""
    main, startup, loss = _model(fluid)
    exe = fluid.Executor(places[0])
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    prog = main if len(places) == 1 else \
        fluid.CompiledProgram(main).with_data_parallel(loss_name=loss.name, places=places)
    rng = np.random.RandomState(0)
    first = last = None
    for _ in range(steps):
        x = rng.rand(4 * len(places), 2).astype("float32")
        out = exe.run(prog, feed={"inp": x, "out": x.sum(1, keepdims=True)}, fetch_list=[loss], scope=scope)
        value = float(np.mean(out[0]))
        first = value if first is None else first
        last = value
    if not np.isfinite(last) or last >= first:
        raise RuntimeError("the check model did not learn on %s: loss %.4g -> %.4g" % (places, first, last))
    return first, last


def run_check():
    """Train the check model on one place, then on two; prints what worked, raises if something failed."""
    import fluidist as fluid
    print("Running Verify Fluid Program ... ")
    use_gpu = fluid.is_compiled_with_cuda()
    one = [fluid.CUDAPlace(0)] if use_gpu else [fluid.CPUPlace()]
    _train(fluid, one)
    print("Your fluidist works well on a single %s." % ("GPU" if use_gpu else "CPU place"))
    gpus = use_gpu and fluid.core.get_cuda_device_count() > 1
    several = fluid.cuda_places() if gpus else fluid.cpu_places(2)
    _train(fluid, several)
    print("Your fluidist works well on %d %s, data parallel." % (len(several), "GPUs" if gpus else "CPU places"))
    print("fluidist is installed and working.")
