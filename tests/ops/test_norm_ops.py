"""Normalisation ops (layer_norm, group_norm, instance_norm, norm, lrn, affine_channel, data_norm,
spectral_norm) against NumPy, gradients against finite differences."""
import numpy as np
import pytest

from op_test import check_grad, run_op

rng = np.random.RandomState(11)


def standardise(x, axes, eps):
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps), m, v


@pytest.mark.parametrize("axis", [1, 2])
def test_layer_norm(axis):
    x = rng.uniform(-2, 2, (2, 3, 4))
    size = int(np.prod(x.shape[axis:]))
    scale, bias = rng.uniform(0.5, 1.5, size), rng.uniform(-1, 1, size)
    got = run_op("layer_norm", {"X": x, "Scale": scale, "Bias": bias}, {"begin_norm_axis": axis, "epsilon": 1e-5},
                 outputs=("Y", "Mean", "Variance"))
    axes = tuple(range(axis, 3))
    z, m, v = standardise(x, axes, 1e-5)
    np.testing.assert_allclose(got["Y"][0], z * scale.reshape(x.shape[axis:]) + bias.reshape(x.shape[axis:]))
    np.testing.assert_allclose(got["Mean"][0], m.reshape(-1))
    np.testing.assert_allclose(got["Variance"][0], v.reshape(-1))
    check_grad("layer_norm", {"X": x, "Scale": scale, "Bias": bias}, ["X", "Scale", "Bias"],
               {"begin_norm_axis": axis}, out_slot="Y", outputs=("Y", "Mean", "Variance"))


def test_layer_norm_without_scale_and_bias():
    x = rng.uniform(-2, 2, (3, 5))
    got = run_op("layer_norm", {"X": x}, outputs=("Y", "Mean", "Variance"))
    np.testing.assert_allclose(got["Y"][0], standardise(x, (1,), 1e-5)[0])
    check_grad("layer_norm", {"X": x}, ["X"], out_slot="Y", outputs=("Y", "Mean", "Variance"))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_group_norm(layout):
    x = rng.uniform(-2, 2, (2, 6, 2, 3))
    scale, bias = rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, 6)
    xin = x.transpose(0, 2, 3, 1) if layout == "NHWC" else x
    got = run_op("group_norm", {"X": xin, "Scale": scale, "Bias": bias}, {"groups": 3, "data_layout": layout},
                 outputs=("Y", "Mean", "Variance"))
    z = standardise(x.reshape(2, 3, -1), (2,), 1e-5)[0].reshape(x.shape)
    want = z * scale.reshape(1, 6, 1, 1) + bias.reshape(1, 6, 1, 1)
    y = got["Y"][0].transpose(0, 3, 1, 2) if layout == "NHWC" else got["Y"][0]
    np.testing.assert_allclose(y, want, rtol=1e-10)
    assert got["Mean"][0].shape == (2, 3)
    check_grad("group_norm", {"X": xin, "Scale": scale, "Bias": bias}, ["X", "Scale", "Bias"],
               {"groups": 3, "data_layout": layout}, out_slot="Y", outputs=("Y", "Mean", "Variance"))


def test_group_norm_groups_must_divide_channels():
    with pytest.raises(ValueError, match="groups=4 must .* divide the 6 channels"):
        run_op("group_norm", {"X": np.zeros((1, 6, 2, 2))}, {"groups": 4}, outputs=("Y", "Mean", "Variance"))


def test_instance_norm():
    x = rng.uniform(-2, 2, (2, 3, 2, 3))
    scale, bias = rng.uniform(0.5, 1.5, 3), rng.uniform(-1, 1, 3)
    got = run_op("instance_norm", {"X": x, "Scale": scale, "Bias": bias}, outputs=("Y", "SavedMean", "SavedVariance"))
    z, m, v = standardise(x, (2, 3), 1e-5)
    np.testing.assert_allclose(got["Y"][0], z * scale.reshape(1, 3, 1, 1) + bias.reshape(1, 3, 1, 1))
    np.testing.assert_allclose(got["SavedVariance"][0], 1 / np.sqrt(v.reshape(-1) + 1e-5))
    check_grad("instance_norm", {"X": x, "Scale": scale, "Bias": bias}, ["X", "Scale", "Bias"], out_slot="Y",
               outputs=("Y", "SavedMean", "SavedVariance"))


