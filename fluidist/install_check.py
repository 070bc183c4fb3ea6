"""``fluid.install_check.run_check()``: train a tiny model to show that fluidist works here, on one
place and then data parallel on two CPU places (or the GPUs, when CuPy sees some)."""
from .compat import refused, refused_class  # noqa: E402
import types

import numpy as np

import fluidist.layers as layers
import fluidist.optim.optimizer as optimizer
from .device.places import CPUPlace, CUDAPlace, cpu_places, cuda_places, is_compiled_with_cuda
from .core.scope import Scope
from .executor.compiler import CompiledProgram
from .executor.executor import Executor
from .framework import unique_name
from .framework.program import Program, program_guard
from .layers.io import data

__all__ = ["run_check"]

# the names of ``fluid`` the check model uses (the package itself is not imported from here)
_fluid = types.SimpleNamespace(Program=Program, program_guard=program_guard, unique_name=unique_name, data=data,
                               layers=layers, optimizer=optimizer, Executor=Executor, Scope=Scope,
                               CompiledProgram=CompiledProgram, CPUPlace=CPUPlace, CUDAPlace=CUDAPlace,
                               cpu_places=cpu_places, cuda_places=cuda_places)


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
    fluid = _fluid
    print("Running Verify Fluid Program ... ")
    use_gpu = is_compiled_with_cuda()
    one = [fluid.CUDAPlace(0)] if use_gpu else [fluid.CPUPlace()]
    _train(fluid, one)
    print("Your fluidist works well on a single %s." % ("GPU" if use_gpu else "CPU place"))
    gpus = use_gpu and len(cuda_places()) > 1
    several = fluid.cuda_places() if gpus else fluid.cpu_places(2)
    _train(fluid, several)
    print("Your fluidist works well on %d %s, data parallel." % (len(several), "GPUs" if gpus else "CPU places"))
    print("fluidist is installed and working.")


SimpleLayer = refused_class("fluid.install_check.SimpleLayer",
                            "it is a dygraph layer; fluid.install_check.run_check() checks fluidist with a static program")
