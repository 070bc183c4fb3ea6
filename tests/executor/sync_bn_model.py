"""The net of the synchronised batch norm tests: conv -> batch_norm (NCHW) -> relu -> fc ->
batch_norm (2-D) -> fc -> square error, trained with Momentum; its data; one process's reference."""
import numpy as np

import fluidist as fluid

SEED = 5
# what the tests compare: the batch norms' outputs, gradients, parameters, running statistics
BN_OUT = ["bn1_out", "bn2_out"]
GRADS = ["bn1_s@GRAD", "bn1_b@GRAD", "bn2_s@GRAD", "conv_w@GRAD", "fc1_w@GRAD"]
STATE = ["bn1_s", "bn1_b", "bn1_mean", "bn1_var", "bn2_s", "bn2_b", "bn2_mean", "bn2_var", "conv_w", "fc1_w", "out_w"]


def build(wrap=None):
    """(main, startup, loss); ``wrap(optimizer)`` gives the optimizer that minimizes (Fleet's)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = SEED
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 3, 6, 6])
        y = fluid.data("y", [None, 1])
        h = fluid.layers.conv2d(x, 4, 3, padding=1, param_attr=fluid.ParamAttr(name="conv_w"), bias_attr=False)
        h = fluid.layers.batch_norm(h, act="relu", param_attr=fluid.ParamAttr(name="bn1_s"),
                                    bias_attr=fluid.ParamAttr(name="bn1_b"), moving_mean_name="bn1_mean",
                                    moving_variance_name="bn1_var", momentum=0.8)
        _rename_output(main, h, "bn1_out")
        h = fluid.layers.fc(h, 8, param_attr=fluid.ParamAttr(name="fc1_w"), bias_attr=False)
        h = fluid.layers.batch_norm(h, param_attr=fluid.ParamAttr(name="bn2_s"), bias_attr=fluid.ParamAttr(name="bn2_b"),
                                    moving_mean_name="bn2_mean", moving_variance_name="bn2_var")
        _rename_output(main, h, "bn2_out")
        pred = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="out_w"), bias_attr=False)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        opt = fluid.optimizer.Momentum(0.05, momentum=0.9)
        (wrap(opt) if wrap is not None else opt).minimize(loss)
    return main, startup, loss


def _rename_output(main, var, name):
    """Give a batch norm's Y a name the tests fetch (the op that writes it is its batch_norm or relu)."""
    block = main.global_block()
    block._rename_var(var.name, name)


def batch(step, n=8):
    r = np.random.RandomState(100 + step)
    x = r.uniform(-1, 1, (n, 3, 6, 6)).astype("float32") + np.arange(3, dtype="float32").reshape(1, 3, 1, 1)
    return {"x": x, "y": np.tanh(x.reshape(n, -1).sum(1, keepdims=True) / 20).astype("float32")}


def part(feed, k, n):
    per = len(feed["x"]) // n
    return {name: v[k * per:(k + 1) * per] for name, v in feed.items()}


def reference(steps, n=8):
    """One process on the whole batches: per step the fetched outputs and gradients, then the state."""
    main, startup, loss = build()
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    out = {}
    for step in range(steps):
        got = exe.run(main, feed=batch(step, n), fetch_list=BN_OUT + GRADS, scope=scope)
        out.update({"%s_%d" % (k, step): v for k, v in zip(BN_OUT + GRADS, got)})
        out.update({"%s_%d" % (k, step): np.array(scope.find_var(k).get_tensor()) for k in STATE})
    return out
