"""Saturated inputs (logits of +-1e4) through the kernels that exponentiate: no RuntimeWarning (they run
with warnings as errors), and the numbers Paddle 1.8's formulas give, evaluated in float32 with overflow
allowed (so inf where its exp overflows inside a quotient, which then gives 0 or 1), clamps included."""
import warnings

import numpy as np
import pytest

import fluidist as fluid
from fluidist.backward import append_backward

L = fluid.layers
pytestmark = pytest.mark.timeout(120)

SATURATED = np.array([[-1e4, -1000.0, -100.0, -20.0, -1.5, 0.0, 0.5, 20.0, 100.0, 1000.0, 1e4]], dtype="float32")


def _run(build, feed):
    """Build ``build()`` on fresh programs, append its backward to the sum of its output, run both with
    every warning an error; returns (output, {fed name: gradient})."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = build()
        append_backward(L.reduce_sum(out))
    grads = [n + "@GRAD" for n in feed if main.global_block().has_var(n + "@GRAD")]
    exe = fluid.Executor(fluid.CPUPlace())
    scope = fluid.Scope()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exe.run(startup, scope=scope)
        res = exe.run(main, feed=feed, fetch_list=[out] + grads, scope=scope)
    return res[0], dict(zip((g[:-5] for g in grads), res[1:]))


def _x(n, name="x"):
    v = fluid.data(name, [None, n], "float32")
    v.stop_gradient = False
    return v


def _paddle(fn, *args):
    """``fn`` evaluated as Paddle's float32 kernels do, with overflow allowed."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return np.asarray(fn(*(np.asarray(a, np.float32) for a in args))).astype(np.float32)


def _sig(x):
    return 1 / (1 + np.exp(-x))   # Paddle's SigmoidFunctor


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-37)


ACTIVATIONS = {
    "sigmoid": (lambda x: L.sigmoid(x), _sig, lambda x: _sig(x) * (1 - _sig(x))),
    "swish": (lambda x: L.swish(x), lambda x: x * _sig(x), lambda x: _sig(x) * (1 + x * (1 - _sig(x)))),
    "elu": (lambda x: L.elu(x), lambda x: np.where(x > 0, x, np.exp(x) - 1), lambda x: np.where(x > 0, 1, np.exp(x))),
    "selu": (lambda x: L.selu(x),
             lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * (np.exp(x) - 1)),
             lambda x: np.where(x > 0, 1.0507009873554805, 1.0507009873554805 * 1.6732632423543772 * np.exp(x))),
    # Paddle's shifted softplus: max(x,0) + log(exp(-max(x,0)) + exp(x - max(x,0)))
    "softplus": (lambda x: L.softplus(x),
                 lambda x: np.maximum(x, 0) + np.log(np.exp(-np.maximum(x, 0)) + np.exp(x - np.maximum(x, 0))),
                 lambda x: np.exp(x - np.maximum(x, 0)) / (np.exp(-np.maximum(x, 0)) + np.exp(x - np.maximum(x, 0)))),
    # Paddle's shifted form too: -t - log(exp(-t) + exp(-x - t)), t = max(-x, 0)
    "logsigmoid": (lambda x: L.logsigmoid(x),
                   lambda x: -np.maximum(-x, 0) - np.log(np.exp(-np.maximum(-x, 0)) + np.exp(-x - np.maximum(-x, 0))),
                   None),
    # mish: softplus taken as x above 20, exp(x) below -20
    "mish": (lambda x: L.mish(x),
             lambda x: x * np.tanh(np.where(x > 20, x, np.where(x < -20, np.exp(x), np.log1p(np.exp(x))))), None),
    # soft_relu clips at the threshold 40 before exp
    "soft_relu": (lambda x: L.soft_relu(x), lambda x: np.log(1 + np.exp(np.clip(x, -40, 40))), None),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_saturated_activations(name):
    build, fwd, grad = ACTIVATIONS[name]
    out, grads = _run(lambda: build(_x(SATURATED.shape[1])), {"x": SATURATED})
    assert np.isfinite(out).all()
    _close(out, _paddle(fwd, SATURATED))
    assert np.isfinite(grads["x"]).all()
    if grad is not None:
        _close(grads["x"], _paddle(grad, SATURATED))


