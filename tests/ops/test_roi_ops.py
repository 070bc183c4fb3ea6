"""ROI pooling ops against NumPy references written bin by bin after Paddle 1.8's kernels (``prroi_pool``
against a numerical integral of the bilinear interpolation), gradients against finite differences."""
import itertools
import math

import numpy as np
import pytest

from op_test import check_grad, run_op

rng = np.random.RandomState(31)
LOD = {"rois_in": [[0, 2, 3]]}


def c_round(v):
    return math.copysign(math.floor(abs(v) + 0.5), v)


def rois(scale_to):
    lo = rng.uniform(0, scale_to * 0.5, (3, 2))
    return np.concatenate([lo, lo + rng.uniform(scale_to * 0.2, scale_to * 0.5, (3, 2))], axis=1)


def image_of(r):
    return 0 if r < 2 else 1


def test_roi_pool():
    x = rng.permutation(2 * 3 * 6 * 5).reshape(2, 3, 6, 5).astype("float64")
    r = rois(20)
    attrs = {"pooled_height": 2, "pooled_width": 3, "spatial_scale": 0.25}
    got = run_op("roi_pool", {"X": x, "ROIs": r}, attrs, outputs=("Out", "Argmax"), lods=LOD)
    for k, c, i, j in itertools.product(range(3), range(3), range(2), range(3)):
        sw, sh, ew, eh = (int(c_round(v * 0.25)) for v in r[k])
        rh, rw = max(eh - sh + 1, 1), max(ew - sw + 1, 1)
        h0, h1 = (min(max(int(f) + sh, 0), 6) for f in (math.floor(i * rh / 2), math.ceil((i + 1) * rh / 2)))
        w0, w1 = (min(max(int(f) + sw, 0), 5) for f in (math.floor(j * rw / 3), math.ceil((j + 1) * rw / 3)))
        win = x[image_of(k), c, h0:h1, w0:w1]
        if not win.size:
            assert got["Out"][0][k, c, i, j] == 0 and got["Argmax"][0][k, c, i, j] == -1
            continue
        assert got["Out"][0][k, c, i, j] == win.max()
        a, b = np.unravel_index(win.argmax(), win.shape)
        assert got["Argmax"][0][k, c, i, j] == (h0 + a) * 5 + w0 + b
    check_grad("roi_pool", {"X": x, "ROIs": r}, ["X"], attrs, outputs=("Out", "Argmax"), lods=LOD)


def _bilinear(img, y, x):
    h, w = img.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    y1, x1 = (y0 + 1, x0 + 1)
    if y0 >= h - 1:
        y = y0 = y1 = h - 1
    if x0 >= w - 1:
        x = x0 = x1 = w - 1
    ly, lx = y - y0, x - x0
    return (1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1] + ly * (1 - lx) * img[y1, x0] + \
        ly * lx * img[y1, x1]


@pytest.mark.parametrize("ratio", [-1, 2])
def test_roi_align(ratio):
    x = rng.uniform(-1, 1, (2, 2, 6, 7))
    r = rois(12)
    attrs = {"pooled_height": 2, "pooled_width": 2, "spatial_scale": 0.5, "sampling_ratio": ratio}
    out = run_op("roi_align", {"X": x, "ROIs": r}, attrs, lods=LOD)["Out"][0]
    for k, c in itertools.product(range(3), range(2)):
        x0, y0, x1, y1 = r[k] * 0.5
        rw, rh = max(x1 - x0, 1), max(y1 - y0, 1)
        gy = ratio if ratio > 0 else math.ceil(rh / 2)
        gx = ratio if ratio > 0 else math.ceil(rw / 2)
        for i, j in itertools.product(range(2), range(2)):
            total = sum(_bilinear(x[image_of(k), c], y0 + i * rh / 2 + (a + 0.5) * rh / 2 / gy,
                                  x0 + j * rw / 2 + (b + 0.5) * rw / 2 / gx) for a in range(gy) for b in range(gx))
            assert out[k, c, i, j] == pytest.approx(total / (gy * gx), rel=1e-10, abs=1e-12)
    check_grad("roi_align", {"X": x, "ROIs": r}, ["X"], attrs, lods=LOD)


def test_psroi_pool():
    x = rng.uniform(-1, 1, (2, 2 * 2 * 3, 5, 6))
    r = np.round(rois(20))
    attrs = {"pooled_height": 2, "pooled_width": 3, "spatial_scale": 0.25, "output_channels": 2}
    out = run_op("psroi_pool", {"X": x, "ROIs": r}, attrs, lods=LOD)["Out"][0]
    for k, c, i, j in itertools.product(range(3), range(2), range(2), range(3)):
        sw, sh = c_round(r[k, 0]) * 0.25, c_round(r[k, 1]) * 0.25
        ew, eh = (c_round(r[k, 2]) + 1) * 0.25, (c_round(r[k, 3]) + 1) * 0.25
        bh, bw = max(eh - sh, 0.1) / 2, max(ew - sw, 0.1) / 3
        h0, h1 = (min(max(f, 0), 5) for f in (math.floor(i * bh + sh), math.ceil((i + 1) * bh + sh)))
        w0, w1 = (min(max(f, 0), 6) for f in (math.floor(j * bw + sw), math.ceil((j + 1) * bw + sw)))
        win = x[image_of(k), (c * 2 + i) * 3 + j, h0:h1, w0:w1]
        assert out[k, c, i, j] == pytest.approx(win.mean() if win.size else 0.0, rel=1e-10)
    check_grad("psroi_pool", {"X": x, "ROIs": r}, ["X"], attrs, lods=LOD)


def test_prroi_pool_integrates_the_bilinear_interpolation():
    x = rng.uniform(-1, 1, (2, 2, 5, 6))
    r = rois(16)
    attrs = {"pooled_height": 2, "pooled_width": 2, "spatial_scale": 0.25}
    out = run_op("prroi_pool", {"X": x, "ROIs": r}, attrs, lods=LOD)["Out"][0]
    steps = 200                                       # a midpoint rule of the 2-D integral
    for k, c in itertools.product(range(3), range(2)):
        x0, y0, x1, y1 = r[k] * 0.25
        bh, bw = (y1 - y0) / 2, (x1 - x0) / 2
        img = np.pad(x[image_of(k), c], ((0, 1), (0, 1)))            # zero outside the feature map
        for i, j in itertools.product(range(2), range(2)):
            ys = y0 + i * bh + (np.arange(steps) + 0.5) * bh / steps
            xs = x0 + j * bw + (np.arange(steps) + 0.5) * bw / steps
            yi, xi = np.floor(ys).astype(int), np.floor(xs).astype(int)
            ly, lx = ys - yi, xs - xi
            vals = ((1 - ly)[:, None] * (1 - lx)[None] * img[yi][:, xi] + (1 - ly)[:, None] * lx[None] * img[yi][:, xi + 1]
                    + ly[:, None] * (1 - lx)[None] * img[yi + 1][:, xi] + ly[:, None] * lx[None] * img[yi + 1][:, xi + 1])
            assert out[k, c, i, j] == pytest.approx(vals.mean(), abs=2e-5)
    check_grad("prroi_pool", {"X": x, "ROIs": r}, ["X", "ROIs"], attrs, lods=LOD, rtol=1e-4, atol=1e-6)
