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
