"""Handwritten digits with fluidist: an MLP or a small CNN on scikit-learn's bundled 8x8 digits.

    python examples/digits.py --model cnn
    python examples/digits.py --model mlp --optimizer momentum --lr 0.05 --epochs 10

The data (1797 images of 8x8 pixels, 10 classes) ships with scikit-learn, so nothing is
downloaded. The train/test split (1347/450) is fixed, whatever ``--seed`` says; ``--seed`` sets
the initial parameters and the batch order.
"""
import argparse
import logging
import time

import numpy as np

import fluidist as fluid
from fluidist.log_helper import DEFAULT_FORMAT, get_logger
from fluidist.console.progress import Progress

log = get_logger("digits", logging.INFO, DEFAULT_FORMAT)

N_TEST = 450


def load_data():
    """(x_train, y_train, x_test, y_test): images scaled to [0, 1] as float32 (N, 1, 8, 8), labels
    int64 (N, 1). The split is a fixed shuffle."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64).reshape(-1, 1)
    order = np.random.RandomState(1234).permutation(len(x))
    test, train = order[:N_TEST], order[N_TEST:]
    return x[train], y[train], x[test], y[test]


def mlp(img):
    h = fluid.layers.fc(input=img, size=128, act="relu")
    h = fluid.layers.fc(input=h, size=64, act="relu")
    return fluid.layers.fc(input=h, size=10)


def cnn(img):
    h = fluid.layers.conv2d(input=img, num_filters=16, filter_size=3, padding=1, act="relu")
    h = fluid.layers.pool2d(input=h, pool_size=2, pool_stride=2, pool_type="max")      # 16 x 4 x 4
    h = fluid.layers.conv2d(input=h, num_filters=32, filter_size=3, padding=1, act="relu")
    h = fluid.layers.pool2d(input=h, pool_size=2, pool_stride=2, pool_type="max")      # 32 x 2 x 2
    h = fluid.layers.fc(input=h, size=64, act="relu")
    return fluid.layers.fc(input=h, size=10)


MODELS = {"mlp": mlp, "cnn": cnn}


def make_optimizer(name, lr):
    if name == "adam":
        return fluid.optimizer.Adam(learning_rate=lr)
    if name == "momentum":
        return fluid.optimizer.Momentum(learning_rate=lr, momentum=0.9)
    if name == "sgd":
        return fluid.optimizer.SGD(learning_rate=lr)
    raise ValueError("unknown optimizer %r: choose adam, momentum or sgd" % name)


def build(model, optimizer, lr, seed=0):
    """The Paddle 1.x program. The MLP reads the image flattened to 64 features (``fc`` flattens
    everything after the batch dimension); the CNN reads it as NCHW 1x8x8."""
    main, startup = fluid.Program(), fluid.Program()
    # seeds are read when the initializers are created, so they are set before building
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        img = fluid.data(name="img", shape=[None, 1, 8, 8], dtype="float32")
        label = fluid.data(name="label", shape=[None, 1], dtype="int64")
        logits = MODELS[model](img)
        loss = fluid.layers.softmax_with_cross_entropy(logits=logits, label=label)
        avg_loss = fluid.layers.mean(loss)
        acc = fluid.layers.accuracy(input=logits, label=label)
        test_program = main.clone(for_test=True)
        make_optimizer(optimizer, lr).minimize(avg_loss)
    return main, startup, test_program, avg_loss, acc


DEFAULT_EPOCHS = {"mlp": 25, "cnn": 15}
DEFAULT_LR = {"adam": 0.002, "momentum": 0.05, "sgd": 0.1}


def train_share(exe, program, test_program, avg_loss, acc, rank, nworkers, epochs, batch_size, seed=0,
                who="worker"):
    """The loop of the distributed digits examples: every worker walks the same batch order and
    trains on its own slice (``rank`` of ``nworkers``) of each batch; after each epoch it prints its
    loss and test accuracy. Returns the last test accuracy."""
    log.info("%s %d: loading the data (scikit-learn's 8x8 digits)", who, rank)
    x_train, y_train, x_test, y_test = load_data()
    rng = np.random.RandomState(seed)      # the same order on every worker
    share = batch_size // nworkers
    steps = len(x_train) // batch_size
    log.info("%s %d: training %d epoch(s) of %d steps on %d of each %d images, each epoch evaluated on the %d "
             "test images", who, rank, epochs, steps, share, batch_size, len(x_test))
    progress = Progress("%s %d" % (who, rank), "step(s)", total=epochs * steps)
    test_acc = float("nan")
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        losses = []
        for i in range(0, len(order) - batch_size + 1, batch_size):
            idx = order[i:i + batch_size][rank * share:(rank + 1) * share]
            loss, = exe.run(program, feed={"img": x_train[idx], "label": y_train[idx]}, fetch_list=[avg_loss],
                            use_program_cache=True)
            losses.append(float(np.mean(loss)))
            progress.step()
        test_acc = float(exe.run(test_program, feed={"img": x_test, "label": y_test}, fetch_list=[acc])[0][0])
        print("%s %d epoch %2d  loss %.4f  test accuracy %.4f" % (who, rank, epoch, np.mean(losses), test_acc),
              flush=True)
    return test_acc


def train(model="cnn", epochs=None, batch_size=32, lr=None, optimizer="adam", seed=0, use_cuda=False,
          verbose=True):
    """Train and evaluate; returns ``{"train_loss": [...], "test_accuracy": [...], "final_accuracy"}``
    (per-epoch lists)."""
    if model not in MODELS:
        raise ValueError("unknown model %r: choose one of %s" % (model, sorted(MODELS)))
    if optimizer not in DEFAULT_LR:
        raise ValueError("unknown optimizer %r: choose one of %s" % (optimizer, sorted(DEFAULT_LR)))
    epochs = DEFAULT_EPOCHS[model] if epochs is None else epochs
    lr = DEFAULT_LR[optimizer] if lr is None else lr
    x_train, y_train, x_test, y_test = load_data()
    place = fluid.CUDAPlace(0) if use_cuda else fluid.CPUPlace()
    with fluid.unique_name.guard(), fluid.scope_guard(fluid.Scope()):
        main, startup, test_program, avg_loss, acc = build(model, optimizer, lr, seed + 1)
        exe = fluid.Executor(place)
        exe.run(startup)
        rng = np.random.RandomState(seed)
        losses, accuracies = [], []
        t0 = time.time()
        for epoch in range(epochs):
            order = rng.permutation(len(x_train))
            total, seen = 0.0, 0
            # full batches only (drop_last): a last batch of 3 samples makes needlessly large steps
            for i in range(0, len(order) - batch_size + 1, batch_size):
                idx = order[i:i + batch_size]
                loss, = exe.run(main, feed={"img": x_train[idx], "label": y_train[idx]},
                                fetch_list=[avg_loss], use_program_cache=True)
                total += float(loss[0]) * len(idx)
                seen += len(idx)
            losses.append(total / seen)
            test_acc, = exe.run(test_program, feed={"img": x_test, "label": y_test}, fetch_list=[acc],
                                use_program_cache=True)
            accuracies.append(float(test_acc[0]))
            if verbose:
                print("epoch %3d  train loss %.4f  test accuracy %.4f" % (epoch, losses[-1], accuracies[-1]))
        elapsed = time.time() - t0
    if verbose:
        print("test accuracy: %.4f" % accuracies[-1])
        print("(%s, %s, %d epochs, %.1f s)" % (model, optimizer, epochs, elapsed))
    return {"train_loss": losses, "test_accuracy": accuracies, "final_accuracy": accuracies[-1],
            "seconds": elapsed}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", choices=sorted(MODELS), default="cnn", help="the network")
    ap.add_argument("--epochs", type=int, default=None, help="default: %s" % DEFAULT_EPOCHS)
    ap.add_argument("--batch_size", type=int, default=32, help="samples per step")
    ap.add_argument("--lr", type=float, default=None, help="default: %s" % DEFAULT_LR)
    ap.add_argument("--optimizer", choices=sorted(DEFAULT_LR), default="adam", help="the optimizer")
    ap.add_argument("--seed", type=int, default=0, help="seed of the initial parameters and the batch order")
    ap.add_argument("--use_cuda", action="store_true", help="run on CUDAPlace(0) (needs CuPy)")
    args = ap.parse_args(argv)
    train(args.model, args.epochs, args.batch_size, args.lr, args.optimizer, args.seed, args.use_cuda)


if __name__ == "__main__":
    main()
