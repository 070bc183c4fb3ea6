"""Models and data shared by the distributed equivalence tests and their local references."""
import numpy as np

import fluidist as fluid

SEED = 7


# every optimizer of fluid 1.x: each updates its own branch of the "all_opt" model
ALL_OPTIMIZERS = {
    "sgd": lambda lr: fluid.optimizer.SGD(learning_rate=lr),
    "momentum": lambda lr: fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9),
    "nesterov": lambda lr: fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9, use_nesterov=True),
    "adam": lambda lr: fluid.optimizer.Adam(learning_rate=lr),
    "adamax": lambda lr: fluid.optimizer.Adamax(learning_rate=lr),
    "adagrad": lambda lr: fluid.optimizer.Adagrad(learning_rate=lr),
    "decayed_adagrad": lambda lr: fluid.optimizer.DecayedAdagrad(learning_rate=lr),
    "rmsprop": lambda lr: fluid.optimizer.RMSProp(learning_rate=lr, momentum=0.5, centered=True),
    "ftrl": lambda lr: fluid.optimizer.Ftrl(learning_rate=lr, l1=0.001, l2=0.001),
    "lamb": lambda lr: fluid.optimizer.Lamb(learning_rate=lr),
    "lars_momentum": lambda lr: fluid.optimizer.LarsMomentum(learning_rate=lr, momentum=0.9),
}


def _all_optimizers_model():
    """One branch per optimizer (a 64 x 256 fc, sliced over two pservers, and an fc to one output);
    the branches' outputs are summed into one loss; each optimizer updates only its own branch."""
    x = fluid.data(name="x", shape=[None, 64], dtype="float32")
    y = fluid.data(name="y", shape=[None, 1], dtype="float32")
    outs = []
    for name in ALL_OPTIMIZERS:
        h = fluid.layers.fc(x, 256, act="tanh", param_attr=fluid.ParamAttr(name="%s_w" % name),
                            bias_attr=fluid.ParamAttr(name="%s_b" % name))
        outs.append(fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="%s_ow" % name), bias_attr=False))
    pred = fluid.layers.scale(fluid.layers.sums(outs), scale=1.0 / len(outs))
    loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
    params_grads = fluid.backward.append_backward(loss)
    for name, make in ALL_OPTIMIZERS.items():
        make(0.002).apply_gradients([pg for pg in params_grads if pg[0].name.rsplit("_", 1)[0] == name])
    return loss


