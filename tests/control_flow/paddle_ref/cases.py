"""Small programs run by both Paddle 1.8 and fluidist on the same data and parameters.

``python cases.py OUT.json`` under paddlepaddle 1.8.5 (a Python 3.8 venv) writes Paddle's numbers;
the tests run the same cases under fluidist and compare. Each case is ``case(fluid) -> (main,
startup, feed, fetch names)``; parameters come from fixed NumPy arrays."""
import json
import sys

import numpy as np


def _param(fluid, name, value):
    return fluid.ParamAttr(name=name, initializer=fluid.initializer.NumpyArrayInitializer(value))


def dynamic_rnn(fluid):
    """DynamicRNN with a reordered boot memory, a static input and two outputs."""
    L = fluid.layers
    rng = np.random.RandomState(0)
    xv = rng.uniform(-1, 1, (6, 2)).astype("float32")
    wx, wh = rng.uniform(-1, 1, (2, 3)).astype("float32"), rng.uniform(-1, 1, (3, 3)).astype("float32")
    bb, boot = rng.uniform(-1, 1, (3,)).astype("float32"), rng.uniform(-1, 1, (3, 3)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [None, 2], "float32", lod_level=1)
        x.stop_gradient = False
        b0 = fluid.data("boot", [None, 3], "float32")
        b0.stop_gradient = False
        drnn = L.DynamicRNN()
        with drnn.block():
            word = drnn.step_input(x)
            prev = drnn.memory(init=b0, need_reorder=True)
            st = drnn.static_input(b0)
            h = L.fc([word, prev], 3, act="tanh", param_attr=[_param(fluid, "wx", wx), _param(fluid, "wh", wh)],
                     bias_attr=_param(fluid, "b", bb))
            drnn.update_memory(prev, h)
            drnn.output(h, L.elementwise_mul(h, st))
        out, out2 = drnn()
        loss = L.mean(L.sequence_pool(out, "sum") * L.sequence_pool(out2, "max"))
        fluid.backward.append_backward(loss)
    feed = {"x": fluid.create_lod_tensor(xv, [[2, 3, 1]], fluid.CPUPlace()), "boot": boot}
    return main, startup, feed, [out.name, loss.name, "x@GRAD", "wx@GRAD", "wh@GRAD", "b@GRAD", "boot@GRAD"]


CASES = {"dynamic_rnn": dynamic_rnn}


def run(fluid, name):
    """Run case ``name``; returns {"values": [...], "lods": [...]} of its fetch list."""
    main, startup, feed, fetch = CASES[name](fluid)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.scope_guard(scope):
        exe.run(startup)
        got = exe.run(main, feed=feed, fetch_list=fetch, return_numpy=False)
    return {"values": [np.array(t).tolist() for t in got], "lods": [t.lod() for t in got]}


if __name__ == "__main__":
    import paddle.fluid as paddle_fluid
    json.dump({name: run(paddle_fluid, name) for name in CASES}, open(sys.argv[1], "w"))
