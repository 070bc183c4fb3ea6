"""conv2d's one-GEMM kernels (``ops/conv_gemm``): both patch layouts (channel-last patches, channel-first
columns) against direct loops, their gradients against finite differences, and the workspaces they
reuse between calls."""
import numpy as np
import pytest

from fluidist.ops import conv_gemm
from op_test import check_grad, run_op
from test_conv_ops import ref_conv2d

rng = np.random.RandomState(11)


def f64(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float64)


# (x shape, w shape, attrs, pads (t, b, l, r)); the comment says which layout the case takes
CASES = [
    ((3, 1, 8, 8), (4, 1, 3, 3), {"paddings": [1, 1]}, (1, 1, 1, 1)),                        # C=1: columns
    ((2, 6, 4, 4), (5, 6, 3, 3), {"paddings": [1, 1]}, (1, 1, 1, 1)),                        # patches
    ((2, 1, 9, 7), (3, 1, 2, 3), {"strides": [2, 1], "paddings": [1, 0, 2, 1]}, (1, 0, 2, 1)),  # columns
    ((2, 5, 7, 6), (3, 5, 3, 2), {"strides": [1, 2], "paddings": [0, 2, 1, 1]}, (0, 2, 1, 1)),  # patches
    ((2, 1, 9, 9), (2, 1, 3, 3), {"dilations": [2, 2], "paddings": [1, 1]}, (1, 1, 1, 1)),    # columns
    ((2, 4, 7, 7), (3, 4, 2, 3), {"dilations": [2, 1], "strides": [2, 2]}, (0, 0, 0, 0)),     # patches
]


def _channel_last(xs, ws, attrs, pads):
    sw, dw = attrs.get("strides", [1, 1])[1], attrs.get("dilations", [1, 1])[1]
    wo = (xs[3] + pads[2] + pads[3] - (dw * (ws[3] - 1) + 1)) // sw + 1
    return conv_gemm.channel_last_is_better(xs[1], ws[3], wo)


def test_the_cases_take_both_layouts():
    layouts = [_channel_last(*case) for case in CASES]
    assert layouts == [False, True, False, True, False, True]


@pytest.mark.parametrize("xs,ws,attrs,pads", CASES)
def test_conv2d_gemm_against_loops_and_finite_differences(xs, ws, attrs, pads):
    x, w = f64(*xs), f64(*ws)
    out = run_op("conv2d", {"Input": x, "Filter": w}, attrs, outputs=("Output",))["Output"][0]
    expect = ref_conv2d(x, w, attrs.get("strides", (1, 1)), pads, attrs.get("dilations", (1, 1)))
    np.testing.assert_allclose(out, expect, rtol=1e-10, atol=1e-12)
    check_grad("conv2d", {"Input": x, "Filter": w}, ["Input", "Filter"], attrs, out_slot="Output")


@pytest.mark.parametrize("xs,ws,attrs,pads", CASES[:2])
def test_conv2d_gemm_bias_and_float32(xs, ws, attrs, pads):
    x, w = f64(*xs).astype(np.float32), f64(*ws).astype(np.float32)
    bias = f64(ws[0]).astype(np.float32)
    out = run_op("conv2d", {"Input": x, "Filter": w, "Bias": bias}, attrs, outputs=("Output",))["Output"][0]
    assert out.dtype == np.float32
    expect = ref_conv2d(x.astype(np.float64), w.astype(np.float64), attrs.get("strides", (1, 1)), pads)
    np.testing.assert_allclose(out, expect + bias.reshape(1, -1, 1, 1), rtol=1e-5, atol=1e-5)


