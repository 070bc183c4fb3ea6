"""Deformable convolution (``deformable_conv`` / ``deformable_conv_v1``) against a NumPy reference that
samples tap by tap, gradients (input, offset, mask, filter) against finite differences, and the layer."""
import itertools
import math

import numpy as np
import pytest

import fluidist as fluid
from op_test import check_grad, run_op

rng = np.random.RandomState(37)


def bilinear(img, y, x):
    h, w = img.shape
    if not (-1 < y < h and -1 < x < w):
        return 0.0
    y0, x0 = math.floor(y), math.floor(x)
    total = 0.0
    for yy, xx in itertools.product((y0, y0 + 1), (x0, x0 + 1)):
        if 0 <= yy < h and 0 <= xx < w:
            total += (1 - abs(y - yy)) * (1 - abs(x - xx)) * img[yy, xx]
    return total


def reference(x, offset, mask, filt, stride, pad, dil, groups, dgroups):
    n, c, h, w = x.shape
    oc, _, kh, kw = filt.shape
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, oc, oh, ow))
    cg, og = c // groups, oc // groups
    for b, o, i, j in itertools.product(range(n), range(oc), range(oh), range(ow)):
        g = o // og
        for ci, a, e in itertools.product(range(cg), range(kh), range(kw)):
            ch = g * cg + ci
            dg = ch // (c // dgroups)
            k = a * kw + e
            dy, dx = offset[b, dg * 2 * kh * kw + 2 * k, i, j], offset[b, dg * 2 * kh * kw + 2 * k + 1, i, j]
            v = bilinear(x[b, ch], i * stride[0] - pad[0] + a * dil[0] + dy, j * stride[1] - pad[1] + e * dil[1] + dx)
            if mask is not None:
                v *= mask[b, dg * kh * kw + k, i, j]
            out[b, o, i, j] += filt[o, ci, a, e] * v
    return out


CASES = [  # shape, filter, stride, pad, dilation, groups, deformable groups
    ((1, 2, 4, 5), (3, 2, 3, 3), [1, 1], [1, 1], [1, 1], 1, 1),
    ((2, 4, 5, 6), (2, 2, 2, 3), [2, 1], [1, 0], [1, 2], 2, 2),
    ((1, 2, 3, 3), (2, 1, 1, 1), [1, 1], [0, 0], [1, 1], 2, 1),
]


@pytest.mark.parametrize("modulated", [True, False])
@pytest.mark.parametrize("shape,fshape,stride,pad,dil,groups,dgroups", CASES)
def test_deformable_conv(modulated, shape, fshape, stride, pad, dil, groups, dgroups):
    x = rng.uniform(-1, 1, shape)
    filt = rng.uniform(-1, 1, fshape)
    kh, kw = fshape[2:]
    oh = (shape[2] + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (shape[3] + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    offset = rng.uniform(-1.7, 1.7, (shape[0], 2 * dgroups * kh * kw, oh, ow))
    offset[np.abs(offset - np.round(offset)) < 0.01] += 0.05        # away from the kinks at whole pixels
    mask = rng.uniform(0, 1, (shape[0], dgroups * kh * kw, oh, ow)) if modulated else None
    attrs = {"strides": stride, "paddings": pad, "dilations": dil, "groups": groups, "deformable_groups": dgroups,
             "im2col_step": 1}
    ins = {"Input": x, "Offset": offset, "Filter": filt}
    if modulated:
        ins["Mask"] = mask
    op_type = "deformable_conv" if modulated else "deformable_conv_v1"
    out = run_op(op_type, ins, attrs, outputs=("Output",))["Output"][0]
    np.testing.assert_allclose(out, reference(x, offset, mask, filt, stride, pad, dil, groups, dgroups), rtol=1e-10,
                               atol=1e-12)
    check_grad(op_type, ins, list(ins), attrs, out_slot="Output", outputs=("Output",), rtol=1e-4, atol=1e-6)


def test_deformable_conv_layer_with_zero_offsets_is_conv2d():
    x = rng.uniform(-1, 1, (2, 3, 6, 5)).astype("float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        xv = fluid.data("x", [None, 3, 6, 5], "float32")
        off = fluid.data("off", [None, 18, 6, 5], "float32")
        m = fluid.data("m", [None, 9, 6, 5], "float32")
        y = fluid.layers.deformable_conv(xv, off, m, num_filters=4, filter_size=3, padding=1,
                                         param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        z = fluid.layers.conv2d(xv, 4, 3, padding=1, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        v1 = fluid.layers.deformable_conv(xv, off, None, num_filters=4, filter_size=3, padding=1, modulated=False,
                                          param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
    assert [o.type for o in main.global_block().ops] == ["deformable_conv", "conv2d", "deformable_conv_v1"]
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    got = exe.run(main, feed={"x": x, "off": np.zeros((2, 18, 6, 5), "float32"), "m": np.ones((2, 9, 6, 5), "float32")},
                  fetch_list=[y, z, v1])
    np.testing.assert_allclose(got[0], got[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], got[1], rtol=1e-5, atol=1e-6)
