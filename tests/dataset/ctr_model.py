"""The CTR model of the dataset tests: a sparse embedding of the category ids, summed per
instance, beside three dense features; logistic loss."""
import numpy as np

import fluidist as fluid
from ctr_data import NUM_CATS


def build(optimizer=None, seed=7):
    """(main, startup, (dense, ids, label), loss, prob) built in fresh programs."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        dense = fluid.data("dense", [None, 3], "float32")
        ids = fluid.data("ids", [None, 1], "int64", lod_level=1)
        label = fluid.data("label", [None, 1], "int64")
        emb = fluid.layers.embedding(ids, size=[NUM_CATS, 8], is_sparse=True)
        pooled = fluid.layers.sequence_pool(emb, "sum")
        h = fluid.layers.fc(fluid.layers.concat([pooled, dense], axis=1), 16, act="relu")
        logit = fluid.layers.fc(h, 1)
        prob = fluid.layers.sigmoid(logit)
        loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(
            logit, fluid.layers.cast(label, "float32")))
        (optimizer or fluid.optimizer.SGD(0.5)).minimize(loss)
    return main, startup, (dense, ids, label), loss, prob


def auc(labels, scores):
    """The area under the ROC curve (rank statistic)."""
    labels = np.asarray(labels).reshape(-1)
    scores = np.asarray(scores).reshape(-1)
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
