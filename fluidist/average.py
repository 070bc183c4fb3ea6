"""``fluid.average``: ``WeightedAverage``, the running weighted mean model scripts keep of fetched
losses and accuracies (``add(value, weight)``, ``eval()``)."""
import numpy as np

__all__ = ["WeightedAverage"]


def _is_number_or_array(x):
    return isinstance(x, (int, float, np.integer, np.floating)) or (isinstance(x, np.ndarray) and x.size >= 1)


class WeightedAverage:
    """The sum of ``value * weight`` over the sum of ``weight``, over every ``add`` since ``reset``."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.numerator = None
        self.denominator = None

    def add(self, value, weight):
        if not _is_number_or_array(value):
            raise ValueError("WeightedAverage.add: value must be a number or a numpy array, got %r" % (value,))
        if not _is_number_or_array(weight):
            raise ValueError("WeightedAverage.add: weight must be a number or a numpy array, got %r" % (weight,))
        if self.numerator is None:
            self.numerator = value * weight
            self.denominator = weight
        else:
            self.numerator = self.numerator + value * weight
            self.denominator = self.denominator + weight

    def eval(self):
        if self.numerator is None or self.denominator is None:
            raise ValueError("WeightedAverage.eval: nothing was added (call add(value, weight) first)")
        return self.numerator / self.denominator
