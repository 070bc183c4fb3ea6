"""Simnet bag-of-words, a pairwise text-matching model as Paddle's distributed simnet test builds it:
a query, a positive and a negative title share one embedding (dense, sparse, or a distributed
lookup table), each bag is summed by ``sequence_pool`` and softsign'd, two fcs, ``cos_sim`` of the
query with each title, and a hinge loss on the two similarities."""
import numpy as np

import fluidist as fluid

DICT_DIM = 1500
EMB_DIM = 16
HID_DIM = 16
MARGIN = 0.1
BASE_LR = 0.2
EMB_LR = BASE_LR * 3


def get_acc(cos_q_nt, cos_q_pt, batch_size):
    cond = fluid.layers.less_than(cos_q_nt, cos_q_pt)
    cond = fluid.layers.cast(cond, dtype="float64")
    cond_3 = fluid.layers.reduce_sum(cond)
    acc = fluid.layers.elementwise_div(
        cond_3, fluid.layers.fill_constant(shape=[1], value=batch_size * 1.0, dtype="float64"), name="simnet_acc")
    return acc


def get_loss(cos_q_pt, cos_q_nt):
    margin = fluid.layers.fill_constant_batch_size_like(input=cos_q_pt, shape=[-1, 1], value=MARGIN,
                                                        dtype="float32")
    hinge = fluid.layers.elementwise_add(fluid.layers.elementwise_sub(margin, cos_q_pt), cos_q_nt)
    zero = fluid.layers.fill_constant_batch_size_like(input=hinge, shape=[-1, 1], value=0.0, dtype="float32")
    return fluid.layers.mean(fluid.layers.elementwise_max(zero, hinge))


def bow(ids, is_sparse, is_distributed, fc_name, fc_bias_name=None):
    emb = fluid.layers.embedding(
        input=ids, is_distributed=is_distributed, size=[DICT_DIM, EMB_DIM],
        param_attr=fluid.ParamAttr(name="__emb__", learning_rate=EMB_LR), is_sparse=is_sparse)
    bag = fluid.layers.softsign(fluid.layers.sequence_pool(input=emb, pool_type="sum"))
    bias = fluid.ParamAttr(name=fc_bias_name) if fc_bias_name else None
    return fluid.layers.fc(input=bag, size=HID_DIM, param_attr=fluid.ParamAttr(name=fc_name, learning_rate=BASE_LR),
                           bias_attr=bias)


def train_network(batch_size, is_distributed=False, is_sparse=False):
    q = fluid.layers.data(name="query_ids", shape=[1], dtype="int64", lod_level=1)
    pt = fluid.layers.data(name="pos_title_ids", shape=[1], dtype="int64", lod_level=1)
    nt = fluid.layers.data(name="neg_title_ids", shape=[1], dtype="int64", lod_level=1)
    q_fc = bow(q, is_sparse, is_distributed, "__q_fc__")
    pt_fc = bow(pt, is_sparse, is_distributed, "__fc__", "__fc_b__")
    nt_fc = bow(nt, is_sparse, is_distributed, "__fc__", "__fc_b__")
    cos_q_pt = fluid.layers.cos_sim(q_fc, pt_fc)
    cos_q_nt = fluid.layers.cos_sim(q_fc, nt_fc)
    avg_cost = get_loss(cos_q_pt, cos_q_nt)
    acc = get_acc(cos_q_nt, cos_q_pt, batch_size)
    return avg_cost, acc, cos_q_pt


def build(batch_size=8, is_sparse=False, is_distributed=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        avg_cost, acc, predict = train_network(batch_size, is_distributed, is_sparse)
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=BASE_LR).minimize(avg_cost)
    return dict(main=main, startup=startup, test_program=test_program, loss=avg_cost, fetches={"cos_q_pt": predict})


def batch(step, n, **options):
    """Topics are id ranges: a positive title shares the query's topic, a negative one does not."""
    rng = np.random.RandomState(4000 + step)
    topics = 10
    width = DICT_DIM // topics
    out = {"query_ids": ([], []), "pos_title_ids": ([], []), "neg_title_ids": ([], [])}
    for _ in range(n):
        t = rng.randint(topics)
        other = (t + rng.randint(1, topics)) % topics
        for key, topic in (("query_ids", t), ("pos_title_ids", t), ("neg_title_ids", other)):
            k = rng.randint(1, 6)
            out[key][0].append(topic * width + rng.randint(0, width, k))
            out[key][1].append(k)
    return {key: (np.concatenate(ids).reshape(-1, 1).astype("int64"), lens) for key, (ids, lens) in out.items()}
