"""conv3d, the transposed convolutions, pool3d and the interpolation ops against loop-by-loop NumPy
references, gradients against finite differences."""
import itertools

import numpy as np
import pytest

from op_test import check_grad, run_op

rng = np.random.RandomState(5)


def naive_conv(x, w, stride, pad, dil, groups):
    """Cross-correlation by explicit loops; pad is [(before, after)] per spatial dim."""
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pad))
    out_sz = [(xp.shape[2 + i] - (dil[i] * (k[i] - 1) + 1)) // stride[i] + 1 for i in range(len(k))]
    out = np.zeros((n, m) + tuple(out_sz))
    per = m // groups
    for o in itertools.product(*(range(s) for s in out_sz)):
        for f in range(m):
            g = f // per
            acc = np.zeros(n)
            for kk in itertools.product(*(range(s) for s in k)):
                pos = tuple(o[i] * stride[i] + kk[i] * dil[i] for i in range(len(k)))
                acc += (xp[(slice(None), slice(g * cg, (g + 1) * cg)) + pos] * w[(f, slice(None)) + kk]).sum(1)
            out[(slice(None), f) + o] = acc
    return out


def naive_conv_transpose(x, w, stride, pad, dil, groups, out_size=None):
    """Each input pixel scatters its filter slice into the output; then the pads are cropped."""
    n, c = x.shape[:2]
    og = w.shape[1]
    k = w.shape[2:]
    nd = len(k)
    full = [(x.shape[2 + i] - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 for i in range(nd)]
    if out_size:
        full = [max(f, out_size[i] + pad[i][0] + pad[i][1]) for i, f in enumerate(full)]
    out = np.zeros((n, og * groups) + tuple(full))
    cg = c // groups
    for ci in range(c):
        g = ci // cg
        for p in itertools.product(*(range(s) for s in x.shape[2:])):
            for kk in itertools.product(*(range(s) for s in k)):
                pos = tuple(p[i] * stride[i] + kk[i] * dil[i] for i in range(nd))
                out[(slice(None), slice(g * og, (g + 1) * og)) + pos] += \
                    x[(slice(None), ci) + p][:, None] * w[(ci, slice(None)) + kk][None, :]
    sizes = out_size or [full[i] - pad[i][0] - pad[i][1] for i in range(nd)]
    return out[(slice(None), slice(None)) + tuple(slice(pad[i][0], pad[i][0] + sizes[i]) for i in range(nd))]


def test_conv3d_against_loops_and_its_gradient():
    x = rng.uniform(-1, 1, (2, 4, 3, 4, 3))
    w = rng.uniform(-1, 1, (4, 2, 2, 3, 2))
    attrs = {"strides": [1, 2, 1], "paddings": [1, 0, 1], "dilations": [1, 1, 2], "groups": 2}
    out = run_op("conv3d", {"Input": x, "Filter": w}, attrs, outputs=("Output",))["Output"][0]
    np.testing.assert_allclose(out, naive_conv(x, w, [1, 2, 1], [(1, 1), (0, 0), (1, 1)], [1, 1, 2], 2), rtol=1e-10)
    check_grad("conv3d", {"Input": x, "Filter": w}, ["Input", "Filter"], attrs, out_slot="Output", outputs=("Output",))


def test_conv3d_channel_last():
    x = rng.uniform(-1, 1, (1, 3, 3, 3, 2))
    w = rng.uniform(-1, 1, (2, 2, 2, 2, 2))
    out = run_op("conv3d", {"Input": x, "Filter": w}, {"data_format": "NDHWC"}, outputs=("Output",))["Output"][0]
    want = naive_conv(x.transpose(0, 4, 1, 2, 3), w, [1] * 3, [(0, 0)] * 3, [1] * 3, 1).transpose(0, 2, 3, 4, 1)
    np.testing.assert_allclose(out, want, rtol=1e-10)


@pytest.mark.parametrize("attrs,out_size", [
    ({"strides": [2, 2], "paddings": [1, 1], "groups": 2}, None),
    ({"strides": [2, 1], "paddings": [0, 1, 1, 0], "dilations": [1, 2]}, None),
    ({"strides": [2, 2], "paddings": [1, 1], "output_size": [6, 5]}, [6, 5]),
])
def test_conv2d_transpose_against_loops_and_its_gradient(attrs, out_size):
    x = rng.uniform(-1, 1, (2, 4, 3, 3))
    w = rng.uniform(-1, 1, (4, 3, 3, 2))
    groups = attrs.get("groups", 1)
    p = attrs["paddings"]
    pad = [(p[0], p[0]), (p[1], p[1])] if len(p) == 2 else [(p[0], p[1]), (p[2], p[3])]
    out = run_op("conv2d_transpose", {"Input": x, "Filter": w}, attrs, outputs=("Output",))["Output"][0]
    want = naive_conv_transpose(x, w, attrs["strides"], pad, attrs.get("dilations", [1, 1]), groups, out_size)
    np.testing.assert_allclose(out, want, rtol=1e-10)
    check_grad("conv2d_transpose", {"Input": x, "Filter": w}, ["Input", "Filter"], attrs, out_slot="Output",
               outputs=("Output",))


def test_conv_transpose_rejects_an_output_size_out_of_reach():
    with pytest.raises(ValueError, match="output_size"):
        run_op("conv2d_transpose", {"Input": np.zeros((1, 1, 3, 3)), "Filter": np.zeros((1, 1, 3, 3))},
               {"strides": [2, 2], "output_size": [9, 9]}, outputs=("Output",))


def test_conv3d_transpose_and_its_gradient():
    x = rng.uniform(-1, 1, (1, 2, 2, 3, 2))
    w = rng.uniform(-1, 1, (2, 2, 2, 2, 3))
    attrs = {"strides": [2, 1, 2], "paddings": [0, 1, 1], "dilations": [1, 1, 1]}
    out = run_op("conv3d_transpose", {"Input": x, "Filter": w}, attrs, outputs=("Output",))["Output"][0]
    want = naive_conv_transpose(x, w, [2, 1, 2], [(0, 0), (1, 1), (1, 1)], [1, 1, 1], 1)
    np.testing.assert_allclose(out, want, rtol=1e-10)
    check_grad("conv3d_transpose", {"Input": x, "Filter": w}, ["Input", "Filter"], attrs, out_slot="Output",
               outputs=("Output",))


def naive_pool(x, ksize, stride, pad, kind, exclusive=True, ceil=False):
    spatial = x.shape[2:]
    out_sz = []
    for s, k, st, (a, b) in zip(spatial, ksize, stride, pad):
        span = s + a + b - k
        out_sz.append(-(-span // st) + 1 if ceil else span // st + 1)
    out = np.zeros(x.shape[:2] + tuple(out_sz))
    for o in itertools.product(*(range(s) for s in out_sz)):
        lo = [o[i] * stride[i] - pad[i][0] for i in range(len(o))]
        sl = tuple(slice(max(l, 0), min(l + k, s)) for l, k, s in zip(lo, ksize, spatial))
        win = x[(slice(None), slice(None)) + sl].reshape(x.shape[:2] + (-1,))
        if kind == "max":
            out[(slice(None), slice(None)) + o] = win.max(-1)
        else:
            out[(slice(None), slice(None)) + o] = win.sum(-1) / (win.shape[-1] if exclusive else np.prod(ksize))
    return out


@pytest.mark.parametrize("attrs", [
    {"pooling_type": "max", "ksize": [2, 2, 2], "strides": [2, 2, 2], "paddings": [1, 1, 1]},
    {"pooling_type": "avg", "ksize": [3, 2, 2], "strides": [2, 2, 2], "paddings": [1, 0, 0], "ceil_mode": True},
    {"pooling_type": "avg", "ksize": [3, 3, 3], "strides": [2, 2, 2], "paddings": [1, 1, 1], "exclusive": False},
])
def test_pool3d_against_loops_and_its_gradient(attrs):
    x = rng.uniform(-1, 1, (1, 2, 5, 4, 5))
    out = run_op("pool3d", {"X": x}, attrs)["Out"][0]
    p = attrs["paddings"]
    want = naive_pool(x, attrs["ksize"], attrs["strides"], [(v, v) for v in p], attrs["pooling_type"],
                      attrs.get("exclusive", True), attrs.get("ceil_mode", False))
    np.testing.assert_allclose(out, want, rtol=1e-10)
    check_grad("pool3d", {"X": x}, ["X"], attrs)


def test_pool3d_global_and_adaptive():
    x = rng.uniform(-1, 1, (1, 2, 4, 3, 5))
    out = run_op("pool3d", {"X": x}, {"pooling_type": "max", "global_pooling": True})["Out"][0]
    np.testing.assert_allclose(out, x.max(axis=(2, 3, 4), keepdims=True))
    out = run_op("pool3d", {"X": x}, {"pooling_type": "avg", "adaptive": True, "ksize": [2, 1, 2]})["Out"][0]
    np.testing.assert_allclose(out[0, 1, 1, 0, 0], x[0, 1, 2:4, :, 0:3].mean())
    check_grad("pool3d", {"X": x}, ["X"], {"pooling_type": "max", "adaptive": True, "ksize": [2, 2, 2]})


# ------------------------------------------------------------------ interpolation
def ratio(n_in, n_out, align):
    return 0.0 if n_out <= 1 else ((n_in - 1) / (n_out - 1) if align else n_in / n_out)


def linear_1d(n_in, n_out, align, mode):
    """The (n_out, n_in) interpolation matrix of one axis."""
    r = ratio(n_in, n_out, align)
    m = np.zeros((n_out, n_in))
    for k in range(n_out):
        src = max(r * (k + 0.5) - 0.5, 0.0) if (mode == 0 and not align) else r * k
        i0 = min(int(src), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        d = src - i0
        m[k, i0] += 1 - d
        m[k, i1] += d
    return m


@pytest.mark.parametrize("align,mode", [(True, 1), (False, 0), (False, 1)])
def test_bilinear_interp_is_separable_linear_sampling(align, mode):
    x = rng.uniform(-1, 1, (2, 3, 4, 5))
    attrs = {"out_h": 6, "out_w": 3, "align_corners": align, "align_mode": mode}
    out = run_op("bilinear_interp", {"X": x}, attrs)["Out"][0]
    mh, mw = linear_1d(4, 6, align, mode), linear_1d(5, 3, align, mode)
    np.testing.assert_allclose(out, np.einsum("ah,bw,nchw->ncab", mh, mw, x), rtol=1e-5, atol=1e-6)  # float32 weights
    check_grad("bilinear_interp", {"X": x}, ["X"], attrs)


@pytest.mark.parametrize("align", [True, False])
def test_nearest_interp(align):
    x = rng.uniform(-1, 1, (1, 2, 3, 4))
    attrs = {"out_h": 5, "out_w": 7, "align_corners": align, "interp_method": "nearest"}
    out = run_op("nearest_interp", {"X": x}, attrs)["Out"][0]
    rh, rw = ratio(3, 5, align), ratio(4, 7, align)
    hi = [int(rh * k + (0.5 if align else 0)) for k in range(5)]
    wi = [int(rw * k + (0.5 if align else 0)) for k in range(7)]
    np.testing.assert_allclose(out, x[:, :, hi][:, :, :, wi])
    check_grad("nearest_interp", {"X": x}, ["X"], attrs)


def test_interp_output_size_sources():
    x = rng.uniform(-1, 1, (1, 1, 4, 4))
    out = run_op("bilinear_interp", {"X": x, "OutSize": np.array([2, 3], np.int32)}, {"out_h": 9, "out_w": 9})
    assert out["Out"][0].shape == (1, 1, 2, 3)
    out = run_op("bilinear_interp", {"X": x}, {"scale": 1.5, "out_h": 9, "out_w": 9})
    assert out["Out"][0].shape == (1, 1, 6, 6)
    out = run_op("bilinear_interp", {"X": x, "SizeTensor": [("h", np.array([3], np.int32)),
                                                          ("w", np.array([5], np.int32))]})
    assert out["Out"][0].shape == (1, 1, 3, 5)
    with pytest.raises(ValueError, match="output size"):
        run_op("bilinear_interp", {"X": x}, {"out_h": 0, "out_w": 3})


def test_trilinear_interp():
    x = rng.uniform(-1, 1, (1, 2, 3, 2, 3))
    attrs = {"out_d": 4, "out_h": 3, "out_w": 2, "align_corners": False, "align_mode": 0,
             "interp_method": "trilinear"}
    out = run_op("trilinear_interp", {"X": x}, attrs)["Out"][0]
    md, mh, mw = linear_1d(3, 4, False, 0), linear_1d(2, 3, False, 0), linear_1d(3, 2, False, 0)
    np.testing.assert_allclose(out, np.einsum("ad,bh,cw,ksdhw->ksabc", md, mh, mw, x), rtol=1e-5, atol=1e-6)
    check_grad("trilinear_interp", {"X": x}, ["X"], attrs)


@pytest.mark.parametrize("align", [True, False])
def test_bicubic_interp_gradient(align):
    x = rng.uniform(-1, 1, (1, 2, 4, 3))
    attrs = {"out_h": 6, "out_w": 5, "align_corners": align, "interp_method": "bicubic"}
    out = run_op("bicubic_interp", {"X": x}, attrs)["Out"][0]
    if align:  # align_corners keeps the corner pixels
        np.testing.assert_allclose(out[:, :, [0, -1]][:, :, :, [0, -1]], x[:, :, [0, -1]][:, :, :, [0, -1]], atol=1e-6)
    check_grad("bicubic_interp", {"X": x}, ["X"], attrs)


# Paddle 1.8.5's uint8 outputs for X = (arange * 23) % 256: bilinear [1, 1, 3, 4] -> 5 x 7, trilinear
# [1, 1, 2, 3, 4] -> 3 x 4 x 5 (each truncates a float32 sum where Paddle's kernels do)
PADDLE18_UINT8 = [
    ("bilinear_interp", True, 1, [
        0, 11, 23, 34, 46, 57, 69, 46, 57, 69, 80, 92, 103, 115, 92, 103, 115, 126, 138, 149, 161, 138, 149, 161,
        172, 184, 195, 207, 184, 195, 207, 218, 230, 241, 253]),
    ("bilinear_interp", False, 0, [
        0, 8, 21, 34, 47, 60, 69, 36, 45, 58, 71, 84, 97, 105, 92, 100, 113, 126, 139, 152, 161, 147, 155, 168,
        181, 194, 207, 216, 184, 192, 205, 218, 231, 244, 253]),
    ("bilinear_interp", False, 1, [
        0, 13, 26, 39, 52, 65, 69, 55, 68, 81, 94, 107, 120, 124, 110, 123, 136, 149, 162, 176, 179, 165, 178, 191,
        205, 218, 231, 234, 184, 197, 210, 223, 236, 249, 253]),
    ("trilinear_interp", True, 1, [
        0, 17, 34, 51, 69, 61, 78, 95, 113, 130, 122, 139, 157, 174, 191, 184, 201, 218, 235, 253, 10, 27, 44, 61,
        79, 71, 88, 105, 123, 140, 132, 149, 167, 173, 158, 194, 211, 228, 213, 135, 20, 37, 54, 71, 89, 81, 98,
        115, 133, 150, 142, 159, 177, 173, 126, 204, 221, 238, 191, 17]),
    ("trilinear_interp", False, 0, [
        0, 16, 34, 52, 69, 57, 73, 92, 110, 126, 126, 142, 161, 179, 195, 184, 200, 218, 236, 253, 10, 26, 44, 62,
        79, 67, 83, 102, 120, 136, 136, 152, 171, 175, 157, 194, 210, 228, 208, 135, 20, 36, 54, 72, 89, 77, 93,
        112, 130, 146, 146, 162, 181, 170, 119, 204, 220, 238, 180, 17]),
    ("trilinear_interp", False, 1, [
        0, 18, 36, 55, 69, 69, 87, 105, 124, 138, 138, 156, 174, 193, 207, 184, 202, 220, 239, 253, 13, 31, 50, 68,
        82, 82, 100, 119, 137, 151, 151, 169, 188, 172, 135, 197, 215, 234, 184, 95, 20, 38, 56, 75, 89, 89, 107,
        125, 144, 158, 158, 176, 194, 161, 99, 204, 222, 240, 156, 17]),
]


@pytest.mark.parametrize("op,align_corners,align_mode,paddle18", PADDLE18_UINT8)
def test_uint8_interpolation_truncates_as_paddle(op, align_corners, align_mode, paddle18):
    shape, sizes = ((1, 1, 3, 4), {"out_h": 5, "out_w": 7}) if op == "bilinear_interp" else \
        ((1, 1, 2, 3, 4), {"out_d": 3, "out_h": 4, "out_w": 5})
    x = (np.arange(int(np.prod(shape))).reshape(shape) * 23 % 256).astype(np.uint8)
    attrs = dict(sizes, interp_method=op.split("_")[0], align_corners=align_corners, align_mode=align_mode)
    out = run_op(op, {"X": x}, attrs)["Out"][0]
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out.ravel(), paddle18)
