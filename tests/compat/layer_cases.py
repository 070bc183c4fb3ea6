"""Layer cases run by both Paddle 1.8.5 (``tools/paddle18_reference.py`` records what it computes) and
fluidist (``test_paddle18_layers.py`` compares): each case builds a small program with the fluid 1.x
API only, so the same builder runs unchanged on both.

A case: ``name``, ``inputs`` {name: array} (fed as data variables with exactly that shape), ``build(F, v)``
(``F`` is the fluid module, ``v`` the data variables) returning a Variable or a list of them, ``grad``:
the float inputs (and ``"@params"`` for the parameters the layers create) to differentiate
``sum(out0 * W)`` against (W fixed), ``check``: "values" or "shape" (random ops).

Parameters a case creates get fixed values (fed by name, in creation order), so both sides compute
from the same numbers. Keep this file Python 3.8 compatible: Paddle 1.8.5 runs on 3.8.
"""
import numpy as np

_rng = np.random.RandomState(20240518)


def f32(*shape, lo=-1.0, hi=1.0):
    return _rng.uniform(lo, hi, shape).astype("float32")


def i64(*shape, lo=0, hi=5):
    return _rng.randint(lo, hi, shape).astype("int64")


def i32(*shape, lo=0, hi=5):
    return _rng.randint(lo, hi, shape).astype("int32")


class Case(object):
    def __init__(self, name, inputs, build, grad=(), check="values", rtol=1e-5, atol=1e-6):
        self.name, self.inputs, self.build = name, inputs, build
        self.grad, self.check, self.rtol, self.atol = list(grad), check, rtol, atol


CASES = []


def _param_value(shape, i):
    r = np.random.RandomState(1000 + i)
    return r.uniform(-0.5, 0.5, shape).astype("float32")


def run_case(fluid, case, place=None):
    """Build and run ``case`` on the ``fluid`` module given; returns {key: array} in the npz layout."""
    layers = fluid.layers
    main, startup = fluid.Program(), fluid.Program()
    rec = {}
    exe = fluid.Executor(place or fluid.CPUPlace())
    scope = fluid.Scope()
    with fluid.program_guard(main, startup), fluid.unique_name.guard(), fluid.scope_guard(scope):
        v = {}
        for name, arr in case.inputs.items():
            v[name] = layers.data(name=name, shape=list(arr.shape), dtype=str(arr.dtype),
                                  append_batch_size=False)
            if name in case.grad:
                v[name].stop_gradient = False
        out = case.build(fluid, v)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        n_fwd = len(main.global_block().ops)
        rec["ops"] = np.array([op.type for op in main.global_block().ops[:n_fwd]])
        rec["shapes"] = np.array([str([int(d) for d in o.shape]) for o in outs])
        params = list(main.global_block().all_parameters())
        feed = {n: a for n, a in case.inputs.items()}
        for i, p in enumerate(params):
            feed[p.name] = _param_value([int(d) for d in p.shape], i)
            rec["param%d" % i] = feed[p.name]
        exe.run(startup)
        fetched = [np.array(t) for t in exe.run(main, feed=feed, fetch_list=outs, return_numpy=False)]
        for i, a in enumerate(fetched):
            rec["out%d" % i] = a
        wrt = [v[n] for n in case.grad if n != "@params"] + (params if "@params" in case.grad else [])
        if wrt:
            shape0 = fetched[0].shape
            w = layers.data(name="loss_w", shape=list(shape0), dtype="float32", append_batch_size=False)
            loss = layers.reduce_sum(layers.elementwise_mul(layers.cast(outs[0], "float32"), w))
            grads = fluid.gradients([loss], wrt)
            feed["loss_w"] = np.random.RandomState(7).uniform(0.5, 1.5, shape0).astype("float32")
            rec["loss_w"] = feed["loss_w"]
            live = [(k, g) for k, g in enumerate(grads) if g is not None]
            res = exe.run(main, feed=feed, fetch_list=[g for _, g in live], return_numpy=False)
            for (k, _), a in zip(live, res):
                rec["grad%d" % k] = np.array(a)
    return rec


def case(name, inputs, grad=(), **kw):
    def deco(fn):
        CASES.append(Case(name, inputs, fn, grad, **kw))
        return fn
    return deco


# A grid that crosses every threshold the activations below have, plus saturated ends.
EDGE = np.array([[-100.0, -50.0, -40.5, -20.5, -6.5, -3.0, -1.5, -0.7, -0.25],
                 [0.0, 0.3, 0.5, 1.25, 2.5, 3.5, 7.0, 21.0, 100.0]], dtype="float32")
SMOOTH = f32(3, 4, lo=-3.0, hi=3.0)
UNIT = f32(3, 4, lo=-0.9, hi=0.9)


def _act(name, fn, x=SMOOTH, grad=True, **kw):
    case(name, {"x": x}, grad=["x"] if grad else [], **kw)(fn)


