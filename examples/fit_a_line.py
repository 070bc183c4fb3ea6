"""Linear regression with fluidist: Paddle's fit_a_line, on scikit-learn's bundled diabetes data.

    python examples/fit_a_line.py --epochs 30 --batch_size 32 --lr 0.01

The data (442 patients, 10 features, a disease-progression score) ships with scikit-learn, so
nothing is downloaded. Features are standardised with the training split's mean and std; the target
stays in its own units, so the losses printed are squared score units. The 354/88 train/test split
is fixed; ``--seed`` sets the initial parameters and the batch order.
"""
import argparse
import time

import numpy as np

import fluidist as fluid


def load_data(split_seed=0, test_fraction=0.2):
    """(x_train, y_train, x_test, y_test) as float32; the split is a fixed shuffle by ``split_seed``."""
    from sklearn.datasets import load_diabetes
    x, y = load_diabetes(return_X_y=True)
    order = np.random.RandomState(split_seed).permutation(len(x))
    n_test = int(round(len(x) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    mean, std = x[train].mean(0), x[train].std(0)
    x = (x - mean) / std
    y = y.reshape(-1, 1)
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
    return f32(x[train]), f32(y[train]), f32(x[test]), f32(y[test])


def build(n_features, lr, seed=0):
    """The Paddle 1.x program: data -> fc(1) -> square_error_cost -> mean -> SGD."""
    main, startup = fluid.Program(), fluid.Program()
    # seeds are read when the initializers are created, so they are set before building
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup):
        x = fluid.data(name="x", shape=[None, n_features], dtype="float32")
        y = fluid.data(name="y", shape=[None, 1], dtype="float32")
        y_predict = fluid.layers.fc(input=x, size=1, act=None)
        cost = fluid.layers.square_error_cost(input=y_predict, label=y)
        avg_cost = fluid.layers.mean(cost)
        test_program = main.clone(for_test=True)
        fluid.optimizer.SGD(learning_rate=lr).minimize(avg_cost)
    return main, startup, test_program, avg_cost, y_predict


def train(epochs=30, batch_size=32, lr=0.01, seed=0, use_cuda=False, verbose=True):
    """Train and evaluate; returns ``{"train_loss": [per epoch], "test_mse", "baseline_mse", ...}``.

    ``baseline_mse`` is the test MSE of always predicting the training mean, for scale.
    """
    x_train, y_train, x_test, y_test = load_data()
    place = fluid.CUDAPlace(0) if use_cuda else fluid.CPUPlace()
    with fluid.unique_name.guard(), fluid.scope_guard(fluid.Scope()):
        main, startup, test_program, avg_cost, _ = build(x_train.shape[1], lr, seed + 1)
        exe = fluid.Executor(place)
        exe.run(startup)
        rng = np.random.RandomState(seed)
        history = []
        t0 = time.time()
        for epoch in range(epochs):
            order = rng.permutation(len(x_train))
            total, n = 0.0, 0
            for i in range(0, len(order) - batch_size + 1, batch_size):  # full batches only
                idx = order[i:i + batch_size]
                loss, = exe.run(main, feed={"x": x_train[idx], "y": y_train[idx]}, fetch_list=[avg_cost],
                                use_program_cache=True)
                total += float(loss[0]) * len(idx)
                n += len(idx)
            history.append(total / n)
            if verbose:
                print("epoch %3d  train loss %10.2f" % (epoch, history[-1]))
        test_mse, = exe.run(test_program, feed={"x": x_test, "y": y_test}, fetch_list=[avg_cost])
        elapsed = time.time() - t0
    result = {"train_loss": history, "test_mse": float(test_mse[0]),
              "baseline_mse": float(np.mean((y_test - y_train.mean()) ** 2)), "seconds": elapsed}
    if verbose:
        print("test MSE: %.2f (predicting the mean: %.2f), %.2f s" % (
            result["test_mse"], result["baseline_mse"], elapsed))
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--epochs", type=int, default=30, help="passes over the training set")
    ap.add_argument("--batch_size", type=int, default=32, help="samples per step")
    ap.add_argument("--lr", type=float, default=0.01, help="learning rate")
    ap.add_argument("--seed", type=int, default=0, help="seed of the initial parameters and the batch order")
    ap.add_argument("--use_cuda", action="store_true", help="run on CUDAPlace(0) (needs CuPy)")
    args = ap.parse_args(argv)
    train(args.epochs, args.batch_size, args.lr, args.seed, args.use_cuda)


if __name__ == "__main__":
    main()
