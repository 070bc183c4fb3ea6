"""What a fetched value is: a NumPy array that, like NumPy 1's arrays, converts to a Python number
when it holds one element.

Paddle 1.x scripts fetch a loss of shape ``[1]`` and write ``float(loss)``, ``int(step)``,
``'%f' % loss`` or ``'%d' % count``. NumPy 1 allowed those conversions of any one-element array;
NumPy 2 allows them only for 0-d arrays ("only 0-dimensional arrays can be converted to Python
scalars"), so such scripts fail at their first print. :func:`as_fetched` views a host array as
:class:`FetchedArray`, an ``ndarray`` subclass whose ``float()`` / ``int()`` accept one element, as
NumPy 1 did; everything else is the ndarray's: arithmetic and NumPy functions, ``np.array(v)`` (a
plain ndarray), ``repr`` (``array(...)``), and pickling and ``np.save`` (a plain ndarray comes back)."""
import numpy as np


class FetchedArray(np.ndarray):
    """An ndarray whose ``float()`` / ``int()`` take a one-element array of any shape (NumPy 1's rule)."""

    def __float__(self):
        if self.size == 1:
            return float(self.reshape(()).view(np.ndarray)[()])
        return np.ndarray.__float__(self.view(np.ndarray))

    def __int__(self):
        if self.size == 1:
            return int(self.reshape(()).view(np.ndarray)[()])
        return np.ndarray.__int__(self.view(np.ndarray))

    def __repr__(self):
        return repr(self.view(np.ndarray))

    def __reduce__(self):
        return self.view(np.ndarray).__reduce__()


def as_fetched(array):
    """``array`` (a NumPy array on the host) as the value a fetch returns."""
    if type(array) is np.ndarray:
        return array.view(FetchedArray)
    return array
