"""Recurrent units (lstm, lstmp, gru, gru_unit, lstm_unit, cudnn_lstm): gradients through time against
finite differences (float64, LoD batches, reverse, initial states, peepholes, clipping). Their
values against Paddle 1.8's are in tests/paddle18; cudnn_lstm against PyTorch's LSTM."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import check_program_grad

L = fluid.layers
rng = np.random.RandomState(5)
LENS = [3, 1, 2]


def lod_t(value, lengths):
    return fluid.create_lod_tensor(value, [lengths], fluid.CPUPlace())


def _data(name, shape, lod_level=0):
    v = fluid.data(name, shape, "float64", lod_level=lod_level)
    v.stop_gradient = False
    return v


@pytest.mark.parametrize("peep,reverse,states", [(True, False, True), (False, True, False), (True, True, True)])
def test_dynamic_lstm_gradients(peep, reverse, states):
    d = 2

    def build():
        x = _data("x", [None, 4 * d], 1)
        h0 = _data("h0", [None, d]) if states else None
        c0 = _data("c0", [None, d]) if states else None
        h, c = L.dynamic_lstm(x, 4 * d, h_0=h0, c_0=c0, use_peepholes=peep, is_reverse=reverse, dtype="float64",
                              param_attr=fluid.ParamAttr(name="w"), bias_attr=fluid.ParamAttr(name="b"))
        return L.reduce_sum(L.elementwise_mul(h, h)) + L.reduce_sum(L.scale(c, 0.5))
    feed = {"x": lod_t(rng.uniform(-1, 1, (6, 4 * d)), LENS)}
    wrt = ["x", "w", "b"]
    if states:
        feed.update(h0=rng.uniform(-1, 1, (3, d)), c0=rng.uniform(-1, 1, (3, d)))
        wrt += ["h0", "c0"]
    check_program_grad(build, feed, wrt)


def test_dynamic_lstmp_gradients_with_clipping():
    d, p = 2, 3

    def build():
        x = _data("x", [None, 4 * d], 1)
        h0 = _data("h0", [None, p])
        c0 = _data("c0", [None, d])
        r, c = L.dynamic_lstmp(x, 4 * d, p, h_0=h0, c_0=c0, dtype="float64", cell_clip=0.4, proj_clip=0.45,
                               is_reverse=True, bias_attr=fluid.ParamAttr(name="b"))
        return L.reduce_sum(L.elementwise_mul(r, r)) + L.reduce_sum(L.elementwise_mul(c, c))
    feed = {"x": lod_t(rng.uniform(-1, 1, (6, 4 * d)), LENS), "h0": rng.uniform(-1, 1, (3, p)),
            "c0": rng.uniform(-1, 1, (3, d))}
    check_program_grad(build, feed, ["x", "h0", "c0", "lstmp_0.w_0", "lstmp_0.w_1", "b"])


@pytest.mark.parametrize("origin_mode,reverse", [(False, False), (True, True)])
def test_dynamic_gru_gradients(origin_mode, reverse):
    d = 3

    def build():
        x = _data("x", [None, 3 * d], 1)
        h0 = _data("h0", [None, d])
        h = L.dynamic_gru(x, d, h_0=h0, is_reverse=reverse, origin_mode=origin_mode,
                          param_attr=fluid.ParamAttr(name="w"), bias_attr=fluid.ParamAttr(name="b"))
        return L.reduce_sum(L.elementwise_mul(h, h))
    feed = {"x": lod_t(rng.uniform(-1, 1, (6, 3 * d)), LENS), "h0": rng.uniform(-1, 1, (3, d))}
    check_program_grad(build, feed, ["x", "h0", "w", "b"])


def test_gru_unit_and_lstm_unit_gradients():
    d = 2

    def build():
        x = _data("x", [4, 3 * d])
        h = _data("h", [4, d])
        xl = _data("xl", [4, 3])
        c = _data("c", [4, d])
        hg, rh, gate = L.gru_unit(x, h, 3 * d, param_attr=fluid.ParamAttr(name="wg"),
                                  bias_attr=fluid.ParamAttr(name="bg"))
        hl, cl = L.lstm_unit(xl, h, c, forget_bias=0.3, param_attr=fluid.ParamAttr(name="wl"),
                             bias_attr=fluid.ParamAttr(name="bl"))
        return (L.reduce_sum(L.elementwise_mul(hg, hg)) + L.reduce_sum(hl) +
                L.reduce_sum(L.elementwise_mul(cl, cl)))
    feed = {"x": rng.uniform(-1, 1, (4, 3 * d)), "h": rng.uniform(-1, 1, (4, d)), "xl": rng.uniform(-1, 1, (4, 3)),
            "c": rng.uniform(-1, 1, (4, d))}
    check_program_grad(build, feed, ["x", "h", "xl", "c", "wg", "bg", "wl", "bl"])


@pytest.mark.parametrize("layers_,bidirec", [(1, False), (2, True)])
def test_cudnn_lstm_gradients(layers_, bidirec):
    dirs = 2 if bidirec else 1

    def build():
        x = _data("x", [3, 2, 4])
        h0 = _data("h0", [layers_ * dirs, 2, 3])
        c0 = _data("c0", [layers_ * dirs, 2, 3])
        out, lh, lc = L.lstm(x, h0, c0, 3, 3, layers_, is_bidirec=bidirec)
        return L.reduce_sum(L.elementwise_mul(out, out)) + L.reduce_sum(lh) + L.reduce_sum(L.scale(lc, 2.0))
    feed = {"x": rng.uniform(-1, 1, (3, 2, 4)), "h0": rng.uniform(-1, 1, (layers_ * dirs, 2, 3)),
            "c0": rng.uniform(-1, 1, (layers_ * dirs, 2, 3))}
    check_program_grad(build, feed, ["x", "h0", "c0", "cudnn_lstm_0.w_0"], max_elems=40)


def test_cudnn_lstm_matches_pytorch():
    torch = pytest.importorskip("torch")
    layers_, hsz, isz = 2, 3, 4
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.data("x", [5, 2, isz], "float32")
        h0 = fluid.data("h0", [layers_ * 2, 2, hsz], "float32")
        c0 = fluid.data("c0", [layers_ * 2, 2, hsz], "float32")
        out, lh, lc = L.lstm(x, h0, c0, 5, hsz, layers_, is_bidirec=True)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = {"x": rng.uniform(-1, 1, (5, 2, isz)).astype("float32"),
            "h0": rng.uniform(-1, 1, (4, 2, hsz)).astype("float32"),
            "c0": rng.uniform(-1, 1, (4, 2, hsz)).astype("float32")}
    got = exe.run(main, feed=feed, fetch_list=[out, lh, lc], scope=scope)
    w = np.array(scope.find_var("cudnn_lstm_0.w_0").get_tensor())
    ref = torch.nn.LSTM(isz, hsz, layers_, bidirectional=True)
    with torch.no_grad():
        at = 0
        for p in ref._flat_weights:   # per layer and direction: w_ih, w_hh, b_ih, b_hh
            n = p.numel()
            p.copy_(torch.from_numpy(w[at:at + n].reshape(tuple(p.shape))))
            at += n
        want = ref(torch.from_numpy(feed["x"]), (torch.from_numpy(feed["h0"]), torch.from_numpy(feed["c0"])))
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want[1][0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want[1][1].numpy(), rtol=1e-5, atol=1e-6)


def _batch_major_rows(lengths, reverse):
    """(sequence, step) of each row of Paddle's batch layout: step by step, the sequences still
    running, longest first."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [(i, lengths[i] - 1 - t if reverse else t) for t in range(max(lengths)) for i in order if lengths[i] > t]