def test_saturated_sigmoid_cross_entropy_with_logits():
    label = (np.arange(SATURATED.size) % 2).astype("float32").reshape(SATURATED.shape)
    out, grads = _run(lambda: L.sigmoid_cross_entropy_with_logits(_x(SATURATED.shape[1]),
                                                                  fluid.data("y", [None, SATURATED.shape[1]])),
                      {"x": SATURATED, "y": label})
    _close(out, _paddle(lambda x, y: np.maximum(x, 0) - x * y + np.log(1 + np.exp(-np.abs(x))), SATURATED, label))
    _close(grads["x"], _paddle(lambda x, y: _sig(x) - y, SATURATED, label))


def test_saturated_softmax_with_cross_entropy_keeps_paddles_clamp():
    label = np.array([[0]], "int64")
    out, grads = _run(lambda: L.softmax_with_cross_entropy(_x(SATURATED.shape[1]), fluid.data("y", [None, 1], "int64")),
                      {"x": SATURATED, "y": label})
    assert out.tolist() == [[64.0]]   # the hopeless class costs 64: the shifted logits are clipped at -64
    assert np.isfinite(grads["x"]).all() and grads["x"][0, 0] == pytest.approx(-1.0)


def test_saturated_ranking_and_click_losses():
    left, right = SATURATED.T.copy(), -SATURATED.T.copy()
    ones = np.ones_like(left)
    out, grads = _run(lambda: L.rank_loss(fluid.data("l", [None, 1]), _x(1, "a"), _x(1, "b")),
                      {"l": ones, "a": left, "b": right})
    o = left - right
    _close(out, _paddle(lambda o: np.maximum(o, 0) + np.log1p(np.exp(-np.abs(o))) - o, o))
    _close(grads["a"], _paddle(lambda o: _sig(o) - 1, o))
    out, grads = _run(lambda: L.teacher_student_sigmoid_loss(_x(1), fluid.data("y", [None, 1])),
                      {"x": left, "y": ones * 0.5})
    assert np.isfinite(out).all() and np.isfinite(grads["x"]).all()


def test_saturated_recurrent_units():
    x = SATURATED[:, :8].copy()
    out, grads = _run(lambda: L.lstm_unit(_x(4), _x(4, "h"), _x(4, "c"))[0],
                      {"x": x[:, :4], "h": x[:, 4:], "c": x[:, :4]})
    assert np.isfinite(out).all() and all(np.isfinite(g).all() for g in grads.values())
    out, grads = _run(lambda: L.gru_unit(_x(6), _x(2, "h"), 6)[0], {"x": SATURATED[:, :6], "h": SATURATED[:, 9:]})
    assert np.isfinite(out).all() and all(np.isfinite(g).all() for g in grads.values())


def test_saturated_nce_is_finite_where_paddle_overflowed():
    x = np.full((1, 4), 100.0, "float32")
    param = fluid.ParamAttr(initializer=fluid.initializer.Constant(-10.0))
    out, grads = _run(lambda: L.nce(_x(4), fluid.data("y", [None, 1], "int64"), 5, param_attr=param, seed=1),
                      {"x": x, "y": np.array([[2]], "int64")})
    # logit -4000 for the true class: -log(sigmoid(-4000)) is 4000 (+ log b), and the layer divides the
    # cost by num_neg_samples + 1 = 11; Paddle's -log(0) was inf
    assert np.isfinite(out).all() and 3990 < out[0, 0] * 11 < 4010
    assert np.isfinite(grads["x"]).all()
