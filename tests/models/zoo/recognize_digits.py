"""The recognize_digits book chapter: softmax regression, a multilayer perceptron, or the
convolutional network (``nets.simple_img_conv_pool``, ``batch_norm``, ``nets.simple_img_conv_pool``),
trained with Adam, on synthetic 28x28 digits."""
import numpy as np

import fluidist as fluid


def softmax_regression(img):
    return fluid.layers.fc(input=img, size=10, act="softmax")


def multilayer_perceptron(img):
    hidden = fluid.layers.fc(input=img, size=200, act="relu")
    hidden = fluid.layers.fc(input=hidden, size=200, act="relu")
    return fluid.layers.fc(input=hidden, size=10, act="softmax")


def convolutional_neural_network(img):
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=img, filter_size=5, num_filters=20, pool_size=2, pool_stride=2, act="relu")
    conv_pool_1 = fluid.layers.batch_norm(conv_pool_1)
    conv_pool_2 = fluid.nets.simple_img_conv_pool(
        input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2, pool_stride=2, act="relu")
    return fluid.layers.fc(input=conv_pool_2, size=10, act="softmax")


def build(nn_type="conv", lr=0.001):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 90
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data(name="img", shape=[None, 1, 28, 28], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        net = {"softmax": softmax_regression, "mlp": multilayer_perceptron,
               "conv": convolutional_neural_network}[nn_type]
        prediction = net(img)
        loss = fluid.layers.cross_entropy(input=prediction, label=label)
        avg_loss = fluid.layers.mean(loss)
        acc = fluid.layers.accuracy(input=prediction, label=label)
        test_program = main.clone(for_test=True)
        optimizer = fluid.optimizer.Adam(learning_rate=lr)
        optimizer.minimize(avg_loss)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_loss, fetches={"acc": acc})


def batch(step, n, **options):
    protos = np.random.RandomState(5).uniform(-1, 1, (10, 1, 28, 28)).astype("float32")
    rng = np.random.RandomState(2000 + step)
    label = rng.randint(0, 10, (n, 1)).astype("int64")
    img = protos[label[:, 0]] + rng.normal(0, 0.7, (n, 1, 28, 28))
    return {"img": img.astype("float32"), "label": label}
