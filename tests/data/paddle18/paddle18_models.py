"""Three small models written once against the fluid 1.x API, built with either ``paddle.fluid``
(Paddle 1.8.5, by make_fixtures.py and paddle_check.py) or ``fluidist`` (by the tests): an MLP, the
digits CNN and a bag-of-words classifier with an embedding over LoD sequences.

Each builder returns a dict: ``main``, ``startup``, ``feeds`` (names of the inference inputs),
``pred`` (the inference output), ``loss``. Inputs are made by ``inputs(name, seed)`` as plain
arrays and LoD offsets, so both frameworks see the same numbers.
"""
import numpy as np

NAMES = ("mlp", "cnn", "bow")
VOCAB = 50
TRAIN_STEPS = 3


def _program(fluid, seed):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    return main, startup


def mlp(fluid):
    main, startup = _program(fluid, 7)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 13], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="int64")
        h = fluid.layers.fc(input=x, size=16, act="relu")
        h = fluid.layers.fc(input=h, size=16, act="tanh")
        pred = fluid.layers.fc(input=h, size=3, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=y))
        fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    return dict(main=main, startup=startup, feeds=["x"], pred=pred, loss=loss)


def cnn(fluid):
    main, startup = _program(fluid, 11)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data(name="img", shape=[None, 1, 8, 8], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        h = fluid.layers.conv2d(input=img, num_filters=4, filter_size=3, padding=1, act=None)
        h = fluid.layers.batch_norm(input=h, act="relu")
        h = fluid.layers.pool2d(input=h, pool_size=2, pool_type="max", pool_stride=2)
        h = fluid.layers.conv2d(input=h, num_filters=8, filter_size=3, padding=1, act="relu")
        h = fluid.layers.pool2d(input=h, pool_size=2, pool_type="avg", pool_stride=2)
        pred = fluid.layers.fc(input=h, size=10, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
        fluid.optimizer.Momentum(learning_rate=0.05, momentum=0.9).minimize(loss)
    return dict(main=main, startup=startup, feeds=["img"], pred=pred, loss=loss)


def bow(fluid):
    main, startup = _program(fluid, 13)
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        words = fluid.data(name="words", shape=[None, 1], dtype="int64", lod_level=1)
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        emb = fluid.layers.embedding(input=words, size=[VOCAB, 8])
        pooled = fluid.layers.sequence_pool(input=emb, pool_type="sum")
        h = fluid.layers.fc(input=pooled, size=8, act="tanh")
        pred = fluid.layers.fc(input=h, size=2, act="softmax")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=pred, label=label))
        fluid.optimizer.Adagrad(learning_rate=0.1).minimize(loss)
    return dict(main=main, startup=startup, feeds=["words"], pred=pred, loss=loss)


BUILDERS = {"mlp": mlp, "cnn": cnn, "bow": bow}


def inputs(name, seed):
    """``(feed arrays, lod per feed name, label)`` for a batch of ``name``: plain NumPy."""
    r = np.random.RandomState(seed)
    if name == "mlp":
        x = r.randn(6, 13).astype("float32")
        return {"x": x}, {}, r.randint(0, 3, size=(6, 1)).astype("int64")
    if name == "cnn":
        img = r.rand(5, 1, 8, 8).astype("float32")
        return {"img": img}, {}, r.randint(0, 10, size=(5, 1)).astype("int64")
    lengths = [3, 1, 4, 2]
    words = r.randint(0, VOCAB, size=(sum(lengths), 1)).astype("int64")
    offsets = list(np.cumsum([0] + lengths))
    return {"words": words}, {"words": [offsets]}, r.randint(0, 2, size=(len(lengths), 1)).astype("int64")


def feed_dict(fluid, place, name, seed, with_label):
    """The feed for ``exe.run``: LoD inputs as LoDTensors (``fluid.create_lod_tensor``)."""
    arrays, lods, label = inputs(name, seed)
    feed = {}
    for k, v in arrays.items():
        if k in lods:
            lengths = [[int(b - a) for a, b in zip(lods[k][0], lods[k][0][1:])]]
            feed[k] = fluid.create_lod_tensor(v, lengths, place)
        else:
            feed[k] = v
    if with_label:
        feed["y" if name == "mlp" else "label"] = label
    return feed