@pytest.mark.parametrize("reverse,origin_mode", [(False, False), (True, True)])
def test_gru_batch_outputs_in_paddle_batch_layout(reverse, origin_mode):
    d, lengths = 3, [2, 0, 4, 3]
    starts = np.cumsum([0] + lengths)
    x = rng.uniform(-1, 1, (sum(lengths), 3 * d))
    w, b, h0 = rng.uniform(-1, 1, (d, 3 * d)), rng.uniform(-1, 1, (1, 3 * d)), rng.uniform(-1, 1, (4, d))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    wg, wc = w.reshape(-1)[:2 * d * d].reshape(d, 2 * d), w.reshape(-1)[2 * d * d:].reshape(d, d)
    steps = {}   # (sequence, step) -> (gate, reset hidden, hidden)
    for i, n in enumerate(lengths):
        h = h0[i]
        for t in (range(n - 1, -1, -1) if reverse else range(n)):
            g = x[starts[i] + t] + b[0]
            ur = sig(g[:2 * d] + h @ wg)
            u, rh = ur[:d], ur[d:] * h
            c = np.tanh(g[2 * d:] + rh @ wc)
            h = u * h + (1 - u) * c if origin_mode else u * c + (1 - u) * h
            steps[i, t] = (np.concatenate([ur, c]), rh, h)
    rows = _batch_major_rows(lengths, reverse)
    prog = fluid.Program()
    blk = prog.global_block()
    ins = {s: blk.create_var(name=s.lower(), shape=v.shape, dtype="float64")
           for s, v in (("Weight", w), ("Bias", b), ("H0", h0))}
    ins["Input"] = blk.create_var(name="input", shape=x.shape, dtype="float64", lod_level=1)
    outs = {s: blk.create_var(name=s.lower(), dtype="float64")
            for s in ("Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden")}
    blk.append_op("gru", inputs=ins, outputs=outs, attrs={"is_reverse": reverse, "origin_mode": origin_mode})
    got = fluid.Executor(fluid.CPUPlace()).run(
        prog, feed={"input": lod_t(x, lengths), "weight": w, "bias": b, "h0": h0}, fetch_list=list(outs.values()))
    hidden = np.array([steps[i, t][2] for i, n in enumerate(lengths) for t in range(n)])
    np.testing.assert_allclose(got[0], hidden, rtol=1e-10)
    for k, out in enumerate(got[1:]):
        np.testing.assert_allclose(out, np.array([steps[key][k] for key in rows]), rtol=1e-10)


