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
    def __init__(self, name, inputs, build, grad=(), check="values", rtol=1e-5, atol=1e-6, shapes=True, lods=None):
        self.name, self.inputs, self.build = name, inputs, build
        self.lods = lods or {}   # {input name: recursive sequence lengths}: fed as a LoDTensor
        self.grad, self.check, self.rtol, self.atol = list(grad), check, rtol, atol
        self.shapes = shapes   # False where Paddle's declared output shapes are artifacts of its infer


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
                                  append_batch_size=False, lod_level=len(case.lods.get(name, [])))
            if name in case.grad:
                v[name].stop_gradient = False
        out = case.build(fluid, v)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        n_fwd = len(main.global_block().ops)
        if hasattr(main, "lint"):   # fluidist: every op's slots and attrs are the registered ones
            main.lint()
        rec["ops"] = np.array([op.type for op in main.global_block().ops[:n_fwd]])
        rec["shapes"] = np.array([str([int(d) for d in o.shape]) for o in outs])
        params = list(main.global_block().all_parameters())
        feed = {n: a if n not in case.lods else fluid.create_lod_tensor(a, case.lods[n], fluid.CPUPlace())
                for n, a in case.inputs.items()}
        for i, p in enumerate(params):
            feed[p.name] = _param_value([int(d) for d in p.shape], i)
            rec["param%d" % i] = feed[p.name]
        exe.run(startup)
        tensors = exe.run(main, feed=feed, fetch_list=outs, return_numpy=False)
        fetched = [np.array(t) for t in tensors]
        for i, (t, a) in enumerate(zip(tensors, fetched)):
            rec["out%d" % i] = a
            lod = t.lod() if hasattr(t, "lod") else []
            if lod:
                rec["lod%d" % i] = np.array(lod[-1], dtype="int64")
        wrt = [v[n] for n in case.grad if n != "@params"] + (params if "@params" in case.grad else [])
        if wrt:
            shape0 = fetched[0].shape
            w = layers.data(name="loss_w", shape=list(shape0), dtype="float32", append_batch_size=False)
            loss = layers.reduce_sum(layers.elementwise_mul(layers.cast(outs[0], "float32"), w))
            grads = fluid.gradients([loss], wrt)
            if hasattr(main, "lint"):
                main.lint()
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

# ------------------------------------------------------------------ elementwise math
_MOD_X = np.array([[-7.0, -3.5, 5.0, 7.5, 0.0, 3.0]], "float32")
_MOD_Y = np.array([[3.0, 2.0, -3.0, -2.0, 2.0, 3.0]], "float32")
case("elementwise_mod_float", {"x": _MOD_X, "y": _MOD_Y})(lambda F, v: F.layers.elementwise_mod(v["x"], v["y"]))
case("elementwise_mod_int", {"x": _MOD_X.astype("int64"), "y": _MOD_Y.astype("int64")})(
    lambda F, v: F.layers.elementwise_mod(v["x"], v["y"]))
case("elementwise_floordiv_int", {"x": _MOD_X.astype("int64"), "y": _MOD_Y.astype("int64")})(
    lambda F, v: F.layers.elementwise_floordiv(v["x"], v["y"]))
case("reduce_all_any", {"x": np.array([[1, 0, 1], [1, 1, 1]], "int64")})(
    lambda F, v: [F.layers.reduce_all(F.layers.cast(v["x"], "bool")),
                  F.layers.reduce_any(F.layers.cast(v["x"], "bool"), dim=1),
                  F.layers.reduce_all(F.layers.cast(v["x"], "bool"), dim=[0], keep_dim=True)])
case("has_inf_nan_isfinite", {"x": np.array([[1.0, np.inf, 0.0]], "float32")})(
    lambda F, v: [F.layers.has_inf(v["x"]), F.layers.has_nan(v["x"]), F.layers.isfinite(v["x"])])
case("cumsum", {"x": SMOOTH}, grad=["x"])(lambda F, v: F.layers.cumsum(v["x"], axis=1))
case("cumsum_default_axis", {"x": SMOOTH}, grad=["x"])(lambda F, v: F.layers.cumsum(v["x"]))
case("cumsum_exclusive_reverse", {"x": SMOOTH}, grad=["x"])(
    lambda F, v: F.layers.cumsum(v["x"], axis=0, exclusive=True, reverse=True))
