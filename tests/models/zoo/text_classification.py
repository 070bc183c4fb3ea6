"""Text classification with ``nets.sequence_conv_pool`` over word embeddings (the model of Paddle's
distributed text-classification test), on synthetic two-class sentences."""
import numpy as np

import fluidist as fluid

DICT_DIM = 50


def conv_net(input, dict_dim, emb_dim=16, window_size=3, num_filters=16, fc0_dim=12, class_dim=2):
    emb = fluid.layers.embedding(input=input, size=[dict_dim, emb_dim], is_sparse=False)
    conv_3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=num_filters, filter_size=window_size,
                                           act="tanh", pool_type="max")
    fc_0 = fluid.layers.fc(input=[conv_3], size=fc0_dim)
    prediction = fluid.layers.fc(input=[fc_0], size=class_dim, act="softmax")
    return prediction


def build(lr=0.5):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        data = fluid.layers.data(name="data", shape=[1], dtype="int64", lod_level=1)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        predict = conv_net(data, DICT_DIM)
        cost = fluid.layers.cross_entropy(input=predict, label=label)
        avg_cost = fluid.layers.mean(x=cost)
        acc = fluid.layers.accuracy(input=predict, label=label)
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=lr).minimize(avg_cost)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost, fetches={"acc": acc})


def sentences(step, n, dict_dim, min_len=2, max_len=8, seed=0):
    """Sentences of ids; class 1 sentences draw most words from the upper half of the dictionary."""
    rng = np.random.RandomState(seed * 7919 + 5000 + step)
    words, lens, labels = [], [], []
    for _ in range(n):
        y = rng.randint(2)
        k = rng.randint(min_len, max_len + 1)
        half = dict_dim // 2
        ids = rng.randint(0, half, k) + half * (rng.uniform(size=k) < (0.8 if y else 0.2))
        words.append(ids)
        lens.append(k)
        labels.append(y)
    return np.concatenate(words).reshape(-1, 1).astype("int64"), lens, np.array(labels, "int64").reshape(-1, 1)


def batch(step, n, **options):
    words, lens, labels = sentences(step, n, DICT_DIM)
    return {"data": (words, lens), "label": labels}
