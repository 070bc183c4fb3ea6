"""Layer cases written as a Paddle 1.x user writes them, run unchanged by Paddle 1.8.5 and by fluidist.

Each case is a function ``case(fluid, rng) -> spec`` building layers in the current program guard:
``spec = {"feed": {name: array or (array, seq_lens)}, "outs": {label: Variable},
"wrt": {label: Variable}}`` (or ``"feeds": [feed, ...]`` to run several batches in one scope,
results labelled ``label#i``). ``run_case`` builds it, adds the loss ``sum(0.5 * out^2)`` over the
float outputs, appends the backward pass, runs startup and main once and returns every output and
every gradient asked for in ``wrt`` (as ``label@GRAD``).

``tools/paddle18_nn_refs.py`` runs the cases under paddlepaddle 1.8.5 (in a throwaway Python 3.8
venv) and writes the numbers to ``data/paddle18_nn_refs.json``; ``test_paddle18_nn_refs.py`` runs the
same cases on fluidist and compares. Parameters are given fixed values through
``NumpyArrayInitializer``, inputs come from ``numpy.random.RandomState`` (a frozen stream), so both
sides see the same numbers.
"""
import zlib

import numpy as np

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _param(fluid, arr):
    return fluid.ParamAttr(initializer=fluid.initializer.NumpyArrayInitializer(np.asarray(arr, np.float32)))


