"""Pooling with indices (``max_pool2d/3d_with_index``), ``unpool`` and ``spp`` against loop-by-loop
NumPy references, gradients against finite differences."""
import itertools
import math

import numpy as np
import pytest

import fluidist as fluid
from fluidist.device import places
from op_test import check_grad, run_op

rng = np.random.RandomState(5)


def _windows(size, k, s, p, adaptive):
    if adaptive:
        return [(int(math.floor(i * size / k)), int(math.ceil((i + 1) * size / k))) for i in range(k)]
    n = (size - k + 2 * p) // s + 1
    return [(max(i * s - p, 0), min(i * s - p + k, size)) for i in range(n)]


def _max_pool_reference(x, ksize, strides, pads, glob, adaptive):
    spatial = x.shape[2:]
    if glob:
        ksize, pads = list(spatial), [0] * len(spatial)
    ranges = [_windows(n, k, s, p, adaptive) for n, k, s, p in zip(spatial, ksize, strides, pads)]
    shape = x.shape[:2] + tuple(len(r) for r in ranges)
    out, mask = np.zeros(shape), np.zeros(shape, dtype=np.int32)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for cell in itertools.product(*[range(len(r)) for r in ranges]):
            best, where = -np.inf, -1
            for pos in itertools.product(*[range(*ranges[d][cell[d]]) for d in range(len(cell))]):
                if x[(n, c) + pos] > best:
                    best, where = x[(n, c) + pos], int(np.ravel_multi_index(pos, spatial))
            out[(n, c) + cell], mask[(n, c) + cell] = best, where
    return out, mask


@pytest.mark.parametrize("nd,shape,ksize,strides,pads,glob,adaptive", [
    (2, (2, 3, 7, 6), [3, 3], [2, 2], [1, 1], False, False),
    (2, (1, 2, 5, 5), [2, 3], [1, 2], [0, 1], False, False),
    (2, (1, 2, 7, 5), [3, 2], [1, 1], [0, 0], False, True),
    (2, (1, 2, 4, 4), [3, 3], [1, 1], [0, 0], True, False),
    (3, (1, 2, 5, 4, 4), [2, 2, 2], [2, 2, 2], [1, 0, 1], False, False),
    (3, (1, 1, 5, 4, 3), [2, 3, 2], [1, 1, 1], [0, 0, 0], False, True),
])
def test_max_pool_with_index(nd, shape, ksize, strides, pads, glob, adaptive):
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype("float64")     # no ties
    attrs = {"ksize": ksize, "strides": strides, "paddings": pads, "global_pooling": glob, "adaptive": adaptive}
    op_type = "max_pool%dd_with_index" % nd
    got = run_op(op_type, {"X": x}, attrs, outputs=("Out", "Mask"))
    out, mask = _max_pool_reference(x, ksize, strides, pads, glob, adaptive)
    np.testing.assert_array_equal(got["Out"][0], out)
    np.testing.assert_array_equal(got["Mask"][0], mask)
    assert got["Mask"][0].dtype == np.int32
    check_grad(op_type, {"X": x}, ["X"], attrs, outputs=("Out", "Mask"))


def test_unpool_puts_values_back_where_the_mask_says():
    x = rng.uniform(0, 1, (2, 2, 6, 6))
    attrs = {"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0], "global_pooling": False, "adaptive": False}
    pooled = run_op("max_pool2d_with_index", {"X": x}, attrs, outputs=("Out", "Mask"))
    vals, idx = pooled["Out"][0], pooled["Mask"][0]
    out = run_op("unpool", {"X": vals, "Indices": idx}, {"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0],
                                                          "unpooling_type": "max"})["Out"][0]
    want = np.zeros((2, 2, 36))
    for n, c, k in itertools.product(range(2), range(2), range(9)):
        want[n, c, idx[n, c].ravel()[k]] = vals[n, c].ravel()[k]
    np.testing.assert_array_equal(out, want.reshape(2, 2, 6, 6))
    check_grad("unpool", {"X": vals, "Indices": idx}, ["X"],
               {"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0], "unpooling_type": "max"})


def test_unpool_names_an_index_outside_the_plane_on_the_host_and_gives_nan_on_a_device():
    vals = rng.uniform(0, 1, (1, 2, 2, 2))
    idx = np.array([[[[0, 3], [9, 15]], [[1, 16], [4, 5]]]], np.int32)     # 16: outside the 4 x 4 plane
    attrs = {"ksize": [2, 2], "strides": [2, 2], "paddings": [0, 0], "unpooling_type": "max"}
    if isinstance(fluid.CPUPlace(), places.CPUPlace):
        with pytest.raises(ValueError, match="Indices 'indices_in' holds 16, outside the output plane of 16 values"):
            run_op("unpool", {"X": vals, "Indices": idx}, attrs)
        return
    out = run_op("unpool", {"X": vals, "Indices": idx}, attrs)["Out"][0]     # the device reads nothing back:
    assert np.isfinite(out[0, 0]).all() and np.isnan(out[0, 1]).all()       # the bad index's plane is NaN


def _spp_reference(x, height, kind):
    n, c, h, w = x.shape
    levels = []
    for i in range(height):
        bins = 2 ** i
        kh, kw = math.ceil(h / bins), math.ceil(w / bins)
        ph, pw = (kh * bins - h + 1) // 2, (kw * bins - w + 1) // 2
        level = np.zeros((n, c, bins, bins))
        for a, b in itertools.product(range(bins), range(bins)):
            h0, h1 = max(a * kh - ph, 0), min(a * kh - ph + kh, h)
            w0, w1 = max(b * kw - pw, 0), min(b * kw - pw + kw, w)
            win = x[:, :, h0:h1, w0:w1]
            if not win.size:        # a window the padding leaves empty: Paddle's -FLT_MAX, or 0 / 0
                level[:, :, a, b] = -np.finfo(np.float32).max if kind == "max" else np.nan
            else:
                level[:, :, a, b] = win.max(axis=(2, 3)) if kind == "max" else win.mean(axis=(2, 3))
        levels.append(level.reshape(n, -1))
    return np.concatenate(levels, axis=1)


@pytest.mark.parametrize("kind,shape", [("max", (2, 3, 6, 7)), ("avg", (2, 2, 7, 4)), ("max", (1, 2, 5, 6)),
                                        ("avg", (1, 2, 6, 5))])
def test_spp(kind, shape):
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype("float64") / 10
    attrs = {"pyramid_height": 3, "pooling_type": kind}
    want = _spp_reference(x, 3, kind)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(run_op("spp", {"X": x}, attrs)["Out"][0], want)
    if np.isfinite(want).all() and (want > -1e30).all():
        check_grad("spp", {"X": x}, ["X"], attrs)
