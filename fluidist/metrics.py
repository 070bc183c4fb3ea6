"""``fluid.metrics``: Python-side accumulators of evaluation results over mini-batches.

Each metric takes NumPy values fetched from a run (``update``) and reports the result over
everything seen (``eval``). As in Paddle 1.8, a metric's state is its attributes whose names do not
start with ``_``: ``reset()`` zeroes them and ``get_config()`` reports them. (``Auc`` keeps its
buckets in ``_stat_pos`` / ``_stat_neg``, so, as in Paddle, ``reset()`` leaves them alone; make a
new ``Auc`` to start over.)
"""
import copy

import numpy as np

from .compat import refused_class
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
    """A metric named ``name`` (default: the class name)."""

    def __init__(self, name):
        self._name = str(name) if name is not None else type(self).__name__

    def __str__(self):
        return self._name

    def _states(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def reset(self):
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

    def get_config(self):
        """``{"name": ..., "states": {a copy of the state}}``."""
        return {"name": self._name, "states": copy.deepcopy(self._states())}

    def update(self, preds, labels):
        raise NotImplementedError("%s.update: a metric must implement update()" % type(self).__name__)

    def eval(self):
        raise NotImplementedError("%s.eval: a metric must implement eval()" % type(self).__name__)


class CompositeMetric(MetricBase):
    """Several metrics updated with the same (preds, labels); ``eval`` returns their results in order."""

    def __init__(self, name=None):
        super().__init__(name)
        self._metrics = []

    def add_metric(self, metric):
        if not isinstance(metric, MetricBase):
            raise ValueError("CompositeMetric.add_metric: %r is not a MetricBase" % (metric,))
        self._metrics.append(metric)

    def update(self, preds, labels):
        for m in self._metrics:
            m.update(preds, labels)

    def eval(self):
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
    """Precision of a binary classifier: ``preds`` are probabilities [N, 1] (rounded at 0.5),
    ``labels`` 0/1 [N, 1]."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fp = 0

    def update(self, preds, labels):
        pred, label = _binary(preds, labels, "Precision")
        positive = pred == 1
        self.tp += int((positive & (label == 1)).sum())
        self.fp += int((positive & (label != 1)).sum())

    def eval(self):
        total = self.tp + self.fp
        return float(self.tp) / total if total else 0.0


class Recall(MetricBase):
    """Recall of a binary classifier; arguments as ``Precision``."""

    def __init__(self, name=None):
        super().__init__(name)
        self.tp = 0
        self.fn = 0

    def update(self, preds, labels):
        pred, label = _binary(preds, labels, "Recall")
        actual = label == 1
        self.tp += int((actual & (pred == 1)).sum())
        self.fn += int((actual & (pred != 1)).sum())

    def eval(self):
        total = self.tp + self.fn
        return float(self.tp) / total if total else 0.0


class Accuracy(MetricBase):
    """The weighted mean of per-batch accuracies: ``update(value, weight)`` with the batch's
    accuracy (from ``layers.accuracy``) and its size."""

    def __init__(self, name=None):
        super().__init__(name)
        self.value = 0.0
        self.weight = 0.0

    def update(self, value, weight):
        if not _is_number_or_array(value):
            raise ValueError("Accuracy.update: 'value' must be a number or a numpy array, got %r"
                             % type(value).__name__)
        if not _is_number(weight):
            raise ValueError("Accuracy.update: 'weight' must be a number, got %r" % type(weight).__name__)
        if weight < 0:
            raise ValueError("Accuracy.update: 'weight' must not be negative, got %r" % (weight,))
        self.value += value * weight
        self.weight += weight

    def eval(self):
        if self.weight == 0:
            raise ValueError("Accuracy.eval: no data yet; update() it with the output of layers.accuracy")
        return self.value / self.weight


class ChunkEvaluator(MetricBase):
    """Chunk precision, recall and F1 over batches, from the counts ``layers.chunk_eval`` returns."""

    def __init__(self, name=None):
        super().__init__(name)
        self.num_infer_chunks = 0
        self.num_label_chunks = 0
        self.num_correct_chunks = 0

    def update(self, num_infer_chunks, num_label_chunks, num_correct_chunks):
        for arg, v in (("num_infer_chunks", num_infer_chunks), ("num_label_chunks", num_label_chunks),
                       ("num_correct_chunks", num_correct_chunks)):
            if not _is_number_or_array(v):
                raise ValueError("ChunkEvaluator.update: %r must be a number or a numpy array, got %r"
                                 % (arg, type(v).__name__))
        self.num_infer_chunks += num_infer_chunks
        self.num_label_chunks += num_label_chunks
        self.num_correct_chunks += num_correct_chunks

    def eval(self):
        """``(precision, recall, f1)``."""
        infer, label, correct = (_scalar(v) for v in (self.num_infer_chunks, self.num_label_chunks,
                                                      self.num_correct_chunks))
        precision = float(correct) / infer if infer else 0
        recall = float(correct) / label if label else 0
        f1 = float(2 * precision * recall) / (precision + recall) if correct else 0
        return precision, recall, f1


class EditDistance(MetricBase):
    """Average edit distance and the share of sequences with any error, from the outputs of
    ``layers.edit_distance``."""

    def __init__(self, name):
        super().__init__(name)
        self.total_distance = 0.0
        self.seq_num = 0
        self.instance_error = 0

    def update(self, distances, seq_num):
        if not _is_numpy(distances):
            raise ValueError("EditDistance.update: 'distances' must be a numpy array, got %r"
                             % type(distances).__name__)
        if not _is_number(seq_num):
            raise ValueError("EditDistance.update: 'seq_num' must be a number, got %r" % type(seq_num).__name__)
        right = np.sum(distances == 0)
        self.seq_num += seq_num
        self.instance_error += seq_num - right
        self.total_distance += np.sum(distances)

    def eval(self):
        """``(average distance, share of sequences with a non-zero distance)``."""
        if self.seq_num == 0:
            raise ValueError("EditDistance.eval: no data yet; update() it with the output of layers.edit_distance")
        return self.total_distance / self.seq_num, self.instance_error / float(self.seq_num)


class Auc(MetricBase):
    """ROC AUC over everything updated: ``preds`` [N, 2] class probabilities (column 1 is the
    positive one), ``labels`` 0/1 [N, 1]; the same buckets as ``layers.auc``."""

    def __init__(self, name, curve="ROC", num_thresholds=4095):
        super().__init__(name=name)
        self._curve = curve
        self._num_thresholds = int(num_thresholds)
        self._stat_pos = np.zeros(self._num_thresholds + 1)
        self._stat_neg = np.zeros(self._num_thresholds + 1)

    def update(self, preds, labels):
        if not _is_numpy(labels):
            raise ValueError("Auc.update: 'labels' must be a numpy array, got %r" % type(labels).__name__)
        if not _is_numpy(preds):
            raise ValueError("Auc.update: 'preds' must be a numpy array, got %r" % type(preds).__name__)
        label = np.asarray(labels).reshape(len(labels), -1)[:, 0]
        idx = (np.asarray(preds)[:len(label), 1] * self._num_thresholds).astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() > self._num_thresholds):
            raise ValueError("Auc.update: probabilities must lie in [0, 1]")
        np.add.at(self._stat_pos, idx[label != 0], 1.0)
        np.add.at(self._stat_neg, idx[label == 0], 1.0)

    @staticmethod
    def trapezoid_area(x1, x2, y1, y2):
        return abs(x1 - x2) * (y1 + y2) / 2.0

    def eval(self):
        return _auc_area(self._stat_pos, self._stat_neg)


DetectionMAP = refused_class("fluid.metrics.DetectionMAP",
                             "fluidist has no detection ops (detection is outside fluid 1.x's core modules); "
                             "compute mAP with NumPy on the fetched boxes")