def _u(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _data(fluid, name, shape, dtype="float32", lod_level=0, grad=True):
    v = fluid.layers.data(name, shape, dtype=dtype, lod_level=lod_level, append_batch_size=False)
    v.stop_gradient = not grad
    return v


# ------------------------------------------------------------------ normalisations
@case
def layer_norm(fluid, rng):
    x = _data(fluid, "x", [2, 3, 4])
    a = fluid.layers.layer_norm(x, begin_norm_axis=1, param_attr=_param(fluid, _u(rng, 12, lo=0.5, hi=1.5)),
                                bias_attr=_param(fluid, _u(rng, 12)))
    b = fluid.layers.layer_norm(x, begin_norm_axis=2, scale=False, shift=False, epsilon=1e-3)
    return {"feed": {"x": _u(rng, 2, 3, 4, lo=-2, hi=2)}, "outs": {"a": a, "b": b}, "wrt": {"x": x}}


@case
def group_norm(fluid, rng):
    x = _data(fluid, "x", [2, 6, 3, 2])
    out = fluid.layers.group_norm(x, groups=3, param_attr=_param(fluid, _u(rng, 6, lo=0.5, hi=1.5)),
                                  bias_attr=_param(fluid, _u(rng, 6)), act="relu")
    w = fluid.default_main_program().global_block().all_parameters()
    return {"feed": {"x": _u(rng, 2, 6, 3, 2, lo=-2, hi=2)}, "outs": {"out": out},
            "wrt": dict([("x", x)] + [(p.name, p) for p in w])}


@case
def instance_norm(fluid, rng):
    x = _data(fluid, "x", [2, 3, 2, 3])
    out = fluid.layers.instance_norm(x, param_attr=_param(fluid, _u(rng, 3, lo=0.5, hi=1.5)),
                                     bias_attr=_param(fluid, _u(rng, 3)))
    w = fluid.default_main_program().global_block().all_parameters()
    return {"feed": {"x": _u(rng, 2, 3, 2, 3, lo=-2, hi=2)}, "outs": {"out": out},
            "wrt": dict([("x", x)] + [(p.name, p) for p in w])}


@case
def l2_normalize(fluid, rng):
    x = _data(fluid, "x", [3, 4, 2])
    a = fluid.layers.l2_normalize(x, axis=1)
    b = fluid.layers.l2_normalize(x, axis=-1, epsilon=1e-3)
    return {"feed": {"x": _u(rng, 3, 4, 2)}, "outs": {"a": a, "b": b}, "wrt": {"x": x}}


@case
def lrn(fluid, rng):
    x = _data(fluid, "x", [2, 7, 2, 2])
    a = fluid.layers.lrn(x)
    b = fluid.layers.lrn(x, n=3, k=2.0, alpha=0.1, beta=0.5)
    return {"feed": {"x": _u(rng, 2, 7, 2, 2, lo=-2, hi=2)}, "outs": {"a": a, "b": b}, "wrt": {"x": x}}


@case
def affine_channel(fluid, rng):
    x = _data(fluid, "x", [2, 3, 2, 2])
    scale = fluid.layers.create_parameter([3], "float32", default_initializer=fluid.initializer.NumpyArrayInitializer(
        _u(rng, 3)))
    bias = fluid.layers.create_parameter([3], "float32", default_initializer=fluid.initializer.NumpyArrayInitializer(
        _u(rng, 3)))
    out = fluid.layers.affine_channel(x, scale=scale, bias=bias)
    return {"feed": {"x": _u(rng, 2, 3, 2, 2)}, "outs": {"out": out},
            "wrt": {"x": x, "scale": scale, "bias": bias}}


@case
def data_norm(fluid, rng):
    x = _data(fluid, "x", [4, 3])
    out = fluid.layers.data_norm(x)
    params = fluid.default_main_program().global_block().all_parameters()
    return {"feed": {"x": _u(rng, 4, 3, lo=-3, hi=3)}, "outs": {"out": out},
            "wrt": dict([("x", x)] + [(p.name, p) for p in params])}


@case
def spectral_norm(fluid, rng):
    w = fluid.layers.create_parameter([3, 2, 2], "float32",
                                      default_initializer=fluid.initializer.NumpyArrayInitializer(_u(rng, 3, 2, 2)))
    out = fluid.layers.spectral_norm(w, dim=1, power_iters=3)
    blk = fluid.default_main_program().global_block()
    op = blk.ops[-1]
    uv = {}
    for slot, arr in (("U", _u(rng, 2)), ("V", _u(rng, 6))):
        uv[op.input(slot)[0]] = arr
    # U and V start from the same numbers on both sides: feed them
    return {"feed": uv, "outs": {"out": out}, "wrt": {"w": w}}


# ------------------------------------------------------------------ feature and pairwise layers
@case
def cos_sim(fluid, rng):
    x = _data(fluid, "x", [3, 4])
    y = _data(fluid, "y", [3, 4])
    y1 = _data(fluid, "y1", [1, 4])
    a = fluid.layers.cos_sim(x, y)
    b = fluid.layers.cos_sim(x, y1)
    return {"feed": {"x": _u(rng, 3, 4), "y": _u(rng, 3, 4), "y1": _u(rng, 1, 4)}, "outs": {"a": a, "b": b},
            "wrt": {"x": x, "y": y, "y1": y1}}


@case
def label_smooth(fluid, rng):
    x = _data(fluid, "x", [3, 4], grad=False)
    prior = _data(fluid, "prior", [1, 4], grad=False)
    a = fluid.layers.label_smooth(x)
    b = fluid.layers.label_smooth(x, prior_dist=prior, epsilon=0.3)
    lab = np.eye(4, dtype=np.float32)[[1, 3, 0]]
    return {"feed": {"x": lab, "prior": np.array([[0.1, 0.2, 0.3, 0.4]], np.float32)}, "outs": {"a": a, "b": b}}


@case
def maxout(fluid, rng):
    x = _data(fluid, "x", [2, 6, 2, 3])
    a = fluid.layers.maxout(x, groups=3)
    xl = _data(fluid, "xl", [2, 2, 3, 4])
    b = fluid.layers.maxout(xl, groups=2, axis=-1)
    return {"feed": {"x": _u(rng, 2, 6, 2, 3), "xl": _u(rng, 2, 2, 3, 4)}, "outs": {"a": a, "b": b},
            "wrt": {"x": x, "xl": xl}}


@case
def pixel_shuffle(fluid, rng):
    x = _data(fluid, "x", [2, 8, 2, 3])
    out = fluid.layers.pixel_shuffle(x, upscale_factor=2)
    return {"feed": {"x": _u(rng, 2, 8, 2, 3)}, "outs": {"out": out}, "wrt": {"x": x}}


@case
def add_position_encoding(fluid, rng):
    x = _data(fluid, "x", [2, 5, 6])
    out = fluid.layers.add_position_encoding(x, alpha=0.7, beta=1.3)
    return {"feed": {"x": _u(rng, 2, 5, 6)}, "outs": {"out": out}, "wrt": {"x": x}}


@case
def bilinear_tensor_product(fluid, rng):
    x = _data(fluid, "x", [3, 4])
    y = _data(fluid, "y", [3, 2])
    out = fluid.layers.bilinear_tensor_product(x, y, size=5, param_attr=_param(fluid, _u(rng, 5, 4, 2)),
                                               bias_attr=_param(fluid, _u(rng, 1, 5)), act="tanh")
    params = fluid.default_main_program().global_block().all_parameters()
    return {"feed": {"x": _u(rng, 3, 4), "y": _u(rng, 3, 2)}, "outs": {"out": out},
            "wrt": dict([("x", x), ("y", y)] + [(p.name, p) for p in params])}


@case
def row_conv(fluid, rng):
    x = _data(fluid, "x", [7, 3], lod_level=1)
    out = fluid.layers.row_conv(x, future_context_size=2, param_attr=_param(fluid, _u(rng, 3, 3)))
    params = fluid.default_main_program().global_block().all_parameters()
    return {"feed": {"x": (_u(rng, 7, 3), [[3, 4]])}, "outs": {"out": out},
            "wrt": dict([("x", x)] + [(p.name, p) for p in params])}


# ------------------------------------------------------------------ transposed and 3-D convolution, pooling
def _params(fluid):
    return [(p.name, p) for p in fluid.default_main_program().global_block().all_parameters()]


@case
def conv2d_transpose(fluid, rng):
    x = _data(fluid, "x", [2, 4, 3, 3])
    a = fluid.layers.conv2d_transpose(x, num_filters=6, filter_size=3, stride=2, padding=1, groups=2,
                                      param_attr=_param(fluid, _u(rng, 4, 3, 3, 3)),
                                      bias_attr=_param(fluid, _u(rng, 6)))
    b = fluid.layers.conv2d_transpose(x, num_filters=2, output_size=[8, 7], stride=[2, 2], padding=[1, 0, 0, 1],
                                      dilation=[1, 2], param_attr=_param(fluid, _u(rng, 4, 2, 5, 2)), bias_attr=False)
    c = fluid.layers.conv2d_transpose(x, num_filters=3, filter_size=2, stride=2, padding="SAME", act="relu",
                                      param_attr=_param(fluid, _u(rng, 4, 3, 2, 2)), bias_attr=False)
    xl = _data(fluid, "xl", [2, 3, 3, 4])
    d = fluid.layers.conv2d_transpose(xl, num_filters=2, filter_size=[2, 3], stride=[1, 2], data_format="NHWC",
                                      param_attr=_param(fluid, _u(rng, 4, 2, 2, 3)), bias_attr=_param(fluid, _u(rng, 2)))
    return {"feed": {"x": _u(rng, 2, 4, 3, 3), "xl": _u(rng, 2, 3, 3, 4)}, "outs": {"a": a, "b": b, "c": c, "d": d},
            "wrt": dict([("x", x), ("xl", xl)] + _params(fluid))}


@case
def conv3d(fluid, rng):
    x = _data(fluid, "x", [2, 4, 4, 3, 5])
    a = fluid.layers.conv3d(x, num_filters=4, filter_size=[2, 3, 2], stride=[1, 2, 2], padding=[1, 0, 1], groups=2,
                            param_attr=_param(fluid, _u(rng, 4, 2, 2, 3, 2)), bias_attr=_param(fluid, _u(rng, 4)))
    b = fluid.layers.conv3d(x, num_filters=3, filter_size=3, padding="SAME", dilation=2, act="tanh",
                            param_attr=_param(fluid, _u(rng, 3, 4, 3, 3, 3)), bias_attr=False)
    return {"feed": {"x": _u(rng, 2, 4, 4, 3, 5)}, "outs": {"a": a, "b": b}, "wrt": dict([("x", x)] + _params(fluid))}


@case
def conv3d_transpose(fluid, rng):
    x = _data(fluid, "x", [1, 4, 2, 3, 2])
    a = fluid.layers.conv3d_transpose(x, num_filters=2, filter_size=[2, 3, 2], stride=[2, 1, 2], padding=[0, 1, 1],
                                      param_attr=_param(fluid, _u(rng, 4, 2, 2, 3, 2)),
                                      bias_attr=_param(fluid, _u(rng, 2)))
    return {"feed": {"x": _u(rng, 1, 4, 2, 3, 2)}, "outs": {"a": a}, "wrt": dict([("x", x)] + _params(fluid))}


@case
def pool3d(fluid, rng):
    x = _data(fluid, "x", [2, 2, 5, 4, 5])
    a = fluid.layers.pool3d(x, pool_size=2, pool_type="max", pool_stride=2, pool_padding=1)
    b = fluid.layers.pool3d(x, pool_size=[3, 2, 2], pool_type="avg", pool_stride=2, pool_padding=[1, 0, 0],
                            ceil_mode=True)
    c = fluid.layers.pool3d(x, pool_size=3, pool_type="avg", pool_stride=2, pool_padding=1, exclusive=False)
    d = fluid.layers.pool3d(x, pool_type="max", global_pooling=True)
    e = fluid.layers.adaptive_pool3d(x, pool_size=[2, 3, 2], pool_type="avg")
    return {"feed": {"x": _u(rng, 2, 2, 5, 4, 5)}, "outs": {"a": a, "b": b, "c": c, "d": d, "e": e}, "wrt": {"x": x}}


@case
def image_resize(fluid, rng):
    x = _data(fluid, "x", [2, 3, 3, 4])
    a = fluid.layers.resize_bilinear(x, out_shape=[5, 7])
    b = fluid.layers.resize_bilinear(x, out_shape=[6, 3], align_corners=False, align_mode=0)
    c = fluid.layers.resize_bilinear(x, scale=1.7, align_corners=False)
    d = fluid.layers.resize_nearest(x, out_shape=[7, 5])
    e = fluid.layers.resize_nearest(x, out_shape=[5, 9], align_corners=False)
    f = fluid.layers.image_resize(x, out_shape=[4, 6], resample="NEAREST", data_format="NHWC")
    g = fluid.layers.image_resize_short(x, 5)
    return {"feed": {"x": _u(rng, 2, 3, 3, 4)}, "outs": {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "g": g},
            "wrt": {"x": x}}


@case
def resize_trilinear(fluid, rng):
    x = _data(fluid, "x", [1, 2, 3, 2, 3])
    a = fluid.layers.resize_trilinear(x, out_shape=[4, 3, 5])
    b = fluid.layers.resize_trilinear(x, out_shape=[2, 4, 4], align_corners=False, align_mode=0)
    c = fluid.layers.resize_trilinear(x, out_shape=[5, 3, 2], align_corners=False, align_mode=1)
    return {"feed": {"x": _u(rng, 1, 2, 3, 2, 3)}, "outs": {"a": a, "b": b, "c": c}, "wrt": {"x": x}}


# ------------------------------------------------------------------ losses
@case
def smooth_l1(fluid, rng):
    x = _data(fluid, "x", [3, 2, 2])
    y = _data(fluid, "y", [3, 2, 2], grad=False)
    iw = _data(fluid, "iw", [3, 2, 2], grad=False)
    ow = _data(fluid, "ow", [3, 2, 2], grad=False)
    a = fluid.layers.smooth_l1(x, y)
    b = fluid.layers.smooth_l1(x, y, inside_weight=iw, outside_weight=ow, sigma=2.0)
    return {"feed": {"x": _u(rng, 3, 2, 2, lo=-2, hi=2), "y": _u(rng, 3, 2, 2), "iw": _u(rng, 3, 2, 2, lo=0, hi=2),
                     "ow": _u(rng, 3, 2, 2, lo=0, hi=2)}, "outs": {"a": a, "b": b}, "wrt": {"x": x}}


@case
def huber_kldiv_mse(fluid, rng):
    x = _data(fluid, "x", [4, 1])
    y = _data(fluid, "y", [4, 1], grad=False)
    a = fluid.layers.huber_loss(x, y, delta=0.6)
    lp = _data(fluid, "lp", [3, 4])
    t = _data(fluid, "t", [3, 4], grad=False)
    outs = {"a": a, "mse": fluid.layers.mse_loss(x, y)}
    for red in ("none", "batchmean", "mean", "sum"):
        outs["kl_" + red] = fluid.layers.kldiv_loss(lp, t, reduction=red)
    target = rng.uniform(0, 1, (3, 4)).astype(np.float32)
    target[0, 1] = 0.0
    return {"feed": {"x": _u(rng, 4, 1, lo=-2, hi=2), "y": _u(rng, 4, 1), "lp": _u(rng, 3, 4, lo=-3, hi=0),
                     "t": target}, "outs": outs, "wrt": {"x": x, "lp": lp}}


@case
def rank_losses(fluid, rng):
    label = _data(fluid, "label", [4, 1], grad=False)
    left = _data(fluid, "left", [4, 1])
    right = _data(fluid, "right", [4, 1])
    sign = _data(fluid, "sign", [4, 1], grad=False)
    a = fluid.layers.rank_loss(label, left, right)
    b = fluid.layers.margin_rank_loss(sign, left, right, margin=0.2)
    x = _data(fluid, "x", [3, 5])
    pos = _data(fluid, "pos", [3, 1], dtype="int64", grad=False)
    c = fluid.layers.bpr_loss(x, pos)
    return {"feed": {"label": np.array([[1], [0], [1], [0.5]], np.float32), "left": _u(rng, 4, 1, lo=-2, hi=2),
                     "right": _u(rng, 4, 1, lo=-2, hi=2), "sign": np.array([[1], [-1], [1], [-1]], np.float32),
                     "x": _u(rng, 3, 5, lo=-2, hi=2), "pos": np.array([[0], [4], [2]], np.int64)},
            "outs": {"a": a, "b": b, "c": c}, "wrt": {"left": left, "right": right, "x": x}}


@case
def teacher_student_sigmoid_loss(fluid, rng):
    x = _data(fluid, "x", [6, 1])
    label = _data(fluid, "label", [6, 1], grad=False)
    out = fluid.layers.teacher_student_sigmoid_loss(x, label, soft_max_up_bound=1.5, soft_max_lower_bound=-1.0)
    return {"feed": {"x": np.array([[-2.0], [0.3], [1.0], [-0.5], [2.5], [0.7]], np.float32),
                     "label": np.array([[-2.0], [-0.5], [0.3], [0.8], [1.2], [1.9]], np.float32)},
            "outs": {"out": out}, "wrt": {"x": x}}


@case
def npair_loss(fluid, rng):
    anchor = _data(fluid, "anchor", [4, 3])
    positive = _data(fluid, "positive", [4, 3])
    labels = _data(fluid, "labels", [4], grad=False)
    out = fluid.layers.npair_loss(anchor, positive, labels, l2_reg=0.01)
    return {"feed": {"anchor": _u(rng, 4, 3), "positive": _u(rng, 4, 3),
                     "labels": np.array([1.0, 2.0, 1.0, 3.0], np.float32)},
            "outs": {"out": out}, "wrt": {"anchor": anchor, "positive": positive}}


@case
def dice_loss(fluid, rng):
    x = _data(fluid, "x", [3, 2, 4])
    label = _data(fluid, "label", [3, 2, 1], dtype="int64", grad=False)
    p = fluid.layers.softmax(x)
    out = fluid.layers.dice_loss(p, label)
    return {"feed": {"x": _u(rng, 3, 2, 4), "label": rng.randint(0, 4, (3, 2, 1)).astype(np.int64)},
            "outs": {"out": out}, "wrt": {"x": x}}


@case
def center_loss(fluid, rng):
    x = _data(fluid, "x", [5, 3])
    label = _data(fluid, "label", [5, 1], dtype="int64", grad=False)
    loss = fluid.layers.center_loss(x, label, num_classes=3, alpha=0.3, param_attr=_param(fluid, _u(rng, 3, 3)))
    centers = fluid.default_main_program().global_block().all_parameters()[0]
    return {"feed": {"x": _u(rng, 5, 3), "label": np.array([[0], [2], [0], [1], [0]], np.int64)},
            "outs": {"loss": loss, "centers": centers}, "wrt": {"x": x}}


# ------------------------------------------------------------------ sequence labelling
@case
def linear_chain_crf(fluid, rng):
    x = _data(fluid, "x", [7, 4], lod_level=1)
    label = _data(fluid, "label", [7, 1], dtype="int64", lod_level=1, grad=False)
    attr = fluid.ParamAttr(name="crfw", initializer=fluid.initializer.NumpyArrayInitializer(_u(rng, 6, 4)))
    nll = fluid.layers.linear_chain_crf(x, label, param_attr=attr)
    path = fluid.layers.crf_decoding(x, param_attr=fluid.ParamAttr(name="crfw"))
    hit = fluid.layers.crf_decoding(x, param_attr=fluid.ParamAttr(name="crfw"), label=label)
    xp = _data(fluid, "xp", [2, 3, 4])
    lp = _data(fluid, "lp", [2, 3], dtype="int64", grad=False)
    n = _data(fluid, "n", [2], dtype="int64", grad=False)
    nll_p = fluid.layers.linear_chain_crf(xp, lp, param_attr=fluid.ParamAttr(name="crfw"), length=n)
    path_p = fluid.layers.crf_decoding(xp, param_attr=fluid.ParamAttr(name="crfw"), length=n)
    return {"feed": {"x": (_u(rng, 7, 4, lo=-2, hi=2), [[3, 1, 3]]),
                     "label": (np.array([[0], [3], [1], [2], [2], [0], [1]], np.int64), [[3, 1, 3]]),
                     "xp": _u(rng, 2, 3, 4, lo=-2, hi=2), "lp": np.array([[1, 2, 0], [3, 3, 0]], np.int64),
                     "n": np.array([3, 2], np.int64)},
            "outs": {"nll": nll, "path": path, "hit": hit, "nll_p": nll_p, "path_p": path_p},
            "wrt": {"x": x, "xp": xp, "crfw": fluid.default_main_program().global_block().var("crfw")}}


@case
def chunk_eval(fluid, rng):
    outs = {}
    feed = {}
    # tags per scheme: (chunk types, inferred tags, gold tags)
    plans = {"IOB": (2, [0, 1, 4, 2, 3, 3, 0, 0, 1, 4], [0, 1, 4, 2, 3, 4, 0, 1, 1, 4]),
             "IOE": (2, [0, 1, 4, 2, 3, 1, 1, 0, 1, 4], [0, 1, 4, 3, 3, 1, 4, 0, 1, 4]),
             "IOBES": (2, [3, 8, 0, 1, 2, 4, 6, 7, 8, 0], [3, 8, 0, 2, 8, 4, 5, 6, 7, 1]),
             "plain": (3, [0, 0, 1, 3, 2, 2, 1, 3, 0, 0], [0, 0, 1, 3, 2, 1, 1, 3, 0, 3])}
    for scheme, (types, inf, lab) in sorted(plans.items()):
        iv = _data(fluid, "inf_" + scheme, [10, 1], dtype="int64", lod_level=1, grad=False)
        lv = _data(fluid, "lab_" + scheme, [10, 1], dtype="int64", lod_level=1, grad=False)
        res = fluid.layers.chunk_eval(iv, lv, chunk_scheme=scheme, num_chunk_types=types)
        for k, v in zip(("p", "r", "f1", "ni", "nl", "nc"), res):
            outs["%s_%s" % (scheme, k)] = v
        feed["inf_" + scheme] = (np.array(inf, np.int64).reshape(10, 1), [[6, 4]])
        feed["lab_" + scheme] = (np.array(lab, np.int64).reshape(10, 1), [[6, 4]])
    iv = _data(fluid, "inf_x", [2, 5], dtype="int64", grad=False)
    lv = _data(fluid, "lab_x", [2, 5], dtype="int64", grad=False)
    n = _data(fluid, "n", [2], dtype="int64", grad=False)
    res = fluid.layers.chunk_eval(iv, lv, chunk_scheme="IOB", num_chunk_types=2, excluded_chunk_types=[1],
                                  seq_length=n)
    for k, v in zip(("p", "r", "f1", "ni", "nl", "nc"), res):
        outs["padded_" + k] = v
    feed.update({"inf_x": np.array([[0, 1, 2, 4, 0], [2, 3, 0, 1, 1]], np.int64),
                 "lab_x": np.array([[0, 1, 2, 3, 0], [2, 0, 0, 1, 4]], np.int64), "n": np.array([5, 4], np.int64)})
    return {"feed": feed, "outs": outs}


@case
def edit_distance(fluid, rng):
    hyp = _data(fluid, "hyp", [9, 1], dtype="int64", lod_level=1, grad=False)
    ref = _data(fluid, "ref", [8, 1], dtype="int64", lod_level=1, grad=False)
    a, n = fluid.layers.edit_distance(hyp, ref, normalized=False)
    b, _ = fluid.layers.edit_distance(hyp, ref)
    c, _ = fluid.layers.edit_distance(hyp, ref, ignored_tokens=[0, 7])
    hp = _data(fluid, "hp", [2, 4], dtype="int64", grad=False)
    rp = _data(fluid, "rp", [2, 3], dtype="int64", grad=False)
    hl = _data(fluid, "hl", [2], dtype="int64", grad=False)
    rl = _data(fluid, "rl", [2], dtype="int64", grad=False)
    d, _ = fluid.layers.edit_distance(hp, rp, normalized=True, input_length=hl, label_length=rl)
    return {"feed": {"hyp": (np.array([1, 2, 3, 0, 4, 5, 7, 6, 6], np.int64).reshape(9, 1), [[4, 0, 5]]),
                     "ref": (np.array([1, 3, 3, 4, 7, 5, 6, 9], np.int64).reshape(8, 1), [[3, 2, 3]]),
                     "hp": np.array([[1, 2, 3, 4], [5, 5, 0, 0]], np.int64), "rp": np.array([[1, 3, 4], [5, 6, 0]], np.int64),
                     "hl": np.array([4, 2], np.int64), "rl": np.array([3, 2], np.int64)},
            "outs": {"a": a, "n": n, "b": b, "c": c, "d": d}}


@case
def warpctc(fluid, rng):
    x = _data(fluid, "x", [9, 5], lod_level=1)
    label = _data(fluid, "label", [4, 1], dtype="int32", lod_level=1, grad=False)
    a = fluid.layers.warpctc(x, label)
    b = fluid.layers.warpctc(x, label, blank=4, norm_by_times=True)
    xp = _data(fluid, "xp", [4, 2, 5])
    lp = _data(fluid, "lp", [2, 2], dtype="int32", grad=False)
    xl = _data(fluid, "xl", [2], dtype="int64", grad=False)
    ll = _data(fluid, "ll", [2], dtype="int64", grad=False)
    c = fluid.layers.warpctc(xp, lp, input_length=xl, label_length=ll)
    return {"feed": {"x": (_u(rng, 9, 5, lo=-2, hi=2), [[5, 4]]),
                     "label": (np.array([[1], [2], [1], [3]], np.int32), [[3, 1]]),
                     "xp": _u(rng, 4, 2, 5, lo=-2, hi=2), "lp": np.array([[1, 2], [3, 0]], np.int32),
                     "xl": np.array([4, 3], np.int64), "ll": np.array([2, 1], np.int64)},
            "outs": {"a": a, "b": b, "c": c}, "wrt": {"x": x, "xp": xp}}


@case
def interpolate_bicubic(fluid, rng):
    x = _data(fluid, "x", [2, 2, 4, 5])
    a = fluid.layers.interpolate(x, out_shape=[7, 3], resample="BICUBIC")
    b = fluid.layers.interpolate(x, out_shape=[6, 8], resample="BICUBIC", align_corners=False)
    c = fluid.layers.interpolate(x, scale=1.5, resample="NEAREST", align_corners=False)
    return {"feed": {"x": _u(rng, 2, 2, 4, 5)}, "outs": {"a": a, "b": b, "c": c}, "wrt": {"x": x}}


# ------------------------------------------------------------------ losses over large label sets
def _const_param(fluid, arr, dtype="float32"):
    arr = np.asarray(arr, dtype)
    return fluid.layers.create_parameter(list(arr.shape), dtype,
                                         default_initializer=fluid.initializer.NumpyArrayInitializer(arr))


@case
def nce(fluid, rng):
    x = _data(fluid, "x", [3, 4])
    label = _data(fluid, "label", [3, 2], dtype="int64", grad=False)
    sw = _data(fluid, "sw", [3, 1], grad=False)
    w = _const_param(fluid, _u(rng, 7, 4))
    b = _const_param(fluid, _u(rng, 7, 1))
    block = fluid.default_main_program().current_block()
    outs = {}
    for key, sampler, extra in (("uniform", 0, {}), ("log_uniform", 1, {"SampleWeight": [sw]})):
        cost = block.create_var(name="cost_" + key, dtype="float32")
        logits = block.create_var(name="logits_" + key, dtype="float32")
        labels = block.create_var(name="labels_" + key, dtype="int64")
        inputs = {"Input": [x], "Label": [label], "Weight": [w], "Bias": [b]}
        inputs.update(extra)
        block.append_op(type="nce", inputs=inputs,
                        outputs={"Cost": [cost], "SampleLogits": [logits], "SampleLabels": [labels]},
                        attrs={"num_total_classes": 7, "num_neg_samples": 3, "sampler": sampler, "seed": 1,
                               "custom_neg_classes": [0, 5, 3]})
        outs["cost_" + key] = cost
        outs["logits_" + key] = logits
        outs["labels_" + key] = labels
    return {"feed": {"x": _u(rng, 3, 4), "label": np.array([[1, 2], [4, 6], [0, 2]], np.int64),
                     "sw": np.array([[1.0], [0.5], [2.0]], np.float32)},
            "outs": outs, "wrt": dict([("x", x)] + _params(fluid))}


@case
def hsigmoid(fluid, rng):
    x = _data(fluid, "x", [4, 3])
    label = _data(fluid, "label", [4, 1], dtype="int64", grad=False)
    a = fluid.layers.hsigmoid(x, label, num_classes=6, param_attr=_param(fluid, _u(rng, 5, 3)),
                              bias_attr=_param(fluid, _u(rng, 5, 1)))
    table = _data(fluid, "table", [4, 3], dtype="int64", grad=False)
    code = _data(fluid, "code", [4, 3], dtype="int64", grad=False)
    b = fluid.layers.hsigmoid(x, label, num_classes=5, param_attr=_param(fluid, _u(rng, 5, 3)),
                              bias_attr=_param(fluid, _u(rng, 5, 1)), path_table=table, path_code=code, is_custom=True)
    return {"feed": {"x": _u(rng, 4, 3), "label": np.array([[0], [5], [3], [2]], np.int64),
                     "table": np.array([[0, 1, 3], [0, 2, -1], [0, 1, 4], [0, -1, -1]], np.int64),
                     "code": np.array([[0, 1, 1], [1, 0, 0], [0, 0, 1], [1, 0, 0]], np.int64)},
            "outs": {"a": a, "b": b}, "wrt": dict([("x", x)] + _params(fluid))}


@case
def sampled_softmax_with_cross_entropy(fluid, rng):
    logits = _data(fluid, "logits", [3, 8])
    label = _data(fluid, "label", [3, 1], dtype="int64", grad=False)
    samples = _data(fluid, "samples", [3, 4], dtype="int64", grad=False)
    probs = _data(fluid, "probs", [3, 4], grad=False)
    loss = fluid.layers.sampled_softmax_with_cross_entropy(logits, label, num_samples=3, use_customized_samples=True,
                                                           customized_samples=samples, customized_probabilities=probs)
    return {"feed": {"logits": _u(rng, 3, 8, lo=-2, hi=2), "label": np.array([[2], [5], [0]], np.int64),
                     "samples": np.array([[2, 1, 4, 6], [5, 1, 4, 6], [0, 1, 4, 0]], np.int64),
                     "probs": rng.uniform(0.1, 0.9, (3, 4)).astype(np.float32)},
            "outs": {"loss": loss}, "wrt": {"logits": logits}}


# ------------------------------------------------------------------ metrics
@case
def auc(fluid, rng):
    p = _data(fluid, "p", [6, 2], grad=False)
    label = _data(fluid, "label", [6, 1], dtype="int64", grad=False)
    auc_out, batch_auc, stats = fluid.layers.auc(p, label, num_thresholds=7, slide_steps=2)
    p1 = _data(fluid, "p1", [6, 1], grad=False)
    auc1, batch1, _ = fluid.layers.auc(p1, label, num_thresholds=20, slide_steps=0)
    outs = {"auc": auc_out, "batch_auc": batch_auc, "auc1": auc1, "batch1": batch1}
    for k, v in zip(("batch_pos", "batch_neg", "pos", "neg"), stats):
        outs[k] = v
    feeds = []
    for _ in range(4):
        prob = rng.uniform(0, 1, (6, 1)).astype(np.float32)
        feeds.append({"p": np.concatenate([1 - prob, prob], axis=1), "p1": prob,
                      "label": rng.randint(0, 2, (6, 1)).astype(np.int64)})
    return {"feeds": feeds, "outs": outs}


@case
def auc_names(fluid, rng):
    """The four stat buckets are the first unnamed global variables: _generated_var_0 .. _3."""
    p = _data(fluid, "p", [4, 2], grad=False)
    label = _data(fluid, "label", [4, 1], dtype="int64", grad=False)
    _, _, stats = fluid.layers.auc(p, label, num_thresholds=3)
    block = fluid.default_main_program().global_block()
    outs = {"var_%d" % i: block.var("_generated_var_%d" % i) for i in range(4)}
    prob = np.array([[0.9], [0.2], [0.6], [0.4]], np.float32)
    return {"feed": {"p": np.concatenate([1 - prob, prob], 1), "label": np.array([[1], [0], [0], [1]], np.int64)},
            "outs": outs}


# ------------------------------------------------------------------ initializers, error clip, py_func
@case
def bilinear_initializer(fluid, rng):
    x = _data(fluid, "x", [1, 2, 3, 3])
    y = fluid.layers.conv2d_transpose(x, 2, filter_size=4, stride=2, padding=1, bias_attr=False,
                                      param_attr=fluid.ParamAttr(name="wb", initializer=fluid.initializer.Bilinear()))
    w = fluid.default_main_program().global_block().var("wb")
    return {"feed": {"x": _u(rng, 1, 2, 3, 3)}, "outs": {"y": y, "w": w}}


@case
def error_clip(fluid, rng):
    x = _data(fluid, "x", [3, 4])
    h = fluid.layers.fc(x, 3, param_attr=_param(fluid, _u(rng, 4, 3)), bias_attr=False)
    h._set_error_clip(fluid.clip.ErrorClipByValue(max=0.2, min=-0.1))
    y = fluid.layers.fc(h, 2, param_attr=_param(fluid, _u(rng, 3, 2, lo=-3, hi=3)), bias_attr=False)
    loss = fluid.layers.reduce_sum(fluid.layers.square(y))
    fluid.optimizer.SGD(0.5).minimize(loss)
    params = fluid.default_main_program().global_block().all_parameters()
    return {"feed": {"x": _u(rng, 3, 4)}, "outs": dict([("y", y)] + [(p.name, p) for p in params])}


# ------------------------------------------------------------------ the runner
def _seed(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def run_case(fluid, name, on_build=None):
    """Build and run case ``name`` with ``fluid`` (paddle.fluid or fluidist); returns
    ``{label: (array, lod)}`` for outputs and ``label@GRAD`` gradients. ``on_build(main)`` is called
    with the built program (fluidist's tests lint it)."""
    rng = np.random.RandomState(_seed(name))
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        spec = CASES[name](fluid, rng)
        outs, wrt = spec["outs"], spec.get("wrt") or {}
        if wrt:
            terms = [fluid.layers.reduce_sum(fluid.layers.square(v)) for v in outs.values()
                     if "float" in str(v.dtype).lower() or "FP" in str(v.dtype)]
            loss = fluid.layers.scale(fluid.layers.sums(terms) if len(terms) > 1 else terms[0], scale=0.5)
            fluid.backward.append_backward(loss)
    if on_build is not None:
        on_build(main)
    place = fluid.CPUPlace()
    exe = fluid.Executor(place)
    scope = fluid.Scope()

    def as_feed(raw):
        return {k: fluid.create_lod_tensor(v[0], v[1], place) if isinstance(v, tuple) else v for k, v in raw.items()}

    labels = list(outs) + [k + "@GRAD" for k in wrt]
    names = [v.name for v in outs.values()] + [v.name + "@GRAD" for v in wrt.values()]
    runs = spec.get("feeds") or [spec["feed"]]
    result = {}
    with fluid.scope_guard(scope):
        exe.run(startup)
        for i, raw in enumerate(runs):
            got = exe.run(main, feed=as_feed(raw), fetch_list=names, return_numpy=False)
            suffix = "#%d" % i if len(runs) > 1 else ""
            for k, t in zip(labels, got):
                result[k + suffix] = (np.array(t), [list(map(int, lv)) for lv in t.lod()])
    return result