case("clip_by_norm", {"x": SMOOTH})(lambda F, v: F.layers.clip_by_norm(v["x"], max_norm=1.0))
case("log_softmax", {"x": SMOOTH}, grad=["x"])(lambda F, v: F.layers.log_softmax(v["x"], axis=1))
case("logsumexp", {"x": SMOOTH}, grad=["x"])(lambda F, v: F.layers.logsumexp(v["x"], dim=1))
case("clamp", {"x": SMOOTH}, grad=["x"])(lambda F, v: F.layers.clamp(v["x"], min=-0.5, max=0.7))
case("clamp_max_only", {"x": SMOOTH})(lambda F, v: F.layers.clamp(v["x"], max=0.7))
case("sum_layer", {"x": SMOOTH, "y": UNIT}, grad=["x", "y"])(lambda F, v: F.layers.sum([v["x"], v["y"]]))
case("shape_rank_size", {"x": f32(2, 3, 4)})(
    lambda F, v: [F.layers.shape(v["x"]), F.layers.rank(v["x"]), F.layers.size(v["x"])])
case("bmm", {"x": f32(2, 3, 4), "y": f32(2, 4, 5)}, grad=["x", "y"])(lambda F, v: F.layers.bmm(v["x"], v["y"]))
case("addmm", {"i": f32(3, 5), "x": f32(3, 4), "y": f32(4, 5)}, grad=["i", "x", "y"])(
    lambda F, v: F.layers.addmm(v["i"], v["x"], v["y"], alpha=0.5, beta=2.0))
case("addcmul", {"i": f32(3, 4), "x": f32(3, 4), "y": f32(3, 4)}, grad=["i", "x", "y"])(
    lambda F, v: F.layers.addcmul(v["i"], v["x"], v["y"], value=0.5))
case("dot", {"x": f32(3, 4), "y": f32(3, 4)}, grad=["x", "y"])(lambda F, v: F.layers.dot(v["x"], v["y"]))
case("cross", {"x": f32(2, 3), "y": f32(2, 3)}, grad=["x", "y"])(lambda F, v: F.layers.cross(v["x"], v["y"]))
case("cross_dim", {"x": f32(3, 4), "y": f32(3, 4)}, grad=["x", "y"])(
    lambda F, v: F.layers.cross(v["x"], v["y"], dim=0))
case("dist_p2", {"x": f32(3, 4), "y": f32(3, 4)}, grad=["x", "y"])(lambda F, v: F.layers.dist(v["x"], v["y"], p=2))
case("dist_p1_broadcast", {"x": f32(3, 4), "y": f32(1, 4)}, grad=["x", "y"])(
    lambda F, v: F.layers.dist(v["x"], v["y"], p=1))
case("dist_inf", {"x": f32(3, 4), "y": f32(3, 4)})(lambda F, v: F.layers.dist(v["x"], v["y"], p=float("inf")))
case("allclose", {"x": np.array([[1.0, 2.0]], "float32"), "y": np.array([[1.0, 2.00001]], "float32")})(
    lambda F, v: [F.layers.allclose(v["x"], v["y"]), F.layers.allclose(v["x"], v["y"], rtol=1e-9, atol=0.0)])
case("elementwise_equal", {"x": np.array([[1.0, 2.0]], "float32"), "y": np.array([[1.0, 3.0]], "float32")})(
    lambda F, v: F.layers.elementwise_equal(v["x"], v["y"]))
case("kron", {"x": f32(2, 3), "y": f32(3, 2)}, grad=["x", "y"])(lambda F, v: F.layers.kron(v["x"], v["y"]))
case("trace", {"x": f32(3, 4)}, grad=["x"])(lambda F, v: F.layers.trace(v["x"], offset=1))
case("tril_triu", {"x": f32(3, 4)}, grad=["x"])(
    lambda F, v: F.layers.elementwise_add(F.layers.tril(v["x"]), F.layers.triu(v["x"], 2)))

