"""matmul's Paddle 1.8 shape rules for 1-D operands and its head_number attr."""
import numpy as np
import pytest

import fluidist as fluid
from op_test import check_grad, run_op

rng = np.random.RandomState(7)


def paddle_matmul_reference(x, y, tx, ty):
    """NumPy model of Paddle's rule: 1-D X is a row, 1-D Y a column, before the transposes; the
    axes a 1-D operand brought are dropped when they are 1; a scalar product is [1]."""
    xx = x.reshape(1, -1) if x.ndim == 1 else x
    yy = y.reshape(-1, 1) if y.ndim == 1 else y
    xx = xx.swapaxes(-1, -2) if tx else xx
    yy = yy.swapaxes(-1, -2) if ty else yy
    out = np.matmul(xx, yy)
    shape = list(out.shape)
    if x.ndim == 1 and shape[-2] == 1:
        del shape[-2]
    if y.ndim == 1 and shape and shape[-1] == 1:
        del shape[-1]
    return out.reshape(shape or [1])


# (x shape, y shape, transpose_X, transpose_Y) -> output shape Paddle 1.8 infers (and runs)
PADDLE18_SHAPES = [
    ([5], [5], False, False, (1,)),
    ([1], [4], False, True, (4,)),
    ([3], [1], True, False, (3,)),
    ([3], [4], True, True, (3, 4)),
    ([3], [1, 4], True, False, (3, 4)),
    ([3], [2, 1, 4], True, False, (2, 3, 4)),
    ([3, 1], [4], False, True, (3, 4)),
    ([2, 3, 1], [4], False, True, (2, 3, 4)),
    ([2, 3, 5], [5], False, False, (2, 3)),
    ([5], [2, 5, 4], False, False, (2, 4)),
]


@pytest.mark.parametrize("xs,ys,tx,ty,expect", PADDLE18_SHAPES)
def test_vector_operands_follow_paddle_shapes_and_numbers(xs, ys, tx, ty, expect):
    x, y = rng.uniform(-1, 1, xs), rng.uniform(-1, 1, ys)
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        xv = fluid.data("x", xs, "float64")
        yv = fluid.data("y", ys, "float64")
        out = fluid.layers.matmul(xv, yv, tx, ty)
    assert tuple(out.shape) == expect
    got, = fluid.Executor(fluid.CPUPlace()).run(prog, feed={"x": x, "y": y}, fetch_list=[out])
    assert got.shape == expect
    np.testing.assert_allclose(got, paddle_matmul_reference(x, y, tx, ty), rtol=1e-12)
    check_grad("matmul", {"X": x, "Y": y}, ["X", "Y"], {"transpose_X": tx, "transpose_Y": ty, "alpha": 1.5})


def test_unknown_vector_length_is_not_dropped():
    # Paddle 1.8: a transposed 1-D X of unknown length gives an unknown axis, kept
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        out = fluid.layers.matmul(fluid.data("x", [-1], "float32"), fluid.data("y", [2, 1, 4], "float32"), True)
    assert tuple(out.shape) == (2, -1, 4)


def heads_reference(x, y, heads):
    """Per head h: X's h-th column block times Y's h-th row block (widths equal to heights) or
    column block (otherwise), laid side by side."""
    xb = np.split(x, heads, axis=-1)
    yb = np.split(y, heads, axis=-2 if x.shape[-1] == y.shape[-2] else -1)
    return np.concatenate([a @ b for a, b in zip(xb, yb)], axis=-1)


@pytest.mark.parametrize("xs,ys,expect", [
    ([3, 24], [24, 4], (3, 16)), ([2, 3, 24], [2, 24, 4], (2, 3, 16)),
    ([3, 8], [2, 16], (3, 16)), ([2, 3, 8], [2, 2, 16], (2, 3, 16))])
def test_head_number_splits_like_paddle(xs, ys, expect):
    # shapes as Paddle 1.8 (MKL build) runs them with head_number=4
    x, y = rng.uniform(-1, 1, xs), rng.uniform(-1, 1, ys)
    attrs = {"head_number": 4, "alpha": 2.0}
    out = run_op("matmul", {"X": x, "Y": y}, attrs)["Out"][0]
    assert out.shape == expect
    np.testing.assert_allclose(out, 2.0 * heads_reference(x, y, 4), rtol=1e-12)
    check_grad("matmul", {"X": x, "Y": y}, ["X", "Y"], attrs)


def test_head_number_with_transposes():
    x, y = rng.uniform(-1, 1, (8, 3)), rng.uniform(-1, 1, (16, 2))
    attrs = {"head_number": 4, "transpose_X": True, "transpose_Y": True}
    out = run_op("matmul", {"X": x, "Y": y}, attrs)["Out"][0]
    np.testing.assert_allclose(out, heads_reference(x.T, y.T, 4), rtol=1e-12)
    check_grad("matmul", {"X": x, "Y": y}, ["X", "Y"], attrs)
