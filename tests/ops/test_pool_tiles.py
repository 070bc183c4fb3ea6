"""pool2d / pool3d where the windows tile the input (stride = window, no padding) and global pooling:
against direct loops and finite differences, and the first-maximum rule on ties."""
import numpy as np
import pytest

from op_test import check_grad, run_op
from test_conv_ops import ref_pool2d

rng = np.random.RandomState(5)


@pytest.mark.parametrize("ptype", ["max", "avg"])
@pytest.mark.parametrize("shape,k", [((2, 3, 8, 8), [2, 2]), ((1, 2, 6, 9), [3, 3]), ((2, 2, 4, 6), [2, 3])])
def test_tiled_pool2d_against_loops_and_finite_differences(ptype, shape, k):
    x = rng.uniform(-1, 1, shape)
    attrs = {"pooling_type": ptype, "ksize": k, "strides": k, "paddings": [0, 0]}
    out = run_op("pool2d", {"X": x}, attrs)["Out"][0]
    np.testing.assert_allclose(out, ref_pool2d(x, ptype, k, k), rtol=1e-12)
    check_grad("pool2d", {"X": x}, ["X"], attrs)


def test_global_pooling_takes_the_tiled_path_too():
    x = rng.uniform(-1, 1, (2, 3, 4, 5))
    for ptype, ref in (("max", x.max(axis=(2, 3))), ("avg", x.mean(axis=(2, 3)))):
        out = run_op("pool2d", {"X": x}, {"pooling_type": ptype, "global_pooling": True, "ksize": [1, 1]})["Out"][0]
        np.testing.assert_allclose(out.reshape(2, 3), ref, rtol=1e-12)


def _max_pool_grad(x, k):
    from fluidist.ops.conv_nd import pool_backward, pool_forward
    attrs = {"pooling_type": "max", "ksize": k, "strides": k, "paddings": [0, 0]}
    out = pool_forward(np, x, attrs)
    return pool_backward(np, x, out, np.ones_like(out), attrs)


def test_ties_send_the_gradient_to_the_first_maximum_only():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = 5.0          # window (0, 0): two maxima, row-major first is (0, 1)
    x[0, 0, 2:, 2:] = 3.0                         # window (1, 1): all four equal
    x[0, 0, 3, 1] = 7.0
    dx = _max_pool_grad(x, [2, 2])[0, 0]
    expect = np.zeros((4, 4))
    expect[0, 1] = expect[2, 2] = expect[3, 1] = 1.0
    expect[0, 2] = 1.0                            # window (0, 1): all zeros, its first element
    np.testing.assert_array_equal(dx, expect)


def test_tiled_pool3d():
    x = rng.uniform(-1, 1, (1, 2, 4, 4, 6))
    attrs = {"pooling_type": "max", "ksize": [2, 2, 3], "strides": [2, 2, 3], "paddings": [0, 0, 0]}
    out = run_op("pool3d", {"X": x}, attrs)["Out"][0]
    ref = x.reshape(1, 2, 2, 2, 2, 2, 2, 3).max(axis=(3, 5, 7))
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    check_grad("pool3d", {"X": x}, ["X"], attrs)
