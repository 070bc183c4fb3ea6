"""The understand_sentiment book chapter: a convolutional net (two ``nets.sequence_conv_pool``
branches) or a stacked bidirectional LSTM (``dynamic_lstm`` layers, alternately reversed, max
pooled), over word embeddings, on synthetic two-class sentences. Small widths; the LSTM's hidden
size (hid_dim / 4 = 7) is no multiple of 8, where paddlepaddle 1.8.5's CPU lstm gradient is wrong
(its AVX kernel gives gradients that disagree with its own finite differences), so that Paddle's
numbers can serve as the reference."""
import numpy as np

import fluidist as fluid

DICT_DIM = 300
CLASS_DIM = 2


def convolution_net(data, input_dim, class_dim=2, emb_dim=16, hid_dim=16):
    emb = fluid.embedding(input=data, size=[input_dim, emb_dim], is_sparse=True)
    conv_3 = fluid.nets.sequence_conv_pool(input=emb, num_filters=hid_dim, filter_size=3, act="tanh",
                                           pool_type="sqrt")
    conv_4 = fluid.nets.sequence_conv_pool(input=emb, num_filters=hid_dim, filter_size=4, act="tanh",
                                           pool_type="sqrt")
    return fluid.layers.fc(input=[conv_3, conv_4], size=class_dim, act="softmax")


def stacked_lstm_net(data, input_dim, class_dim=2, emb_dim=16, hid_dim=28, stacked_num=3):
    assert stacked_num % 2 == 1
    emb = fluid.embedding(input=data, size=[input_dim, emb_dim], is_sparse=True)
    fc1 = fluid.layers.fc(input=emb, size=hid_dim)
    lstm1, cell1 = fluid.layers.dynamic_lstm(input=fc1, size=hid_dim)
    inputs = [fc1, lstm1]
    for i in range(2, stacked_num + 1):
        fc = fluid.layers.fc(input=inputs, size=hid_dim)
        lstm, cell = fluid.layers.dynamic_lstm(input=fc, size=hid_dim, is_reverse=(i % 2) == 0)
        inputs = [fc, lstm]
    fc_last = fluid.layers.sequence_pool(input=inputs[0], pool_type="max")
    lstm_last = fluid.layers.sequence_pool(input=inputs[1], pool_type="max")
    return fluid.layers.fc(input=[fc_last, lstm_last], size=class_dim, act="softmax")


def build(net="conv", lr=0.05):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        data = fluid.data(name="words", shape=[None], dtype="int64", lod_level=1)
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        if net == "conv":
            prediction = convolution_net(data, DICT_DIM, CLASS_DIM)
        else:
            prediction = stacked_lstm_net(data, DICT_DIM, CLASS_DIM)
        optimizer = fluid.optimizer.Adagrad(learning_rate=lr)
        cost = fluid.layers.cross_entropy(input=prediction, label=label)
        avg_cost = fluid.layers.mean(cost)
        accuracy = fluid.layers.accuracy(input=prediction, label=label)
        test_program = main.clone(for_test=True)
        optimizer.minimize(avg_cost)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost, fetches={"acc": accuracy})


def batch(step, n, **options):
    """Class-1 sentences hold mostly 'positive' words (the upper half of the dictionary)."""
    rng = np.random.RandomState(9000 + step)
    words, lens, labels = [], [], []
    half = DICT_DIM // 2
    for _ in range(n):
        y = rng.randint(2)
        k = rng.randint(4, 10)
        words.append(rng.randint(0, half, k) + half * (rng.uniform(size=k) < (0.9 if y else 0.1)))
        lens.append(k)
        labels.append(y)
    return {"words": (np.concatenate(words).astype("int64"), lens),
            "label": np.array(labels, "int64").reshape(-1, 1)}
