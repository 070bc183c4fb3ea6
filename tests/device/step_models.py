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


LSTM_LENGTHS = (3, 5, 2, 4)      # the sequences of an lstm() batch


def lstm():
    main, startup = _program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 8], "float32", lod_level=1)
        y = fluid.data("y", [None, 1], "float32")
        h, _ = fluid.layers.dynamic_lstm(fluid.layers.fc(x, 4 * 16), 4 * 16)
        last = fluid.layers.sequence_pool(h, "last")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(last, 1), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    lengths = list(LSTM_LENGTHS)

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


def _adam(xp, params, grads, state, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """Adam as Paddle 1.8 computes it, its step's bias corrections on the host; moments in ``state``."""
    t = state["adam_t"] = state.get("adam_t", 0) + 1
    lr_t = lr * (1 - b2 ** t) ** 0.5 / (1 - b1 ** t)
    eps_t = eps * (1 - b2 ** t) ** 0.5
    moments = state.setdefault("adam", [(xp.zeros_like(p), xp.zeros_like(p)) for p in params])
    for p, g, (m, v) in zip(params, grads, moments):
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * (g * g)
        p -= lr_t * m / (xp.sqrt(v) + eps_t)


def cnn_by_hand(xp, params, feed, state):
    """One Adam step of ``cnn()``: a 3x3 convolution as one matrix product over the image's patches
    (channels last inside), relu, batch norm with its running statistics, 2x2 max pooling, the fully
    connected layer and softmax cross entropy. ``state``: Adam's moments (kept between steps)."""
    w, b, gamma, beta, run_mean, run_var, fw, fb = params
    img, lab = feed["img"], feed["y"].reshape(-1)
    n, k = img.shape[0], w.shape[0]
    padded = xp.pad(img, ((0, 0), (0, 0), (1, 1), (1, 1)))
    s0, s1, s2, s3 = padded.strides
    cols = xp.lib.stride_tricks.as_strided(padded, (n, 8, 8, 1, 3, 3), (s0, s2, s3, s1, s2, s3)).reshape(n * 64, 9)
    h = xp.maximum(cols @ w.reshape(k, 9).T + b, 0)            # [n * 8 * 8, k]
    mu = h.mean(axis=0)
    centred = h - mu
    var = (centred * centred).mean(axis=0)
    inv_std = 1.0 / xp.sqrt(var + 1e-5)
    xhat = centred * inv_std
    y = xhat * gamma + beta
    run_mean *= 0.9
    run_mean += 0.1 * mu
    run_var *= 0.9
    run_var += 0.1 * var
    windows = y.reshape(n, 4, 2, 4, 2, k)
    pooled = windows.max(axis=(2, 4))                          # [n, 4, 4, k]
    flat = pooled.transpose(0, 3, 1, 2).reshape(n, 4 * 4 * k)   # the fc's input in NCHW order
    loss, dz = _softmax_ce_backward(xp, flat @ fw + fb, lab)
    dflat = dz @ fw.T
    dpooled = dflat.reshape(n, k, 4, 4).transpose(0, 2, 3, 1)
    dy = ((windows == pooled[:, :, None, :, None, :]) * dpooled[:, :, None, :, None, :]).reshape(n * 64, k)
    dxhat = dy * gamma
    dh = inv_std * (dxhat - dxhat.mean(axis=0) - xhat * (dxhat * xhat).mean(axis=0))
    dh *= h > 0
    grads = ((dh.T @ cols).reshape(w.shape), dh.sum(axis=0), (dy * xhat).sum(axis=0), dy.sum(axis=0),
             flat.T @ dz, dz.sum(axis=0))
    _adam(xp, [w, b, gamma, beta, fw, fb], grads, state)
    return loss


def _sigmoid(xp, x):
    return 1 / (1 + xp.exp(-x))


def _lstm_tables(xp, state):
    """Where each row of the batch sits in the time-major padded layout, and each sequence's last
    step: made on the host once and kept on the device (as fluidist's index tables are)."""
    if "lstm_tables" not in state:
        seg = np.repeat(np.arange(len(LSTM_LENGTHS)), LSTM_LENGTHS)
        pos = np.concatenate([np.arange(n) for n in LSTM_LENGTHS])
        state["lstm_tables"] = tuple(xp.asarray(t) for t in (pos, seg, np.array(LSTM_LENGTHS) - 1,
                                                              np.arange(len(LSTM_LENGTHS))))
    return state["lstm_tables"]


def lstm_by_hand(xp, params, feed, state, lr=0.1):
    """One SGD step of ``lstm()``: the sequences padded time-major (they all start at step 0, so the
    steps past a sequence's end touch neither its last output nor, backwards, its gradients), an
    LSTM with peepholes (Paddle's gate order: candidate, input, forget, output), the last step of
    each sequence, a fully connected layer and the squared error, and back through time."""
    fw, fb, w, bias, ow, ob = params
    pos, seg, last_t, cols = _lstm_tables(xp, state)
    x, target = feed["x"], feed["y"]
    steps, n, d = max(LSTM_LENGTHS), len(LSTM_LENGTHS), w.shape[0]
    wic, wfc, woc = bias[0, 4 * d:5 * d], bias[0, 5 * d:6 * d], bias[0, 6 * d:]
    xs = xp.zeros((steps, n, 4 * d), dtype=x.dtype)
    xs[pos, seg] = x @ fw + fb + bias[0, :4 * d]
    h, c = xp.zeros((n, d), dtype=x.dtype), xp.zeros((n, d), dtype=x.dtype)
    rec = []
    for t in range(steps):
        g = xs[t] + h @ w
        cand = xp.tanh(g[:, :d])
        i = _sigmoid(xp, g[:, d:2 * d] + c * wic)
        f = _sigmoid(xp, g[:, 2 * d:3 * d] + c * wfc)
        c_new = cand * i + c * f
        o = _sigmoid(xp, g[:, 3 * d:] + c_new * woc)
        c_act = xp.tanh(c_new)
        rec.append((h, c, cand, i, f, o, c_new, c_act))
        h, c = o * c_act, c_new
    hs = xp.stack([r[0] for r in rec[1:]] + [h])       # each step's output
    last = hs[last_t, cols]
    diff = last @ ow + ob - target
    loss = (diff * diff).mean()
    dout = diff * (2.0 / n)
    dlast = dout @ ow.T
    dhs = xp.zeros((steps, n, d), dtype=x.dtype)
    dhs[last_t, cols] = dlast
    dh_next, dc_next, dgs = 0, 0, [None] * steps
    for t in range(steps - 1, -1, -1):
        h_prev, c_prev, cand, i, f, o, c_new, c_act = rec[t]
        dh = dhs[t] + dh_next
        dog = dh * c_act * (o * (1 - o))
        dc = dc_next + dh * o * (1 - c_act * c_act) + dog * woc
        dcg = dc * i * (1 - cand * cand)
        dig = dc * cand * (i * (1 - i))
        dfg = dc * c_prev * (f * (1 - f))
        dc_next = dc * f + dig * wic + dfg * wfc
        dgs[t] = xp.concatenate([dcg, dig, dfg, dog], axis=1)
        dh_next = dgs[t] @ w.T
    dg = xp.stack(dgs).reshape(steps * n, 4 * d)
    c_prev_all = xp.stack([r[1] for r in rec]).reshape(steps * n, d)
    dbias = xp.concatenate([dg.sum(axis=0), (dg[:, d:2 * d] * c_prev_all).sum(axis=0),
                            (dg[:, 2 * d:3 * d] * c_prev_all).sum(axis=0),
                            (dg[:, 3 * d:] * xp.stack([r[6] for r in rec]).reshape(steps * n, d)).sum(axis=0)])
    dx = dg.reshape(steps, n, 4 * d)[pos, seg]
    grads = (x.T @ dx, dx.sum(axis=0), xp.stack([r[0] for r in rec]).reshape(steps * n, d).T @ dg,
             dbias.reshape(bias.shape), last.T @ dout, dout.sum(axis=0))
    for p, g in zip(params, grads):
        p -= lr * g
    return loss
