"""The model and data of the fleet tests, and the local reference runs they are compared with."""
import numpy as np

import fluidist as fluid

SEED = 11
FEATURES = 64


def net():
    """x (64 features) -> fc 256 tanh -> fc 1; mean square error. fc_w (64 x 256 = 16384 elements)
    is sliced over two pservers (min_block_size 8192)."""
    x = fluid.data(name="x", shape=[None, FEATURES], dtype="float32")
    y = fluid.data(name="y", shape=[None, 1], dtype="float32")
    h = fluid.layers.fc(x, 256, act="tanh", param_attr=fluid.ParamAttr(name="fc_w"),
                        bias_attr=fluid.ParamAttr(name="fc_b"))
    pred = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="out_w"), bias_attr=fluid.ParamAttr(name="out_b"))
    return fluid.layers.mean(fluid.layers.square_error_cost(pred, y))


PARAMS = ["fc_b", "fc_w", "out_b", "out_w"]
TRUE_W = np.random.RandomState(3).normal(0, 0.25, (FEATURES, 1)).astype("float32")   # the target: tanh(x w)


def base_optimizer(name, lr=0.05):
    if name == "sgd":
        return fluid.optimizer.SGD(learning_rate=lr)
    if name == "momentum":
        return fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9)
    if name == "adam":
        return fluid.optimizer.Adam(learning_rate=lr)
    raise ValueError(name)


def build(minimize):
    """(main, startup, loss): the net built in fresh programs, then ``minimize(loss)`` inside them."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = SEED
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss = net()
        minimize(loss)
    return main, startup, loss


def global_batch(step, n):
    rng = np.random.RandomState(500 + step)
    x = rng.uniform(-1, 1, (n, FEATURES)).astype("float32")
    return {"x": x, "y": np.tanh(x @ TRUE_W).astype("float32")}


def batch_for(step, n, trainer_id, trainers):
    full = global_batch(step, n)
    per = n // trainers
    return {k: v[trainer_id * per:(trainer_id + 1) * per] for k, v in full.items()}


def local_history(optimizer, steps, n, first_step=0, start_params=None):
    """One process training on the whole batches: {"<param>_<step>": value, "loss_<step>": value}."""
    main, startup, loss = build(lambda l: base_optimizer(optimizer).minimize(l))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in (start_params or {}).items():
        scope.var(name).set_value(np.array(value))
    out = {}
    for step in range(first_step, first_step + steps):
        res = exe.run(main, feed=global_batch(step, n), fetch_list=[loss] + PARAMS, scope=scope)
        out["loss_%d" % step] = res[0]
        for name, v in zip(PARAMS, res[1:]):
            out["%s_%d" % (name, step)] = v
    return out


def initial_params():
    main, startup, loss = build(lambda l: base_optimizer("sgd").minimize(l))
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return {p: np.array(scope.find_var(p).get_tensor()) for p in PARAMS}


def equal_bound(optimizer):
    """The relative error a distributed history may show against one process on the whole batch.
    Workers average their half-batch gradients where one process takes the mean of the whole batch: the
    same sum in another order, ~1e-7 apart. SGD and momentum pass that on as it is (1e-5 holds with room);
    Adam's step divides each gradient by its own magnitude (m / sqrt(v)), so an element whose gradient is
    itself at rounding scale moves by up to ~1e-3 of the learning rate differently (measured 1.4e-4)."""
    return 1e-3 if optimizer == "adam" else 1e-5


def rel_err(got, want):
    return float(np.abs(np.asarray(got) - np.asarray(want)).max() / max(np.abs(want).max(), 1e-12))


def eval_loss(params, n=256, step=999):
    """The loss of the net with ``params`` on a held-out batch."""
    main, startup, loss = build(lambda l: None)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    for name, value in params.items():
        scope.var(name).set_value(np.array(value))
    return float(exe.run(main, feed=global_batch(step, n), fetch_list=[loss], scope=scope)[0][0])
