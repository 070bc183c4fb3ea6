"""Box arithmetic and anchor generators (``detection_boxes.py``) against NumPy references written box
by box and cell by cell after Paddle 1.8's kernels."""
import itertools
import math

import numpy as np
import pytest

from op_test import run_op

rng = np.random.RandomState(23)


def random_boxes(n, scale=1.0):
    lo = rng.uniform(0, 0.5, (n, 2)) * scale
    return np.concatenate([lo, lo + rng.uniform(0.1, 0.5, (n, 2)) * scale], axis=1)


@pytest.mark.parametrize("normalized", [True, False])
def test_iou_similarity(normalized):
    a, b = random_boxes(3, 10), random_boxes(4, 10)
    got = run_op("iou_similarity", {"X": a, "Y": b}, {"box_normalized": normalized})["Out"][0]
    one = 0 if normalized else 1
    want = np.zeros((3, 4))
    for i, j in itertools.product(range(3), range(4)):
        iw = max(min(a[i, 2], b[j, 2]) - max(a[i, 0], b[j, 0]) + one, 0)
        ih = max(min(a[i, 3], b[j, 3]) - max(a[i, 1], b[j, 1]) + one, 0)
        area = lambda r: (r[2] - r[0] + one) * (r[3] - r[1] + one)  # noqa: E731
        want[i, j] = iw * ih / (area(a[i]) + area(b[j]) - iw * ih)
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("var_kind", ["tensor", "attr", "none"])
@pytest.mark.parametrize("normalized", [True, False])
def test_box_coder_encode_then_decode_round_trips(var_kind, normalized):
    prior, target = random_boxes(5, 20), random_boxes(3, 20)
    var = rng.uniform(0.1, 0.3, (5, 4))
    ins, attrs = {"PriorBox": prior}, {"box_normalized": normalized}
    if var_kind == "tensor":
        ins["PriorBoxVar"] = var
    elif var_kind == "attr":
        attrs["variance"] = [0.1, 0.1, 0.2, 0.2]
    enc = run_op("box_coder", dict(ins, TargetBox=target), dict(attrs, code_type="encode_center_size"),
                 outputs=("OutputBox",))["OutputBox"][0]
    one = 0 if normalized else 1
    want = np.zeros((3, 5, 4))
    for i, j in itertools.product(range(3), range(5)):
        pw, ph = prior[j, 2] - prior[j, 0] + one, prior[j, 3] - prior[j, 1] + one
        px, py = prior[j, 0] + pw / 2, prior[j, 1] + ph / 2
        tw, th = target[i, 2] - target[i, 0] + one, target[i, 3] - target[i, 1] + one
        tx, ty = (target[i, 0] + target[i, 2]) / 2, (target[i, 1] + target[i, 3]) / 2
        v = var[j] if var_kind == "tensor" else ([0.1, 0.1, 0.2, 0.2] if var_kind == "attr" else [1] * 4)
        want[i, j] = [(tx - px) / pw / v[0], (ty - py) / ph / v[1], math.log(tw / pw) / v[2], math.log(th / ph) / v[3]]
    np.testing.assert_allclose(enc, want, rtol=1e-10)
    dec = run_op("box_coder", dict(ins, TargetBox=enc), dict(attrs, code_type="decode_center_size"),
                 outputs=("OutputBox",))["OutputBox"][0]
    # decoding gives back target i's box through every prior; for pixel boxes half a pixel up and left, as
    # Paddle's formulas do (the encoded centre is (x1 + x2) / 2, the decoded corners centre -+ (w - 1) / 2)
    shift = 0.0 if normalized else 0.5
    np.testing.assert_allclose(dec, np.repeat(target[:, None, :], 5, axis=1) - shift, rtol=1e-10, atol=1e-10)


def test_box_coder_decode_along_axis_1():
    prior, deltas = random_boxes(4, 5), rng.uniform(-0.5, 0.5, (4, 3, 4))
    out = run_op("box_coder", {"PriorBox": prior, "TargetBox": deltas},
                 {"code_type": "decode_center_size", "axis": 1, "variance": [0.1, 0.1, 0.2, 0.2]},
                 outputs=("OutputBox",))["OutputBox"][0]
    for i, k in itertools.product(range(4), range(3)):
        pw, ph = prior[i, 2] - prior[i, 0], prior[i, 3] - prior[i, 1]
        cx, cy = 0.1 * deltas[i, k, 0] * pw + prior[i, 0] + pw / 2, 0.1 * deltas[i, k, 1] * ph + prior[i, 1] + ph / 2
        w, h = math.exp(0.2 * deltas[i, k, 2]) * pw, math.exp(0.2 * deltas[i, k, 3]) * ph
        np.testing.assert_allclose(out[i, k], [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], rtol=1e-10)


