"""Training steps whose device costs tests/device/test_transfers.py budgets: each model as fluidist
builds it, a batch maker, and (where written) the same step by hand against the array module, the
yardstick of its kernel launches."""
import numpy as np

import fluidist as fluid


def _program():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    return main, startup


def mlp():
    main, startup = _program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 64], "float32")
        y = fluid.data("y", [None, 1], "int64")
        h = fluid.layers.fc(x, 32, act="relu")
        h = fluid.layers.fc(h, 32, act="tanh")
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 10), y))
        fluid.optimizer.SGD(0.1).minimize(loss)

    def feed(rng, n):
        return {"x": rng.rand(n, 64).astype("float32"), "y": rng.randint(0, 10, (n, 1)).astype("int64")}
    return main, startup, loss, feed


def cnn():
    main, startup = _program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        img = fluid.data("img", [None, 1, 8, 8], "float32")
        y = fluid.data("y", [None, 1], "int64")
        c = fluid.layers.conv2d(img, 4, 3, padding=1, act="relu")
        c = fluid.layers.batch_norm(c)
        c = fluid.layers.pool2d(c, 2, pool_stride=2)
        loss = fluid.layers.mean(fluid.layers.cross_entropy(fluid.layers.softmax(fluid.layers.fc(c, 10)), y))
        fluid.optimizer.Adam(0.01).minimize(loss)

    def feed(rng, n):
        return {"img": rng.rand(n, 1, 8, 8).astype("float32"), "y": rng.randint(0, 10, (n, 1)).astype("int64")}
    return main, startup, loss, feed


def sparse_embedding():
    main, startup = _program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.data("ids", [None, 1], "int64")
        y = fluid.data("y", [None, 1], "float32")
        e = fluid.layers.embedding(ids, [100, 16], is_sparse=True)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(e, 1), y))
        fluid.optimizer.SGD(0.1).minimize(loss)

    def feed(rng, n):
        return {"ids": rng.randint(0, 100, (n, 1)).astype("int64"), "y": rng.rand(n, 1).astype("float32")}
    return main, startup, loss, feed


def dropout():
    main, startup = _program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 64], "float32")
        y = fluid.data("y", [None, 1], "int64")
        h = fluid.layers.dropout(fluid.layers.fc(x, 32, act="relu"), 0.5)
        loss = fluid.layers.mean(fluid.layers.softmax_with_cross_entropy(fluid.layers.fc(h, 10), y))
        fluid.optimizer.SGD(0.1).minimize(loss)

    def feed(rng, n):
        return {"x": rng.rand(n, 64).astype("float32"), "y": rng.randint(0, 10, (n, 1)).astype("int64")}
    return main, startup, loss, feed


def lstm():
    main, startup = _program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8], "float32", lod_level=1)
        y = fluid.data("y", [None, 1], "float32")
        h, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(x, 4 * 16), 4 * 16)
        last = fluid.layers.sequence_pool(h, "last")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(last, 1), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    lengths = [3, 5, 2, 4]

    def feed(rng, n):
        t = fluid.create_lod_tensor(rng.rand(sum(lengths), 8).astype("float32"), [lengths], fluid.CPUPlace())
        return {"x": t, "y": rng.rand(len(lengths), 1).astype("float32")}
    return main, startup, loss, feed


# ---------------------------------------------------------------- the same steps by hand
def _softmax_ce_backward(xp, z, lab):
    """Mean softmax cross entropy of logits ``z`` and its gradient, written out."""
    n = z.shape[0]
    z = z - z.max(axis=1, keepdims=True)
    e = xp.exp(z)
    s = e.sum(axis=1, keepdims=True)
    rows = xp.arange(n)
    loss = (xp.log(s[:, 0]) - z[rows, lab]).mean()
    dz = e / s
    dz[rows, lab] -= 1
    dz *= 1.0 / n
    return loss, dz


def mlp_by_hand(xp, params, feed, lr=0.1):
    """One SGD step of ``mlp()``; ``params``: its parameters in creation order (updated in place)."""
    w1, b1, w2, b2, w3, b3 = params
    x, lab = feed["x"], feed["y"].reshape(-1)
    h1 = xp.maximum(x @ w1 + b1, 0)
    h2 = xp.tanh(h1 @ w2 + b2)
    loss, dz = _softmax_ce_backward(xp, h2 @ w3 + b3, lab)
    dh2 = dz @ w3.T
    dh2 *= 1 - h2 * h2
    dh1 = dh2 @ w2.T
    dh1 *= h1 > 0
    grads = (x.T @ dh1, dh1.sum(axis=0), h1.T @ dh2, dh2.sum(axis=0), h2.T @ dz, dz.sum(axis=0))
    for p, g in zip(params, grads):
        p -= lr * g
    return loss


def sparse_embedding_by_hand(xp, params, feed, lr=0.1):
    table, w, b = params
    ids, y = feed["ids"].reshape(-1), feed["y"]
    e = xp.take(table, ids, axis=0)
    diff = e @ w + b - y
    loss = (diff * diff).mean()
    d = diff * (2.0 / diff.shape[0])
    de = d @ w.T
    w -= lr * (e.T @ d)
    b -= lr * d.sum(axis=0)
    xp.add.at(table, ids, de * -lr)
    return loss


def dropout_by_hand(xp, params, feed, lr=0.1, p=0.5, rng=None):
    w1, b1, w2, b2 = params
    x, lab = feed["x"], feed["y"].reshape(-1)
    h = xp.maximum(x @ w1 + b1, 0)
    mask = (rng.random_sample(h.shape) >= p).astype(np.uint8)
    hd = h * mask
    loss, dz = _softmax_ce_backward(xp, hd @ w2 + b2, lab)
    dh = dz @ w2.T
    dh *= mask
    dh *= h > 0
    for q, g in zip(params, (x.T @ dh, dh.sum(axis=0), hd.T @ dz, dz.sum(axis=0))):
        q -= lr * g
    return loss
