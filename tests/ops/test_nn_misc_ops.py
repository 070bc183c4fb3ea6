"""cos_sim, label_smooth, maxout, pixel_shuffle, add_position_encoding, bilinear_tensor_product and
row_conv against NumPy, gradients against finite differences."""
import numpy as np
import pytest

from op_test import check_grad, run_op

rng = np.random.RandomState(7)
COS_OUT = ("Out", "XNorm", "YNorm")


@pytest.mark.parametrize("yrows", [4, 1])
def test_cos_sim(yrows):
    x, y = rng.uniform(-1, 1, (4, 3)), rng.uniform(-1, 1, (yrows, 3))
    out = run_op("cos_sim", {"X": x, "Y": y}, outputs=COS_OUT)["Out"][0]
    yy = np.broadcast_to(y, x.shape)
    want = (x * yy).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(yy, axis=1)
    np.testing.assert_allclose(out, want.reshape(4, 1))
    check_grad("cos_sim", {"X": x, "Y": y}, ["X", "Y"], outputs=COS_OUT)


def test_label_smooth():
    x = np.eye(4)[[0, 2, 3]]
    out = run_op("label_smooth", {"X": x}, {"epsilon": 0.2})["Out"][0]
    np.testing.assert_allclose(out, 0.8 * x + 0.05)
    prior = np.array([[0.1, 0.2, 0.3, 0.4]])
    out = run_op("label_smooth", {"X": x, "PriorDist": prior}, {"epsilon": 0.2})["Out"][0]
    np.testing.assert_allclose(out, 0.8 * x + 0.2 * prior)
    check_grad("label_smooth", {"X": x}, ["X"], {"epsilon": 0.2})


@pytest.mark.parametrize("axis", [1, 3])
def test_maxout(axis):
    x = rng.uniform(-1, 1, (2, 6, 2, 6) if axis == 1 else (2, 2, 3, 6))
    out = run_op("maxout", {"X": x}, {"groups": 3, "axis": axis})["Out"][0]
    if axis == 1:
        want = x.reshape(2, 2, 3, 2, 6).max(2)
    else:
        want = x.reshape(2, 2, 3, 2, 3).max(4)
    np.testing.assert_allclose(out, want)
    check_grad("maxout", {"X": x}, ["X"], {"groups": 3, "axis": axis})


def test_pixel_shuffle():
    x = rng.uniform(-1, 1, (1, 8, 2, 3))
    out = run_op("pixel_shuffle", {"X": x}, {"upscale_factor": 2})["Out"][0]
    assert out.shape == (1, 2, 4, 6)
    for c, i, j, h, w in [(0, 0, 0, 0, 0), (1, 1, 0, 1, 2), (0, 1, 1, 1, 1)]:
        assert out[0, c, h * 2 + i, w * 2 + j] == x[0, c * 4 + i * 2 + j, h, w]
    check_grad("pixel_shuffle", {"X": x}, ["X"], {"upscale_factor": 2})


def encoding(positions, width):
    half = width // 2
    pe = np.zeros((len(positions), width))
    for r, p in enumerate(positions):
        for k in range(half):
            a = p / 10000.0 ** (k / (half - 1))
            pe[r, k], pe[r, half + k] = np.sin(a), np.cos(a)
    return pe


def test_add_position_encoding_padded_and_lod():
    x = rng.uniform(-1, 1, (2, 3, 6))
    out = run_op("add_position_encoding", {"X": x}, {"alpha": 0.5, "beta": 2.0})["Out"][0]
    np.testing.assert_allclose(out, 0.5 * x + 2.0 * encoding(range(3), 6)[None], rtol=1e-6)
    xl = rng.uniform(-1, 1, (5, 4))
    out = run_op("add_position_encoding", {"X": xl}, {"alpha": 1.0, "beta": 1.0}, lods={"x_in": [[0, 2, 5]]})["Out"][0]
    np.testing.assert_allclose(out, xl + encoding([0, 1, 0, 1, 2], 4), rtol=1e-6)
    check_grad("add_position_encoding", {"X": x}, ["X"], {"alpha": 0.5, "beta": 2.0})


def test_bilinear_tensor_product():
    x, y = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 2))
    w, b = rng.uniform(-1, 1, (5, 4, 2)), rng.uniform(-1, 1, (1, 5))
    out = run_op("bilinear_tensor_product", {"X": x, "Y": y, "Weight": w, "Bias": b})["Out"][0]
    want = np.array([[x[n] @ w[i] @ y[n] for i in range(5)] for n in range(3)]) + b
    np.testing.assert_allclose(out, want)
    check_grad("bilinear_tensor_product", {"X": x, "Y": y, "Weight": w, "Bias": b}, ["X", "Y", "Weight", "Bias"])


def test_row_conv_over_sequences():
    x = rng.uniform(-1, 1, (7, 3))
    f = rng.uniform(-1, 1, (3, 3))
    lod = [[0, 4, 5, 7]]
    out = run_op("row_conv", {"X": x, "Filter": f}, lods={"x_in": lod})["Out"][0]
    want = np.zeros_like(x)
    for a, b in zip(lod[0], lod[0][1:]):
        for t in range(a, b):
            for j in range(3):
                if t + j < b:
                    want[t] += f[j] * x[t + j]
    np.testing.assert_allclose(out, want)
    check_grad("row_conv", {"X": x, "Filter": f}, ["X", "Filter"], lods={"x_in": lod})


def test_row_conv_needs_lod_or_padded_input():
    with pytest.raises(ValueError, match="has no LoD"):
        run_op("row_conv", {"X": np.zeros((4, 3)), "Filter": np.zeros((2, 3))})
