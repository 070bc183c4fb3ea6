"""``fluid.metrics``: Python-side accumulators of evaluation results over mini-batches.

Each metric takes NumPy values fetched from a run (``update``) and reports the result over
everything seen (``eval``). As in Paddle 1.8, a metric's state is its attributes whose names do not
start with ``_``: ``reset()`` zeroes them and ``get_config()`` reports them. (``Auc`` keeps its
buckets in ``_stat_pos`` / ``_stat_neg``, so, as in Paddle, ``reset()`` leaves them alone; make a
new ``Auc`` to start over.)
"""
from __future__ import annotations

import copy
from typing import Any, List

import numpy as np

from .ops.metric import _auc_area

__all__ = ["MetricBase", "CompositeMetric", "Precision", "Recall", "Accuracy", "ChunkEvaluator", "EditDistance",
           "DetectionMAP", "Auc"]


def _is_numpy(v):
    return isinstance(v, (np.ndarray, np.generic))


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) or \
        (isinstance(v, np.ndarray) and v.shape == (1,))


def _scalar(v):
    """A count that may be a fetched [1] array, as a Python number."""
    return np.asarray(v).reshape(-1)[0].item() if np.size(v) == 1 else v


def _is_number_or_array(v):
    return _is_number(v) or isinstance(v, np.ndarray)


class MetricBase:
    """The base of metrics: ``update`` with each batch's fetched values, ``eval`` for the result
    over everything seen, ``reset`` to start over.

    Args:
        name: the metric's name (the class name when None).

    Examples:
        >>> class Mean(fluid.metrics.MetricBase):
        ...     def __init__(self, name=None):
        ...         super().__init__(name)
        ...         self.total, self.count = 0.0, 0
        ...     def update(self, values):
        ...         self.total += float(np.sum(values))
        ...         self.count += int(np.size(values))
        ...     def eval(self) -> Any:
        ...         return self.total / self.count
        >>> m = Mean()
        >>> m.update(np.array([1.0, 2.0])); m.update(np.array([6.0]))
        >>> m.eval(), m.get_config()["states"]
        (3.0, {'total': 9.0, 'count': 3})
    """

    def __init__(self, name: str | None):
        self._name = str(name) if name is not None else type(self).__name__

    def __str__(self):
        return self._name

    def _states(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def reset(self) -> None:
        """Zero the state: ints to 0, floats to 0.0, arrays to zeros of their shape, others to None."""
        for k, v in self._states().items():
            if isinstance(v, bool) or not isinstance(v, (int, float, np.ndarray, np.generic)):
                setattr(self, k, None)
            elif isinstance(v, int):
                setattr(self, k, 0)
            elif isinstance(v, float):
                setattr(self, k, 0.0)
            else:
                setattr(self, k, np.zeros_like(v))

    def get_config(self) -> dict:
        """``{"name": ..., "states": {a copy of the state}}``."""
        return {"name": self._name, "states": copy.deepcopy(self._states())}

    def update(self, preds: Any, labels: Any) -> None:
        """Add one batch's values."""
        raise NotImplementedError("%s.update: a metric must implement update()" % type(self).__name__)

    def eval(self) -> Any:
        """The result over everything updated."""
        raise NotImplementedError("%s.eval: a metric must implement eval()" % type(self).__name__)


class CompositeMetric(MetricBase):
    """Several metrics updated with the same (preds, labels); ``eval`` returns their results in order.

    Args:
        name: the metric's name (the class name when None).

    Examples:
        >>> both = fluid.metrics.CompositeMetric()
        >>> both.add_metric(fluid.metrics.Precision())
        >>> both.add_metric(fluid.metrics.Recall())
        >>> both.update(np.array([[0.9], [0.8], [0.2]]), np.array([[1], [0], [1]]))
        >>> both.eval()
        [0.5, 0.5]
    """

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self._metrics: list[MetricBase] = []

    def add_metric(self, metric: MetricBase) -> None:
        """Add a metric (ValueError for anything else)."""
        if not isinstance(metric, MetricBase):
            raise ValueError("CompositeMetric.add_metric: %r is not a MetricBase" % (metric,))
        self._metrics.append(metric)

    def update(self, preds: Any, labels: Any) -> None:
        """Update every metric with the same values."""
        for m in self._metrics:
            m.update(preds, labels)

    def eval(self) -> list:
        """Every metric's result, in the order they were added."""
        return [m.eval() for m in self._metrics]


def _binary(preds, labels, who):
    if not _is_numpy(preds):
        raise ValueError("%s.update: 'preds' must be a numpy array, got %r" % (who, type(preds).__name__))
    if not _is_numpy(labels):
        raise ValueError("%s.update: 'labels' must be a numpy array, got %r" % (who, type(labels).__name__))
    n = labels.shape[0]
    pred = np.rint(np.asarray(preds)).astype(np.int32).reshape(n, -1)[:, 0]
    return pred, np.asarray(labels).reshape(n, -1)[:, 0]


class Precision(MetricBase):
    """Precision of a binary classifier, ``tp / (tp + fp)``, over all batches.

    ``update(preds, labels)``: probabilities ``[N, 1]`` (rounded at 0.5) and 0/1 labels ``[N, 1]``,
    NumPy arrays (ValueError otherwise).

    Args:
        name: the metric's name (the class name when None).

    Examples:
        >>> p = fluid.metrics.Precision()
        >>> p.update(np.array([[0.9], [0.8], [0.2]]), np.array([[1], [0], [1]]))
        >>> p.eval()
        0.5
    """

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds: np.ndarray, labels: np.ndarray) -> None:
        pred, label = _binary(preds, labels, "Precision")
        positive = pred == 1
        self.tp += int((positive & (label == 1)).sum())
        self.fp += int((positive & (label != 1)).sum())

    def eval(self) -> Any:
        total = self.tp + self.fp
        return float(self.tp) / total if total else 0.0