def test_norm_is_l2_normalize():
    x = rng.uniform(-1, 1, (3, 4, 2))
    got = run_op("norm", {"X": x}, {"axis": 1, "epsilon": 1e-10}, outputs=("Out", "Norm"))
    n = np.sqrt((x * x).sum(1, keepdims=True) + 1e-10)
    np.testing.assert_allclose(got["Out"][0], x / n)
    np.testing.assert_allclose(got["Norm"][0], n)
    check_grad("norm", {"X": x}, ["X"], {"axis": -1}, outputs=("Out", "Norm"))


@pytest.mark.parametrize("n", [3, 4, 5])
def test_lrn(n):
    x = rng.uniform(-2, 2, (2, 6, 2, 2))
    attrs = {"n": n, "k": 1.5, "alpha": 0.3, "beta": 0.6}
    got = run_op("lrn", {"X": x}, attrs, outputs=("Out", "MidOut"))
    before = (n - 1) // 2
    mid = np.empty_like(x)
    for c in range(6):
        lo, hi = max(c - before, 0), min(c - before + n, 6)
        mid[:, c] = 1.5 + 0.3 * (x[:, lo:hi] ** 2).sum(1)
    np.testing.assert_allclose(got["MidOut"][0], mid)
    np.testing.assert_allclose(got["Out"][0], x * mid ** -0.6)
    check_grad("lrn", {"X": x}, ["X"], attrs, outputs=("Out", "MidOut"))


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_affine_channel(layout):
    x = rng.uniform(-1, 1, (2, 3, 2, 2))
    if layout == "NHWC":
        x = x.transpose(0, 2, 3, 1)
    s, b = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    view = (1, 1, 1, 3) if layout == "NHWC" else (1, 3, 1, 1)
    out = run_op("affine_channel", {"X": x, "Scale": s, "Bias": b}, {"data_layout": layout})["Out"][0]
    np.testing.assert_allclose(out, x * s.reshape(view) + b.reshape(view))
    check_grad("affine_channel", {"X": x, "Scale": s, "Bias": b}, ["X", "Scale", "Bias"], {"data_layout": layout})


def test_data_norm_normalises_with_its_statistics_and_reports_batch_ones():
    x = rng.uniform(-3, 3, (4, 3))
    size, total, square = np.array([10.0, 20, 5]), np.array([1.0, -4, 2]), np.array([30.0, 50, 12])
    got = run_op("data_norm", {"X": x, "BatchSize": size, "BatchSum": total, "BatchSquareSum": square},
                 outputs=("Y", "Means", "Scales"))
    means, scales = total / size, np.sqrt(size / square)
    np.testing.assert_allclose(got["Y"][0], (x - means) * scales)
    ins = {"X": x, "BatchSize": size, "BatchSum": total, "BatchSquareSum": square}
    check_grad("data_norm", ins, ["X"], out_slot="Y", outputs=("Y", "Means", "Scales"))


