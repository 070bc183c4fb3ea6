"""Initializers: each prepends one op to the startup program's global block (Paddle's order: the
last created parameter's init op comes first). Seeds come from ``Program.random_seed`` when the
initializer has none, so the same seed gives the same parameters."""
import contextlib

import numpy as np

from .framework.dtypes import convert_dtype

_force_cpu = [False]


def force_init_on_cpu():
    """Whether constant initialisers are forced to fill on the CPU (inside ``init_on_cpu()``)."""
    return _force_cpu[0]


@contextlib.contextmanager
def init_on_cpu():
    """Within this block, constants (``fill_constant`` from ConstantInitializer) are made with
    ``force_cpu=True``, as in Paddle 1.x (used for learning-rate counters)."""
    before = _force_cpu[0]
    _force_cpu[0] = True
    try:
        yield
    finally:
        _force_cpu[0] = before


class Initializer:
    def __init__(self, seed=0):
        self._seed = int(seed or 0)

    def _seed_for(self, block):
        return self._seed or block.program.random_seed

    def __call__(self, var, block):
        raise NotImplementedError

    @staticmethod
    def _fans(var):
        shape = var.shape
        if not shape:
            return 1, 1
        if len(shape) == 1:
            return shape[0], shape[0]
        if len(shape) == 2:
            return shape[0], shape[1]
        rf = int(np.prod(shape[2:]))
        return shape[1] * rf, shape[0] * rf


class ConstantInitializer(Initializer):
    def __init__(self, value=0.0, force_cpu=False):
        super().__init__()
        self._value = float(value)
        self._force_cpu = force_cpu

    def __call__(self, var, block):
        return block._prepend_op("fill_constant", outputs={"Out": [var.name]},
                                 attrs={"shape": list(var.shape), "value": self._value,
                                        "dtype": convert_dtype(var.dtype),
                                        "force_cpu": bool(self._force_cpu or force_init_on_cpu())})


class UniformInitializer(Initializer):
    def __init__(self, low=-1.0, high=1.0, seed=0):
        super().__init__(seed)
        if low > high:
            raise ValueError("UniformInitializer: low (%s) must not exceed high (%s)" % (low, high))
        self._low, self._high = float(low), float(high)

    def __call__(self, var, block):
        return block._prepend_op("uniform_random", outputs={"Out": [var.name]},
                                 attrs={"shape": list(var.shape), "min": self._low, "max": self._high,
                                        "seed": self._seed_for(block), "dtype": convert_dtype(var.dtype)})


class NormalInitializer(Initializer):
    def __init__(self, loc=0.0, scale=1.0, seed=0):
        super().__init__(seed)
        self._mean, self._std = float(loc), float(scale)

    _op = "gaussian_random"

    def __call__(self, var, block):
        return block._prepend_op(self._op, outputs={"Out": [var.name]},
                                 attrs={"shape": list(var.shape), "mean": self._mean, "std": self._std,
                                        "seed": self._seed_for(block), "dtype": convert_dtype(var.dtype)})


class TruncatedNormalInitializer(NormalInitializer):
    _op = "truncated_gaussian_random"


class XavierInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, fan_out=None, seed=0):
        super().__init__(seed)
        self._uniform, self._fan_in, self._fan_out = uniform, fan_in, fan_out

    def __call__(self, var, block):
        fi, fo = self._fans(var)
        fi = self._fan_in if self._fan_in is not None else fi
        fo = self._fan_out if self._fan_out is not None else fo
        if self._uniform:
            limit = float(np.sqrt(6.0 / float(fi + fo)))
            return UniformInitializer(-limit, limit, self._seed)(var, block)
        return NormalInitializer(0.0, float(np.sqrt(2.0 / float(fi + fo))), self._seed)(var, block)


class MSRAInitializer(Initializer):
    def __init__(self, uniform=True, fan_in=None, seed=0):
        super().__init__(seed)
        self._uniform, self._fan_in = uniform, fan_in

    def __call__(self, var, block):
        fi, _ = self._fans(var)
        fi = self._fan_in if self._fan_in is not None else fi
        if self._uniform:
            limit = float(np.sqrt(6.0 / float(fi)))
            return UniformInitializer(-limit, limit, self._seed)(var, block)
        return NormalInitializer(0.0, float(np.sqrt(2.0 / float(fi))), self._seed)(var, block)


class NumpyArrayInitializer(Initializer):
    def __init__(self, value):
        super().__init__()
        self._value = np.asarray(value)

    def __call__(self, var, block):
        v = self._value
        dt = convert_dtype(var.dtype)
        key = {"float32": "fp32_values", "float64": "fp32_values", "int32": "int32_values",
               "int64": "int64_values", "bool": "bool_values"}[dt]
        if tuple(v.shape) != tuple(var.shape):
            raise ValueError("NumpyArrayInitializer: value of shape %s for %r of shape %s"
                             % (list(v.shape), var.name, list(var.shape)))
        return block._prepend_op("assign_value", outputs={"Out": [var.name]},
                                 attrs={"shape": list(v.shape), "dtype": dt, key: v.reshape(-1).tolist()})


class BilinearInitializer(Initializer):
    """Weights of a transposed convolution that upsamples by bilinear interpolation: a 4-D filter
    [C_out, C_in, k, k] whose every (c_out, c_in) slice is the same k x k kernel. As Paddle 1.8
    computes it on Python 3, the row coordinate of element i is ``(i / k) % k`` with true division
    (a fraction), not the integer row: kept so that parameters equal Paddle's."""

    def __call__(self, var, block):
        shape = list(var.shape or [])
        if len(shape) != 4:
            raise ValueError("BilinearInitializer: %r must be 4-D, got shape %s" % (var.name, shape))
        if shape[2] != shape[3]:
            raise ValueError("BilinearInitializer: %r needs a square kernel, got shape %s" % (var.name, shape))
        size = int(np.prod(shape))
        if size > 1024 * 1024:
            raise ValueError("BilinearInitializer: %r has %d elements, more than 1024 * 1024" % (var.name, size))
        if convert_dtype(var.dtype) != "float32":
            raise ValueError("BilinearInitializer: %r must be float32, got %s" % (var.name, var.dtype))
        k = shape[3]
        f = np.ceil(k / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        i = np.arange(size, dtype=np.float64)
        col = i % k
        row = (i / k) % k
        weight = (1 - np.abs(col / f - c)) * (1 - np.abs(row / f - c))
        return block.append_op("assign_value", outputs={"Out": [var.name]},
                               attrs={"shape": shape, "dtype": "float32",
                                      "fp32_values": [float(v) for v in weight.astype(np.float32)]})


Constant = ConstantInitializer
Uniform = UniformInitializer
Normal = NormalInitializer
TruncatedNormal = TruncatedNormalInitializer
Xavier = XavierInitializer
MSRA = MSRAInitializer
Bilinear = BilinearInitializer