def test_box_clip_per_image():
    boxes = rng.uniform(-3, 12, (5, 2, 4))
    info = np.array([[6.0, 8.0, 1.0], [9.0, 4.0, 2.0]])
    out = run_op("box_clip", {"Input": boxes, "ImInfo": info}, outputs=("Output",),
                 lods={"input_in": [[0, 2, 5]]})["Output"][0]
    for n in range(5):
        h, w, s = info[0 if n < 2 else 1]
        hh, ww = round(h / s), round(w / s)
        np.testing.assert_allclose(out[n], np.clip(boxes[n], 0, [ww - 1, hh - 1, ww - 1, hh - 1]))


def test_box_decoder_and_assign():
    prior, deltas, score = random_boxes(3, 30), rng.uniform(-1, 1, (3, 12)), rng.uniform(0, 1, (3, 3))
    score[1] = [0.9, 0.2, 0.5]                         # the background's score never wins
    got = run_op("box_decoder_and_assign", {"PriorBox": prior, "PriorBoxVar": np.array([0.1, 0.1, 0.2, 0.2]),
                                            "TargetBox": deltas, "BoxScore": score}, {"box_clip": 0.1},
                 outputs=("DecodeBox", "OutputAssignBox"))
    for i in range(3):
        w, h = prior[i, 2] - prior[i, 0] + 1, prior[i, 3] - prior[i, 1] + 1
        cx, cy = prior[i, 0] + w / 2, prior[i, 1] + h / 2
        boxes = []
        for c in range(3):
            d = deltas[i, 4 * c:4 * c + 4] * [0.1, 0.1, 0.2, 0.2]
            pw, ph = math.exp(min(d[2], 0.1)) * w, math.exp(min(d[3], 0.1)) * h
            px, py = d[0] * w + cx, d[1] * h + cy
            boxes.append([px - pw / 2, py - ph / 2, px + pw / 2 - 1, py + ph / 2 - 1])
        np.testing.assert_allclose(got["DecodeBox"][0][i], np.concatenate(boxes), rtol=1e-10)
        np.testing.assert_allclose(got["OutputAssignBox"][0][i], boxes[1 + int(np.argmax(score[i, 1:]))], rtol=1e-10)


@pytest.mark.parametrize("clip", [True, False])
def test_yolo_box(clip):
    anchors, classes, h, w = [10, 13, 16, 30], 2, 3, 4
    x = rng.uniform(-3, 3, (2, 2 * (5 + classes), h, w))
    img = np.array([[60, 90], [100, 80]], "int32")
    attrs = {"anchors": anchors, "class_num": classes, "conf_thresh": 0.3, "downsample_ratio": 16, "clip_bbox": clip}
    got = run_op("yolo_box", {"X": x, "ImgSize": img}, attrs, outputs=("Boxes", "Scores"))
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    for n, a, i, j in itertools.product(range(2), range(2), range(h), range(w)):
        p = x[n, a * (5 + classes):(a + 1) * (5 + classes), i, j]
        k = (a * h + i) * w + j
        conf = sig(p[4])
        if conf < 0.3:
            assert not got["Boxes"][0][n, k].any() and not got["Scores"][0][n, k].any()
            continue
        cx, cy = (j + sig(p[0])) / h, (i + sig(p[1])) / h           # Paddle's kernel: the grid is taken as square
        bw, bh = math.exp(p[2]) * anchors[2 * a] / (16 * h), math.exp(p[3]) * anchors[2 * a + 1] / (16 * h)
        ih, iw = img[n]
        box = [(cx - bw / 2) * iw, (cy - bh / 2) * ih, (cx + bw / 2) * iw, (cy + bh / 2) * ih]
        if clip:
            box = [max(box[0], 0), max(box[1], 0), min(box[2], iw - 1), min(box[3], ih - 1)]
        np.testing.assert_allclose(got["Boxes"][0][n, k], box, rtol=1e-10)
        np.testing.assert_allclose(got["Scores"][0][n, k], [sig(v) * conf for v in p[5:]], rtol=1e-10)


def _ratios(ratios, flip):
    out = [1.0]
    for r in ratios:
        if all(abs(r - o) > 1e-6 for o in out):
            out += [r, 1 / r] if flip else [r]
    return out