def test_repeated_calls_reuse_workspaces_and_give_fresh_outputs():
    """The second call with the same shapes gets the same scratch buffers, a fresh output, and the
    right numbers although the buffers hold the first call's data."""
    x1, x2, w = f64(2, 3, 5, 5), f64(2, 3, 5, 5), f64(4, 3, 3, 3)
    pads, one = [(1, 1), (1, 1)], [1, 1]
    y1 = conv_gemm.conv2d_forward(np, x1, w, pads, one, one, (5, 5))
    bufs = dict(conv_gemm._LOCAL.buffers)
    y2 = conv_gemm.conv2d_forward(np, x2, w, pads, one, one, (5, 5))
    assert all(conv_gemm._LOCAL.buffers[k] is v for k, v in bufs.items())
    assert not np.shares_memory(y1, y2)
    np.testing.assert_allclose(y1, ref_conv2d(x1, w, pads=(1, 1, 1, 1)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(y2, ref_conv2d(x2, w, pads=(1, 1, 1, 1)), rtol=1e-10, atol=1e-12)
    dx1, dw1 = conv_gemm.conv2d_backward(np, x1, w, y1, pads, one, one)
    dx2, dw2 = conv_gemm.conv2d_backward(np, x1, w, y1, pads, one, one)
    assert not np.shares_memory(dx1, dx2) and not np.shares_memory(dw1, dw2)
    np.testing.assert_array_equal(dx1, dx2)
    np.testing.assert_array_equal(dw1, dw2)


@pytest.mark.parametrize("xs,ws,pads,dil", [
    ((2, 6, 4, 4), (5, 6, 3, 3), [(1, 1), (1, 1)], (1, 1)),
    ((2, 1, 9, 7), (3, 1, 3, 2), [(2, 0), (1, 1)], (2, 1)),
    ((3, 4, 6, 5), (2, 4, 5, 3), [(0, 4), (2, 0)], (1, 1)),
])
def test_stride_one_input_gradient_is_a_correlation_with_the_flipped_filter(xs, ws, pads, dil):
    """dX of a stride-1 convolution through ``conv2d_input_grad`` equals the window-by-window
    scatter of dY @ F (the path of other strides), float64 to the last bits."""
    x, w = f64(*xs), f64(*ws)
    ho = xs[2] + sum(pads[0]) - dil[0] * (ws[2] - 1)
    wo = xs[3] + sum(pads[1]) - dil[1] * (ws[3] - 1)
    dy = f64(xs[0], ws[0], ho, wo)
    dx = conv_gemm.conv2d_input_grad(np, w, dy, pads, dil)
    da = np.einsum("nmhw,mckl->nhwklc", dy, w)
    padded = (xs[0], xs[2] + sum(pads[0]), xs[3] + sum(pads[1]), xs[1])
    buf = conv_gemm._scatter_windows(np, padded, ws[2:], (ho, wo), (1, 1), dil, "test.dx",
                                     lambda i, j: da[:, :, :, i, j], np.float64, channel_last=True)
    expect = buf[:, pads[0][0]:pads[0][0] + xs[2], pads[1][0]:pads[1][0] + xs[3]].transpose(0, 3, 1, 2)
    np.testing.assert_allclose(dx, expect, rtol=1e-12, atol=1e-12)


def test_padding_wider_than_the_window_takes_the_scatter_path_and_stays_right():
    x, w = f64(2, 3, 5, 5), f64(2, 3, 2, 2)
    assert conv_gemm.conv2d_input_grad(np, w, f64(2, 2, 8, 8), [(2, 2), (2, 2)], (1, 1)) is None
    check_grad("conv2d", {"Input": x, "Filter": w}, ["Input", "Filter"], {"paddings": [2, 2]}, out_slot="Output")


def test_geometry_is_memoised_and_takes_attrs_that_cannot_be_keys():
    from fluidist.ops.conv_nd import conv_geometry, pool_geometry
    attrs = {"strides": [1, 1], "dilations": [1, 1], "paddings": [1, 0], "padding_algorithm": "EXPLICIT", "groups": 1}
    want = (((1, 1), (0, 0)), (1, 1), (1, 1), 1, (5, 3))
    assert conv_geometry((2, 3, 5, 5), (4, 3, 3, 3), attrs) == want
    assert conv_geometry((2, 3, 5, 5), (4, 3, 3, 3), dict(attrs, strides=np.array([1, 1]))) == want
    pool = {"pooling_type": "max", "ksize": np.array([2, 2]), "strides": [2, 2], "paddings": [0, 0],
            "global_pooling": False, "adaptive": False, "ceil_mode": True, "padding_algorithm": "EXPLICIT"}
    assert pool_geometry((2, 3, 5, 4), pool) == ((2, 2), (2, 2), ((0, 0), (0, 0)), (3, 2))
    with pytest.raises(ValueError, match="Filter of shape"):
        conv_geometry((2, 5, 5, 5), (4, 3, 3, 3), attrs)


@pytest.mark.parametrize("c", [1, 6], ids=["columns", "patches"])
def test_padded_inputs_are_zeroed_once_and_other_pads_of_one_padded_shape_keep_their_own(c):
    """A padded input's workspace is zero when made and each call writes its interior only (on a
    device: one launch, not five): calls whose padded inputs share a shape but not their pads (1 + 8
    + 1 and 2 + 8 + 0) get buffers of their own, and every result stays right."""
    from fluidist.device import standin
    w = f64(3, c, 3, 3)
    for pads in ([(1, 1), (1, 1)], [(2, 0), (0, 2)], [(1, 1), (1, 1)], [(2, 0), (0, 2)]):
        x = f64(2, c, 8, 8)
        out_sizes = (8 + sum(pads[0]) - 2, 8 + sum(pads[1]) - 2)
        y = conv_gemm.conv2d_forward(np, x, w, pads, (1, 1), (1, 1), out_sizes)
        np.testing.assert_allclose(y, ref_conv2d(x, w, pads=pads[0] + pads[1]), rtol=1e-10, atol=1e-12)
        xd, wd = standin.xp.asarray(x), standin.xp.asarray(w)
        conv_gemm.conv2d_forward(standin.xp, xd, wd, pads, (1, 1), (1, 1), out_sizes)
        with standin.count_transfers() as log:
            yd = conv_gemm.conv2d_forward(standin.xp, xd, wd, pads, (1, 1), (1, 1), out_sizes)
        np.testing.assert_array_equal(np.asarray(yd.get()), y)
        assert log.launch_counts["setitem"] == 3, log.launch_counts   # the interior, the patches, the output