def test_lstm_batch_cell_preact_matches_paddle18():
    # RandomState(0) draws, lod [[2, 4, 3]], D = 3, peepholes: Paddle 1.8.5's BatchCellPreAct, batch-major
    r = np.random.RandomState(0)
    d, x, w, b = 3, r.rand(9, 12), r.rand(3, 12), r.rand(1, 21)
    prog = fluid.Program()
    blk = prog.global_block()
    ins = {"Input": blk.create_var(name="x", shape=[9, 12], dtype="float64", lod_level=1),
           "Weight": blk.create_var(name="w", shape=[d, 4 * d], dtype="float64"),
           "Bias": blk.create_var(name="b", shape=[1, 7 * d], dtype="float64")}
    outs = {s: blk.create_var(name=s, dtype="float64") for s in ("Hidden", "Cell", "BatchGate", "BatchCellPreAct")}
    blk.append_op("lstm", inputs=ins, outputs=outs)
    pre, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": lod_t(x, [2, 4, 3]), "w": w, "b": b},
                                                fetch_list=[outs["BatchCellPreAct"]])
    paddle18 = [[0.5583, 0.589, 0.1898], [0.5935, 0.5588, 0.4752], [0.6112, 0.5873, 0.4685],
                [0.8858, 0.8922, 0.7572], [0.885, 0.8945, 0.8541], [0.9021, 0.9034, 0.8387],
                [0.9714, 0.981, 0.9531], [0.9766, 0.9824, 0.9735], [0.9941, 0.9969, 0.9926]]
    np.testing.assert_allclose(pre, paddle18, atol=6e-5)


@pytest.mark.parametrize("reverse,states", [(False, True), (True, False)])
def test_lstm_grad_reads_the_forward_steps_from_its_batch_outputs(reverse, states):
    """As Paddle 1.8's, ``lstm_grad`` takes the forward op's BatchGate and BatchCellPreAct and reads
    the steps from them (with Hidden and Cell) instead of running them again: the same gradients, bit
    for bit, as a program whose ``lstm_grad`` lacks those inputs (which runs the steps again), on the
    host and on the stand-in device, where the gradient op launches far fewer kernels."""
    from fluidist.device.standin import StandinPlace, count_transfers
    d, lengths = 3, [3, 1, 4, 2]
    main, startup = fluid.Program(), fluid.Program()
    startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data("x", [None, 4 * d], "float32", lod_level=1)
        x.stop_gradient = False
        h0, c0 = (fluid.data(n, [None, d], "float32") for n in ("h0", "c0"))
        h0.stop_gradient = c0.stop_gradient = False
        h, c = L.dynamic_lstm(x, 4 * d, h_0=h0 if states else None, c_0=c0 if states else None,
                              is_reverse=reverse)
        loss = L.reduce_sum(L.elementwise_mul(h, h)) + L.reduce_sum(L.scale(c, 0.5))
        fluid.backward.append_backward(loss)
    lstm, = [op for op in main.global_block().ops if op.type == "lstm"]
    grad, = [op for op in main.global_block().ops if op.type == "lstm_grad"]
    for slot in ("BatchGate", "BatchCellPreAct"):
        assert grad.input(slot) == lstm.output(slot)
    rerun = main.clone()
    rerun_grad, = [op for op in rerun.global_block().ops if op.type == "lstm_grad"]
    rerun_grad.set_input("BatchGate", [])
    rerun_grad.set_input("BatchCellPreAct", [])
    feed = {"x": lod_t(rng.uniform(-1, 1, (10, 4 * d)).astype("float32"), lengths),
            "h0": rng.uniform(-1, 1, (4, d)).astype("float32"), "c0": rng.uniform(-1, 1, (4, d)).astype("float32")}
    names = ["x@GRAD", "lstm_0.w_0@GRAD", "lstm_0.b_0@GRAD"] + (["h0@GRAD", "c0@GRAD"] if states else [])
    for place in (fluid.CPUPlace(), StandinPlace()):
        got, launches = [], []
        for prog in (main, rerun):
            exe, scope = fluid.Executor(place), fluid.Scope()
            exe.run(startup, scope=scope)
            exe.run(prog, feed=feed, fetch_list=names, scope=scope)
            with count_transfers() as log:
                got.append(exe.run(prog, feed=feed, fetch_list=names, scope=scope))
            launches.append(log.launches)
        for read, ran in zip(*got):
            assert np.asarray(read).tobytes() == np.asarray(ran).tobytes()
        if isinstance(place, StandinPlace):
            assert launches[0] < launches[1] - 80, launches
