"""conv2d / depthwise_conv2d, pool2d, batch_norm and dropout kernels against direct NumPy loops,
gradients against finite differences (float64)."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import build_op, check_grad, run_op

rng = np.random.RandomState(7)


def f64(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float64)


# ------------------------------------------------------------------ references (direct loops)
def ref_conv2d(x, w, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    t, b, l, r = pads
    xp = np.zeros((n, c, h + t + b, wd + l + r), x.dtype)
    xp[:, :, t:t + h, l:l + wd] = x
    ho = (h + t + b - (dil[0] * (kh - 1) + 1)) // stride[0] + 1
    wo = (wd + l + r - (dil[1] * (kw - 1) + 1)) // stride[1] + 1
    out = np.zeros((n, m, ho, wo), x.dtype)
    mg = m // groups
    for ni in range(n):
        for mi in range(m):
            g = mi // mg
            for oi in range(ho):
                for oj in range(wo):
                    acc = 0.0
                    for ci in range(cg):
                        for i in range(kh):
                            for j in range(kw):
                                acc += (xp[ni, g * cg + ci, oi * stride[0] + i * dil[0], oj * stride[1] + j * dil[1]]
                                        * w[mi, ci, i, j])
                    out[ni, mi, oi, oj] = acc
    return out


def ref_pool2d(x, ptype, k, s, pads=(0, 0, 0, 0), ceil_mode=False, exclusive=True):
    """Paddle's rule: a window is clipped to the input; exclusive averages divide by the clipped size,
    the others by kh * kw."""
    n, c, h, w = x.shape
    t, b, l, r = pads

    def size(inp, k_, s_, p):
        span = inp + p - k_
        return (span + s_ - 1) // s_ + 1 if ceil_mode else span // s_ + 1
    ho, wo = size(h, k[0], s[0], t + b), size(w, k[1], s[1], l + r)
    out = np.zeros((n, c, ho, wo), x.dtype)
    for oi in range(ho):
        for oj in range(wo):
            h0, w0 = oi * s[0] - t, oj * s[1] - l
            h1, w1 = min(h0 + k[0], h), min(w0 + k[1], w)
            h0, w0 = max(h0, 0), max(w0, 0)
            win = x[:, :, h0:h1, w0:w1]
            if ptype == "max":
                out[:, :, oi, oj] = win.max(axis=(2, 3))
            else:
                div = (h1 - h0) * (w1 - w0) if exclusive else k[0] * k[1]
                out[:, :, oi, oj] = win.sum(axis=(2, 3)) / div
    return out


def ref_batch_norm(x, scale, bias, mean, var, eps, axes, view):
    return (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + eps) * scale.reshape(view) + bias.reshape(view)


# ------------------------------------------------------------------ conv2d
CONV_CASES = [
    # (x shape, w shape, attrs, pads as (t, b, l, r) for the reference)
    ((2, 2, 5, 5), (3, 2, 3, 3), {}, (0, 0, 0, 0)),
    ((2, 2, 5, 5), (3, 2, 3, 3), {"strides": [2, 2], "paddings": [1, 1]}, (1, 1, 1, 1)),
    ((2, 2, 6, 5), (2, 2, 2, 3), {"strides": [1, 2], "paddings": [1, 0, 2, 1]}, (1, 0, 2, 1)),
    ((2, 2, 6, 6), (3, 2, 2, 2), {"dilations": [2, 2], "paddings": [1, 1]}, (1, 1, 1, 1)),
    ((2, 4, 5, 5), (4, 2, 3, 3), {"groups": 2, "paddings": [1, 1]}, (1, 1, 1, 1)),
]


@pytest.mark.parametrize("xs,ws,attrs,pads", CONV_CASES)
def test_conv2d_forward_and_grad(xs, ws, attrs, pads):
    x, w = f64(*xs), f64(*ws)
    out = run_op("conv2d", {"Input": x, "Filter": w}, attrs, outputs=("Output",))["Output"][0]
    expect = ref_conv2d(x, w, attrs.get("strides", (1, 1)), pads, attrs.get("dilations", (1, 1)),
                        attrs.get("groups", 1))
    assert out.shape == expect.shape
    np.testing.assert_allclose(out, expect, rtol=1e-10, atol=1e-12)
    check_grad("conv2d", {"Input": x, "Filter": w}, ["Input", "Filter"], attrs, out_slot="Output")


def test_conv2d_float32_and_shape_inference():
    x, w = f64(3, 2, 7, 6).astype(np.float32), f64(4, 2, 3, 3).astype(np.float32)
    attrs = {"strides": [2, 1], "paddings": [1, 2]}
    prog, feed, outs = build_op("conv2d", {"Input": x, "Filter": w}, attrs, outputs=("Output",))
    assert prog.global_block().var(outs["Output"][0]).shape == (3, 4, 4, 8)
    got = fluid.Executor().run(prog, feed=feed, fetch_list=outs["Output"], scope=fluid.Scope())[0]
    assert got.dtype == np.float32 and got.shape == (3, 4, 4, 8)
    np.testing.assert_allclose(got, ref_conv2d(x.astype(np.float64), w.astype(np.float64), (2, 1),
                                               (1, 1, 2, 2)), rtol=1e-5, atol=1e-5)


def test_conv2d_same_and_valid_padding():
    x, w = f64(1, 2, 5, 6), f64(2, 2, 3, 2)
    same = run_op("conv2d", {"Input": x, "Filter": w}, {"strides": [2, 2], "padding_algorithm": "SAME"},
                  outputs=("Output",))["Output"][0]
    # out = ceil(in / stride): H 3 (pad total 2 -> 1, 1), W 3 (pad total 1 -> 0, 1)
    np.testing.assert_allclose(same, ref_conv2d(x, w, (2, 2), (1, 1, 0, 1)))
    valid = run_op("conv2d", {"Input": x, "Filter": w}, {"paddings": [3, 3], "padding_algorithm": "VALID"},
                   outputs=("Output",))["Output"][0]
    np.testing.assert_allclose(valid, ref_conv2d(x, w))


def test_conv2d_nhwc_matches_nchw():
    x, w = f64(2, 3, 5, 5), f64(4, 3, 3, 3)
    attrs = {"paddings": [1, 1], "strides": [2, 2]}
    nchw = run_op("conv2d", {"Input": x, "Filter": w}, attrs, outputs=("Output",))["Output"][0]
    nhwc = run_op("conv2d", {"Input": x.transpose(0, 2, 3, 1), "Filter": w}, dict(attrs, data_format="NHWC"),
                  outputs=("Output",))["Output"][0]
    np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1))
    check_grad("conv2d", {"Input": x[:, :2, :4, :4].transpose(0, 2, 3, 1).copy(), "Filter": w[:2, :2]},
               ["Input", "Filter"], dict(attrs, data_format="NHWC"), out_slot="Output")


def test_conv2d_optional_bias_and_its_grad():
    x, w, b = f64(2, 2, 4, 4), f64(3, 2, 3, 3), f64(3)
    out = run_op("conv2d", {"Input": x, "Filter": w, "Bias": b}, {}, outputs=("Output",))["Output"][0]
    np.testing.assert_allclose(out, ref_conv2d(x, w) + b.reshape(1, 3, 1, 1))
    check_grad("conv2d", {"Input": x, "Filter": w, "Bias": b}, ["Input", "Filter", "Bias"], out_slot="Output")


def test_depthwise_conv2d():
    x, w = f64(2, 3, 5, 5), f64(6, 1, 3, 3)
    attrs = {"groups": 3, "paddings": [1, 1]}
    out = run_op("depthwise_conv2d", {"Input": x, "Filter": w}, attrs, outputs=("Output",))["Output"][0]
    np.testing.assert_allclose(out, ref_conv2d(x, w, pads=(1, 1, 1, 1), groups=3))
    check_grad("depthwise_conv2d", {"Input": x[:1], "Filter": w}, ["Input", "Filter"], attrs, out_slot="Output")


def test_conv2d_errors_name_the_problem():
    with pytest.raises(ValueError, match="channels"):
        build_op("conv2d", {"Input": f64(1, 3, 5, 5), "Filter": f64(2, 2, 3, 3)}, {}, outputs=("Output",))
    with pytest.raises(ValueError, match="too small"):
        build_op("conv2d", {"Input": f64(1, 2, 2, 2), "Filter": f64(2, 2, 3, 3)}, {}, outputs=("Output",))
    with pytest.raises(ValueError, match="padding_algorithm"):
        build_op("conv2d", {"Input": f64(1, 2, 5, 5), "Filter": f64(2, 2, 3, 3)}, {"padding_algorithm": "FULL"},
                 outputs=("Output",))


# ------------------------------------------------------------------ pool2d
POOL_CASES = [
    ("max", [2, 2], [2, 2], [0, 0], False, True),
    ("max", [3, 3], [2, 2], [1, 1], False, True),
    ("max", [3, 2], [2, 2], [0, 0], True, True),
    ("avg", [2, 2], [2, 2], [0, 0], False, True),
    ("avg", [3, 3], [2, 2], [1, 1], False, True),
    ("avg", [3, 3], [2, 2], [1, 1], False, False),
    ("avg", [2, 3], [2, 2], [0, 1], True, True),
    ("avg", [2, 3], [2, 2], [0, 1], True, False),
]


@pytest.mark.parametrize("ptype,k,s,p,ceil,excl", POOL_CASES)
def test_pool2d_forward_and_grad(ptype, k, s, p, ceil, excl):
    x = f64(2, 2, 5, 5)
    attrs = {"pooling_type": ptype, "ksize": k, "strides": s, "paddings": p, "ceil_mode": ceil, "exclusive": excl}
    out = run_op("pool2d", {"X": x}, attrs)["Out"][0]
    expect = ref_pool2d(x, ptype, k, s, (p[0], p[0], p[1], p[1]), ceil, excl)
    assert out.shape == expect.shape
    np.testing.assert_allclose(out, expect, rtol=1e-12)
    check_grad("pool2d", {"X": x}, ["X"], attrs)


def test_pool2d_asymmetric_padding_and_shape_inference():
    x = f64(1, 2, 6, 5)
    attrs = {"pooling_type": "avg", "ksize": [2, 2], "strides": [2, 2], "paddings": [1, 0, 0, 1]}
    prog, _, outs = build_op("pool2d", {"X": x}, attrs)
    assert prog.global_block().var(outs["Out"][0]).shape == (1, 2, 3, 3)
    out = run_op("pool2d", {"X": x}, attrs)["Out"][0]
    np.testing.assert_allclose(out, ref_pool2d(x, "avg", [2, 2], [2, 2], (1, 0, 0, 1)))


def test_pool2d_max_grad_goes_to_first_maximum():
    x = np.zeros((1, 1, 2, 2))
    x[0, 0, 1, 1] = -1.0  # three tied maxima (0) at (0,0), (0,1), (1,0)
    prog, feed, outs = build_op("pool2d", {"X": x}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]},
                                grad_inputs=["X"])
    block = prog.global_block()
    block.create_var(name="loss", shape=(1,), dtype="float64")
    block.append_op("mean", inputs={"X": outs["Out"]}, outputs={"Out": ["loss"]})
    fluid.backward.append_backward(block.var("loss"))
    g = fluid.Executor().run(prog, feed=feed, fetch_list=["x_in@GRAD"], scope=fluid.Scope())[0]
    np.testing.assert_array_equal(g, [[[[1.0, 0.0], [0.0, 0.0]]]])


def test_pool2d_global_and_adaptive():
    x = f64(2, 3, 5, 4)
    g = run_op("pool2d", {"X": x}, {"pooling_type": "avg", "ksize": [2, 2], "global_pooling": True})["Out"][0]
    np.testing.assert_allclose(g, x.mean(axis=(2, 3), keepdims=True))
    gm = run_op("pool2d", {"X": x}, {"pooling_type": "max", "global_pooling": True, "paddings": [1, 1]})["Out"][0]
    np.testing.assert_allclose(gm, x.max(axis=(2, 3), keepdims=True))
    check_grad("pool2d", {"X": x}, ["X"], {"pooling_type": "avg", "global_pooling": True})
    for ptype, red in (("max", np.max), ("avg", np.mean)):
        attrs = {"pooling_type": ptype, "ksize": [2, 3], "adaptive": True}
        out = run_op("pool2d", {"X": x}, attrs)["Out"][0]
        assert out.shape == (2, 3, 2, 3)
        # rows: [0, 3), [2, 5); cols: [0, 2), [1, 3), [2, 4)
        for oi, (h0, h1) in enumerate([(0, 3), (2, 5)]):
            for oj, (w0, w1) in enumerate([(0, 2), (1, 3), (2, 4)]):
                np.testing.assert_allclose(out[:, :, oi, oj], red(x[:, :, h0:h1, w0:w1], axis=(2, 3)))
        check_grad("pool2d", {"X": x}, ["X"], attrs)


def test_pool2d_same_padding_and_nhwc():
    x = f64(2, 3, 5, 5)
    attrs = {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2], "padding_algorithm": "SAME"}
    out = run_op("pool2d", {"X": x}, attrs)["Out"][0]
    np.testing.assert_allclose(out, ref_pool2d(x, "max", [2, 2], [2, 2], (0, 1, 0, 1)))
    nhwc = run_op("pool2d", {"X": x.transpose(0, 2, 3, 1)}, dict(attrs, data_format="NHWC"))["Out"][0]
    np.testing.assert_allclose(nhwc, out.transpose(0, 2, 3, 1))
    check_grad("pool2d", {"X": x.transpose(0, 2, 3, 1).copy()}, ["X"], dict(attrs, data_format="NHWC"))


def test_pool2d_bad_type():
    with pytest.raises(ValueError, match="pooling_type"):
        build_op("pool2d", {"X": f64(1, 1, 4, 4)}, {"pooling_type": "min", "ksize": [2, 2]})


# ------------------------------------------------------------------ batch_norm
BN_OUTS = ("Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance")


def _bn_inputs(shape, ch_axis=1):
    c = shape[ch_axis]
    return {"X": f64(*shape) * 2 + 0.5, "Scale": f64(c) + 1.5, "Bias": f64(c), "Mean": f64(c),
            "Variance": np.abs(f64(c)) + 0.5}


@pytest.mark.parametrize("shape,layout", [((2, 2, 5, 5), "NCHW"), ((6, 3), "NCHW"), ((2, 4, 3, 3), "NHWC"),
                                          ((3, 2, 4), "NCHW")])
def test_batch_norm_training(shape, layout):
    ch = len(shape) - 1 if layout == "NHWC" else 1
    ins = _bn_inputs(shape, ch)
    attrs = {"momentum": 0.8, "epsilon": 1e-4, "data_layout": layout}
    res = run_op("batch_norm", ins, attrs, outputs=BN_OUTS)
    axes = tuple(a for a in range(len(shape)) if a != ch)
    view = [1] * len(shape)
    view[ch] = shape[ch]
    bm, bv = ins["X"].mean(axis=axes), ins["X"].var(axis=axes)
    np.testing.assert_allclose(res["Y"][0], ref_batch_norm(ins["X"], ins["Scale"], ins["Bias"], bm, bv, 1e-4,
                                                           axes, view), rtol=1e-10)
    np.testing.assert_allclose(res["MeanOut"][0], 0.8 * ins["Mean"] + 0.2 * bm)
    np.testing.assert_allclose(res["VarianceOut"][0], 0.8 * ins["Variance"] + 0.2 * bv)
    np.testing.assert_allclose(res["SavedMean"][0], bm)
    np.testing.assert_allclose(res["SavedVariance"][0], 1 / np.sqrt(bv + 1e-4))
    check_grad("batch_norm", ins, ["X", "Scale", "Bias"], attrs, out_slot="Y", outputs=BN_OUTS)


@pytest.mark.parametrize("flag", ["is_test", "use_global_stats"])
def test_batch_norm_running_stats(flag):
    ins = _bn_inputs((2, 3, 4, 4))
    attrs = {flag: True}
    res = run_op("batch_norm", ins, attrs, outputs=BN_OUTS)
    view = (1, 3, 1, 1)
    np.testing.assert_allclose(res["Y"][0], ref_batch_norm(ins["X"], ins["Scale"], ins["Bias"], ins["Mean"],
                                                           ins["Variance"], 1e-5, None, view), rtol=1e-10)
    np.testing.assert_array_equal(res["MeanOut"][0], ins["Mean"])
    np.testing.assert_array_equal(res["VarianceOut"][0], ins["Variance"])
    check_grad("batch_norm", _bn_inputs((2, 2, 3, 3)), ["X", "Scale", "Bias"], attrs, out_slot="Y",
               outputs=BN_OUTS)


def test_batch_norm_updates_running_stats_in_place_of_its_inputs():
    """MeanOut/VarianceOut share the names of Mean/Variance: one run leaves the updated values."""
    ins = _bn_inputs((4, 2, 3, 3))
    prog = fluid.Program()
    b = prog.global_block()
    for slot, v in ins.items():
        b.create_var(name=slot.lower(), shape=v.shape, dtype="float64", persistable=slot in ("Mean", "Variance"))
    for n in ("y", "sm", "sv"):
        b.create_var(name=n, dtype="float64")
    b.append_op("batch_norm", inputs={s: [s.lower()] for s in ins},
                outputs={"Y": ["y"], "MeanOut": ["mean"], "VarianceOut": ["variance"], "SavedMean": ["sm"],
                         "SavedVariance": ["sv"]})
    assert b.var("sm").shape == (2,)
    scope = fluid.Scope()
    feed = {"x": ins["X"], "scale": ins["Scale"], "bias": ins["Bias"]}
    scope._set_value("mean", ins["Mean"].copy())
    scope._set_value("variance", ins["Variance"].copy())
    exe = fluid.Executor()
    exe.run(prog, feed=feed, scope=scope)
    m1 = np.array(scope.find_var("mean").get_tensor())
    np.testing.assert_allclose(m1, 0.9 * ins["Mean"] + 0.1 * ins["X"].mean(axis=(0, 2, 3)))
    exe.run(prog, feed=feed, scope=scope)
    np.testing.assert_allclose(np.array(scope.find_var("mean").get_tensor()), 0.9 * m1 + 0.1 * ins["X"].mean(axis=(0, 2, 3)))


def test_batch_norm_shape_mismatch():
    ins = _bn_inputs((2, 3, 4, 4))
    ins["Scale"] = f64(4)
    with pytest.raises(ValueError, match="Scale"):
        build_op("batch_norm", ins, {}, outputs=BN_OUTS)


# ------------------------------------------------------------------ dropout
def _dropout(x, **attrs):
    return run_op("dropout", {"X": x}, attrs, outputs=("Out", "Mask"))


@pytest.mark.parametrize("impl", ["downgrade_in_infer", "upscale_in_train"])
def test_dropout_training_statistics(impl):
    x = np.abs(f64(200, 100)) + 0.5
    res = _dropout(x, dropout_prob=0.3, dropout_implementation=impl)
    out, mask = res["Out"][0], res["Mask"][0]
    assert mask.dtype == np.uint8 and set(np.unique(mask)) <= {0, 1}
    assert abs(1 - mask.mean() - 0.3) < 0.02
    expect = x * mask / 0.7 if impl == "upscale_in_train" else x * mask
    np.testing.assert_allclose(out, expect, rtol=1e-12)
    if impl == "upscale_in_train":
        assert abs(out.mean() / x.mean() - 1) < 0.03


@pytest.mark.parametrize("impl,factor", [("downgrade_in_infer", 0.7), ("upscale_in_train", 1.0)])
def test_dropout_is_test(impl, factor):
    x = f64(5, 6)
    out = run_op("dropout", {"X": x}, {"dropout_prob": 0.3, "is_test": True, "dropout_implementation": impl})
    np.testing.assert_allclose(out["Out"][0], x * factor)


def test_dropout_seeds():
    x = np.ones((50, 40))
    a = _dropout(x, dropout_prob=0.5, fix_seed=True, seed=3)["Mask"][0]
    b = _dropout(x, dropout_prob=0.5, fix_seed=True, seed=3)["Mask"][0]
    c = _dropout(x, dropout_prob=0.5, fix_seed=True, seed=4)["Mask"][0]
    d = _dropout(x, dropout_prob=0.5)["Mask"][0]
    e = _dropout(x, dropout_prob=0.5)["Mask"][0]
    np.testing.assert_array_equal(a, b)
    assert (a != c).any() and (d != e).any()


def test_dropout_edge_probabilities():
    x = f64(4, 5)
    np.testing.assert_array_equal(_dropout(x, dropout_prob=0.0)["Out"][0], x)
    for impl in ("downgrade_in_infer", "upscale_in_train"):
        np.testing.assert_array_equal(_dropout(x, dropout_prob=1.0, dropout_implementation=impl)["Out"][0], 0 * x)
    with pytest.raises(ValueError, match="dropout_prob"):
        _dropout(x, dropout_prob=1.5)


@pytest.mark.parametrize("impl", ["downgrade_in_infer", "upscale_in_train"])
def test_dropout_grad(impl):
    check_grad("dropout", {"X": f64(4, 5)}, ["X"], {"dropout_prob": 0.4, "fix_seed": True, "seed": 11,
                                                   "dropout_implementation": impl}, outputs=("Out", "Mask"))


# ------------------------------------------------------------------ GPU: same results through CuPy
@pytest.mark.gpu
def test_gpu_kernels_match_cpu():
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    cases = [
        ("conv2d", {"Input": f64(2, 4, 6, 6), "Filter": f64(6, 2, 3, 3)},
         {"groups": 2, "paddings": [1, 1], "strides": [2, 1]}, ("Output",)),
        ("pool2d", {"X": f64(2, 3, 5, 5)}, {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2],
                                            "paddings": [1, 1], "ceil_mode": True}, ("Out",)),
        ("pool2d", {"X": f64(2, 3, 5, 5)}, {"pooling_type": "avg", "ksize": [3, 3], "strides": [2, 2],
                                            "paddings": [1, 1]}, ("Out",)),
        ("pool2d", {"X": f64(2, 3, 5, 5)}, {"pooling_type": "max", "ksize": [2, 2], "adaptive": True}, ("Out",)),
        ("batch_norm", _bn_inputs((4, 3, 3, 3)), {}, BN_OUTS),
    ]
    for op, ins, attrs, outs in cases:
        first = outs[0]
        wrt = [s for s in ins if s in ("Input", "Filter", "X", "Scale", "Bias")]
        results = []
        for place in (fluid.CPUPlace(), fluid.CUDAPlace(0)):
            prog, feed, names = build_op(op, ins, attrs, outputs=outs, grad_inputs=wrt)
            block = prog.global_block()
            block.create_var(name="loss", shape=(1,), dtype="float64")
            block.append_op("reduce_sum", inputs={"X": names[first]}, outputs={"Out": ["loss"]},
                            attrs={"reduce_all": True})
            fluid.backward.append_backward(block.var("loss"))
            fetch = names[first] + [s.lower() + "_in@GRAD" for s in wrt]
            results.append(fluid.Executor(place).run(prog, feed=feed, fetch_list=fetch, scope=fluid.Scope()))
        for cpu, gpu in zip(*results):
            np.testing.assert_allclose(gpu, cpu, rtol=1e-10, atol=1e-12, err_msg=op)


@pytest.mark.gpu
def test_gpu_dropout_draws_its_own_mask_and_applies_it():
    """On a GPU the mask is drawn on the device (other numbers than the CPU's, as in Paddle): what holds
    is Out = X * Mask with a 0/1 mask, X@GRAD = Mask, the same mask again for the same seed, and about
    the kept fraction asked for."""
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    x = f64(40, 50)

    def run():
        prog, feed, names = build_op("dropout", {"X": x}, {"fix_seed": True, "seed": 2, "dropout_prob": 0.3},
                                     outputs=("Out", "Mask"), grad_inputs=["X"])
        block = prog.global_block()
        block.create_var(name="loss", shape=(1,), dtype="float64")
        block.append_op("reduce_sum", inputs={"X": names["Out"]}, outputs={"Out": ["loss"]}, attrs={"reduce_all": True})
        fluid.backward.append_backward(block.var("loss"))
        return fluid.Executor(fluid.CUDAPlace(0)).run(prog, feed=feed, fetch_list=names["Out"] + names["Mask"] +
                                                      ["x_in@GRAD"], scope=fluid.Scope())

    out, mask, grad = run()
    assert set(np.unique(mask)) <= {0, 1}
    np.testing.assert_array_equal(out, x * mask)
    np.testing.assert_array_equal(grad, mask)
    assert 0.6 < mask.mean() < 0.8
    np.testing.assert_array_equal(run()[1], mask)
