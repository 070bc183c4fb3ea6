"""``generate_proposals``, ``collect_fpn_proposals`` and ``distribute_fpn_proposals`` (through their
layers) against NumPy references written proposal by proposal."""
import math

import numpy as np

import fluidist as fluid

rng = np.random.RandomState(53)
PLACE = fluid.CPUPlace()


def pixel_iou(a, b):
    w = max(min(a[2], b[2]) - max(a[0], b[0]) + 1, 0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]) + 1, 0)
    area = lambda r: (r[2] - r[0] + 1) * (r[3] - r[1] + 1)  # noqa: E731
    return w * h / (area(a) + area(b) - w * h)


def proposals_reference(scores, deltas, info, anchors, var, pre, post, thresh, min_size):
    order = sorted(range(len(scores)), key=lambda k: -scores[k])[:pre]
    boxes, probs = [], []
    for k in order:
        a, d, v = anchors[k], deltas[k], var[k]
        w, h = a[2] - a[0] + 1, a[3] - a[1] + 1
        cx, cy = v[0] * d[0] * w + a[0] + w / 2, v[1] * d[1] * h + a[1] + h / 2
        pw, ph = math.exp(min(v[2] * d[2], math.log(1000 / 16))) * w, math.exp(min(v[3] * d[3], math.log(1000 / 16))) * h
        b = [cx - pw / 2, cy - ph / 2, cx + pw / 2 - 1, cy + ph / 2 - 1]
        b = [min(max(b[0], 0), info[1] - 1), min(max(b[1], 0), info[0] - 1), min(max(b[2], 0), info[1] - 1),
             min(max(b[3], 0), info[0] - 1)]
        bw, bh = b[2] - b[0] + 1, b[3] - b[1] + 1
        if ((b[2] - b[0]) / info[2] + 1 >= max(min_size, 1) and (b[3] - b[1]) / info[2] + 1 >= max(min_size, 1)
                and b[0] + bw / 2 < info[1] and b[1] + bh / 2 < info[0]):
            boxes.append(b)
            probs.append(scores[k])
    kept = []
    for i, b in enumerate(boxes):
        if all(pixel_iou(b, boxes[k]) <= thresh for k in kept):
            kept.append(i)
    kept = kept[:post]
    return np.array([boxes[i] for i in kept]), np.array([probs[i] for i in kept])


def test_generate_proposals():
    a, h, w = 3, 4, 5
    scores = rng.uniform(0, 1, (2, a, h, w)).astype("float32")
    deltas = rng.normal(0, 0.3, (2, 4 * a, h, w)).astype("float32")
    info = np.array([[60, 70, 1.0], [50, 40, 2.0]], "float32")
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        feat = fluid.data("feat", [None, 8, h, w], "float32")
        anchors, var = fluid.layers.anchor_generator(feat, anchor_sizes=[16.0, 32.0, 48.0], aspect_ratios=[1.0],
                                                     stride=[12.0, 12.0])
        s, d, i = (fluid.data(n, v, "float32") for n, v in (("s", [None, a, h, w]), ("d", [None, 4 * a, h, w]),
                                                            ("i", [None, 3])))
        rois, probs, nums = fluid.layers.generate_proposals(s, d, i, anchors, var, pre_nms_top_n=40,
                                                            post_nms_top_n=9, nms_thresh=0.6, min_size=3.0,
                                                            return_rois_num=True)
    exe = fluid.Executor(PLACE)
    got = exe.run(main, feed={"feat": np.zeros((2, 8, h, w), "float32"), "s": scores, "d": deltas, "i": info},
                  fetch_list=[rois, probs, nums, anchors, var], return_numpy=False)
    anc, vv = np.array(got[3]).reshape(-1, 4), np.array(got[4]).reshape(-1, 4)
    start = 0
    for n in range(2):
        want_boxes, want_probs = proposals_reference(scores[n].transpose(1, 2, 0).ravel(),
                                                     deltas[n].transpose(1, 2, 0).reshape(-1, 4), info[n], anc, vv,
                                                     40, 9, 0.6, 3.0)
        count = int(np.array(got[2])[n])
        assert got[0].lod()[0][n + 1] - got[0].lod()[0][n] == count == len(want_boxes)
        np.testing.assert_allclose(np.array(got[0])[start:start + count], want_boxes, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(np.array(got[1])[start:start + count, 0], want_probs, rtol=1e-6)
        start += count


def test_collect_and_distribute_fpn_proposals():
    lods = [[3, 2], [1, 4]]
    rois = [np.concatenate([lo, lo + rng.uniform(5, 300, (sum(ls), 2))], 1).astype("float32")
            for ls in lods for lo in [rng.uniform(0, 50, (sum(ls), 2))]]
    scores = [rng.uniform(0, 1, (sum(ls), 1)).astype("float32") for ls in lods]
    main, start = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, start):
        rv = [fluid.data("r%d" % k, [None, 4], "float32", lod_level=1) for k in range(2)]
        sv = [fluid.data("s%d" % k, [None, 1], "float32", lod_level=1) for k in range(2)]
        best = fluid.layers.collect_fpn_proposals(rv, sv, 2, 3, post_nms_top_n=6)
        levels, restore = fluid.layers.distribute_fpn_proposals(best, 2, 4, 3, 100)
    feed = {}
    for k, ls in enumerate(lods):
        feed["r%d" % k] = fluid.create_lod_tensor(rois[k], [ls], PLACE)
        feed["s%d" % k] = fluid.create_lod_tensor(scores[k], [ls], PLACE)
    got = fluid.Executor(PLACE).run(main, feed=feed, fetch_list=[best] + levels + [restore], return_numpy=False)
    images = np.concatenate([np.repeat(np.arange(2), ls) for ls in lods])
    all_rois, all_scores = np.concatenate(rois), np.concatenate(scores)[:, 0]
    top = sorted(range(len(all_scores)), key=lambda k: -all_scores[k])[:6]
    top = sorted(top, key=lambda k: images[k])                  # stable: each image's in score order
    np.testing.assert_allclose(np.array(got[0]), all_rois[top])
    assert got[0].lod() == [[0, int((images[top] == 0).sum()), 6]]
    kept, kept_images = all_rois[top], images[top]
    area = (kept[:, 2] - kept[:, 0] + 1) * (kept[:, 3] - kept[:, 1] + 1)
    level = np.clip(np.floor(3 + np.log2(np.sqrt(area) / 100 + 1e-6)), 2, 4)
    order = []
    for k, lvl in enumerate((2, 3, 4)):
        idx = [i for i in range(6) if level[i] == lvl]
        np.testing.assert_allclose(np.array(got[1 + k]).reshape(-1, 4), kept[idx])
        assert got[1 + k].lod() == [[0, sum(kept_images[i] == 0 for i in idx), len(idx)]]
        order += idx
    np.testing.assert_array_equal(np.array(got[4]).ravel(), np.argsort(order))
