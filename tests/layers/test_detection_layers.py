"""The detection and ROI layers (``layers/detection.py``, ``layers/roi.py``) and adaptive max pooling
with indices: the ops and attrs they write are Paddle 1.8's, their results those of the ops (tested
against NumPy in tests/ops) or of NumPy, and they refuse what Paddle's layers refuse."""
import numpy as np
import pytest

import fluidist as fluid
from fluidist.compat import is_refused

L = fluid.layers
rng = np.random.RandomState(41)


def run(build, feed):
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        fetch = build()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(start)
    return main, exe.run(main, feed=feed, fetch_list=list(fetch), return_numpy=False)


def boxes(n, scale):
    lo = rng.uniform(0, scale / 2, (n, 2))
    return np.concatenate([lo, lo + rng.uniform(scale / 10, scale / 2, (n, 2))], axis=1).astype("float32")


def softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_prior_box_writes_paddles_attrs():
    def build():
        feat = fluid.data("feat", [None, 4, 3, 5], "float32")
        img = fluid.data("img", [None, 3, 24, 40], "float32")
        box, var = L.prior_box(feat, img, min_sizes=[4.0], max_sizes=[8.0], aspect_ratios=[2.0], flip=True,
                               clip=True, steps=[8.0, 8.0])
        assert box.stop_gradient and var.stop_gradient
        return box, var
    main, (box, var) = run(build, {"feat": np.zeros((1, 4, 3, 5), "float32"), "img": np.zeros((1, 3, 24, 40), "float32")})
    op = [o for o in main.global_block().ops if o.type == "prior_box"][0]
    assert op.attr("min_sizes") == [4.0] and op.attr("max_sizes") == [8.0] and op.attr("aspect_ratios") == [2.0]
    assert op.attr("step_w") == 8.0 and op.attr("flip") is True
    assert np.array(box).shape == (3, 5, 4, 4)
    cx, cy = 0.5 * 8, 0.5 * 8                       # cell (0, 0), the first prior: the min size square
    np.testing.assert_allclose(np.array(box)[0, 0, 0], np.clip([(cx - 2) / 40, (cy - 2) / 24, (cx + 2) / 40,
                                                                 (cy + 2) / 24], 0, 1), rtol=1e-6)