def _data_norm_with_grads(x, stats, shift, weights, slot_dim):
    import fluidist as fluid
    n, c = x.shape
    prog = fluid.Program()
    with fluid.program_guard(prog, fluid.Program()):
        blk = prog.global_block()
        xv = fluid.data("x", [n, c], "float64")
        xv.stop_gradient = False
        ins = {"X": [xv]}
        for name in stats:
            ins[name] = [blk.create_parameter(name=name, shape=[c], dtype="float64")]
        outs = {k: [blk.create_var(name=k, dtype="float64")] for k in ("Y", "Means", "Scales")}
        blk.append_op("data_norm", inputs=ins, outputs=outs,
                      attrs={"slot_dim": slot_dim, "epsilon": 1e-4, "enable_scale_and_shift": shift})
        wv = fluid.data("w", [n, c], "float64")
        loss = fluid.layers.reduce_sum(fluid.layers.elementwise_mul(outs["Y"][0], wv))
        fluid.backward.append_backward(loss)
    names = ["Y", "x@GRAD"] + [k + "@GRAD" for k in stats]
    got = fluid.Executor(fluid.CPUPlace()).run(prog, feed=dict(stats, x=x, w=weights), fetch_list=names, scope=fluid.Scope())
    return dict(zip(names, got))


@pytest.mark.parametrize("shift", [False, True])
def test_data_norm_slot_dim_skips_slots_never_shown(shift):
    # Paddle 1.8's rule (its numbers on such inputs agree): a slot whose first value (the show) is 0
    # gives zeros; the statistics' gradients count shown slots only, averaged per column with the
    # count reported as 1; with scale and shift an unshown slot gets no gradient
    n, c, slot = 5, 6, 2
    x = rng.uniform(-1, 1, (n, c))
    x[0, 0], x[2, 2], x[1, 4], x[3, 4] = 0.0, 0.0, 1e-8, 0.0
    x[:, 0][[1, 2, 3, 4]] = [0.3, -0.2, 0.5, 0.7]
    stats = {"BatchSize": rng.uniform(1, 3, c), "BatchSum": rng.uniform(-1, 1, c), "BatchSquareSum": rng.uniform(1, 3, c)}
    if shift:
        stats.update(scale_w=rng.uniform(0.5, 1.5, c), bias=rng.uniform(-1, 1, c))
    w = rng.uniform(0.5, 1.5, (n, c))
    got = _data_norm_with_grads(x, stats, shift, w, slot)
    shown = np.repeat(np.abs(x[:, ::slot]) >= 1e-7, slot, axis=1)
    m, s = stats["BatchSum"] / stats["BatchSize"], np.sqrt(stats["BatchSize"] / stats["BatchSquareSum"])
    norm = (x - m) * s
    y = norm * stats["scale_w"] + stats["bias"] if shift else norm
    np.testing.assert_allclose(got["Y"], np.where(shown, y, 0), rtol=1e-12)
    dx = w * s * stats["scale_w"] if shift else w * s
    np.testing.assert_allclose(got["x@GRAD"], np.where(shown, dx, 0) if shift else dx, rtol=1e-12)
    count = shown.sum(0)
    np.testing.assert_array_equal(got["BatchSize@GRAD"], (count > 0).astype(float))
    np.testing.assert_allclose(got["BatchSum@GRAD"], np.where(shown, x, 0).sum(0) / count, rtol=1e-12)
    np.testing.assert_allclose(got["BatchSquareSum@GRAD"],
                               np.where(shown, (x - m) ** 2, 0).sum(0) / count + count * 1e-4, rtol=1e-12)
    if shift:
        np.testing.assert_allclose(got["scale_w@GRAD"], np.where(shown, w * norm, 0).sum(0), rtol=1e-12)
        np.testing.assert_allclose(got["bias@GRAD"], np.where(shown, w, 0).sum(0), rtol=1e-12)


def test_spectral_norm_divides_by_the_largest_singular_value():
    w = rng.uniform(-1, 1, (3, 2, 4))
    u, v = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 12)
    out = run_op("spectral_norm", {"Weight": w, "U": u, "V": v}, {"dim": 1, "power_iters": 60})["Out"][0]
    sigma = np.linalg.svd(w.transpose(1, 0, 2).reshape(2, -1), compute_uv=False)[0]
    np.testing.assert_allclose(out, w / sigma, rtol=1e-8)