# ------------------------------------------------------------------ numerics Paddle defines
_act("softmax_saturated", lambda F, v: F.layers.softmax(v["x"]), x=EDGE)
case("softmax_ce_hard_saturated", {"x": np.array([[0.0, -100.0, -50.0], [0.0, -1000.0, 50.0]], "float32"),
                                   "label": np.array([[1], [1]], "int64")}, grad=["x"])(
    lambda F, v: F.layers.cross_entropy(F.layers.softmax(v["x"]), v["label"]))
case("softmax_with_ce_saturated", {"x": np.array([[0.0, -100.0, -50.0], [-40.0, 40.0, 100.0]], "float32"),
                                   "label": np.array([[1], [1]], "int64")}, grad=["x"])(
    lambda F, v: F.layers.softmax_with_cross_entropy(v["x"], v["label"]))
case("softmax_with_ce_soft_saturated", {"x": np.array([[0.0, -100.0, -50.0]], "float32"),
                                        "label": np.array([[0.2, 0.3, 0.5]], "float32")}, grad=["x"])(
    lambda F, v: F.layers.softmax_with_cross_entropy(v["x"], v["label"], soft_label=True))
case("cross_entropy_soft_zero_prob", {"p": np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]], "float32"),
                                      "label": np.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]], "float32")})(
    lambda F, v: F.layers.cross_entropy(v["p"], v["label"], soft_label=True))
case("sigmoid_ce_saturated", {"x": EDGE, "label": (EDGE > 0).astype("float32")}, grad=["x"])(
    lambda F, v: F.layers.sigmoid_cross_entropy_with_logits(v["x"], v["label"]))
_act("softplus_edges", lambda F, v: F.layers.softplus(v["x"]), x=EDGE)
_act("sigmoid_edges", lambda F, v: F.layers.sigmoid(v["x"]), x=EDGE)

# ------------------------------------------------------------------ activations
_act("selu", lambda F, v: F.layers.selu(v["x"]))
_act("selu_attrs", lambda F, v: F.layers.selu(v["x"], scale=1.5, alpha=0.5))
_act("brelu", lambda F, v: F.layers.brelu(v["x"], t_min=-1.0, t_max=2.0))
_act("soft_relu", lambda F, v: F.layers.soft_relu(v["x"], threshold=2.0))
_act("soft_relu_edges", lambda F, v: F.layers.soft_relu(v["x"]), x=EDGE)
_act("stanh", lambda F, v: F.layers.stanh(v["x"]))
_act("hard_swish", lambda F, v: F.layers.hard_swish(v["x"]), x=EDGE)
_act("logsigmoid", lambda F, v: F.layers.logsigmoid(v["x"]), x=EDGE)
_act("sin", lambda F, v: F.layers.sin(v["x"]))
_act("cos", lambda F, v: F.layers.cos(v["x"]))
_act("asin", lambda F, v: F.layers.asin(v["x"]), x=UNIT)
_act("acos", lambda F, v: F.layers.acos(v["x"]), x=UNIT)
_act("atan", lambda F, v: F.layers.atan(v["x"]))
_act("tanh_shrink", lambda F, v: F.layers.tanh_shrink(v["x"]))
_act("softshrink", lambda F, v: F.layers.softshrink(v["x"], alpha=0.7))
_act("hard_shrink", lambda F, v: F.layers.hard_shrink(v["x"], threshold=0.7))
_act("thresholded_relu", lambda F, v: F.layers.thresholded_relu(v["x"], threshold=0.4))
_act("erf", lambda F, v: F.layers.erf(v["x"]))
_act("mish", lambda F, v: F.layers.mish(v["x"]), x=EDGE)
_act("gelu_tanh", lambda F, v: F.layers.gelu(v["x"], approximate=True))
_act("gelu", lambda F, v: F.layers.gelu(v["x"]))
_act("log1p", lambda F, v: F.layers.log1p(v["x"]), x=UNIT)
_act("floor", lambda F, v: F.layers.floor(v["x"]), x=EDGE)
_act("ceil", lambda F, v: F.layers.ceil(v["x"]), x=EDGE)
_act("round", lambda F, v: F.layers.round(v["x"]), x=np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -0.51]],
                                                               "float32"))
_act("sign", lambda F, v: F.layers.sign(v["x"]), x=EDGE)
case("prelu_all", {"x": SMOOTH}, grad=["x", "@params"])(lambda F, v: F.layers.prelu(v["x"], "all"))
case("prelu_channel", {"x": f32(2, 3, 2, 2)}, grad=["x", "@params"])(
    lambda F, v: F.layers.prelu(v["x"], "channel"))
case("prelu_element", {"x": f32(2, 3, 2)}, grad=["x", "@params"])(lambda F, v: F.layers.prelu(v["x"], "element"))