# ------------------------------------------------------------------ creation
case("range_linspace", {"x": f32(1)})(
    lambda F, v: [F.layers.range(0, 10, 3, "int32"), F.layers.linspace(0.0, 1.0, 5, "float32"),
                  F.layers.arange(1, 4, 0.5)])
case("full_like_ones_like", {"x": f32(2, 3)})(
    lambda F, v: [F.layers.full_like(v["x"], 2.5), F.layers.ones_like(v["x"]), F.layers.full([2, 2], 3.0),
                  F.layers.full_like(v["x"], 4, dtype="int64")])
case("diag_eye", {"x": f32(3)})(
    lambda F, v: [F.layers.diag(v["x"]), F.layers.eye(2, 3), F.layers.eye(2, batch_shape=[3])])
case("diag_embed", {"x": f32(2, 3)})(lambda F, v: F.layers.diag_embed(v["x"], offset=1))
case("meshgrid", {"x": f32(3), "y": f32(2)})(
    lambda F, v: F.layers.meshgrid([v["x"], v["y"]]))

# ------------------------------------------------------------------ indexing
_IDX = np.array([2, 0, 2], "int64")
case("gather", {"x": f32(4, 3), "i": _IDX}, grad=["x"])(lambda F, v: F.layers.gather(v["x"], v["i"]))
case("gather_no_overwrite", {"x": f32(4, 3), "i": _IDX}, grad=["x"])(
    lambda F, v: F.layers.gather(v["x"], v["i"], overwrite=False))
case("gather_nd", {"x": f32(3, 4, 2), "i": np.array([[0, 1], [2, 3], [0, 1]], "int64")}, grad=["x"])(
    lambda F, v: F.layers.gather_nd(v["x"], v["i"]))
case("scatter", {"x": f32(4, 3), "i": _IDX, "u": f32(3, 3)}, grad=["x", "u"])(
    lambda F, v: F.layers.scatter(v["x"], v["i"], v["u"]))
case("scatter_add_mode", {"x": f32(4, 3), "i": _IDX, "u": f32(3, 3)}, grad=["x", "u"])(
    lambda F, v: F.layers.scatter(v["x"], v["i"], v["u"], overwrite=False))
case("scatter_nd_add", {"x": f32(3, 4), "i": np.array([[1], [2], [1]], "int64"), "u": f32(3, 4)},
     grad=["x", "u"])(lambda F, v: F.layers.scatter_nd_add(v["x"], v["i"], v["u"]))
case("scatter_nd", {"i": np.array([[1, 1], [0, 2], [1, 1]], "int64"), "u": f32(3)}, grad=["u"])(
    lambda F, v: F.layers.scatter_nd(v["i"], v["u"], [2, 3]))
case("index_select", {"x": f32(3, 4), "i": np.array([3, 0, 3], "int64")}, grad=["x"])(
    lambda F, v: F.layers.index_select(v["x"], v["i"], dim=1))
case("index_sample", {"x": f32(3, 4), "i": np.array([[3, 0], [1, 1], [2, 0]], "int64")}, grad=["x"])(
    lambda F, v: F.layers.index_sample(v["x"], v["i"]))
case("one_hot", {"i": np.array([[1], [0], [3]], "int64")})(lambda F, v: F.layers.one_hot(v["i"], 4))
case("one_hot_out_of_range", {"i": np.array([[1], [5], [3]], "int64")})(
    lambda F, v: F.layers.one_hot(v["i"], 4, allow_out_of_range=True))
case("fluid_one_hot", {"i": np.array([[1, 2], [0, 3]], "int64")})(lambda F, v: F.one_hot(v["i"], 4))
case("where_nonzero", {"x": np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], "float32")})(
    lambda F, v: [F.layers.where(F.layers.cast(v["x"], "bool")), F.layers.nonzero(v["x"])])
case("multiplex", {"a": f32(3, 2), "b": f32(3, 2), "i": np.array([[1], [0], [1]], "int32")}, grad=["a", "b"])(
    lambda F, v: F.layers.multiplex([v["a"], v["b"]], v["i"]))
case("unique", {"x": np.array([3, 1, 3, 7, 1, 2], "int64")})(
    lambda F, v: list(F.layers.unique(v["x"])) + list(F.layers.unique_with_counts(v["x"], dtype="int64")))