class Recall(MetricBase):
    """Recall of a binary classifier, ``tp / (tp + fn)``, over all batches; ``update`` takes what
    ``Precision.update`` takes.

    Args:
        name: the metric's name (the class name when None).

    Examples:
        >>> r = fluid.metrics.Recall()
        >>> r.update(np.array([[0.9], [0.8], [0.2]]), np.array([[1], [0], [1]]))
        >>> r.eval()
        0.5
    """

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds: np.ndarray, labels: np.ndarray) -> None:
        pred, label = _binary(preds, labels, "Recall")
        actual = label == 1
        self.tp += int((actual & (pred == 1)).sum())
        self.fn += int((actual & (pred != 1)).sum())

    def eval(self) -> Any:
        total = self.tp + self.fn
        return float(self.tp) / total if total else 0.0


class Accuracy(MetricBase):
    """The weighted mean of per-batch accuracies: ``update(value, weight)`` with the batch's
    accuracy (fetched from ``layers.accuracy``) and its size.

    Args:
        name: the metric's name (the class name when None).

    Raises:
        ValueError: a value or weight of the wrong type, a negative weight, or ``eval`` before
            any update.

    Examples:
        >>> acc = fluid.metrics.Accuracy()
        >>> acc.update(value=0.5, weight=10)
        >>> acc.update(value=1.0, weight=30)
        >>> acc.eval()
        0.875
    """

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value: Any, weight: Any) -> None:
        if not _is_number_or_array(value):
            raise ValueError("Accuracy.update: 'value' must be a number or a numpy array, got %r"
                             % type(value).__name__)
        if not _is_number(weight):
            raise ValueError("Accuracy.update: 'weight' must be a number, got %r" % type(weight).__name__)
        if weight < 0:
            raise ValueError("Accuracy.update: 'weight' must not be negative, got %r" % (weight,))
        self.value += value * weight
        self.weight += weight

    def eval(self) -> Any:
        if self.weight == 0:
            raise ValueError("Accuracy.eval: no data yet; update() it with the output of layers.accuracy")
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Chunk precision, recall and F1 over batches, from the counts ``layers.chunk_eval`` returns.

    Args:
        name: the metric's name (the class name when None).

    Examples:
        >>> chunks = fluid.metrics.ChunkEvaluator()
        >>> chunks.update(num_infer_chunks=4, num_label_chunks=5, num_correct_chunks=3)
        >>> [round(v, 4) for v in chunks.eval()]
        [0.75, 0.6, 0.6667]
    """

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks: Any, num_label_chunks: Any,  # type: ignore[override]
               num_correct_chunks: Any) -> None:
        for arg, v in (("num_infer_chunks", num_infer_chunks), ("num_label_chunks", num_label_chunks),
                       ("num_correct_chunks", num_correct_chunks)):
            if not _is_number_or_array(v):
                raise ValueError("ChunkEvaluator.update: %r must be a number or a numpy array, got %r"
                                 % (arg, type(v).__name__))
        self.num_infer_chunks += num_infer_chunks
        self.num_label_chunks += num_label_chunks
        self.num_correct_chunks += num_correct_chunks

    def eval(self) -> Any:
        """``(precision, recall, f1)``."""
        infer, label, correct = (_scalar(v) for v in (self.num_infer_chunks, self.num_label_chunks,
                                                      self.num_correct_chunks))
        precision = float(correct) / infer if infer else 0
        recall = float(correct) / label if label else 0
        f1 = float(2 * precision * recall) / (precision + recall) if correct else 0
        return precision, recall, f1


class EditDistance(MetricBase):
    """Average edit distance and the share of sequences with any error, from the outputs of
    ``layers.edit_distance``.

    Args:
        name: the metric's name.

    Examples:
        >>> ed = fluid.metrics.EditDistance("ed")
        >>> ed.update(np.array([[0.0], [2.0]]), seq_num=2)
        >>> [float(v) for v in ed.eval()]
        [1.0, 0.5]
    """

    def __init__(self, name: str | None):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances: np.ndarray, seq_num: Any) -> None:
        if not _is_numpy(distances):
            raise ValueError("EditDistance.update: 'distances' must be a numpy array, got %r"
                             % type(distances).__name__)
        if not _is_number(seq_num):
            raise ValueError("EditDistance.update: 'seq_num' must be a number, got %r" % type(seq_num).__name__)
        right = np.sum(distances == 0)
        self.seq_num += seq_num
        self.instance_error += seq_num - right
        self.total_distance += np.sum(distances)

    def eval(self) -> Any:
        """``(average distance, share of sequences with a non-zero distance)``."""
        if self.seq_num == 0:
            raise ValueError("EditDistance.eval: no data yet; update() it with the output of layers.edit_distance")
        return self.total_distance / self.seq_num, self.instance_error / float(self.seq_num)


class Auc(MetricBase):
    """ROC AUC over everything updated: ``preds`` [N, 2] class probabilities (column 1 is the
    positive one), ``labels`` 0/1 [N, 1]; the same buckets as ``layers.auc``.

    Args:
        name: the metric's name.
        curve: ``"ROC"`` (kept for Paddle's signature).
        num_thresholds: the number of buckets of the probability.

    Examples:
        >>> auc = fluid.metrics.Auc("auc")
        >>> auc.update(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), np.array([[1], [0], [0]]))
        >>> auc.eval()
        1.0
    """

    def __init__(self, name: str | None, curve: str = "ROC", num_thresholds: int = 4095):
        super().__init__(name=name)
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        # Python lists of per-bucket counts, as Paddle 1.8 keeps them (scripts extend and print them)
        self._stat_pos: List[float] = [0] * (self._num_thresholds + 1)
        self._stat_neg: List[float] = [0] * (self._num_thresholds + 1)

    def update(self, preds: np.ndarray, labels: np.ndarray) -> None:
        if not _is_numpy(labels):
            raise ValueError("Auc.update: 'labels' must be a numpy array, got %r" % type(labels).__name__)
        if not _is_numpy(preds):
            raise ValueError("Auc.update: 'preds' must be a numpy array, got %r" % type(preds).__name__)
        label = np.asarray(labels).reshape(len(labels), -1)[:, 0]
        idx = (np.asarray(preds)[:len(label), 1] * self._num_thresholds).astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() > self._num_thresholds):
            raise ValueError("Auc.update: probabilities must lie in [0, 1]")
        buckets = self._num_thresholds + 1
        for stat, hits in ((self._stat_pos, idx[label != 0]), (self._stat_neg, idx[label == 0])):
            counts = np.bincount(hits, minlength=buckets)
            for b in np.flatnonzero(counts).tolist():
                stat[b] += float(counts[b])

    @staticmethod
    def trapezoid_area(x1: float, x2: float, y1: float, y2: float) -> float:
        """The area of the trapezoid under a segment of the curve."""
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def eval(self) -> Any:
        return _auc_area(self._stat_pos, self._stat_neg)


class DetectionMAP:
    """The mAP of detections, for this batch and accumulated over the batches since ``reset``: two
    ``detection_map`` ops, the second reading and writing persistable state (positives per class and
    the true / false positive marks) while ``has_state`` is 1.

    Args:
        input: the detections ``[K, 6]`` (``multiclass_nms`` / ``detection_output``'s output).
        gt_label: ``[G, 1]`` ground truth classes (LoD per image).
        gt_box: ``[G, 4]`` ground truth boxes (normalised).
        gt_difficult: ``[G, 1]`` difficult flags, or None.
        class_num: the number of classes.
        background_label: the background class (Paddle 1.8's op does not read it).
        overlap_threshold: the IoU above which a detection matches.
        evaluate_difficult: count difficult ground truth.
        ap_version: ``'integral'`` or ``'11point'``.

    Examples:
        >>> det = fluid.data(name="det", shape=[None, 6], dtype="float32", lod_level=1)
        >>> gl = fluid.data(name="gl", shape=[None, 1], dtype="float32", lod_level=1)
        >>> gb = fluid.data(name="gb", shape=[None, 4], dtype="float32", lod_level=1)
        >>> cur_map, accum_map = fluid.metrics.DetectionMAP(det, gl, gb, class_num=3).get_map_var()
    """

    def __init__(self, input: Any, gt_label: Any, gt_box: Any, gt_difficult: Any = None, class_num: int | None = None,
                 background_label: int = 0, overlap_threshold: float = 0.5, evaluate_difficult: bool = True,
                 ap_version: str = "integral") -> None:
        from .framework import unique_name
        from .initializer import Constant
        from .layers.detection_heads import detection_map
        from .layers.layer_helper import LayerHelper
        from .layers.tensor import cast, concat
        from .layers.tensor_fill import fill_constant
        self.helper = LayerHelper("map_eval")
        gt_label = cast(x=gt_label, dtype=gt_box.dtype)
        parts = [gt_label, cast(x=gt_difficult, dtype=gt_box.dtype)] if gt_difficult else [gt_label]
        label = concat(parts + [gt_box], axis=1)
        self.cur_map = detection_map(input, label, class_num, background_label, overlap_threshold=overlap_threshold,
                                     evaluate_difficult=evaluate_difficult, ap_version=ap_version)
        states = []
        for suffix, dtype, shape in (("accum_pos_count", "int32", [max(class_num or 1, 1), 1]),
                                     ("accum_true_pos", "float32", [1, 2]), ("accum_false_pos", "float32", [1, 2])):
            var = self.helper.create_variable(name="_".join([unique_name.generate(self.helper.name), suffix]),
                                              persistable=True, dtype=dtype, shape=shape)
            self.helper.set_variable_initializer(var, initializer=Constant(0))    # read only once has_state is 1
            states.append(var)
        self.has_state = self.helper.create_variable(name="_".join([unique_name.generate(self.helper.name),
                                                                    "has_state"]),
                                                     persistable=True, dtype="int32", shape=[1])
        self.helper.set_variable_initializer(self.has_state, initializer=Constant(0))
        self.accum_map = detection_map(input, label, class_num, background_label, overlap_threshold=overlap_threshold,
                                       evaluate_difficult=evaluate_difficult, has_state=self.has_state,
                                       input_states=states, out_states=states, ap_version=ap_version)
        fill_constant(shape=self.has_state.shape, value=1, dtype=self.has_state.dtype, out=self.has_state)

    def get_map_var(self) -> tuple:
        """``(the batch's mAP, the accumulated mAP)`` Variables to fetch."""
        return self.cur_map, self.accum_map

    def reset(self, executor: Any, reset_program: Any = None) -> None:
        """Start accumulating afresh: ``has_state`` set to 0 by running ``reset_program`` (a new one
        when None)."""
        from .framework import Program, program_guard
        from .layers.tensor_fill import fill_constant
        reset_program = reset_program or Program()
        with program_guard(main_program=reset_program):
            v = self.has_state
            var = reset_program.current_block().create_var(name=v.name, shape=v.shape, dtype=v.dtype,
                                                           persistable=True)
            fill_constant(shape=var.shape, value=0, dtype=var.dtype, out=var)
        executor.run(reset_program)
