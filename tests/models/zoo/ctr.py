"""A click-through-rate model, wide and deep, as Paddle's distributed CTR test builds it: sparse
embeddings of two id sequences, summed by ``sequence_pool``, a small DNN, a softmax over click /
no click, ``accuracy`` and ``auc`` (whose persistable stat buckets the user may fetch)."""
import numpy as np

import fluidist as fluid

DNN_INPUT_DIM = 100
LR_INPUT_DIM = 100


def network(dnn_layer_dims=(16, 8, 4, 1), is_sparse=True):
    dnn_data = fluid.layers.data(name="dnn_data", shape=[1], dtype="int64", lod_level=1)
    lr_data = fluid.layers.data(name="lr_data", shape=[1], dtype="int64", lod_level=1)
    label = fluid.layers.data(name="click", shape=[1], dtype="int64", lod_level=0)

    dnn_embedding = fluid.layers.embedding(
        is_distributed=False, input=dnn_data, size=[DNN_INPUT_DIM, dnn_layer_dims[0]],
        param_attr=fluid.ParamAttr(name="deep_embedding"), is_sparse=is_sparse)
    dnn_pool = fluid.layers.sequence_pool(input=dnn_embedding, pool_type="sum")
    dnn_out = dnn_pool
    for i, dim in enumerate(dnn_layer_dims[1:]):
        dnn_out = fluid.layers.fc(input=dnn_out, size=dim, act="relu", name="dnn-fc-%d" % i)

    lr_embedding = fluid.layers.embedding(
        is_distributed=False, input=lr_data, size=[LR_INPUT_DIM, 1],
        param_attr=fluid.ParamAttr(name="wide_embedding"), is_sparse=is_sparse)
    lr_pool = fluid.layers.sequence_pool(input=lr_embedding, pool_type="sum")

    merge_layer = fluid.layers.concat(input=[dnn_out, lr_pool], axis=1)
    predict = fluid.layers.fc(input=merge_layer, size=2, act="softmax")
    acc = fluid.layers.accuracy(input=predict, label=label)
    auc_var, batch_auc_var, auc_states = fluid.layers.auc(input=predict, label=label)
    cost = fluid.layers.cross_entropy(input=predict, label=label)
    avg_cost = fluid.layers.mean(x=cost)
    return avg_cost, acc, auc_var, batch_auc_var, auc_states


def build(lr=0.2):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        avg_cost, acc, auc_var, batch_auc_var, auc_states = network()
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=lr).minimize(avg_cost)
    # the first two auc states are the global stat buckets, StatPosVar and StatNegVar
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost,
                fetches={"acc": acc, "auc": auc_var, "batch_auc": batch_auc_var,
                         "stat_pos": auc_states[0], "stat_neg": auc_states[1]})


def batch(step, n, **options):
    """Clicks driven by a few 'good' ids: the label is 1 when a sample holds more of them than not."""
    rng = np.random.RandomState(3000 + step)
    dnn, lr, dnn_lens, lr_lens, click = [], [], [], [], []
    for _ in range(n):
        k = rng.randint(1, 5)
        ids = rng.randint(0, DNN_INPUT_DIM, k)
        good = int((ids % 3 == 0).sum() * 2 > k)
        dnn.append(ids)
        dnn_lens.append(k)
        m = rng.randint(1, 4)
        lr.append(rng.randint(0, LR_INPUT_DIM, m))
        lr_lens.append(m)
        click.append(good)
    return {"dnn_data": (np.concatenate(dnn).reshape(-1, 1).astype("int64"), dnn_lens),
            "lr_data": (np.concatenate(lr).reshape(-1, 1).astype("int64"), lr_lens),
            "click": np.array(click, dtype="int64").reshape(-1, 1)}