case("shard_index", {"x": np.array([[1], [6], [12], [19]], "int64")})(
    lambda F, v: [F.layers.shard_index(v["x"], 20, 2, 0), F.layers.shard_index(v["x"], 20, 3, 1, ignore_value=-7)])
case("argsort", {"x": f32(3, 4)}, grad=["x"])(lambda F, v: list(F.layers.argsort(v["x"], axis=1)))
case("argsort_desc", {"x": f32(3, 4)}, grad=["x"])(
    lambda F, v: list(F.layers.argsort(v["x"], axis=0, descending=True)))

# ------------------------------------------------------------------ shape and layout
case("squeeze_unsqueeze", {"x": f32(3, 1, 4, 1)}, grad=["x"])(
    lambda F, v: F.layers.unsqueeze(F.layers.squeeze(v["x"], [1, -1]), [0, 2]))
case("flatten", {"x": f32(2, 3, 4)}, grad=["x"])(lambda F, v: F.layers.flatten(v["x"], axis=2))
case("stack_unstack", {"x": f32(3, 4), "y": f32(3, 4)})(
    lambda F, v: F.layers.unstack(F.layers.stack([v["x"], v["y"]], axis=1), axis=2))
case("stack", {"x": f32(3, 4), "y": f32(3, 4)}, grad=["x", "y"])(
    lambda F, v: F.layers.stack([v["x"], v["y"]], axis=-1))
case("expand", {"x": f32(2, 3)}, grad=["x"])(lambda F, v: F.layers.expand(v["x"], [2, 3]))
case("expand_as", {"x": f32(2, 3), "t": f32(4, 6)}, grad=["x"], shapes=False)(
    lambda F, v: F.layers.expand_as(v["x"], v["t"]))
case("slice", {"x": f32(3, 4, 5)}, grad=["x"])(
    lambda F, v: F.layers.slice(v["x"], axes=[0, 2], starts=[1, -3], ends=[100, -1]))
case("strided_slice", {"x": f32(3, 4, 5)}, grad=["x"])(
    lambda F, v: F.layers.strided_slice(v["x"], axes=[1, 2], starts=[0, 4], ends=[4, 0], strides=[2, -1]))
case("reverse_flip", {"x": f32(3, 4)}, grad=["x"])(
    lambda F, v: F.layers.flip(F.layers.reverse(v["x"], axis=[0]), [1]))
case("roll", {"x": f32(3, 4)}, grad=["x"])(lambda F, v: F.layers.roll(v["x"], [1, -1], dims=[0, 1]))
case("roll_flat", {"x": f32(3, 4)}, grad=["x"])(lambda F, v: F.layers.roll(v["x"], 2))
case("pad", {"x": f32(2, 3)}, grad=["x"])(lambda F, v: F.layers.pad(v["x"], [0, 1, 2, 1], pad_value=0.5))
case("pad2d_constant", {"x": f32(1, 2, 3, 3)}, grad=["x"])(
    lambda F, v: F.layers.pad2d(v["x"], [1, 0, 2, 1], pad_value=-1.0))
case("pad2d_reflect", {"x": f32(1, 2, 3, 4)}, grad=["x"])(
    lambda F, v: F.layers.pad2d(v["x"], [1, 2, 2, 1], mode="reflect"))
case("pad2d_edge_nhwc", {"x": f32(1, 3, 3, 2)}, grad=["x"])(
    lambda F, v: F.layers.pad2d(v["x"], [2, 1, 0, 2], mode="edge", data_format="NHWC"))
case("pad_constant_like", {"x": f32(4, 5), "y": f32(2, 3)}, grad=["y"])(
    lambda F, v: F.layers.pad_constant_like(v["x"], v["y"], pad_value=1.5))
case("crop", {"x": f32(4, 5)}, grad=["x"])(lambda F, v: F.layers.crop(v["x"], shape=[2, 3], offsets=[1, 2]))
case("crop_tensor", {"x": f32(4, 5)}, grad=["x"])(
    lambda F, v: F.layers.crop_tensor(v["x"], shape=[2, -1], offsets=[1, 2]))
