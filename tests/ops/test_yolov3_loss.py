"""``yolov3_loss`` against a NumPy reference that walks the ground truth boxes and the grid cells one by
one, its gradient against finite differences, and the layer."""
import math

import numpy as np
import pytest

import fluidist as fluid
from op_test import check_grad, run_op

rng = np.random.RandomState(43)
ANCHORS = [10, 13, 16, 30, 33, 23, 30, 61, 62, 45]


def sce(x, t):
    return max(x, 0) - x * t + math.log1p(math.exp(-abs(x)))


def iou_cs(a, b):
    """IoU of two centre-size boxes, the overlap's sides clipped to [0, 1] as Paddle does."""
    w = min(max(min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2), 0), 1)
    h = min(max(min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2), 0), 1)
    union = a[2] * a[3] + b[2] * b[3] - w * h
    return w * h / union if union > 0 else 0.0


def reference(x, gt, label, score, mask, classes, ignore, ratio, smooth, sxy=1.0):
    n, _, h, w = x.shape
    size = ratio * h
    p = x.reshape(n, len(mask), 5 + classes, h, w)
    sw = min(1.0 / classes, 1.0 / 40) if smooth else 0.0
    loss, obj_mask = np.zeros(n), np.zeros((n, len(mask), h, w))
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    for i in range(n):
        obj = np.zeros((len(mask), h, w))
        for a in range(len(mask)):
            aw, ah = ANCHORS[2 * mask[a]] / size, ANCHORS[2 * mask[a] + 1] / size
            for r in range(h):
                for c in range(w):
                    v = p[i, a, :, r, c]
                    box = ((c + sig(v[0]) * sxy - 0.5 * (sxy - 1)) / h, (r + sig(v[1]) * sxy - 0.5 * (sxy - 1)) / h,
                           math.exp(v[2]) * aw, math.exp(v[3]) * ah)
                    if max(iou_cs(box, g) for g in gt[i]) > ignore:
                        obj[a, r, c] = -1
        for j, g in enumerate(gt[i]):
            if g[2] * g[3] == 0:
                continue
            best = int(np.argmax([iou_cs((0, 0, g[2], g[3]), (0, 0, ANCHORS[2 * k] / size, ANCHORS[2 * k + 1] / size))
                                  for k in range(len(ANCHORS) // 2)]))
            if best not in mask:
                continue
            a = mask.index(best)
            gi, gj = int(g[0] * w), int(g[1] * h)
            v = p[i, a, :, gj, gi]
            scale = (2 - g[2] * g[3]) * score[i, j]
            loss[i] += (sce(v[0], g[0] * h - gi) + sce(v[1], g[1] * h - gj)) * scale
            loss[i] += (abs(v[2] - math.log(g[2] * size / ANCHORS[2 * best]))
                        + abs(v[3] - math.log(g[3] * size / ANCHORS[2 * best + 1]))) * scale
            loss[i] += sum(sce(v[5 + k], 1 - sw if k == label[i, j] else sw) for k in range(classes)) * score[i, j]
            obj[a, gj, gi] = score[i, j]
        for a, r, c in np.ndindex(obj.shape):
            t = obj[a, r, c]
            if t > 0:
                loss[i] += sce(p[i, a, 4, r, c], 1.0) * t
            elif t == 0:
                loss[i] += sce(p[i, a, 4, r, c], 0.0)
        obj_mask[i] = obj
    return loss, obj_mask


@pytest.mark.parametrize("smooth,with_score,sxy", [(True, True, 1.0), (False, False, 1.0), (True, True, 1.2)])
def test_yolov3_loss(smooth, with_score, sxy):
    mask, classes, n, hw = [1, 2, 3], 3, 2, 4
    x = rng.normal(size=(n, len(mask) * (5 + classes), hw, hw))
    gt = rng.uniform(0.05, 0.5, (n, 3, 4))
    gt[0, 2] = 0                                             # padding
    gt[1, 0, 2:] = [0.05, 0.06]                              # best matched by anchor 0, not in the mask: no cell
    label = rng.randint(0, classes, (n, 3)).astype("int32")
    score = rng.uniform(0.3, 1, (n, 3)) if with_score else np.ones((n, 3))
    ins = {"X": x, "GTBox": gt, "GTLabel": label}
    if with_score:
        ins["GTScore"] = score
    attrs = {"anchors": ANCHORS, "anchor_mask": mask, "class_num": classes, "ignore_thresh": 0.5,
             "downsample_ratio": 8, "use_label_smooth": smooth, "scale_x_y": sxy}
    got = run_op("yolov3_loss", ins, attrs, outputs=("Loss", "ObjectnessMask", "GTMatchMask"))
    loss, obj = reference(x, gt, label, score, mask, classes, 0.5, 8, smooth, sxy)
    np.testing.assert_allclose(got["Loss"][0], loss, rtol=1e-10)
    np.testing.assert_allclose(got["ObjectnessMask"][0], obj)
    assert got["GTMatchMask"][0][0, 2] == -1 and got["GTMatchMask"][0][1, 0] == -1
    check_grad("yolov3_loss", ins, ["X"], attrs, out_slot="Loss", outputs=("Loss", "ObjectnessMask", "GTMatchMask"))


def test_yolov3_loss_layer_needs_a_square_map_and_checks_its_arguments():
    with fluid.program_guard(fluid.Program(), fluid.Program()):
        box = fluid.data("box", [None, 3, 4], "float32")
        label = fluid.data("label", [None, 3], "int32")
        kw = dict(anchors=ANCHORS, anchor_mask=[0, 1], class_num=2, downsample_ratio=8)
        with pytest.raises(TypeError):
            fluid.layers.yolov3_loss(fluid.data("x0", [None, 14, 4, 4], "float32"), box, label, ignore_thresh=1, **kw)
        with pytest.raises(ValueError, match="square"):
            fluid.layers.yolov3_loss(fluid.data("x1", [None, 14, 4, 6], "float32"), box, label, ignore_thresh=0.7, **kw)
        loss = fluid.layers.yolov3_loss(fluid.data("x", [None, 14, 4, 4], "float32"), box, label, ignore_thresh=0.7, **kw)
        assert loss.shape == (-1,)
