"""Small models used by the transpiler tests (the ones of Paddle's test_dist_transpiler)."""
import fluidist as fluid


def fc_model(optimizer=None, lr_decay=False, regularizer=None, clip=None, size=1000, global_clip=None):
    """fc(size->size) with params fc_w / fc_b, square_error_cost, mean, and an optimizer."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[size], dtype="float32")
        pred = fluid.layers.fc(input=x, size=size, act=None,
                               param_attr=fluid.ParamAttr(name="fc_w", regularizer=regularizer, gradient_clip=clip),
                               bias_attr=fluid.ParamAttr(name="fc_b"))
        y = fluid.layers.data(name="y", shape=[1], dtype="float32")
        cost = fluid.layers.square_error_cost(input=pred, label=y)
        avg_cost = fluid.layers.mean(cost)
        if lr_decay:
            lr = fluid.layers.exponential_decay(learning_rate=1.0, decay_steps=2100, decay_rate=0.1,
                                                staircase=True)
        else:
            lr = 0.1
        if global_clip is not None:
            fluid.clip.set_gradient_clip(global_clip)
        opt = optimizer(lr) if optimizer else fluid.optimizer.SGD(learning_rate=lr)
        opt.minimize(avg_cost)
    return main, startup, avg_cost


def transpile(main, startup, trainer_id=0, pservers="127.0.0.1:6174,127.0.0.1:6175", trainers=2, sync=True,
              config=None):
    t = fluid.DistributeTranspiler(config=config)
    t.transpile(trainer_id, program=main, pservers=pservers, trainers=trainers, sync_mode=sync,
                startup_program=startup)
    main.lint()
    startup.lint()
    return t


def op_types(block):
    return [op.type for op in block.ops]