case("space_to_depth", {"x": f32(2, 4, 4, 6)}, grad=["x"])(lambda F, v: F.layers.space_to_depth(v["x"], 2))
case("shuffle_channel", {"x": f32(2, 6, 2, 2)}, grad=["x"])(lambda F, v: F.layers.shuffle_channel(v["x"], 3))
case("temporal_shift", {"x": f32(6, 8, 2, 2)}, grad=["x"])(
    lambda F, v: F.layers.temporal_shift(v["x"], seg_num=3, shift_ratio=0.25))
case("unfold", {"x": f32(2, 2, 5, 6)}, grad=["x"])(
    lambda F, v: F.layers.unfold(v["x"], [2, 3], strides=[1, 2], paddings=[1, 0, 0, 1], dilations=[2, 1]))
case("t", {"x": f32(3, 4)}, grad=["x"])(lambda F, v: F.layers.t(v["x"]))

# ------------------------------------------------------------------ random (shapes and dtypes only)
case("random_layers", {"x": f32(3, 2)}, check="shape")(
    lambda F, v: [F.layers.uniform_random([2, 3]), F.layers.gaussian_random([2, 3]),
                  F.layers.uniform_random_batch_size_like(v["x"], [-1, 4]),
                  F.layers.gaussian_random_batch_size_like(v["x"], [-1, 5]),
                  F.layers.randint(0, 5, [2, 3]), F.layers.randn([4]), F.layers.randperm(6)])

# ------------------------------------------------------------------ model helpers
case("mean_iou", {"p": np.array([0, 1, 2, 2, 1], "int32"), "l": np.array([0, 2, 2, 1, 1], "int32")})(
    lambda F, v: list(F.layers.mean_iou(v["p"], v["l"], 3)))
case("fsp_matrix", {"x": f32(2, 3, 2, 2), "y": f32(2, 4, 2, 2)}, grad=["x", "y"])(
    lambda F, v: F.layers.fsp_matrix(v["x"], v["y"]))
case("continuous_value_model", {"x": f32(3, 5, lo=0.0, hi=4.0), "c": f32(3, 2, lo=0.0, hi=3.0)})(
    lambda F, v: [F.layers.continuous_value_model(v["x"], v["c"]),
                  F.layers.continuous_value_model(v["x"], v["c"], use_cvm=False)])
case("fluid_embedding", {"i": np.array([[1, 2], [0, 3]], "int64")}, grad=["@params"])(
    lambda F, v: F.embedding(v["i"], [5, 3]))
case("fluid_embedding_padding", {"i": np.array([1, 4, 0], "int64")}, grad=["@params"])(
    lambda F, v: F.embedding(v["i"], [5, 3], padding_idx=-1, is_sparse=False))

# ------------------------------------------------------------------ nets
case("nets_simple_img_conv_pool", {"img": f32(2, 1, 8, 8)}, grad=["img", "@params"])(
    lambda F, v: F.nets.simple_img_conv_pool(v["img"], num_filters=3, filter_size=3, pool_size=2, pool_stride=2,
                                             act="relu"))
case("nets_img_conv_group", {"img": f32(2, 2, 6, 6)}, grad=["img", "@params"], atol=2e-5)(  # a bias before
    # batch_norm has a zero gradient: both sides give rounding noise
    lambda F, v: F.nets.img_conv_group(v["img"], [3, 2], pool_size=2, conv_act="relu", conv_with_batchnorm=True,
                                       pool_stride=2))
case("nets_glu", {"x": f32(3, 4)}, grad=["x"])(lambda F, v: F.nets.glu(v["x"], dim=1))
case("nets_attention", {"q": f32(2, 3, 4), "k": f32(2, 5, 4), "v": f32(2, 5, 6)}, grad=["q", "k", "v"])(
    lambda F, v: F.nets.scaled_dot_product_attention(v["q"], v["k"], v["v"]))
case("nets_attention_heads", {"q": f32(2, 3, 4), "k": f32(2, 5, 4), "v": f32(2, 5, 4)},
     grad=["q", "k", "v", "@params"])(
    lambda F, v: F.nets.scaled_dot_product_attention(v["q"], v["k"], v["v"], num_heads=2))
