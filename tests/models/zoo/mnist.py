"""Handwritten digits with two ``nets.simple_img_conv_pool`` blocks and a softmax classifier, the
convolutional model of Paddle's distributed MNIST test, on synthetic 28x28 digits."""
import numpy as np

import fluidist as fluid


def cnn_model(data):
    conv_pool_1 = fluid.nets.simple_img_conv_pool(
        input=data, filter_size=5, num_filters=20, pool_size=2, pool_stride=2, act="relu")
    conv_pool_2 = fluid.nets.simple_img_conv_pool(
        input=conv_pool_1, filter_size=5, num_filters=50, pool_size=2, pool_stride=2, act="relu")
    predict = fluid.layers.fc(input=conv_pool_2, size=10, act="softmax")
    return predict


def build(lr=0.05):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        images = fluid.layers.data(name="pixel", shape=[1, 28, 28], dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        predict = cnn_model(images)
        cost = fluid.layers.cross_entropy(input=predict, label=label)
        avg_cost = fluid.layers.mean(x=cost)
        batch_acc = fluid.layers.accuracy(input=predict, label=label)
        test_program = main.clone(for_test=True)
        opt = fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9)
        opt.minimize(avg_cost)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost, fetches={"acc": batch_acc})


def digits(step, n, seed=0):
    """n noisy 28x28 images of ten fixed random prototypes, with their class as the label."""
    protos = np.random.RandomState(seed).uniform(-1, 1, (10, 1, 28, 28)).astype("float32")
    rng = np.random.RandomState(seed * 7919 + 1000 + step)
    label = rng.randint(0, 10, (n, 1)).astype("int64")
    images = protos[label[:, 0]] + rng.normal(0, 0.5, (n, 1, 28, 28)).astype("float32")
    return images.astype("float32"), label


def batch(step, n, **options):
    images, label = digits(step, n)
    return {"pixel": images, "label": label}