@pytest.mark.parametrize("order", [False, True])
def test_prior_box(order):
    feat, image = np.zeros((1, 2, 3, 4), "float32"), np.zeros((1, 3, 30, 36), "float32")
    attrs = {"min_sizes": [4.0, 8.0], "max_sizes": [9.0, 12.0], "aspect_ratios": [2.0, 3.0, 2.0], "flip": True,
             "clip": True, "variances": [0.1, 0.1, 0.2, 0.2], "offset": 0.5, "step_w": 0.0, "step_h": 0.0,
             "min_max_aspect_ratios_order": order}
    got = run_op("prior_box", {"Input": feat, "Image": image}, attrs, outputs=("Boxes", "Variances"))
    ratios = _ratios([2.0, 3.0, 2.0], True)
    for i, j in itertools.product(range(3), range(4)):
        cx, cy = (j + 0.5) * 9.0, (i + 0.5) * 10.0
        boxes = []
        for m, big in zip([4.0, 8.0], [9.0, 12.0]):
            by_ratio = [(m * math.sqrt(r) / 2, m / math.sqrt(r) / 2) for r in ratios]
            mx = (math.sqrt(m * big) / 2,) * 2
            boxes += ([by_ratio[0], mx] + by_ratio[1:]) if order else (by_ratio + [mx])
        want = [[(cx - bw) / 36, (cy - bh) / 30, (cx + bw) / 36, (cy + bh) / 30] for bw, bh in boxes]
        np.testing.assert_allclose(got["Boxes"][0][i, j], np.clip(want, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(got["Variances"][0], np.broadcast_to([0.1, 0.1, 0.2, 0.2], (3, 4, 12, 4)), rtol=1e-6)


def test_density_prior_box_and_anchor_generator():
    feat, image = np.zeros((1, 2, 2, 3), "float32"), np.zeros((1, 3, 16, 24), "float32")
    attrs = {"densities": [2, 1], "fixed_sizes": [4.0, 8.0], "fixed_ratios": [1.0, 2.0], "clip": True,
             "variances": [0.1, 0.1, 0.2, 0.2], "offset": 0.5, "flatten_to_2d": True}
    got = run_op("density_prior_box", {"Input": feat, "Image": image}, attrs, outputs=("Boxes", "Variances"))
    want = []
    for i, j in itertools.product(range(2), range(3)):
        cx, cy, avg = (j + 0.5) * 8, (i + 0.5) * 8, 8
        for dens, size in ((2, 4.0), (1, 8.0)):
            shift = avg // dens
            for r in (1.0, 2.0):
                bw, bh = size * math.sqrt(r), size / math.sqrt(r)
                for di, dj in itertools.product(range(dens), range(dens)):
                    x, y = cx - avg / 2 + shift / 2 + dj * shift, cy - avg / 2 + shift / 2 + di * shift
                    want.append([max((x - bw / 2) / 24, 0), max((y - bh / 2) / 16, 0), min((x + bw / 2) / 24, 1),
                                 min((y + bh / 2) / 16, 1)])
    np.testing.assert_allclose(got["Boxes"][0], want, rtol=1e-6)
    attrs = {"anchor_sizes": [32.0, 64.0], "aspect_ratios": [0.5, 2.0], "stride": [8.0, 16.0], "offset": 0.5,
             "variances": [0.1, 0.1, 0.2, 0.2]}
    got = run_op("anchor_generator", {"Input": feat}, attrs, outputs=("Anchors", "Variances"))["Anchors"][0]
    for i, j in itertools.product(range(2), range(3)):
        cx, cy = j * 8 + 0.5 * 7, i * 16 + 0.5 * 15
        k = 0
        for r in (0.5, 2.0):
            bw = round(math.sqrt(8 * 16 / r))
            bh = round(bw * r)
            for s in (32.0, 64.0):
                w, h = s / 8 * bw, s / 16 * bh
                np.testing.assert_allclose(got[i, j, k], [cx - (w - 1) / 2, cy - (h - 1) / 2, cx + (w - 1) / 2,
                                                          cy + (h - 1) / 2], rtol=1e-6)
                k += 1


def test_polygon_box_transform():
    x = rng.uniform(-1, 1, (2, 4, 3, 5))
    out = run_op("polygon_box_transform", {"Input": x}, outputs=("Output",))["Output"][0]
    for n, c, i, j in itertools.product(range(2), range(4), range(3), range(5)):
        assert out[n, c, i, j] == pytest.approx((4 * j if c % 2 == 0 else 4 * i) - x[n, c, i, j])
