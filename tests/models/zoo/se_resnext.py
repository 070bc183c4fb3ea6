"""SE-ResNeXt (grouped bottleneck blocks with squeeze-and-excitation) as Paddle's distributed
SE-ResNeXt test builds it, with the depth and widths as arguments so that a test can make it tiny.
Momentum with a piecewise learning rate and L2 decay, as there."""
import math

import numpy as np

import fluidist as fluid


class SE_ResNeXt(object):
    def __init__(self, depth=(3, 4, 6, 3), num_filters=(128, 256, 512, 1024), cardinality=32,
                 reduction_ratio=16, stem_filters=64, dropout_prob=0.2):
        self.depth = depth
        self.num_filters = num_filters
        self.cardinality = cardinality
        self.reduction_ratio = reduction_ratio
        self.stem_filters = stem_filters
        self.dropout_prob = dropout_prob

    def net(self, input, class_dim=1000):
        conv = self.conv_bn_layer(input=input, num_filters=self.stem_filters, filter_size=7, stride=2, act="relu")
        conv = fluid.layers.pool2d(input=conv, pool_size=3, pool_stride=2, pool_padding=1, pool_type="max")
        for block in range(len(self.depth)):
            for i in range(self.depth[block]):
                conv = self.bottleneck_block(input=conv, num_filters=self.num_filters[block],
                                             stride=2 if i == 0 and block != 0 else 1,
                                             cardinality=self.cardinality, reduction_ratio=self.reduction_ratio)
        pool = fluid.layers.pool2d(input=conv, pool_size=7, pool_type="avg", global_pooling=True)
        drop = fluid.layers.dropout(x=pool, dropout_prob=self.dropout_prob)
        stdv = 1.0 / math.sqrt(drop.shape[1] * 1.0)
        out = fluid.layers.fc(input=drop, size=class_dim, act="softmax",
                              param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-stdv, stdv)))
        return out

    def shortcut(self, input, ch_out, stride):
        ch_in = input.shape[1]
        if ch_in != ch_out or stride != 1:
            filter_size = 1
            return self.conv_bn_layer(input, ch_out, filter_size, stride)
        return input

    def bottleneck_block(self, input, num_filters, stride, cardinality, reduction_ratio):
        conv0 = self.conv_bn_layer(input=input, num_filters=num_filters, filter_size=1, act="relu")
        conv1 = self.conv_bn_layer(input=conv0, num_filters=num_filters, filter_size=3, stride=stride,
                                   groups=cardinality, act="relu")
        conv2 = self.conv_bn_layer(input=conv1, num_filters=num_filters * 2, filter_size=1, act=None)
        scale = self.squeeze_excitation(input=conv2, num_channels=num_filters * 2, reduction_ratio=reduction_ratio)
        short = self.shortcut(input, num_filters * 2, stride)
        return fluid.layers.elementwise_add(x=short, y=scale, act="relu")

    def conv_bn_layer(self, input, num_filters, filter_size, stride=1, groups=1, act=None):
        conv = fluid.layers.conv2d(input=input, num_filters=num_filters, filter_size=filter_size, stride=stride,
                                   padding=(filter_size - 1) // 2, groups=groups, act=None, bias_attr=False)
        return fluid.layers.batch_norm(input=conv, act=act)

    def squeeze_excitation(self, input, num_channels, reduction_ratio):
        pool = fluid.layers.pool2d(input=input, pool_size=0, pool_type="avg", global_pooling=True)
        stdv = 1.0 / math.sqrt(pool.shape[1] * 1.0)
        squeeze = fluid.layers.fc(input=pool, size=num_channels // reduction_ratio, act="relu",
                                  param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-stdv, stdv)))
        stdv = 1.0 / math.sqrt(squeeze.shape[1] * 1.0)
        excitation = fluid.layers.fc(input=squeeze, size=num_channels, act="sigmoid",
                                     param_attr=fluid.ParamAttr(initializer=fluid.initializer.Uniform(-stdv, stdv)))
        return fluid.layers.elementwise_mul(x=input, y=excitation, axis=0)


TINY = dict(depth=(1, 1), num_filters=(8, 16), cardinality=4, reduction_ratio=4, stem_filters=8, dropout_prob=0.0)
IMAGE = [3, 32, 32]
CLASS_DIM = 10


def build(lr=0.1, tiny=True, steps_per_stage=3):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        image = fluid.layers.data(name="data", shape=IMAGE, dtype="float32")
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        model = SE_ResNeXt(**TINY) if tiny else SE_ResNeXt()
        out = model.net(input=image, class_dim=CLASS_DIM)
        cost = fluid.layers.cross_entropy(input=out, label=label)
        avg_cost = fluid.layers.mean(x=cost)
        acc_top1 = fluid.layers.accuracy(input=out, label=label, k=1)
        test_program = main.clone(for_test=True)
        bd = [steps_per_stage * e for e in [1, 50, 100]]
        values = [lr * (0.1 ** i) for i in range(len(bd) + 1)]
        optimizer = fluid.optimizer.Momentum(
            learning_rate=fluid.layers.piecewise_decay(boundaries=bd, values=values), momentum=0.9,
            regularization=fluid.regularizer.L2Decay(1e-4))
        optimizer.minimize(avg_cost)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost, fetches={"acc_top1": acc_top1})


def batch(step, n, **options):
    protos = np.random.RandomState(11).uniform(-1, 1, [CLASS_DIM] + IMAGE).astype("float32")
    rng = np.random.RandomState(6000 + step)
    label = rng.randint(0, CLASS_DIM, (n, 1)).astype("int64")
    image = protos[label[:, 0]] + rng.normal(0, 0.2, [n] + IMAGE)
    return {"data": image.astype("float32"), "label": label}