def build(model="fc", optimizer="sgd", lr_decay=False, reader=False):
    """Returns (main, startup, loss, parameter names); with ``reader`` (the embedding models), a fifth
    item: the non-iterable ``DataLoader`` whose ``read`` op feeds ``ids`` and ``y`` in the program."""
    loader = None
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = SEED
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        if model == "all_opt":
            loss = _all_optimizers_model()
            params = sorted(p.name for p in main.global_block().all_parameters())
            return main, startup, loss, params
        if model == "fc":
            x = fluid.data(name="x", shape=[None, 64], dtype="float32")
            y = fluid.data(name="y", shape=[None, 1], dtype="float32")
            # fc_w is 64 x 256 = 16384 elements: sliced over two pservers with min_block_size 8192
            h = fluid.layers.fc(x, 256, act="tanh", param_attr=fluid.ParamAttr(name="fc_w"),
                                bias_attr=fluid.ParamAttr(name="fc_b"))
            pred = fluid.layers.fc(h, 1, param_attr=fluid.ParamAttr(name="out_w"),
                                   bias_attr=fluid.ParamAttr(name="out_b"))
            loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        elif model == "big":
            # big_w is 2048 x 4096 float32 = 32 MiB: 16 MiB blocks on each of two pservers
            x = fluid.data(name="x", shape=[None, 2048], dtype="float32")
            y = fluid.data(name="y", shape=[None, 1], dtype="float32")
            h = fluid.layers.fc(x, 4096, param_attr=fluid.ParamAttr(name="big_w"), bias_attr=False)
            loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.reduce_mean(h, dim=1,
                                                                                             keep_dim=True), y))
        elif model in ("emb", "dtable", "emb_one_shard"):
            ids = fluid.data(name="ids", shape=[None, 1], dtype="int64")
            y = fluid.data(name="y", shape=[None, 1], dtype="float32")
            if reader:
                loader = fluid.io.DataLoader.from_generator(feed_list=[ids, y], capacity=8, iterable=False)
            # 2048 x 8 = 16384 elements: the table's row-sparse gradient is split over both pservers;
            # "dtable" makes it a distributed lookup table (rows i % 2 on pserver i % 2, prefetched)
            emb = fluid.layers.embedding(ids, size=[2048, 8], is_sparse=True, is_distributed=model == "dtable",
                                         param_attr=fluid.ParamAttr(name="emb_w"))
            pred = fluid.layers.fc(emb, 1, param_attr=fluid.ParamAttr(name="out_w"),
                                   bias_attr=fluid.ParamAttr(name="out_b"))
            loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        else:
            raise ValueError("unknown model %r" % model)
        lr = 0.05
        if lr_decay:
            lr = fluid.layers.exponential_decay(learning_rate=0.05, decay_steps=1, decay_rate=0.5, staircase=True)
        opt = {"sgd": lambda: fluid.optimizer.SGD(learning_rate=lr),
               "momentum": lambda: fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9),
               "adam": lambda: fluid.optimizer.Adam(learning_rate=lr),
               "adagrad": lambda: fluid.optimizer.Adagrad(learning_rate=lr),
               "adadelta": lambda: fluid.optimizer.Adadelta(learning_rate=lr, rho=0.9),
               "lookahead": lambda: fluid.optimizer.LookaheadOptimizer(fluid.optimizer.SGD(lr), alpha=0.5, k=2),
               "ema": lambda: fluid.optimizer.SGD(learning_rate=lr),
               "model_average": lambda: fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9),
               "recompute": lambda: fluid.optimizer.RecomputeOptimizer(fluid.optimizer.Adam(learning_rate=lr))
               }[optimizer]()
        if optimizer == "recompute":    # recompute the output layer from the hidden activations
            opt._set_checkpoints([main.global_block().ops[[op.type for op in main.global_block().ops].index("tanh")
                                                          ].output("Out")[0]])
        opt.minimize(loss)
        state = []
        if optimizer == "ema":      # the moving averages are compared too
            ema = fluid.optimizer.ExponentialMovingAverage(0.5)
            ema.update()
            state = [v.name for v in ema._ema_vars.values()]
        elif optimizer == "model_average":
            avg = fluid.optimizer.ModelAverage(0.5, min_average_window=1, max_average_window=2)
            state = [v.name for s in avg._state.values() for v in s.values()]
    # a distributed table lives on the pservers only: trainers hold a stand-in without values
    params = sorted(p.name for p in main.global_block().all_parameters() if not (model == "dtable" and
                                                                              p.name == "emb_w"))
    if reader:
        return main, startup, loss, params + sorted(state), loader
    return main, startup, loss, params + sorted(state)


def global_batch(model, step, n):
    rng = np.random.RandomState(1000 + step)
    if model in ("fc", "all_opt"):
        x = rng.uniform(-1, 1, (n, 64)).astype("float32")
        return {"x": x, "y": np.sin(x.sum(1, keepdims=True)).astype("float32")}
    if model == "big":
        x = rng.uniform(-1, 1, (n, 2048)).astype("float32")
        return {"x": x, "y": np.sin(x.sum(1, keepdims=True)).astype("float32")}
    ids = rng.randint(0, 2048, (n, 1)).astype("int64")
    ids[: n // 2] = rng.randint(0, 16, (n // 2, 1))  # repeated ids across trainers
    if model == "emb_one_shard" and step % 2 == 0:
        ids %= 512  # every row in the first pserver's block: the second gets a gradient with no rows

    return {"ids": ids, "y": (ids % 7).astype("float32") / 7.0}


def batch_for(model, step, n, trainer_id, trainers):
    full = global_batch(model, step, n)
    per = n // trainers
    return {k: v[trainer_id * per:(trainer_id + 1) * per] for k, v in full.items()}


def local_history(model, optimizer, lr_decay, steps, n):
    """``({"loss_<step>", "<param>_<step>", "<param>@GRAD_<step>" (all_opt's FTRL)}, parameter names)``
    of training on one process."""
    main, startup, loss, params = build(model, optimizer, lr_decay)
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    grads = [p + "@GRAD" for p in params if p.startswith("ftrl_")] if model == "all_opt" else []
    out = {}
    for step in range(steps):
        res = exe.run(main, feed=global_batch(model, step, n), fetch_list=[loss] + params + grads, scope=scope)
        out["loss_%d" % step] = res[0]
        for name, v in zip(params + grads, res[1:]):
            out["%s_%d" % (name, step)] = v
    return out, params
