"""The values the native inference API passes: ``PaddleDType``, ``PaddleBuf`` (a typed buffer),
``PaddleTensor`` (name, shape, buffer, dtype, LoD) and ``ZeroCopyTensor`` (a predictor's input or
output by name)."""
import numpy as np


class PaddleDType:
    """The element types of a PaddleTensor."""
    FLOAT32 = np.dtype("float32")
    INT32 = np.dtype("int32")
    INT64 = np.dtype("int64")


_DTYPES = (PaddleDType.FLOAT32, PaddleDType.INT32, PaddleDType.INT64)


def _typed(array, who):
    array = np.asarray(array)
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    if array.dtype not in _DTYPES:
        raise TypeError("%s: the inference API holds float32, int32 or int64 data, got %s" % (who, array.dtype))
    return array


class PaddleBuf:
    """A flat buffer of one element type: ``PaddleBuf([1.0, 2.0])``, ``PaddleBuf(ndarray)``."""

    def __init__(self, data=None):
        self._data = np.zeros(0, np.float32) if data is None else _typed(data, "PaddleBuf").reshape(-1).copy()

    def reset(self, data):
        self._data = _typed(data, "PaddleBuf.reset").reshape(-1).copy()

    def resize(self, nbytes):
        """Make the buffer ``nbytes`` long (new bytes are zero, kept ones kept)."""
        n = int(nbytes) // self._data.itemsize
        data = np.zeros(n, self._data.dtype)
        data[:min(n, self._data.size)] = self._data[:n]
        self._data = data

    def empty(self):
        return self._data.size == 0

    def length(self):
        """The buffer's size in bytes."""
        return self._data.nbytes

    def _as(self, dtype):
        """The buffer's bytes read as ``dtype`` elements (as Paddle's buffer accessors read them)."""
        raw = self._data.view(np.uint8)
        n = raw.size // np.dtype(dtype).itemsize
        return raw[:n * np.dtype(dtype).itemsize].view(dtype)

    def float_data(self):
        return self._as(np.float32).tolist()

    def int32_data(self):
        return self._as(np.int32).tolist()

    def int64_data(self):
        return self._as(np.int64).tolist()

    def tolist(self, dtype=None):
        """The buffer's bytes as a list of ``dtype`` (``"float32"``, ``"int32"``, ``"int64"``)
        elements; its own element type when None."""
        if dtype is None:
            return self._data.tolist()
        if dtype not in ("float32", "int32", "int64"):
            raise ValueError("PaddleBuf.tolist: dtype must be 'float32', 'int32' or 'int64', got %r" % (dtype,))
        return self._as(np.dtype(dtype)).tolist()


class PaddleTensor:
    """An input or output of ``PaddlePredictor.run``: ``PaddleTensor(ndarray)`` (name, lod optional) or
    an empty one filled through its attributes (``name``, ``shape``, ``data``, ``dtype``, ``lod``)."""

    def __init__(self, data=None, name="", lod=None, copy=True):
        self.name = name
        self.lod = [list(level) for level in lod] if lod else []
        if data is None:
            self.shape, self.dtype, self.data = [], PaddleDType.FLOAT32, PaddleBuf()
        else:
            array = _typed(data, "PaddleTensor")
            self.shape, self.dtype = list(array.shape), array.dtype
            self.data = PaddleBuf(array)

    def as_ndarray(self):
        """The data as an array of ``shape`` and ``dtype``."""
        return np.asarray(self.data._data, dtype=self.dtype).reshape(self.shape)

    def __repr__(self):
        return "PaddleTensor(name=%r, shape=%s, dtype=%s%s)" % (self.name, self.shape, np.dtype(self.dtype).name,
                                                               ", lod=%s" % self.lod if self.lod else "")


class ZeroCopyTensor:
    """A predictor's input or output by name: for an input ``reshape`` / ``copy_from_cpu`` / ``set_lod``,
    for an output (after ``zero_copy_run``) ``shape`` / ``copy_to_cpu`` / ``lod``."""

    def __init__(self, predictor, name, is_input):
        self._predictor, self.name, self._is_input = predictor, name, is_input

    def _check_input(self, what):
        if not self._is_input:
            raise ValueError("%s: %r is an output of the predictor" % (what, self.name))

    def reshape(self, shape):
        self._check_input("ZeroCopyTensor.reshape")
        self._predictor._shapes[self.name] = [int(d) for d in shape]

    def copy_from_cpu(self, array):
        """Give the input its value (a NumPy array of its dtype; the shape set by ``reshape``, if any,
        must match)."""
        self._check_input("ZeroCopyTensor.copy_from_cpu")
        array = np.asarray(array)
        want = self._predictor._shapes.get(self.name)
        if want is not None and int(np.prod(want)) != array.size:
            raise ValueError("copy_from_cpu: %r was reshaped to %s but got %d values" % (self.name, want, array.size))
        self._predictor._inputs[self.name] = array.reshape(want) if want is not None else array

    def set_lod(self, lod):
        self._check_input("ZeroCopyTensor.set_lod")
        self._predictor._lods[self.name] = [list(level) for level in lod]

    def lod(self):
        return self._predictor._lod_of(self.name, self._is_input)

    def copy_to_cpu(self):
        """The value (an output after ``zero_copy_run``; an input as given)."""
        return np.array(self._predictor._value_of(self.name, self._is_input), copy=True)

    def shape(self):
        return list(self._predictor._value_of(self.name, self._is_input).shape)

    def type(self):
        return np.asarray(self._predictor._value_of(self.name, self._is_input)).dtype