case("affine_grid", {"t": f32(2, 2, 3)}, grad=["t"], shapes=False)(  # Paddle declares [N, -1, -1, 2]
   lambda F, v: F.layers.affine_grid(v["t"], [2, 1, 3, 4]))
case("grid_sampler", {"x": f32(2, 2, 4, 5), "g": f32(2, 4, 5, 2, lo=-1.2, hi=1.2)}, grad=["x", "g"])(
    lambda F, v: F.layers.grid_sampler(v["x"], v["g"]))
case("inplace_abn_leaky", {"x": f32(3, 2, 2, 2)}, grad=["x", "@params"], atol=1e-5)(
    lambda F, v: F.layers.inplace_abn(v["x"], act="leaky_relu", act_alpha=0.1))
case("inplace_abn_elu", {"x": f32(4, 3)}, grad=["x", "@params"], atol=1e-5)(
    lambda F, v: F.layers.inplace_abn(v["x"], act="elu"))
_CTC = np.array([[0.1, 0.8, 0.1], [0.1, 0.8, 0.1], [0.9, 0.05, 0.05], [0.2, 0.2, 0.6], [0.1, 0.8, 0.1],
                 [0.1, 0.1, 0.8], [0.1, 0.1, 0.8]], "float32")
case("ctc_greedy_decoder_lod", {"x": _CTC}, lods={"x": [[4, 3]]})(
    lambda F, v: F.layers.ctc_greedy_decoder(v["x"], blank=0))
case("ctc_greedy_decoder_padded", {"x": _CTC[:6].reshape(2, 3, 3), "n": np.array([[3], [2]], "int64")})(
    lambda F, v: list(F.layers.ctc_greedy_decoder(v["x"], blank=2, input_length=v["n"], padding_value=-1)))


def _raw_hash(F, v, num_hash, mod_by):
    """Paddle 1.8.5's layers.hash rejects every int hash_size (its type check is broken): build the op."""
    block = F.default_main_program().current_block()
    out = block.create_var(name="hash_out_%d" % num_hash, dtype=v["x"].dtype)
    block.append_op(type="hash", inputs={"X": [v["x"]]}, outputs={"Out": [out]},
                    attrs={"num_hash": num_hash, "mod_by": mod_by})
    return out


case("hash_int64", {"x": i64(4, 3, lo=0, hi=10 ** 9)}, shapes=False)(lambda F, v: _raw_hash(F, v, 3, 100003))
case("hash_int32", {"x": i32(5, 1, lo=0, hi=10 ** 6)}, shapes=False)(lambda F, v: _raw_hash(F, v, 2, 1000))
case("hash_int64_long_rows", {"x": i64(2, 9, lo=0, hi=10 ** 9)}, shapes=False)(lambda F, v: _raw_hash(F, v, 1, 977))
case("similarity_focus", {"x": f32(2, 3, 4, 3)})(
    lambda F, v: [F.layers.similarity_focus(v["x"], axis=1, indexes=[0, 2]),
                  F.layers.similarity_focus(v["x"], axis=3, indexes=[1])])
case("filter_by_instag_lod", {"x": f32(5, 2), "t": np.array([[0], [1], [1], [3], [0], [3]], "int64"),
                              "f": np.array([1], "int64")}, lods={"x": [[2, 1, 2]], "t": [[2, 2, 2]]},
     grad=["x"], shapes=False)(lambda F, v: F.layers.filter_by_instag(v["x"], v["t"], v["f"], True))
case("filter_by_instag_rows", {"x": f32(4, 2), "t": np.array([[0], [1], [1], [3], [0], [3], [2]], "int64"),
                               "f": np.array([3, 2], "int64")}, lods={"t": [[2, 2, 2, 1]]}, grad=["x"],
     shapes=False)(lambda F, v: F.layers.filter_by_instag(v["x"], v["t"], v["f"], False))
case("filter_by_instag_empty", {"x": f32(3, 2), "t": np.array([[0], [1], [1]], "int64"),
                                "f": np.array([5], "int64")}, lods={"x": [[2, 1]], "t": [[2, 1]]}, shapes=False)(
    lambda F, v: F.layers.filter_by_instag(v["x"], v["t"], v["f"], True, out_val_if_empty=7))