def test_detection_output_decodes_softmaxes_and_suppresses():
    loc, conf = rng.uniform(-1, 1, (2, 5, 4)).astype("float32"), rng.uniform(-2, 2, (2, 5, 3)).astype("float32")
    prior = boxes(5, 1.0)

    def build():
        args = [fluid.data(n, s, "float32") for n, s in (("loc", [None, 5, 4]), ("conf", [None, 5, 3]),
                                                          ("pb", [5, 4]), ("pbv", [5, 4]))]
        return L.detection_output(*args, score_threshold=0.3, nms_top_k=4, keep_top_k=3, return_index=True)
    main, (out, index) = run(build, {"loc": loc, "conf": conf, "pb": prior, "pbv": np.full((5, 4), 0.1, "float32")})
    types = [o.type for o in main.global_block().ops]
    assert types == ["box_coder", "softmax", "transpose2", "multiclass_nms2"]
    scores = softmax(conf).transpose(0, 2, 1)
    rows = np.array(out)
    assert out.lod() == index.lod() and len(out.lod()[0]) == 3
    for label, score, *box in rows:
        assert label > 0 and score > 0.3
    for (label, score, *_), k in zip(rows, np.array(index).ravel()):
        assert scores[k // 5, int(label), k % 5] == pytest.approx(score, rel=1e-6)


def test_box_coder_yolo_box_and_multiclass_nms_check_their_arguments_as_paddle():
    main = fluid.Program()
    with fluid.program_guard(main, fluid.Program()):
        pb = fluid.data("pb", [5, 4], "float32")
        tb = fluid.data("tb", [None, 5, 4], "float32")
        with pytest.raises(TypeError):
            L.box_coder(pb, (0.1, 0.1, 0.2, 0.2), tb, code_type="decode_center_size")
        out = L.box_coder(pb, [0.1, 0.1, 0.2, 0.2], tb, code_type="decode_center_size", axis=0)
        op = main.global_block().ops[-1]
        assert op.attr("variance") == [0.1, 0.1, 0.2, 0.2] and "PriorBoxVar" not in op.inputs
        assert out.shape == (-1, 5, 4)
        x = fluid.data("x", [None, 14, 3, 3], "float32")
        size = fluid.data("size", [None, 2], "int32")
        with pytest.raises(TypeError):
            L.yolo_box(x, size, anchors=[10, 13, 16, 30], class_num=2, conf_thresh=1, downsample_ratio=32)
        b, s = L.yolo_box(x, size, anchors=[10, 13, 16, 30], class_num=2, conf_thresh=0.1, downsample_ratio=32)
        assert b.shape == (-1, 18, 4) and s.shape == (-1, 18, 2)
        scores = fluid.data("scores", [None, 2, 5], "float32")
        with pytest.raises(TypeError):
            L.multiclass_nms(tb, scores, score_threshold=1, nms_top_k=10, keep_top_k=5)
        nms = L.multiclass_nms(tb, scores, score_threshold=0.1, nms_top_k=10, keep_top_k=5)
        assert nms.stop_gradient and nms.lod_level == 1


def test_bipartite_match_and_target_assign_keep_defaults_for_none():
    dist = rng.uniform(0, 1, (3, 4)).astype("float32")
    gt = rng.uniform(0, 1, (3, 1, 4)).astype("float32")

    def build():
        d = fluid.data("d", [None, 4], "float32", lod_level=1)
        g = fluid.data("g", [None, 1, 4], "float32", lod_level=1)
        idx, _ = L.bipartite_match(d)
        target, weight = L.target_assign(g, idx)
        return idx, target, weight
    place = fluid.CPUPlace()
    main, (idx, target, weight) = run(build, {"d": fluid.create_lod_tensor(dist, [[3]], place),
                                              "g": fluid.create_lod_tensor(gt, [[3]], place)})
    op = [o for o in main.global_block().ops if o.type == "bipartite_match"][0]
    assert op.attr("match_type") == "bipartite" and op.attr("dist_threshold") == 0.5
    idx = np.array(idx)[0]
    assert sorted(i for i in idx if i >= 0) == [0, 1, 2]
    for j, i in enumerate(idx):
        np.testing.assert_allclose(np.array(target)[0, j], gt[i, 0] if i >= 0 else 0)
        assert np.array(weight)[0, j, 0] == (i >= 0)


def test_roi_layers_run_and_check_their_arguments():
    x = rng.uniform(size=(1, 8, 6, 6)).astype("float32")
    r = boxes(2, 10)

    def build():
        xv = fluid.data("x", [None, 8, 6, 6], "float32")
        rv = fluid.data("r", [None, 4], "float32", lod_level=1)
        with pytest.raises(TypeError):
            L.psroi_pool(xv, rv, 2, 1, 2, 2)
        with pytest.raises(TypeError):
            L.prroi_pool(xv, rv, 0.5, 0.7, 2)
        with pytest.raises(TypeError):
            L.roi_align(fluid.data("xi", [None, 8, 6, 6], "int32"), rv)
        with pytest.raises(ValueError, match="greater than 1"):
            L.psroi_pool(fluid.data("x2", [None, 4, 6, 6], "float32"), rv, 1, 0.5, 2, 2)
        return (L.roi_pool(xv, rv, 2, 2, 0.5), L.roi_align(xv, rv, 2, 2, 0.5), L.psroi_pool(xv, rv, 2, 0.5, 2, 2),
                L.prroi_pool(xv, rv, 0.5, 2, 2))
    _, outs = run(build, {"x": x, "r": fluid.create_lod_tensor(r, [[2]], fluid.CPUPlace())})
    assert [np.array(o).shape for o in outs] == [(2, 8, 2, 2), (2, 8, 2, 2), (2, 2, 2, 2), (2, 8, 2, 2)]
    assert not is_refused(L.roi_align) and not is_refused(fluid.layers.nn.prroi_pool)


def test_prroi_pool_trains_the_rois():
    """prroi_pool's gradient reaches the ROIs (as Paddle's prroi_pool_grad gives ROIs@GRAD)."""
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        x = fluid.data("x", [None, 2, 6, 6], "float32")
        r = fluid.data("r", [None, 4], "float32", lod_level=1)
        r.stop_gradient = False
        loss = L.reduce_sum(L.prroi_pool(x, r, 1.0, 2, 2))
        fluid.backward.append_backward(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    grad = exe.run(main, feed={"x": rng.uniform(size=(1, 2, 6, 6)).astype("float32"),
                               "r": fluid.create_lod_tensor(np.array([[0.5, 1.2, 4.1, 4.6]], "float32"), [[1]],
                                                            fluid.CPUPlace())}, fetch_list=["r@GRAD"])[0]
    assert grad.shape == (1, 4) and np.abs(grad).sum() > 0


@pytest.mark.parametrize("nd", [2, 3])
def test_adaptive_max_pool_is_max_pool_with_index(nd):
    shape = (1, 2, 5, 7) if nd == 2 else (1, 2, 4, 5, 3)
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype("float32")
    size = [2, 3] if nd == 2 else [2, 2, 3]
    layer = L.adaptive_pool2d if nd == 2 else L.adaptive_pool3d

    def build():
        xv = fluid.data("x", [None] + list(shape[1:]), "float32")
        with pytest.raises(ValueError, match="require_index"):
            layer(xv, size, pool_type="avg", require_index=True)
        out, mask = layer(xv, size, require_index=True)
        return out, mask, layer(xv, size)
    main, (out, mask, plain) = run(build, {"x": x})
    assert [o.type for o in main.global_block().ops] == ["max_pool%dd_with_index" % nd] * 2
    out, mask = np.array(out), np.array(mask)
    np.testing.assert_array_equal(np.array(plain), out)
    spatial = shape[2:]
    for cell in np.ndindex(*size):
        ranges = [range(int(np.floor(i * s / k)), int(np.ceil((i + 1) * s / k))) for i, s, k in zip(cell, spatial, size)]
        win = x[(0, 1) + np.ix_(*ranges)]
        assert out[(0, 1) + cell] == win.max()
        assert np.unravel_index(mask[(0, 1) + cell], spatial) == tuple(r[i] for r, i in zip(ranges, np.unravel_index(
            win.argmax(), win.shape)))


def test_sigmoid_focal_loss_and_box_clip_layers():
    def build():
        x = fluid.data("x", [None, 3], "float32")
        with pytest.raises(TypeError):
            L.sigmoid_focal_loss(x, fluid.data("lab64", [None, 1], "int64"), fluid.data("fg0", [1], "int32"))
        loss = L.sigmoid_focal_loss(x, fluid.data("lab", [None, 1], "int32"), fluid.data("fg", [1], "int32"))
        clipped = L.box_clip(fluid.data("b", [None, 4], "float32", lod_level=1), fluid.data("info", [None, 3], "float32"))
        return loss, clipped
    b = np.array([[-3, 2, 50, 7]], "float32")
    _, (loss, clipped) = run(build, {"x": np.zeros((2, 3), "float32"), "lab": np.array([[1], [0]], "int32"),
                                     "fg": np.array([1], "int32"), "info": np.array([[10, 20, 1]], "float32"),
                                     "b": fluid.create_lod_tensor(b, [[1]], fluid.CPUPlace())})
    np.testing.assert_allclose(np.array(loss)[0, 0], 0.25 * 0.25 * np.log(2), rtol=1e-6)   # -alpha (1-p)^2 log p, p = 0.5
    np.testing.assert_allclose(np.array(clipped), [[0, 2, 19, 7]])


def test_the_heads_fluidist_leaves_out_stay_refused():
    for name in ("ssd_loss", "multi_box_head", "generate_proposal_labels", "rpn_target_assign",
                 "deformable_roi_pooling"):
        assert is_refused(getattr(L, name)), name
    assert not is_refused(L.detection.detection_map)
